"""The time-and-cost rows print the currency beside each cost, and a price the plan file did not set is called the
default wherever it is explained.

Hand check (docs/operations.md §5): 512 GPUs, 30 days useful, 32 days elapsed → 512 × 32 × 24 = 393,216 billed
GPU-hours; at the default 2 USD/h that is 786,432 USD.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from runplan.ops import CostRequest, CostSpec, estimate_cost

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _request(**kw):
    return CostRequest(
        n_gpus=512, tdp_watts=700, useful_seconds=30 * 86_400, elapsed_seconds=32 * 86_400, **kw
    )


def test_a_default_price_is_called_the_default_in_its_own_note():
    cost = estimate_cost(_request(price_is_default=True))
    assert cost.main.billed_gpu_hours == pytest.approx(393_216)
    assert cost.main.cost == pytest.approx(786_432)
    note = cost.notes["price_per_gpu_hour"]
    assert note.startswith("2 USD per GPU-hour")
    assert "default" in note and "set cluster.price_per_gpu_hour" in note


def test_a_price_from_the_plan_file_names_its_key():
    cost = estimate_cost(_request(price_per_gpu_hour=3.5, spec=CostSpec(currency="EUR")))
    assert cost.main.cost == pytest.approx(393_216 * 3.5)  # 1,376,256 EUR
    note = cost.notes["price_per_gpu_hour"]
    assert note == "3.5 EUR per GPU-hour (cluster.price_per_gpu_hour)"


def test_the_cost_rows_of_the_70b_example_print_the_currency():
    from runplan.plan import build_plan
    from runplan.report.sections import plan_sections
    from runplan.spec import load_plan

    plan = build_plan(load_plan(EXAMPLES / "70b-512-h100.yaml"), EXAMPLES)
    rows = {(s.title, what): value for s in plan_sections(plan) for what, value, _ in s.rows}
    c = plan.cost
    # 512 GPUs × elapsed hours × 2 USD/h, elapsed from the reliability stage
    assert c.main.cost == pytest.approx(
        512 * plan.reliability.expected_elapsed_seconds / 3600 * 2.0, rel=1e-12
    )
    assert rows["Time and cost", "cost"] == f"{c.main.cost:,.0f} USD"
    assert rows["Time and cost", "total cost"] == f"{c.main.cost + c.sweep.cost:,.0f} USD"
