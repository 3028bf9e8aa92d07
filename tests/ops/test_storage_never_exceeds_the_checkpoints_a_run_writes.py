"""Checkpoint storage is at most what the run ever writes. The rolling set ((g + 1) × size), rollback points and
milestones are counted apart as an upper bound (docs/operations.md §2, Retention), but in a short run they are the
same few checkpoints: a 1-day, 1-node plan wrote 10 checkpoints of 19.4 GB (194 GB) and printed "storage 253 GB";
a run with a single save (its Daly interval outlasts it) printed 4 × its checkpoint.

Hand numbers: 1e9 parameters on one GPU, 14 B/param + RNG 10,072 B + cursor 1,024 B = 14,000,011,096 B. Synchronous
save δ = 2 s + max(14.0 GB / 2 TB/s, 14.0 GB / 25 GB/s) = 2 + 0.56 = 2.56 s. With M = 1e7 s, Young τ = √(2 × 2.56 ×
1e7) = 7,155.4 s; Daly: 7,155.4 × (1 + ⅓·√(1.28e-7) + 1.28e-7/9) − 2.56 = 7,153.7 s → round(715.37) = 715 steps of 10 s.
"""

from __future__ import annotations

import pytest

from runplan.ops import CheckpointRequest, OperationsSpec, plan_checkpoints

SIZE = 14 * 1_000_000_000 + 10_072 + 1_024


def _plan(total_steps: int):
    return plan_checkpoints(
        CheckpointRequest(
            total_params=1_000_000_000,
            gpus_per_node=1,
            step_seconds=10.0,
            tokens_per_step=1e6,
            total_steps=total_steps,
            training_tokens=total_steps * 1e6,
            job_mtbf_seconds=1e7,
            spec=OperationsSpec(host_staging=False),
        )
    )


def test_hand_interval():
    c = _plan(5_000)
    assert c.total_bytes == SIZE
    assert c.save_blocking_seconds == pytest.approx(2.56)
    assert c.young_interval_seconds == pytest.approx(7_155.4, abs=0.1)
    assert c.daly_interval_seconds == pytest.approx(7_153.7, abs=0.1)
    assert c.interval_steps == 715


def test_a_run_with_one_save_stores_one_checkpoint():
    c = _plan(50)  # 50 steps of 10 s: the 715-step interval outlasts the run
    assert c.checkpoints_per_run == 1 and c.milestones == 0
    assert c.rolling_storage_bytes == 4 * SIZE  # the rolling set as a bound, (3 + 1) × size
    assert c.storage_bytes == SIZE  # but the run writes one checkpoint
    assert "1 checkpoint" in c.notes["storage_bytes"]


def test_milestones_that_are_every_save_are_not_counted_twice():
    # 5,000 steps: saves at 715 × k and at the end, ⌈5,000 / 715⌉ = 7; milestones every 10% = 500 steps, rounded to
    # a multiple of the interval → 715, ⌊5,000 / 715⌋ = 6 of them. Rolling 4 + milestones 6 = 10 > 7 written.
    c = _plan(5_000)
    assert c.checkpoints_per_run == 7
    assert c.milestone_every_steps == 715 and c.milestones == 6
    assert c.rollback_generations == 0  # 2 × 715 ≥ 300 steps back
    assert c.storage_bytes == 7 * SIZE
    assert "7 checkpoints" in c.notes["storage_bytes"]


def test_a_long_run_keeps_the_upper_bound():
    # 100,000 steps: ⌈100,000 / 715⌉ = 140 saves; milestones every round(10,000 / 715) = 14 intervals = 10,010
    # steps, ⌊100,000 / 10,010⌋ = 9 of them; rolling 4 + milestones 9 = 13 checkpoints kept, well under 140
    c = _plan(100_000)
    assert c.checkpoints_per_run == 140
    assert c.milestone_every_steps == 10_010 and c.milestones == 9
    assert c.storage_bytes == 13 * SIZE
    assert "capped" not in c.notes["storage_bytes"]
