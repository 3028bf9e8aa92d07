"""A GPU-time budget a plan cannot fill says why; for a fixed model (``model:``, objective fixed_params) the fill
changes only D, so the reason must not say that "the model size" changed and "no size tried" fills the days.

Found on GPT-3 175B, 3 days on 1,024 H100s (deepspeed stack, a two-stage batch ramp, synchronous saves): the fill tried D = 9.61e10 (2.963 days, layout PP4
DP32) and 9.71e10 (3.026 days, PP8 DP16): the batch law's B_opt grows with C = M·D, the ±10% batch window moves
past the faster layout's batch. The warning read "... change with the model size, so no size tried fills it
within 1% without going over" though the model never changed. The fill now bisects D up to that jump and fills
the 3 days (tests/test_a_fixed_model_budget_fills_up_to_where_the_days_jump.py); a jump too large to fill within 1%
is Mixtral 8x7B on 0.05 days of 1,024 H100s (0.0425 days up to D = 1.534e10, 0.0528 past it)."""

from __future__ import annotations

import json

import yaml
from tests._small_plan import MIXTRAL_005_DAYS
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.plan import unfilled_reason

PLAN = MIXTRAL_005_DAYS


def test_reason_per_objective():
    fixed = unfilled_reason("fixed_params")
    assert "with D" in fixed and "no D tried" in fixed and "model size" not in fixed
    for objective in ("compute_optimal", "tokens_per_param", "inference_optimal"):
        assert "with the model size" in unfilled_reason(objective)


def test_mixtral_on_a_twentieth_of_a_day_names_the_tokens(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(PLAN))
    result = CliRunner().invoke(app, ["plan", str(path), "-f", "json"])
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    assert plan["allocation"]["objective"] == "fixed_params"
    (budget,) = [w for w in plan["warnings"] if w.startswith("budget:")]
    days = plan["cost"]["main"]["wall_clock_days"]
    assert days < 0.99 * 0.05  # short of the 1% window: the warning is due
    assert budget.endswith(unfilled_reason("fixed_params"))
