"""Terminal lines fold at the terminal's width in screen cells: a CJK character takes two (rich.cells), so a
plan name or value written in Chinese or Japanese made 88-cell lines at 80 columns when folding counted
characters (textwrap)."""

from __future__ import annotations

from rich.cells import cell_len

from runplan.report.format import wrap_lines


def test_a_line_with_wide_characters_stays_within_the_width():
    line = '  layout.name: "检查点检查点检查点" → "检查点检查点检查点检查点" and more words 检查点 检查点 检查点 检查点 end'
    out = wrap_lines(line, 40)
    assert max(cell_len(row) for row in out.splitlines()) <= 40
    assert out.split() == line.split()  # the same words in the same order
    assert all(row.startswith("    ") for row in out.splitlines()[1:])  # folded rows hang under the first


def test_a_word_wider_than_the_line_stays_whole():
    out = wrap_lines("a " + "检" * 30 + " b", 20)
    assert out.splitlines() == ["a", "  " + "检" * 30, "  b"]


def test_ascii_lines_fold_as_before():
    line = "  plain ascii line that is long enough to wrap around the width limit here"
    assert (
        wrap_lines(line, 30)
        == "  plain ascii line that is\n    long enough to wrap around\n    the width limit here"
    )
