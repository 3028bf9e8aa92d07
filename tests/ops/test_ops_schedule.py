"""Schedule stage: the DeepSeek laws at hand-computed budgets, divisibility, phases that add up."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from runplan.errors import SpecError
from runplan.ops import (
    RampStage,
    ScheduleRequest,
    ScheduleSpec,
    batch_tokens_at_step,
    deepseek_batch_tokens,
    deepseek_peak_lr,
    lr_at_step,
    plan_schedule,
)


def test_deepseek_laws_at_1e20_by_hand():
    # 1e20^0.3271 = 10^6.542 = 3.4834e6 → B = 0.2920 × 3.4834e6 = 1.0172e6 tokens
    assert deepseek_batch_tokens(1e20) == pytest.approx(1.0172e6, rel=1e-3)
    # 1e20^-0.125 = 10^-2.5 = 3.16228e-3 → η = 0.3118 × 3.16228e-3 = 9.860e-4
    assert deepseek_peak_lr(1e20) == pytest.approx(9.860e-4, rel=1e-3)


def test_deepseek_laws_at_1e24_by_hand():
    # 10^(24·0.3271) = 10^7.8504 = 7.0867e7 → B = 2.0693e7; 10^-3 × 0.3118 = 3.118e-4
    assert deepseek_batch_tokens(1e24) == pytest.approx(2.0693e7, rel=1e-3)
    assert deepseek_peak_lr(1e24) == pytest.approx(3.118e-4, rel=1e-6)


def _request(**kw):
    base = dict(training_tokens=4e12, compute_flops=2e23, seq_len=4096, dp=64, micro_batch=1)
    base.update(kw)
    return ScheduleRequest(**base)


def test_worked_example_2e23():
    s = plan_schedule(_request())
    # B_opt(2e23) = 0.292 · 2e23^0.3271 = 1.2222e7 tokens = 2,983.9 sequences → nearest multiple of 64 = 3,008
    assert s.law_batch_tokens == pytest.approx(1.2222e7, rel=1e-3)
    assert s.global_batch_sequences == 3008
    assert s.global_batch_tokens == 3008 * 4096
    assert s.microbatches_per_replica == 47
    # ramp: half of 3,008 = 1,504 → down to a multiple of 64 = 1,472 sequences for 1.5% of 4e12 tokens
    ramp = s.batch_stages[0]
    assert ramp.global_batch_sequences == 1472
    assert ramp.steps == round(0.015 * 4e12 / (1472 * 4096))
    assert s.peak_lr == pytest.approx(0.3118 * 2e23**-0.125)
    assert [p.name for p in s.lr_phases] == ["warmup", "stable", "cooldown"]


def test_critical_batch_caps_and_rounds_down():
    s = plan_schedule(_request(critical_batch_tokens=8e6))
    assert s.global_batch_tokens <= 8e6
    assert s.global_batch_sequences == math.floor(8e6 / 4096 / 64) * 64  # 1,920
    assert "critical" in s.notes["target_batch_tokens"]
    assert not s.warnings


def test_batch_above_critical_warns():
    s = plan_schedule(_request(spec=ScheduleSpec(global_batch_tokens=3e7), critical_batch_tokens=8e6))
    assert any("above the critical batch" in w for w in s.warnings)


def test_plan_file_overrides():
    spec = ScheduleSpec(global_batch_tokens="4M", peak_lr="3e-4", warmup_tokens="2B", cooldown_shape="linear")
    s = plan_schedule(_request(spec=spec))
    assert s.peak_lr == 3e-4 and s.peak_lr_source.startswith("plan file")
    assert s.global_batch_sequences % 64 == 0
    assert abs(s.lr_phases[0].tokens - 2e9) <= s.global_batch_tokens


def test_spec_validation():
    with pytest.raises(ValidationError):
        ScheduleSpec(warmup_tokens=1e9, warmup_fraction=0.01)
    with pytest.raises(ValidationError):
        ScheduleSpec(
            batch_ramp=[
                RampStage(batch_fraction=0.5, token_fraction=0.01),
                RampStage(batch_fraction=0.25, token_fraction=0.01),
            ]
        )
    with pytest.raises(ValidationError):
        ScheduleSpec(unknown_key=1)
    with pytest.raises(ValidationError):
        ScheduleSpec(cooldown_shape="exp")


def test_overlapping_warmup_and_cooldown_is_a_spec_error():
    with pytest.raises(SpecError) as info:
        plan_schedule(_request(spec=ScheduleSpec(warmup_tokens=3.5e12, cooldown_fraction=0.2)))
    assert info.value.where == "schedule.warmup_tokens"


def test_interleaved_pipeline_ramps_in_whole_groups_of_p():
    # hand-derived: the 2e23 example at p = 4 interleaved: half of 3,008 = 1,504 sequences, down to a multiple of
    # u*p = 64*4 = 256: 1,280 sequences = 20 micro-batches per replica, 5 groups of p (without the constraint:
    # 1,472 = 23 micro-batches, which Megatron's interleaved schedule cannot run)
    s = plan_schedule(_request(microbatch_multiple=4))
    ramp = s.batch_stages[0]
    assert ramp.global_batch_sequences == 1280
    assert ramp.microbatches_per_replica == 20
    assert s.batch_stages[-1].global_batch_sequences == 3008  # the main batch is the layout's, untouched


def test_ramp_impossible_at_one_microbatch_warns():
    s = plan_schedule(_request(dp=1024, micro_batch=2, training_tokens=1e12, compute_flops=1e21))
    assert s.batch_stages[0].global_batch_sequences == s.global_batch_sequences
    assert any("cannot shrink" in w for w in s.warnings)


def test_lr_curve_shapes():
    s = plan_schedule(_request(spec=ScheduleSpec(final_lr_fraction=0.1)))
    steps = np.arange(s.total_steps + 1)
    lr = lr_at_step(s, steps)
    w, c = s.warmup_steps, s.total_steps - s.cooldown_steps
    assert lr[0] == 0
    assert np.all(np.diff(lr[: w + 1]) > 0)
    assert np.allclose(lr[w : c + 1], s.peak_lr)
    assert np.all(np.diff(lr[c:]) <= 0)
    assert lr[-1] == pytest.approx(0.1 * s.peak_lr)
    # 1-sqrt: halfway through the cooldown the LR is final + (peak - final)(1 - sqrt(0.5))
    mid = c + s.cooldown_steps // 2
    x = (mid - c) / s.cooldown_steps
    assert lr[mid] == pytest.approx(s.final_lr + (s.peak_lr - s.final_lr) * (1 - math.sqrt(x)))
    batch = batch_tokens_at_step(s, steps[:-1])
    assert batch[0] == s.batch_stages[0].global_batch_tokens and batch[-1] == s.global_batch_tokens


@settings(max_examples=60, deadline=None)
@given(
    dp=st.integers(1, 512),
    micro_batch=st.integers(1, 8),
    seq_len=st.sampled_from([1024, 2048, 4096, 8192]),
    log_c=st.floats(19, 25),
    tokens_per_batch=st.floats(2e3, 2e5),
    crit=st.one_of(st.none(), st.floats(1e5, 1e8)),
    ramp=st.floats(0.1, 1.0),
    ramp_tokens=st.floats(0.0, 0.05),
    cooldown=st.floats(0.05, 0.3),
    shape=st.sampled_from(["1-sqrt", "linear", "cosine"]),
)
def test_schedule_invariants(
    dp, micro_batch, seq_len, log_c, tokens_per_batch, crit, ramp, ramp_tokens, cooldown, shape
):
    c = 10**log_c
    law = deepseek_batch_tokens(c)
    unit_tokens = dp * micro_batch * seq_len
    batch_guess = max(unit_tokens, min(law, crit or law))
    d = batch_guess * tokens_per_batch  # between 2e3 and 2e5 main steps
    spec = ScheduleSpec(
        cooldown_fraction=cooldown,
        cooldown_shape=shape,
        batch_ramp=[RampStage(batch_fraction=ramp, token_fraction=ramp_tokens)],
    )
    req = ScheduleRequest(
        training_tokens=d,
        compute_flops=c,
        seq_len=seq_len,
        dp=dp,
        micro_batch=micro_batch,
        critical_batch_tokens=crit,
        spec=spec,
    )
    try:
        s = plan_schedule(req)
    except SpecError:
        assume(False)
    unit = dp * micro_batch
    for stage in s.batch_stages:  # every batch divides into dp × micro_batch × seq_len
        assert stage.global_batch_sequences % unit == 0
        assert stage.global_batch_tokens == stage.global_batch_sequences * seq_len
        assert stage.global_batch_sequences <= s.global_batch_sequences
    # stages and phases tile the run: contiguous, steps and tokens add up
    for seq in (s.batch_stages, s.lr_phases):
        assert seq[0].start_step == 0 and seq[-1].end_step == s.total_steps
        assert all(a.end_step == b.start_step for a, b in itertools.pairwise(seq))
        assert sum(p.steps for p in seq) == s.total_steps
        assert sum(p.tokens for p in seq) == pytest.approx(s.scheduled_tokens, rel=1e-12)
    # the scheduled tokens are within one main step of the training tokens
    assert abs(s.scheduled_tokens - d) <= s.global_batch_tokens
    # the cooldown is within one step of its fraction, warmup is at least one step
    assert abs(s.lr_phases[2].tokens - cooldown * s.scheduled_tokens) <= s.global_batch_tokens
    assert s.warmup_steps >= 1
    if crit is not None and s.global_batch_sequences > unit and spec.global_batch_tokens is None:
        # uncapped, the batch is rounded to the nearest multiple of u: up to half a unit above the law
        assert s.global_batch_tokens <= max(crit, law) + unit_tokens / 2
        if crit < law:
            assert s.global_batch_tokens <= crit
    lr = lr_at_step(s, np.arange(s.total_steps + 1))
    assert np.all(lr >= 0) and np.all(lr <= s.peak_lr * (1 + 1e-12))


def test_the_law_s_peak_lr_is_warned_beyond_deepseek_67b_s_budget():
    # DeepSeek 67B: M = 72·95·8192² + 12·95·8192·4096 = 4.59e11 + 3.83e10 = 4.97e11 FLOPs/token, × 2T = 9.9e23;
    # the law there gives η = 0.3118·(9.9e23)^−0.125 = 3.12e-4 and they trained at 3.2e-4 (Table 2)
    assert deepseek_peak_lr(9.9e23) == pytest.approx(3.2e-4, rel=0.03)
    # the 405B example's C = 4.076e25 is 41× that: η = 0.3118·10^(−0.125·25.610) = 1.96e-4, Llama 3 used 8e-5
    far = plan_schedule(_request(compute_flops=4.076e25, training_tokens=15e12, dp=1024))
    (warning,) = [w for w in far.warnings if "extrapolates" in w]
    assert "peak LR 1.96e-04" in warning and "41×" in warning and "schedule.peak_lr" in warning
    # within a factor 2 of a published use, or the LR set in the plan file: no caution
    near = plan_schedule(_request(compute_flops=1.9e24, training_tokens=15e12, dp=1024))
    assert not [w for w in near.warnings if "extrapolates" in w]
    pinned = plan_schedule(
        _request(compute_flops=4.076e25, training_tokens=15e12, dp=1024, spec=ScheduleSpec(peak_lr=8e-5))
    )
    assert not [w for w in pinned.warnings if "extrapolates" in w]
