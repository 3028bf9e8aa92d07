"""A sentence in a table's column of numbers (the plan's calibration line: file, fit and held-out errors, in the
Parallel layout table's value column) is set flush left like any prose, while the numbers above it stay
right-justified: `plan --detail` printed the sentence right-justified, each line ragged on the left."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.report.tables import fitted_table

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
LINE = (
    "runplan/configs/calibration.yaml (published-runs, hopper: 61 runs, fitted 2026-12-03); held-out step error "
    "5.4% median, 36.7% worst"
)


def _render(width: int, rows: list[list[str]]) -> list[str]:
    console = Console(width=width, record=True, no_color=True, force_terminal=False)
    table = fitted_table(console, ["what", "value", "why"], rows, box_style="SIMPLE", left=("what", "why"))
    console.print(table)
    return console.export_text().splitlines()


@pytest.mark.parametrize("width", [80, 120])
def test_a_prose_value_starts_each_line_at_its_column(width):
    rows = [
        ["step time", "36.07 s", "compute + exposed communication + bubble (docs/parallel.md)"],
        ["calibration", LINE, "time-model constants behind every time (`runplan calibrate`)"],
    ]
    lines = _render(width, rows)
    first = next(i for i, line in enumerate(lines) if "calibration " in line)
    start, why = lines[first].index("runplan/configs/"), lines[first].index("time-model")
    cell = [line[:why] for line in lines[first:] if line[:why].strip()]
    assert len(cell) >= 2, lines
    # flush left: each line of the cell begins at the column its first line does (right-justified, they did not)
    assert [len(line) - len(line.lstrip()) for line in cell[1:]] == [start] * (len(cell) - 1), lines
    if width >= 120:  # room for the file name whole (at 80 the column is narrower than it and it folds)
        assert "runplan/configs/calibration.yaml" in lines[first], lines
    assert all(len(line) <= width for line in lines)


def test_numbers_stay_right_justified():
    lines = _render(80, [["step time", "36.07 s", "why"], ["tokens/s", "603,218", "why"]])
    ends = {
        line.index(value) + len(value) for line in lines for value in ("36.07 s", "603,218") if value in line
    }
    assert len(ends) == 1, lines


def test_plan_detail_sets_the_calibration_line_flush_left_under_right_justified_numbers():
    result = CliRunner().invoke(
        app, ["plan", str(EXAMPLES / "70b-512-h100.yaml"), "--detail"], env={"COLUMNS": "80", "NO_COLOR": "1"}
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("  calibration "))
    start = lines[first].index("runplan/")
    assert lines[first + 1][start - 1] == " " and lines[first + 1][start] != " ", lines[first : first + 3]
    bubble = next(line for line in lines[:first] if line.startswith("  bubble "))
    step = next(line for line in lines[:first] if line.startswith("  step time "))
    assert bubble.index("1.2%") + len("1.2%") == step.index("36.07 s") + len(
        "36.07 s"
    )  # numbers right-justified
