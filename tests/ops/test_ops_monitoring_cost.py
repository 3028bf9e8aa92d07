"""Monitoring numbers for a concrete run, cost and energy by hand, and the every-number-has-a-reason rule."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from tests.ops._run70b import operations_70b

from runplan.ops import (
    CostLine,
    CostRequest,
    CostSpec,
    MonitoringRequest,
    MonitoringSpec,
    Operations,
    daly_interval_seconds,
    estimate_cost,
    plan_monitoring,
)


def _monitoring(**kw):
    base = dict(
        total_steps=100_000,
        tokens_per_step=1024 * 4096,
        step_seconds=10.0,
        seq_len=4096,
        checkpoint_interval_steps=250,
        dp=64,
    )
    base.update(kw)
    return plan_monitoring(MonitoringRequest(**base))


def test_canary_cheap_keeps_cadence():
    m = _monitoring()
    # canary = one batch of 1,024 × 4,096 tokens, forward only: 10 s × 1 / 3 = 3.33 s per 100 steps (1,000 s)
    assert m.canary_examples == 1024 and m.canary_every_steps == 100
    assert m.canary_seconds == pytest.approx(10 / 3)
    assert m.canary_overhead_fraction == pytest.approx(10 / 3 / 1000)
    assert m.canary_evaluations == 1000


def test_canary_expensive_raises_cadence():
    # batch is 64 sequences: the canary is 16 batches → 53.3 s; 1% budget needs ≥ 533 steps → 600
    m = _monitoring(tokens_per_step=64 * 4096)
    assert m.canary_seconds == pytest.approx(160 / 3)
    assert m.canary_every_steps == 600
    assert m.canary_overhead_fraction == pytest.approx(160 / 3 / 6000)
    assert m.canary_overhead_fraction <= 0.01
    assert m.canary_window_steps == 3000 and m.canary_window_evaluations == 5  # widened to 5 points


def test_rollback_numbers():
    # the newest checkpoint at or before s − 100, one every 250 steps, is 100 to 349 steps before the spike; the
    # divergence is declared at s + 200: 300 to 549 steps redone (it said 550: one step more than a checkpoint
    # every 250 steps can be away)
    m = _monitoring()
    tps = 1024 * 4096
    assert m.rollback_min_redo_steps == 300 and m.rollback_max_redo_steps == 549
    assert m.rollback_max_redo_tokens == 549 * tps
    assert m.skip_tokens_min == 200 * tps and m.skip_tokens_max == 500 * tps
    assert m.spike_recovery_seconds == 2000
    assert m.required_retention_generations == 3 and not m.warnings  # ⌈300/250⌉ + 1
    short = _monitoring(checkpoint_interval_steps=50)
    assert short.required_retention_generations == 7
    assert any("retention" in w for w in short.warnings)
    assert any("PaLM" in line for line in m.rollback_procedure)


def test_canary_rounds_to_dp():
    m = _monitoring(dp=96, spec=MonitoringSpec(canary_examples=1000))
    assert m.canary_examples % 96 == 0 and m.canary_examples == 960


def test_cost_by_hand():
    c = estimate_cost(
        CostRequest(n_gpus=512, tdp_watts=700, useful_seconds=30 * 86400.0, elapsed_seconds=32 * 86400.0)
    )
    assert c.main.useful_gpu_hours == 512 * 720
    assert c.main.billed_gpu_hours == 512 * 768  # 393,216
    assert c.main.cost == pytest.approx(786_432.0)
    assert c.main.energy_mwh == pytest.approx(700 * 393_216 * 1.2 / 1e6)  # 330.3 MWh
    assert c.main.goodput == pytest.approx(30 / 32)
    assert c.main.wall_clock_days == pytest.approx(32) and c.main.useful_days == pytest.approx(30)
    assert c.sweep is None and c.total_cost == c.main.cost
    assert "CPUs" in c.energy_leaves_out


def test_sweep_cost_from_flops():
    c = estimate_cost(
        CostRequest(
            n_gpus=512,
            tdp_watts=700,
            useful_seconds=86400.0,
            sweep_flops=1e21,
            sweep_mfu=0.4,
            gpu_peak_flops=989e12,
            sweep_gpus=64,
            price_per_gpu_hour=3,
            spec=CostSpec(pue=1.1),
        )
    )
    hours = 1e21 / (0.4 * 989e12) / 3600  # 702.17 GPU-hours
    assert c.sweep.billed_gpu_hours == pytest.approx(hours)
    assert c.sweep.cost == pytest.approx(3 * hours)
    assert c.sweep.wall_clock_days == pytest.approx(hours / 64 / 24)
    assert c.sweep.energy_mwh == pytest.approx(700 * hours * 1.1 / 1e6)
    assert c.total_cost == pytest.approx(c.main.cost + c.sweep.cost)
    with pytest.raises(ValidationError):
        CostRequest(n_gpus=8, tdp_watts=700, useful_seconds=1.0, sweep_flops=1e20)
    with pytest.raises(ValidationError):
        CostSpec(pue=0.9)


def test_a_number_without_a_reason_is_refused():
    with pytest.raises(ValidationError, match="no note for"):
        CostLine(
            name="x",
            gpus=1,
            useful_gpu_hours=1,
            billed_gpu_hours=1,
            useful_days=1,
            wall_clock_days=1,
            goodput=1,
            cost=1,
            energy_mwh=1,
            gpu_only_energy_mwh=1,
            notes={"gpus": "one"},
        )


def test_operate_chains_the_stages_consistently():
    ops = operations_70b()
    ck, rel = ops.checkpointing, ops.reliability
    assert rel.job_mtbf_seconds == ck.job_mtbf_seconds
    # the failure model's segments are the checkpoint stage's saves: τ is the average work of interval_steps
    # steps over the batch stages (the ramp's steps are shorter), so both count the same saves
    assert rel.segments == ck.checkpoints_per_run
    assert rel.interval_seconds < ck.main_interval_seconds  # (the example schedule has a batch ramp)
    assert rel.save_blocking_seconds == ck.save_blocking_seconds
    # the printed interval is Daly's for the printed δ and M
    assert ck.daly_interval_seconds == daly_interval_seconds(ck.save_blocking_seconds, ck.job_mtbf_seconds)
    spacing = ck.rollback_every_steps or ck.interval_steps
    assert ops.monitoring.rollback_max_redo_steps == 300 + spacing - 1
    assert (ck.retention_generations - 1) * ck.interval_steps >= 300 or ck.rollback_generations == 2
    assert not any("retention" in w for w in ops.warnings)
    # JSON round trip (the lead's resolved YAML and `check` rely on it)
    assert Operations.model_validate_json(ops.model_dump_json()) == ops


@settings(max_examples=15, deadline=None)
@given(step=st.floats(1.0, 30.0), gpn=st.sampled_from([4, 8]))
def test_operate_invariants(step, gpn):
    ops = operations_70b(gpus_per_node=gpn, step_seconds=step)
    assert 0 < ops.reliability.goodput <= 1
    assert ops.reliability.useful_seconds == pytest.approx(ops.useful_seconds)
    assert ops.checkpointing.interval_steps >= 1


def test_a_grad_norm_factor_at_or_below_one_is_refused():
    # the alert fires when the norm exceeds factor x its rolling mean: at 1 or below, about half of all steps
    with pytest.raises(ValidationError, match="greater than 1"):
        MonitoringSpec(grad_norm_factor=0.5)
    assert MonitoringSpec(grad_norm_factor=1.5).grad_norm_factor == 1.5
