"""A job on fewer GPUs than a node holds writes only from its own ranks: 4 GPUs of an 8-GPU node wrote "28.4 GB/node"
of a 14.2 GB checkpoint (per-node bytes = written per rank × 8 GPUs per node), doubling the per-node term of the
synchronous save and the pinned host buffer.

Hand numbers: 1e9 parameters, TP1 PP1 DP4 ZeRO-1 on one 8-GPU node. Checkpoint = 14 B × 1e9 + RNG 4 × 10,072 B +
cursor 4 × 1,024 B = 14,000,044,384 B (docs/operations.md §2).
* Fully parallel: each of the 4 ranks writes total / 4; the node writes all 4 shares = the whole checkpoint, and
  the node term of δ_sync is 14.0 GB / 25 GB/s = 0.560 s (not 1.12 s).
* First replica only: rank 0 writes its bf16 weights 2e9 + its optimizer shard 12e9 / 4 = 3e9 + RNG 10,072 + cursor
  1,024; the node's 3 other ranks write their optimizer shards 3e9 + RNG 10,072 each:
  5,000,011,096 + 3 × 3,000,010,072 = 14,000,041,312 B (not 7 other GPUs).
"""

from __future__ import annotations

import pytest

from runplan.ops import CheckpointRequest, OperationsSpec, plan_checkpoints

TOTAL = 14 * 1_000_000_000 + 4 * 10_072 + 4 * 1_024


def _plan(**spec):
    return plan_checkpoints(
        CheckpointRequest(
            total_params=1_000_000_000,
            dp=4,
            zero=1,
            gpus_per_node=8,
            step_seconds=1.0,
            tokens_per_step=1e6,
            total_steps=10_000,
            training_tokens=1e10,
            job_mtbf_seconds=2.28e7,
            spec=OperationsSpec(host_staging=False, save_fixed_seconds=0.0, **spec),
        )
    )


def test_fully_parallel_save_of_a_half_node_job():
    c = _plan()
    assert c.n_nodes == 1 and c.world_size == 4
    assert c.total_bytes == TOTAL
    assert c.written_bytes_per_rank == pytest.approx(TOTAL / 4)
    assert c.written_bytes_per_node == pytest.approx(TOTAL)  # 4 ranks, not 8
    assert c.host_memory_bytes_per_node == pytest.approx(TOTAL)
    # δ_sync = max(14.0 GB / 2 TB/s = 0.007 s, 14.0 GB / 25 GB/s = 0.560 s)
    assert c.sync_seconds == pytest.approx(TOTAL / 25e9)
    assert c.sync_seconds == pytest.approx(0.560, abs=1e-3)
    assert "4 GPUs" in c.notes["written_bytes_per_node"]


def test_first_replica_save_of_a_half_node_job():
    c = _plan(fully_parallel_save=False)
    assert c.written_bytes_per_rank == 5_000_011_096
    assert c.written_bytes_per_node == pytest.approx(5_000_011_096 + 3 * 3_000_010_072)
    assert "3 other GPU(s)" in c.notes["written_bytes_per_node"]
    assert c.host_memory_bytes_per_node == c.written_bytes_per_node  # each GPU stages what it writes
    assert "8 ×" not in c.notes["host_memory_bytes_per_node"]


def test_a_full_node_is_unchanged():
    # 8 ranks on the 8-GPU node: per node = 8 × total / 8 = total; the formula for whole nodes is as before
    c = plan_checkpoints(
        CheckpointRequest(
            total_params=1_000_000_000,
            dp=8,
            gpus_per_node=8,
            step_seconds=1.0,
            tokens_per_step=1e6,
            total_steps=10_000,
            training_tokens=1e10,
            job_mtbf_seconds=2.28e7,
            spec=OperationsSpec(host_staging=False),
        )
    )
    assert c.written_bytes_per_node == pytest.approx(c.total_bytes)
    assert "8 GPUs" in c.notes["written_bytes_per_node"]
