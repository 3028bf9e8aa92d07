"""A ramp stage at the main batch is no ramp; a warmup/cooldown overlap names the key the user set."""

from __future__ import annotations

import pytest

from runplan.errors import SpecError
from runplan.ops import RampStage, ScheduleRequest, ScheduleSpec, plan_schedule


def _request(**kw):
    # the docs/operations.md §1 worked example: C = 2e23, D = 4e12, s = 4,096, dp = 64, micro_batch = 1
    base = dict(training_tokens=4e12, compute_flops=2e23, seq_len=4096, dp=64, micro_batch=1)
    base.update(kw)
    return ScheduleRequest(**base)


def test_batch_fraction_one_switches_the_ramp_off():
    # ScheduleSpec.batch_ramp: "Use batch_fraction 1 to switch the ramp off". Before the fix a "ramp 1" stage at
    # the main batch stayed, and the summary printed "254 in the batch ramp" for a run that never ramps.
    s = plan_schedule(
        _request(spec=ScheduleSpec(batch_ramp=[RampStage(batch_fraction=1, token_fraction=0.015)]))
    )
    assert [st.name for st in s.batch_stages] == ["main"]
    # main batch 3,008 × 4,096 = 12,320,768 tokens; 4e12 / 12,320,768 = 324,655.2 → 324,655 steps
    assert s.batch_stages[0].steps == 324_655
    assert s.total_steps == 324_655
    assert s.scheduled_tokens == 324_655 * 12_320_768
    assert not s.warnings


def test_ramp_that_cannot_shrink_is_merged_into_the_main_stage():
    # dp 1,024 × micro_batch 2 = u 2,048 sequences; the law's batch rounds to one u, so half of it rounds back
    # up to u: the ramp stage would run the main batch. It is merged (one stage) and the warning says why.
    s = plan_schedule(_request(dp=1024, micro_batch=2, training_tokens=1e12, compute_flops=1e21))
    assert len(s.batch_stages) == 1 and s.batch_stages[0].name == "main"
    assert s.batch_stages[0].steps == round(1e12 / (s.global_batch_sequences * 4096))
    assert any("cannot shrink" in w and "main batch" in w for w in s.warnings)


def test_overlap_with_warmup_fraction_names_warmup_fraction():
    # 0.9 of the tokens warming up overlaps the default 20% cooldown; the user set warmup_fraction, not
    # warmup_tokens (the message named schedule.warmup_tokens before the fix)
    with pytest.raises(SpecError) as info:
        plan_schedule(_request(spec=ScheduleSpec(warmup_fraction=0.9)))
    assert info.value.where == "schedule.warmup_fraction"


def test_overlap_with_default_warmup_names_cooldown_fraction():
    # default warmup 1% + cooldown 99.5% > 100%: only the cooldown was set, so that is the key to change
    with pytest.raises(SpecError) as info:
        plan_schedule(_request(spec=ScheduleSpec(cooldown_fraction=0.995)))
    assert info.value.where == "schedule.cooldown_fraction"


def test_overlap_with_warmup_tokens_still_names_warmup_tokens():
    with pytest.raises(SpecError) as info:
        plan_schedule(_request(spec=ScheduleSpec(warmup_tokens=3.5e12)))
    assert info.value.where == "schedule.warmup_tokens"


def test_consecutive_ramp_stages_at_one_batch_are_merged():
    # 0.25 × 3,008 = 752 and 0.255 × 3,008 = 767 both round down to 704 sequences (11 × 64): one stage of
    # 2 × round(4e10 / (704 × 4,096)) = 2 × round(13,871.6) = 27,744 steps, then 0.5 → 1,472 sequences for
    # round(4e10 / 6,029,312) = 6,634 steps. 2,000 such listed fractions made 2,000 stages, each re-timed.
    ramp = [
        RampStage(batch_fraction=0.25, token_fraction=0.01),
        RampStage(batch_fraction=0.255, token_fraction=0.01),
        RampStage(batch_fraction=0.5, token_fraction=0.01),
    ]
    s = plan_schedule(_request(spec=ScheduleSpec(batch_ramp=ramp)))
    assert [st.name for st in s.batch_stages] == ["ramp 1-2", "ramp 3", "main"]
    assert [st.global_batch_sequences for st in s.batch_stages] == [704, 1472, 3008]
    assert [st.steps for st in s.batch_stages[:2]] == [27_744, 6_634]
    assert s.batch_stages[1].start_step == 27_744
    assert s.batch_stages[0].tokens == 27_744 * 704 * 4096
