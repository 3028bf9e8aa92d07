"""`plan --detail` at COLUMNS=50 on the Mixtral plan read ``1,282,323`` / ``s / 86,400`` in its "why" column (and
at 51 to 53 the 70B and 405B plans the same): report.tables.fitted_table judged the table to fit by the prose
column's longest word split at real spaces (``1,282,323``, 9 cells), so rich gave that column what was left (10
cells), narrower than ``1,282,323 s`` (11), and folded inside the pair. Rich sizes a folding column to what the
others leave (Table._calculate_column_widths collapses it; its measured minimum is not kept), so measuring the
masked text would change nothing: the fit check now counts a number and its unit as one word
(report.format.unit_spaces_masked), and a table whose prose column cannot hold the widest pair is printed as
stacked rows, whose lines fold between pairs."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from rich.table import Table
from tests.test_every_command_keeps_numbers_whole import _printed, folds

from runplan.report.format import cell_width, numbers_kept_whole
from runplan.report.tables import fitted_table

WHY = "1,282,323 s / 86,400 = 14.84 days with goodput"


def _fitted(width: int) -> tuple[object, list[str]]:
    console = Console(width=width, file=io.StringIO(), color_system=None)
    rendered = fitted_table(
        console, ["what", "value", "why"], [["wall clock days", "14.8 days", WHY]], left=("why",)
    )
    with numbers_kept_whole():
        console.print(rendered)
    return rendered, console.file.getvalue().splitlines()  # type: ignore[attr-defined]


def test_the_prose_column_is_never_narrower_than_its_widest_number_and_unit():
    # "what" 15 + "value" 9 + padding 6 + edges/separators 4 = 34 cells before "why"; "1,282,323 s" is 11 wide
    table, lines = _fitted(34 + 11)
    assert isinstance(table, Table)
    assert any("1,282,323 s" in line for line in lines), lines
    stacked, lines = _fitted(34 + 10)  # 10 cells held "1,282,323" (its widest real word) and folded the pair
    assert not isinstance(stacked, Table)
    assert any("1,282,323 s" in line for line in lines), lines
    assert all(cell_width(line) <= 44 for line in lines), lines


@pytest.mark.parametrize(
    ("example", "columns"),
    [
        ("moe-mixtral-8x7b.yaml", 50),
        ("70b-512-h100.yaml", 51),
        ("70b-512-h100.yaml", 52),
        ("405b-16k-h100-8k.yaml", 53),
    ],
)
def test_the_detail_report_keeps_the_seconds_of_its_wall_clock_days_whole(example, columns):
    args = ["plan", f"examples/{example}", "--detail"]
    out = _printed(args, columns)
    assert folds(out, _printed(args, 300)) == []
    assert max(cell_width(line) for line in out.splitlines()) <= columns
