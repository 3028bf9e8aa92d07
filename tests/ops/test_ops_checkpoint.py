"""Checkpoint stage: sizes by part, sharding, sync vs async, the Daly interval rounded to steps, storage."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runplan.ops import (
    CheckpointRequest,
    OperationsSpec,
    daly_interval_seconds,
    plan_checkpoints,
    young_interval_seconds,
)
from runplan.ops.checkpoint import CURSOR_BYTES_PER_REPLICA, RNG_BYTES_PER_RANK


def test_daly_by_hand():
    # δ = 30 s, M = 3 h = 10,800 s: sqrt(2δM) = sqrt(648,000) = 804.984; δ/2M = 1/720
    # τ = 804.984 × (1 + sqrt(1/720)/3 + 1/(720·9)) − 30 = 804.984 × 1.0125769 − 30 = 785.109 s
    assert young_interval_seconds(30, 10_800) == pytest.approx(804.984, abs=1e-3)
    assert daly_interval_seconds(30, 10_800) == pytest.approx(785.109, abs=1e-2)
    # δ ≥ 2M: Daly falls back to τ = M
    assert daly_interval_seconds(25_000, 10_000) == 10_000


def _request(**kw):
    base = dict(
        total_params=70_000_000_000,
        tp=8,
        pp=4,
        dp=16,
        zero=1,
        step_seconds=8.0,
        tokens_per_step=4e6,
        total_steps=350_000,
        training_tokens=1.4e12,
        job_mtbf_seconds=356_323.0,
    )
    base.update(kw)
    return CheckpointRequest(**base)


def test_sizes_and_shards_70b():
    c = plan_checkpoints(_request())
    parts = {p.name: p for p in c.parts}
    assert parts["weights_bf16"].bytes == 140e9 and parts["weights_bf16"].shards == 32
    assert parts["master_fp32"].bytes == 280e9 and parts["master_fp32"].shards == 512
    assert parts["adam_m_fp32"].bytes == parts["adam_v_fp32"].bytes == 280e9
    assert parts["rng_states"].bytes == RNG_BYTES_PER_RANK * 512
    assert parts["dataloader_cursor"].bytes == CURSOR_BYTES_PER_REPLICA * 16
    assert c.total_bytes == pytest.approx(980e9 + RNG_BYTES_PER_RANK * 512 + CURSOR_BYTES_PER_REPLICA * 16)
    assert c.bytes_per_param == pytest.approx(14.0, abs=1e-3)
    # held per GPU: weights 140e9/32 = 4.375 GB + optimizer 840e9/512 = 1.640625 GB
    assert c.held_bytes_per_gpu == pytest.approx(4.375e9 + 1.640625e9)
    assert c.written_bytes_per_rank == pytest.approx(c.total_bytes / 512)
    assert c.n_nodes == 64


def test_zero0_and_not_fully_parallel_writes_more_per_rank():
    spec = OperationsSpec(fully_parallel_save=False)
    c = plan_checkpoints(_request(zero=0, spec=spec))
    # optimizer replicated over dp: each model-parallel shard writes 14 B/param / 32
    assert c.written_bytes_per_rank == pytest.approx(
        980e9 / 32 + RNG_BYTES_PER_RANK + CURSOR_BYTES_PER_REPLICA
    )


def test_sync_vs_async_blocking():
    spec = OperationsSpec(storage_write_bandwidth_bytes_per_s=100e9, node_write_bandwidth_bytes_per_s=None)
    c = plan_checkpoints(_request(spec=spec))
    assert c.sync_seconds == pytest.approx(2 + c.total_bytes / 100e9)  # fixed 2 s + 9.8 s
    assert c.background_write_seconds == pytest.approx(c.total_bytes / 100e9)
    assert c.sync_bound == "aggregate storage bandwidth"
    assert c.async_blocking_seconds == pytest.approx(2 + c.written_bytes_per_rank / 50e9)
    assert c.save_blocking_seconds == c.async_blocking_seconds < c.sync_seconds
    sync = plan_checkpoints(_request(spec=spec.model_copy(update={"host_staging": False})))
    assert sync.save_blocking_seconds == sync.sync_seconds
    # a bigger δ gives a longer interval
    assert sync.daly_interval_seconds > c.daly_interval_seconds


def test_node_bandwidth_can_bind():
    spec = OperationsSpec(storage_write_bandwidth_bytes_per_s=10e12, node_write_bandwidth_bytes_per_s=5e9)
    c = plan_checkpoints(_request(spec=spec))
    assert c.sync_bound == "per-node write bandwidth"
    assert c.sync_seconds == pytest.approx(2 + 8 * c.written_bytes_per_rank / 5e9)


def test_interval_is_daly_for_printed_delta_and_mtbf_rounded_to_steps():
    # 1B params on one GPU, synchronous, storage at total/30 B/s → δ = 30 s exactly; M = 10,800 s; 10 s steps
    total = 14e9 + RNG_BYTES_PER_RANK + CURSOR_BYTES_PER_REPLICA
    spec = OperationsSpec(
        storage_write_bandwidth_bytes_per_s=total / 30,
        node_write_bandwidth_bytes_per_s=None,
        host_staging=False,
        save_fixed_seconds=0,
    )
    c = plan_checkpoints(
        CheckpointRequest(
            total_params=1_000_000_000,
            gpus_per_node=1,
            step_seconds=10.0,
            tokens_per_step=1e6,
            total_steps=100_000,
            training_tokens=1e11,
            job_mtbf_seconds=10_800.0,
            spec=spec,
        )
    )
    assert c.save_blocking_seconds == pytest.approx(30.0)
    assert c.daly_interval_seconds == pytest.approx(785.109, abs=1e-2)
    assert c.daly_interval_seconds == daly_interval_seconds(c.save_blocking_seconds, c.job_mtbf_seconds)
    assert c.interval_steps == 79  # round(78.51)
    assert c.main_interval_seconds == 790.0
    assert c.interval_tokens == 79e6


def test_retention_and_storage():
    c = plan_checkpoints(_request())
    assert c.retention_generations == 3
    assert c.rolling_storage_bytes == pytest.approx(4 * c.total_bytes)
    assert c.milestone_every_steps % c.interval_steps == 0
    assert c.milestones == 350_000 // c.milestone_every_steps
    assert c.storage_bytes == pytest.approx(c.rolling_storage_bytes + c.milestones * c.total_bytes)
    assert any("checksum" in line for line in c.retention_procedure)
    light = plan_checkpoints(
        _request(spec=OperationsSpec(milestone_weights_only=True, milestone_every_tokens=1e11))
    )
    assert light.milestone_bytes == 140e9
    assert light.milestone_every_tokens == pytest.approx(1e11, rel=light.interval_steps * 4e6 / 1e11)


def test_slow_background_write_raises_the_interval():
    spec = OperationsSpec(storage_write_bandwidth_bytes_per_s=1e9)  # 980 s per write; Daly: ~290 s
    c = plan_checkpoints(_request(spec=spec, job_mtbf_seconds=20_000.0))
    assert c.background_write_seconds == pytest.approx(980.0, rel=1e-4)
    assert c.interval_steps == math.ceil(c.background_write_seconds / 8.0)  # 123 steps of 8 s
    assert c.main_interval_seconds >= c.background_write_seconds > c.daly_interval_seconds
    assert any("interval was raised" in w for w in c.warnings)
    assert "raised" in c.notes["interval_steps"]


def test_rollback_points_when_rolling_generations_are_too_short():
    # interval 21 steps at the default 2 s fixed cost would leave 3 generations 42 steps deep
    c = plan_checkpoints(_request(job_mtbf_seconds=20_000.0))
    assert (c.retention_generations - 1) * c.interval_steps < 300
    assert c.rollback_generations == 2
    assert c.rollback_every_steps == math.ceil(300 / c.interval_steps) * c.interval_steps
    assert c.rollback_storage_bytes == pytest.approx(2 * c.total_bytes)
    assert c.storage_bytes == pytest.approx(
        c.rolling_storage_bytes + c.rollback_storage_bytes + c.milestone_storage_bytes
    )
    deep = plan_checkpoints(
        _request(job_mtbf_seconds=20_000.0, spec=OperationsSpec(retention_generations=40))
    )
    assert deep.rollback_generations == 0 and deep.rollback_storage_bytes == 0


@settings(max_examples=100, deadline=None)
@given(delta=st.floats(0.01, 1e4), m1=st.floats(60, 1e7), grow=st.floats(1.001, 100))
def test_interval_grows_with_mtbf(delta, m1, grow):
    assert daly_interval_seconds(delta, m1 * grow) >= daly_interval_seconds(delta, m1)
    assert young_interval_seconds(delta, m1 * grow) > young_interval_seconds(delta, m1)
    if delta < 2 * m1:
        assert 0 < daly_interval_seconds(delta, m1) <= young_interval_seconds(delta, m1)


@settings(max_examples=50, deadline=None)
@given(
    step=st.floats(0.5, 60),
    m=st.floats(3600, 1e6),
    tp=st.sampled_from([1, 2, 4, 8]),
    pp=st.sampled_from([1, 2, 4, 16]),
    dp=st.integers(1, 64),
    zero=st.integers(0, 3),
)
def test_interval_steps_is_rounded_daly(step, m, tp, pp, dp, zero):
    c = plan_checkpoints(_request(step_seconds=step, job_mtbf_seconds=m, tp=tp, pp=pp, dp=dp, zero=zero))
    assert c.interval_steps == max(1, round(c.daly_interval_seconds / step))
    assert (
        abs(c.main_interval_seconds - c.daly_interval_seconds)
        <= max(step / 2, step - c.daly_interval_seconds) + 1e-9
    )
    assert sum(p.bytes for p in c.parts) == pytest.approx(c.total_bytes)
    assert c.held_bytes_per_gpu * tp * pp * dp >= 14 * 70e9 - 1  # shards cover the whole state
    assert math.isclose(c.world_size, tp * pp * dp)


def test_context_parallel_ranks_share_one_data_loader_cursor():
    # TP8 PP4 DP8 CP2 = 512 ranks: the two cp ranks of a replica read the same sequences (each its half of
    # them), so there are dp = 8 cursors, not dp × cp = 16; every rank still has its own RNG states
    c = plan_checkpoints(_request(dp=8, cp=2))
    parts = {p.name: p for p in c.parts}
    assert parts["dataloader_cursor"].bytes == CURSOR_BYTES_PER_REPLICA * 8
    assert parts["dataloader_cursor"].shards == 8
    assert parts["rng_states"].bytes == RNG_BYTES_PER_RANK * 512
    # the model state is still sharded over dp × cp = 16 under ZeRO-1 (the optimizer's shards)
    assert parts["master_fp32"].shards == 4 * 8 * 16
