"""A whole-number key with a few allowed values says them when it is out of range (``parallel.zero: 5`` → "allowed:
0, 1, 2 or 3", the ZeRO stages); a wider one says its range (">= 1 and <= 1024"), exit 2 on one line.

It printed "parallel.zero: must be less than or equal to 3, got 5" with no allowed values: the Pins model keeps
Layout's bounds as ``Annotated[int, Ge(0), Le(3)]``, whose bounds validation._constraints did not read."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.parallel.layout import Pins
from runplan.spec import PlanSpec
from runplan.validation import range_hint

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "70b-512-h100.yaml"


@pytest.mark.parametrize(
    ("model", "loc", "hint"),
    [
        (Pins, ("zero",), "allowed: 0, 1, 2 or 3"),  # ZeRO stages 0-3 (Rajbhandari et al. 2020)
        (PlanSpec, ("parallel", "zero"), "allowed: 0, 1, 2 or 3"),
        (PlanSpec, ("cluster", "gpus_per_node"), "allowed: > 0 and <= 1024"),  # 1,024 values: the range
        (PlanSpec, ("schedule", "warmup_fraction"), "allowed: >= 0 and < 1"),  # a fraction: the range
        (PlanSpec, ("parallel", "tp"), None),  # bounded below only
    ],
)
def test_the_hint_lists_a_few_values_and_bounds_many(model, loc, hint):
    assert range_hint(model, loc) == hint


def _run(tmp_path, extra: str):
    plan = tmp_path / "plan.yaml"
    plan.write_text(EXAMPLE.read_text() + extra)
    result = CliRunner().invoke(app, ["plan", str(plan)])
    return result.exit_code, [line for line in result.output.splitlines() if line.strip()]


def test_runplan_plan_says_the_zero_stages(tmp_path):
    code, lines = _run(tmp_path, "parallel:\n  zero: 5\n")
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].endswith(
        "parallel.zero: must be less than or equal to 3, got 5 (allowed: 0, 1, 2 or 3)"
    ), lines
    code, lines = _run(tmp_path, "parallel:\n  zero: -1\n")
    assert code == 2 and lines[0].endswith(
        "parallel.zero: must be greater than or equal to 0, got -1 (allowed: 0, 1, 2 or 3)"
    ), lines


def test_parallelize_zero_5_says_the_stages_with_exit_2():
    result = CliRunner().invoke(app, ["parallelize", str(EXAMPLE), "--zero", "5"])
    assert result.exit_code == 2
    assert "--zero: ZeRO stage must be 0, 1, 2 or 3, got '5'" in result.output
