"""resolved._cut promises ``text`` in at most ``width`` cells, but below 4 it returned '...' whole: 3 cells
for a width of 2 or 1 (and for 0). Its dots are now cut to the width too."""

from __future__ import annotations

import pytest

from runplan.report.format import cell_width
from runplan.resolved import _cut


@pytest.mark.parametrize(
    ("text", "width", "expected"),
    [
        ("abcdef", 0, ""),
        ("abcdef", 1, "."),
        ("abcdef", 2, ".."),
        ("abcdef", 3, "..."),
        ("abcdef", 4, "a..."),
        ("abcdef", 6, "abcdef"),
        ("日本語", 4, "..."),  # "日" takes 2 cells: no room beside the dots, and never halved
        ("日本語", 5, "日..."),
        ("ab", 1, "."),
    ],
)
def test_a_cut_value_fits_its_width(text, width, expected):
    cut = _cut(text, width)
    assert cut == expected and cell_width(cut) <= width
