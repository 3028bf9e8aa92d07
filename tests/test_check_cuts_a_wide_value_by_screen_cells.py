"""`runplan check` shows a changed value cut to 60 terminal cells (resolved._short). The cut was measured in code
points, so a value of CJK characters (two cells each) came out up to 120 cells wide; and a mapping whose first
key alone was longer than the width kept the key whole. The cut is now measured in screen cells with the
measure report/format.py folds lines by (rich.cells.cell_len), between whole characters, and a long key is cut
too. Expected texts below are derived by hand: a CJK character is 2 cells, an ASCII one 1, '...' 3."""

from __future__ import annotations

import json

from rich.cells import cell_len

from runplan.resolved import Change, _short

CJK = "数据集配置文件路径" * 5  # 45 characters, 90 cells


def test_a_cjk_string_is_cut_to_60_cells():
    # repr: "'" + 40 characters (80 cells) + "'"; room for 60 - 3 = 57 cells: the quote and 28 characters (56)
    value = CJK[:40]
    assert _short(value) == "'" + value[:28] + "..."
    assert cell_len(_short(value)) == 60


def test_a_wide_character_is_never_halved():
    # "'a" (2 cells) + 27 characters (54) = 56; a 28th would make 58 > 57: the cut stops at 59 cells
    value = "a" + CJK[:40]
    assert _short(value) == "'a" + value[1:28] + "..."
    assert cell_len(_short(value)) == 59


def test_an_ascii_string_is_cut_as_before():
    assert _short("x" * 100) == "'" + "x" * 56 + "..."
    assert _short("x" * 58) == "'" + "x" * 58 + "'"  # 60 characters: whole


def test_a_short_cjk_string_is_whole():
    assert _short(CJK[:29]) == "'" + CJK[:29] + "'"  # 2 + 58 = 60 cells


def test_a_list_of_cjk_strings_is_cut_after_a_whole_item_within_60_cells():
    values = [CJK[:5]] * 10  # each item '"数据集配置"' is 12 cells, ', ' between them
    text = _short(values)
    assert cell_len(text) <= 60
    head, _, tail = text.partition(", ...")
    shown = json.loads(head + "]")
    # '[' + k items (12 each) + 2(k-1) + ', ... N more]' (13 for N < 10): 14k + 12 <= 60 → k = 3 (54 cells)
    assert shown == values[:3] and tail == " 7 more]"


def test_a_mapping_of_cjk_values_fits_60_cells():
    value = {"path": CJK, "name": CJK}
    text = _short(value)
    assert cell_len(text) <= 60 and text.startswith('{"path": "数据') and text.endswith("..., ... 1 more}")


def test_a_mapping_whose_first_key_is_too_long_cuts_the_key():
    value = {"k" * 100: 1, "b": 2}
    text = _short(value)
    assert cell_len(text) <= 60, text
    assert text.startswith('{"kkk') and text.endswith(": 1, ... 1 more}")
    wide = {CJK: 1}
    assert cell_len(_short(wide)) <= 60 and _short(wide).endswith(": 1}")


def test_an_ascii_mapping_that_fits_is_unchanged():
    assert _short({"batch_fraction": 0.5}) == '{"batch_fraction": 0.5}'


def test_the_change_line_shows_the_cut_value():
    line = Change("model.name", "changed", CJK, "short").text()
    assert line.startswith("model.name: '" + CJK[:28] + "... → 'short'")
