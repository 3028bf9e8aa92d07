"""The allocation's "budget" row of a GPU-hours budget prints days (``gpu_hours`` / (GPUs × 24 h), plan.budget_days)
and must say where they come from: 500,000 GPU-hours on 512 H100s printed "budget 40.69 days" with a reason that
named neither the GPU-hours nor the GPUs, so the only number a user wrote was nowhere on the row."""

from __future__ import annotations

import yaml

from runplan.plan import build_plan
from runplan.report.sections import plan_sections
from runplan.spec import load_plan_text

PLAN = {
    "schema_version": 1,
    "name": "gpu-hours-row",
    "model": "llama-3.1-8b",
    "training": {"seq_len": 4096},
    "cluster": {"gpu": "h100-sxm", "gpus": 64},
    "sweep": False,
}


def _budget_row(budget: dict) -> tuple[str, str]:
    plan = build_plan(load_plan_text(yaml.safe_dump({**PLAN, "budget": budget})))
    allocation = next(s for s in plan_sections(plan) if s.title == "Allocation")
    (row,) = [(value, why) for what, value, why in allocation.rows if what == "budget"]
    return row


def test_gpu_hours_budget_row_derives_its_days():
    # 20,000 GPU-hours / (64 GPUs × 24 h) = 13.0208 days
    value, why = _budget_row({"gpu_hours": 20000})
    assert value == "13.02 days"
    assert why.startswith("20,000 GPU-hours / (64 GPUs × 24 h) = 13.02 days; ")


def test_days_budget_row_is_the_days_as_given():
    value, why = _budget_row({"days": 13})
    assert value == "13 days"
    assert "GPU-hours" not in why
