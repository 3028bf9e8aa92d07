"""A ramp stage's reason states the rounding the schedule applied: with an interleaved pipeline the ramp batch is a
multiple of u·p (Megatron's interleaved 1F1B runs micro-batches in groups of p, docs/operations.md §1), not of u;
and where even one group is more than the fraction asked, the stage runs one group and a warning says so.

Found by `runplan plan` on Llama 3.1 405B, 16,384 H100s, 16M-token batch, `batch_ramp: [{batch_fraction: 0.25,
token_fraction: 0.01}]` (layout TP8 PP16 DP64 CP2, v 8): the reason read "0.25 × 2,048 sequences rounded down to a
multiple of u=64 → 1,024" (512 is a multiple of 64) and no warning said the ramp ran half the main batch.
"""

from __future__ import annotations

from runplan.ops import RampStage, ScheduleRequest, ScheduleSpec, plan_schedule


def _request(**kw):
    base = dict(training_tokens=4e12, compute_flops=2e23, seq_len=4096, dp=64, micro_batch=1)
    base.update(kw)
    return ScheduleRequest(**base)


def test_interleaved_ramp_reason_rounds_to_whole_groups_of_p():
    # hand-derived (tests/ops/test_ops_schedule.py): half of 3,008 = 1,504 → a multiple of u·p = 64·4 = 256: 1,280
    s = plan_schedule(_request(microbatch_multiple=4))
    ramp = s.batch_stages[0]
    assert ramp.global_batch_sequences == 1280
    why = ramp.notes["steps"]
    assert "u·p = 64·4 = 256" in why and "→ 1,280" in why
    assert "multiple of u=64 →" not in why  # 1,504 down to a multiple of 64 would be 1,472
    assert not any("ramp stage 1 runs" in w for w in s.warnings)  # 1,280 ≤ 1,504 asked: no caution


def test_ramp_raised_to_one_group_says_so():
    # the 405B case: main batch 2,048 sequences, u = 64, p = 16 interleaved: 0.25 × 2,048 = 512 sequences is no
    # whole group of u·p = 1,024, so the ramp runs 1,024 = 0.5 of the main batch, twice the 0.25 asked
    spec = ScheduleSpec(
        global_batch_tokens=2048 * 8192, batch_ramp=[RampStage(batch_fraction=0.25, token_fraction=0.01)]
    )
    s = plan_schedule(
        _request(training_tokens=15.6e12, compute_flops=4e25, seq_len=8192, microbatch_multiple=16, spec=spec)
    )
    ramp = s.batch_stages[0]
    assert s.global_batch_sequences == 2048
    assert ramp.global_batch_sequences == 1024
    why = ramp.notes["steps"]
    assert "u·p = 64·16 = 1,024" in why and "at least one group" in why and "→ 1,024" in why
    warning = next(w for w in s.warnings if w.startswith("ramp stage 1 runs"))
    assert "1,024 sequences" in warning and "0.5 of the main batch" in warning and "0.25" in warning
    assert "512" in warning


def test_plain_ramp_reason_is_unchanged():
    # no interleaving: half of 3,008 = 1,504 → down to a multiple of 64 = 1,472 (docs/operations.md worked example)
    s = plan_schedule(_request())
    why = s.batch_stages[0].notes["steps"]
    assert "rounded down to a multiple of u=64 → 1,472" in why
    assert not any("ramp stage" in w for w in s.warnings)
