"""The summary's tokens per parameter counts the model trained (the generated shape's parameters), the
allocation table's the law's N: `2e23-7b-overtrained` printed "665/param" in the summary over a table row
"tokens per parameter | 680.3 | D / N" with nothing saying why the two differ. The row now names the trained
model's ratio when it differs as printed."""

from __future__ import annotations

from pathlib import Path

import pytest

from runplan.plan import build_plan
from runplan.report.sections import plan_sections, summary_lines
from runplan.spec import load_plan

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _row(plan, what: str) -> tuple[str, str, str]:
    rows = next(s for s in plan_sections(plan) if s.title == "Allocation").rows
    return next(r for r in rows if r[0] == what)


def test_a_generated_shape_s_ratio_is_named_beside_the_law_s():
    plan = build_plan(load_plan(EXAMPLES / "2e23-7b-overtrained.yaml"))
    # D = 2e23 / (6 × 7e9) = 4.762e12; D / 7e9 = 680.3; the 7.158 B-parameter shape trained: D / 7.158e9 = 665.3
    assert plan.allocation.tokens == pytest.approx(2e23 / 6 / 7e9, rel=1e-9)
    assert plan.model.law_params == pytest.approx(7.158e9, rel=1e-3)
    _, value, why = _row(plan, "tokens per parameter")
    assert value == "680.3"
    assert "665.3 per parameter of the model trained (7.158 B, as the summary counts)" in why, why
    assert "(665/param)" in summary_lines(plan)[0]


def test_a_catalog_model_s_row_says_nothing_more():
    plan = build_plan(load_plan(EXAMPLES / "70b-512-h100.yaml"))
    _, value, why = _row(plan, "tokens per parameter")
    assert value == "28.3" and "model trained" not in why
