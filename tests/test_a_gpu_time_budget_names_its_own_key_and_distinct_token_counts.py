"""A GPU-time budget's messages speak in its own terms.

1. A fixed model whose budget (days or GPU-hours) trains it on fewer than the smallest sensible D (1e6 tokens,
   scaling.allocate.MIN_TOKENS) was refused with the allocation's "raise the budget to at least 4.9e+16 FLOPs",
   though the user gave days. README and docs/plan-file.md: the error names the key and the value that holds the
   smallest plan. Llama 3.1 8B on 64 H100, `gpu_hours: 0.01` (6.51e-6 days): the plan at D = 1e6 tokens takes
   7.29e-5 days by the plan's own model, so budget.gpu_hours 64 × 24 × 7.29e-5 = 0.112; `days: 1e-6` asks 7.3e-05.
   Each value then plans (exit 0).
2. The token fill's budget warning printed "trains 127.7 B tokens; 127.7 B (0.04% more) take 0.325 days" (Mixtral
   8x7B, 7,372.8 GPU-hours on 1,024 H100): the two D now print with enough digits to differ."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from runplan.errors import Infeasible
from runplan.plan import _jump_reason, build_plan
from runplan.spec import load_plan_text

PLAN = """schema_version: 1
name: tiny
model: llama-3.1-8b
budget: {budget}
training: {{seq_len: 4096}}
cluster: {{gpu: h100-sxm, gpus: 64}}
"""


@pytest.mark.parametrize(
    ("budget", "key", "value"),
    [("{gpu_hours: 0.01}", "budget.gpu_hours", "0.112"), ("{days: 0.000001}", "budget.days", "7.3e-05")],
)
def test_a_fixed_model_too_short_a_budget_names_the_key_and_the_time_that_holds_it(budget, key, value):
    with pytest.raises(Infeasible) as caught:
        build_plan(load_plan_text(PLAN.format(budget=budget)))
    error = caught.value
    assert (
        error.reason.startswith(f"{key}: ")
        and "8.03 B parameters on 1 M tokens take 7.29e-05 days" in error.reason
    )
    assert error.suggestions[0] == f"raise {key} to at least {value}"
    assert not [s for s in error.suggestions if "FLOPs" in s]
    held = key.split(".")[1]
    plan = build_plan(load_plan_text(PLAN.format(budget=f"{{{held}: {value}}}")))
    assert plan.allocation.tokens >= 1e6


def _tried(tokens: float, days: float):
    return (SimpleNamespace(cost=SimpleNamespace(main=SimpleNamespace(wall_clock_days=days))), tokens)


def test_the_two_token_counts_of_a_budget_warning_print_apart():
    best, over = _tried(127.70e9, 0.288), _tried(127.74e9, 0.325)  # 4 digits: 127.7 B twice
    why = _jump_reason(best, [over, best], 0.3)
    assert why is not None
    assert why.startswith("it trains 127.7 B tokens; 127.74 B (0.03% more) take 0.325 days")
