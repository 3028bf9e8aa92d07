"""Short runs: a rollback never redoes more than the run, and milestones that fall after the end are not
promised; the canary size and cadence warnings look at what is run, not what was asked."""

from __future__ import annotations

import pytest

from runplan.ops import (
    CheckpointRequest,
    MonitoringRequest,
    MonitoringSpec,
    OperationsSpec,
    plan_checkpoints,
    plan_monitoring,
)


def _monitoring(**kw):
    base = dict(
        total_steps=1_000,
        tokens_per_step=16e6,
        step_seconds=5.0,
        seq_len=4096,
        checkpoint_interval_steps=5_000,
        dp=64,
    )
    base.update(kw)
    return plan_monitoring(MonitoringRequest(**base))


def test_rollback_redo_is_capped_at_the_run():
    # interval 5,000 steps (longer than the 1,000-step run): margin 100 + detection 200 + 5,000 − 1 = 5,299
    # steps of redone work was printed, 5× the run. No rollback redoes more than the steps run so far: with no
    # checkpoint that old it restarts from step 0, so the most is the run's 1,000 steps.
    m = _monitoring()
    assert m.rollback_max_redo_steps == 1_000
    assert m.rollback_max_redo_tokens == pytest.approx(1_000 * 16e6)
    assert m.rollback_max_redo_seconds == pytest.approx(1_000 * 5.0)
    assert "capped at the run's 1,000 steps" in m.notes["rollback_max_redo_steps"]
    assert "restart from step 0" in m.rollback_procedure[1]
    assert m.rollback_procedure[3].startswith("work redone: 300 to 1,000 steps")


def test_rollback_redo_uncapped_in_a_long_run():
    # docs/operations.md §4: 300 to 300 + k − 1 steps; k = 250, a 100,000-step run → 549
    m = _monitoring(total_steps=100_000, checkpoint_interval_steps=250)
    assert m.rollback_max_redo_steps == 549
    assert "capped" not in m.notes["rollback_max_redo_steps"]
    assert "restart from step 0" not in m.rollback_procedure[1]


def test_canary_warning_uses_the_rounded_canary():
    # 1,024 canary sequences rounded to a multiple of dp = 4,096 is 4,096 sequences: outside 512-2,048, which
    # the warning missed because it read the plan file's 1,024
    m = _monitoring(dp=4096, checkpoint_interval_steps=50)
    assert m.canary_examples == 4096
    assert any("canary of 4,096 examples" in w and "dp = 4,096" in w for w in m.warnings)


def test_canary_that_never_runs_warns():
    m = _monitoring(spec=MonitoringSpec(canary_every_steps=10**9, max_canary_overhead_fraction=0))
    assert m.canary_evaluations == 0
    assert any("never" in w and "canary_every_steps" in w for w in m.warnings)


def _checkpoint(**kw):
    base = dict(
        total_params=1e9,
        tp=1,
        pp=1,
        dp=64,
        step_seconds=10.0,
        tokens_per_step=4e6,
        total_steps=10_000,
        training_tokens=4e10,
        job_mtbf_seconds=1e6,
    )
    base.update(kw)
    return plan_checkpoints(CheckpointRequest(**base))


def test_milestones_beyond_the_run_are_not_promised():
    # milestone_every_tokens 1e30 (or any spacing past the run's end): 0 milestones, no milestone storage, and
    # the procedure no longer says "every 2.5e+23 steps: keep that generation permanently as a milestone"
    p = _checkpoint(spec=OperationsSpec(milestone_every_tokens=1e30))
    assert p.milestones == 0 and p.milestone_storage_bytes == 0
    assert p.retention_procedure[-1].startswith("no milestone falls within the run")
    assert "10,000" in p.retention_procedure[-1]
    assert "e+" in p.notes["milestone_every_steps"]  # 2.500e+23 steps, not a 24-digit integer


def test_milestones_inside_the_run_keep_the_recipe():
    # δ = 2 s + (14e9 / 64 B) / 50 GB/s = 2.004 s; Daly τ ≈ sqrt(2 × 2.004 × 1e6) = 2,002 s = 200 steps of 10 s;
    # every 10% of 4e10 tokens = 4e9 / 4e6 = 1,000 steps, a multiple of 200 → ⌊10,000 / 1,000⌋ = 10 milestones
    p = _checkpoint()
    assert p.interval_steps == 200 and p.milestone_every_steps == 1_000
    assert p.milestones == 10
    assert p.retention_procedure[-1].startswith(f"every {p.milestone_every_steps:,} steps")
