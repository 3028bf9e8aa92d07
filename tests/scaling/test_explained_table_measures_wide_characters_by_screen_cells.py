"""cli/budget.explained_table puts each reason beside its row only when the reasons get at least WHY_MIN_CHARS
cells, but it measured names and values with len(): a value naming a user catalog's GPU in CJK (two cells a
character) was counted at half its width, and the reasons were squeezed to 25 cells at COLUMNS=83 and folded
word by word. It now measures terminal cells (report/format.cell_width), as the rest of the report does."""

from __future__ import annotations

from rich.console import Console

from runplan.cli.budget import WHY_MIN_CHARS, explained_table
from runplan.report.format import cell_width

WHY = "6·N·D / (bf16 peak × MFU) / 3600 (MFU: PaLM §4.1)"


def _lines(rows, width: int) -> list[str]:
    console = Console(width=width, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(explained_table(rows, width))
    return [line.rstrip() for line in console.export_text().splitlines()]


def test_a_wide_value_puts_the_reason_under_its_row_when_beside_it_would_be_too_narrow():
    value = "1,234 on " + "日" * 15 + " x"  # 26 characters, 41 cells
    assert (len(value), cell_width(value)) == (26, 41)
    lines = _lines([("GPU-hours", value, WHY)], 83)  # beside it: 83 − 9 − 41 − 8 = 25 cells < 40
    assert 83 - 9 - 41 - 8 < WHY_MIN_CHARS <= 83 - 9 - len(value) - 8
    assert lines == ["GPU-hours    " + value, "    " + WHY]


def test_an_ascii_value_keeps_its_reason_beside_it():
    lines = _lines([("GPU-hours", "1,234 on h100-sxm x", WHY)], 90)
    assert lines == ["GPU-hours    1,234 on h100-sxm x    " + WHY]
