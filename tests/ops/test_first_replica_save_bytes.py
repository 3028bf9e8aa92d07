"""A save that is not fully parallel: the busiest node writes the first replica's shards, not 8 of them."""

from __future__ import annotations

import pytest

from runplan.ops import CheckpointRequest, OperationsSpec, plan_checkpoints

RNG = 2_500 + 2_500 + 5_056 + 16  # bytes per rank (docs/operations.md §2)
CURSOR = 1_024  # bytes per data-parallel replica


def _plan(**kw):
    base = dict(
        total_params=1e9,
        tp=1,
        pp=1,
        dp=64,
        step_seconds=1.0,
        tokens_per_step=4e6,
        total_steps=10_000,
        training_tokens=4e10,
        job_mtbf_seconds=1e6,
        spec=OperationsSpec(fully_parallel_save=False, host_staging=False),
    )
    base.update(kw)
    return plan_checkpoints(CheckpointRequest(**base))


def test_zero0_tp1_one_gpu_of_the_node_writes_everything():
    # 1e9 params, t = p = 1, ZeRO-0, first replica only: rank 0 writes 14 B × 1e9 + its RNG + the cursor; the 7
    # other GPUs of its node write only their RNG state. Before the fix the node was charged 8 × 14 GB = 112 GB,
    # so the synchronous save took 2 + 112/25 = 6.48 s instead of 2 + 14/25 = 2.56 s.
    p = _plan(zero=0)
    assert p.written_bytes_per_rank == 14e9 + RNG + CURSOR
    assert p.written_bytes_per_node == pytest.approx(14e9 + RNG + CURSOR + 7 * RNG)
    assert p.sync_seconds == pytest.approx(2 + (14e9 + CURSOR + 8 * RNG) / 25e9)
    assert p.sync_bound == "per-node write bandwidth"


def test_zero1_tp1_others_write_their_optimizer_shards():
    # ZeRO-1: master + m + v (12 B/param) are sharded over all 64 ranks: 187.5 MB each. Rank 0 adds the 2 GB of
    # bf16 weights: 2,187,511,096 B; the 7 others 187,510,072 B; node total 3,500,081,600 B.
    p = _plan(zero=1)
    assert p.written_bytes_per_rank == 2e9 + 12e9 / 64 + RNG + CURSOR
    assert p.written_bytes_per_node == pytest.approx(2_187_511_096 + 7 * 187_510_072)


def test_tp8_first_replica_fills_the_node():
    # t = 8: all 8 GPUs of a node belong to the first replica, each writing its 1/8 of the weights plus its
    # optimizer shard: 8 × (2e9/8 + 12e9/64) + RNG and cursor (unchanged from the simple 8 × per-rank figure)
    p = _plan(zero=1, tp=8, dp=8)
    assert p.written_bytes_per_node == pytest.approx(8 * p.written_bytes_per_rank)
    assert p.written_bytes_per_rank == pytest.approx(2e9 / 8 + 12e9 / 64 + RNG + CURSOR)


def test_fully_parallel_save_unchanged():
    # docs/operations.md §2: each rank writes total / world, a node 8 of them
    p = _plan(zero=1, spec=OperationsSpec())
    assert p.written_bytes_per_rank == pytest.approx(p.total_bytes / 64)
    assert p.written_bytes_per_node == pytest.approx(8 * p.total_bytes / 64)
