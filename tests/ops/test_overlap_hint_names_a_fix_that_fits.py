"""The warmup/cooldown overlap hint (ops/schedule.py ``_overlap``) names only fixes that fit.

* A warmup at least as long as the run cannot be cured by a shorter cooldown (the warmup alone passes the last
  step): the hint names the warmup only. Before: "...; or shorten the cooldown_fraction".
* Where only the cooldown was set (default 1% warmup, the key named is schedule.cooldown_fraction) the hint leads
  with the largest cooldown_fraction that fits: 1 − warmup/run = 1 − 0.01 = 0.99, and that value plans.

Hand numbers (test_a_warmup_longer_than_the_run_says_so: D = 4e12, scheduled 3.99999e12 tokens).
"""

from __future__ import annotations

import pytest

from runplan.errors import SpecError
from runplan.ops import ScheduleRequest, ScheduleSpec, plan_schedule


def _schedule(**spec):
    request = ScheduleRequest(
        training_tokens=4e12,
        compute_flops=2e23,
        seq_len=4096,
        dp=64,
        micro_batch=1,
        spec=ScheduleSpec(**spec),
    )
    return plan_schedule(request)


def _hint(**spec) -> tuple[str, str]:
    with pytest.raises(SpecError) as info:
        _schedule(**spec)
    return info.value.where, info.value.hint or ""


@pytest.mark.parametrize("spec", [{"warmup_tokens": 5e12}, {"warmup_tokens": 4e12}])
def test_a_warmup_past_the_run_is_not_told_to_shorten_the_cooldown(spec):
    where, hint = _hint(**spec)
    assert where.startswith("schedule.warmup")
    assert "cooldown_fraction" not in hint and "at most 3.2 T tokens, 80.0% of the run" in hint


def test_an_overlap_inside_the_run_may_still_shorten_the_cooldown():
    _, hint = _hint(warmup_fraction=0.9)
    assert "or shorten the cooldown_fraction" in hint


def test_a_cooldown_too_long_leads_with_the_largest_cooldown_fraction_that_fits():
    where, hint = _hint(cooldown_fraction=0.995)
    assert where == "schedule.cooldown_fraction"
    assert hint.startswith("set cooldown_fraction to at most 0.99 ")
    schedule = _schedule(cooldown_fraction=0.99)  # the hinted value plans
    assert schedule.scheduled_tokens == pytest.approx(3.99999e12, rel=1e-5)
