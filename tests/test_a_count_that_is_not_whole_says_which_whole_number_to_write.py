"""A count that is not whole (``gpus: 512.5``) says which whole number to write, on one line naming its key, exit 2.

It printed "cluster.gpus: expected a whole number, got 512.5" with no fix (units.parse_count), where every other
bad count names what to write."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.errors import SpecError
from runplan.units import parse_count

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "70b-512-h100.yaml"


@pytest.mark.parametrize(
    ("value", "near"),
    [(512.5, "512"), ("512.5", "512"), ("1.5k", None), (0.5, "1"), (2047.9, "2047"), ("2.5", "2")],
)
def test_the_hint_names_the_whole_number_below(value, near):
    if near is None:  # 1.5k is 1,500: whole
        assert parse_count(value) == 1500
        return
    with pytest.raises(SpecError) as info:
        parse_count(value, where="cluster.gpus")
    assert info.value.where == "cluster.gpus"
    assert info.value.hint == f"write a whole number such as {near}"


def test_runplan_plan_says_it_on_one_line_with_exit_2(tmp_path):
    text = EXAMPLE.read_text()
    assert "  gpus: 512\n" in text
    plan = tmp_path / "plan.yaml"
    plan.write_text(text.replace("  gpus: 512\n", "  gpus: 512.5\n"))
    result = CliRunner().invoke(app, ["plan", str(plan)])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    assert lines[0].endswith(
        "cluster.gpus: expected a whole number, got 512.5 (write a whole number such as 512)"
    ), lines[0]


def test_a_flag_says_it_too():
    result = CliRunner().invoke(app, ["allocate", "--gpus", "1.5", "--days", "30"])
    assert result.exit_code == 2
    assert "--gpus: expected a whole number, got '1.5' (write a whole number such as 1)" in result.output


def test_a_pinned_axis_that_is_not_whole_says_it_as_a_count_does(tmp_path):
    # pydantic's int_from_float read "parallel.zero: must be a valid integer, got a number with a fractional
    # part, got 2.5" (validation.py); a key with a few values lists them, another names the whole number below
    plan = tmp_path / "plan.yaml"
    for extra, said in (
        (
            "parallel:\n  zero: 2.5\n",
            "parallel.zero: expected a whole number, got 2.5 (allowed: 0, 1, 2 or 3)",
        ),
        (
            "parallel:\n  tp: 2.5\n",
            "parallel.tp: expected a whole number, got 2.5 (write a whole number such as 2)",
        ),
    ):
        plan.write_text(EXAMPLE.read_text() + extra)
        result = CliRunner().invoke(app, ["plan", str(plan)])
        assert result.exit_code == 2
        lines = [line for line in result.output.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].endswith(said), lines
