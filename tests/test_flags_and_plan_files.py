"""Flags fill the plan file's models: the budget flags are the Budget model, and a flag may not re-set a plan's key."""

from __future__ import annotations

import pytest
from tests.parallel.shapes import H100
from typer.testing import CliRunner

from runplan import defaults
from runplan.cli.app import app
from runplan.errors import SpecError


def test_explicit_default_seq_len_conflicts_with_a_plan_file():
    plan70 = str(__import__("pathlib").Path(__file__).resolve().parents[1] / "examples" / "70b-512-h100.yaml")
    result = CliRunner().invoke(app, ["parallelize", plan70, "--seq-len", str(defaults.DEFAULT_SEQ_LEN)])
    assert result.exit_code == 2 and "--seq-len" in result.stderr


def test_flag_budget_is_the_plan_budget_model():
    from runplan.cli.budget import flag_budget_model, parse_budget
    from runplan.spec import Budget

    assert issubclass(flag_budget_model(), Budget)
    parsed = parse_budget(None, "1024", "30", None, None, "2")
    expected = 1024 * H100.bf16_flops * defaults.DEFAULT_MFU * 30 * 86400
    assert parsed.flops == pytest.approx(expected, rel=1e-12)
    assert (parsed.gpus, parsed.price, parsed.mfu) == (1024, 2.0, defaults.DEFAULT_MFU)
    with pytest.raises(SpecError) as info:
        parse_budget("2e23", None, None, None, "0.001", None)
    assert info.value.where == "budget.mfu"
