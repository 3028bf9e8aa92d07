"""`plan --detail` folded a count of days written ``d`` away from its number: at COLUMNS=80 the 7B overtrained
plan's job MTBF read ``M = 86,400 s / λ = 356,323 s (4.12`` / ``d)``, and at COLUMNS=54 the failure rate's source
``(Llama 3: 419 / (54`` / ``d × 2,048 nodes)``. ``d`` (ops._notes.fmt_seconds' ``(4.12 d)``, ops.reliability's
``54 d``) is now a unit the mask keeps on its number's line, where it follows a number as a whole word: the
layout letter d of ``d·b·m`` or ``d = 64`` is not a day."""

from __future__ import annotations

import pytest
from tests.test_every_command_keeps_numbers_whole import _printed, folds

from runplan.report.format import unit_spaces_masked

EXAMPLE = "examples/2e23-7b-overtrained.yaml"


def test_d_after_a_number_is_a_unit_and_the_layout_letter_d_is_not():
    assert unit_spaces_masked("λ = 356,323 s (4.12 d) (Llama 3: 419 / (54 d × 2,048 nodes), 7 d.") == (
        "λ = 356,323_s (4.12_d) (Llama 3: 419 / (54_d × 2,048_nodes), 7_d."
    )
    assert (
        unit_spaces_masked("batch 2 d·b·m, 8 d = 64, 3 dp, 4 days") == "batch 2 d·b·m, 8 d = 64, 3 dp, 4_days"
    )


@pytest.mark.parametrize("columns", [54, 80])
def test_the_detail_report_keeps_a_count_of_days_with_its_d(columns):
    out = _printed(["plan", EXAMPLE, "--detail"], columns)
    lines = [line.rstrip() for line in out.splitlines()]
    assert not any(line.endswith(("(4.12", "(54")) for line in lines), out
    assert "(4.12 d)" in out and "(54 d ×" in out  # on one line each, the characters unchanged
    assert folds(out, _printed(["plan", EXAMPLE, "--detail"], 300)) == []
