"""Every number `runplan plan --detail` prints, checked against a published or hand-derived value.

Each test writes its arithmetic in a comment. Published anchors: Llama 3 (arXiv 2407.21783 §3.3.4: 419
unexpected interruptions in 54 days on 16,384 H100 = 2,048 nodes), the Llama 3.1 model card (405B: 30.84M
H100 GPU-hours at 700 W TDP), PaLM §5.1 (roll back ~100 steps, skip 200-500 batches), DeepSeek LLM §3.1
(B_opt = 0.2920·C^0.3271, η_opt = 0.3118·C^−0.125), Young 1974 and Daly 2006 (checkpoint interval).
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from runplan.ops import (
    CheckpointRequest,
    CostRequest,
    MonitoringRequest,
    MonitoringSpec,
    OperationsSpec,
    ReliabilityRequest,
    ScheduleRequest,
    ScheduleSpec,
    assess_reliability,
    daly_interval_seconds,
    estimate_cost,
    job_mtbf_seconds,
    plan_checkpoints,
    plan_monitoring,
    plan_schedule,
    young_interval_seconds,
)
from runplan.ops.reliability import LLAMA3_FAILURES_PER_1000_NODE_DAYS

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(scope="module")
def plan405():
    from runplan.plan import build_plan
    from runplan.spec import load_plan

    return build_plan(load_plan(EXAMPLES / "405b-16k-h100-8k.yaml"), EXAMPLES)


@pytest.fixture(scope="module")
def plan70():
    from runplan.plan import build_plan
    from runplan.spec import load_plan

    return build_plan(load_plan(EXAMPLES / "70b-512-h100.yaml"), EXAMPLES)


def _rows(plan) -> dict[tuple[str, str], tuple[str, str]]:
    from runplan.report.sections import plan_sections

    return {(s.title, what): (value, why) for s in plan_sections(plan) for what, value, why in s.rows}


# ---- failures and goodput -----------------------------------------------------------------------------


def test_llama3_job_mtbf_and_interruptions_on_16k_gpus(plan405):
    # Llama 3: job MTBF = 54 d × 86,400 s / 419 = 4,665,600 / 419 = 11,135.08 s = 3.093 h on 2,048 nodes
    assert job_mtbf_seconds(LLAMA3_FAILURES_PER_1000_NODE_DAYS, 2048) == pytest.approx(11_135.08, abs=0.01)
    r = plan405.reliability
    assert r.n_nodes == 2048  # 16,384 GPUs / 8 per node
    assert r.job_mtbf_seconds == pytest.approx(11_135.08, abs=0.01)
    # expected interruptions = elapsed / M = effective days × 419 / 54 (Llama 3's own rate, 7.759 per day);
    # printed: 71.24 d × 7.759 = 552.8
    assert r.expected_interruptions == pytest.approx(r.effective_days * 419 / 54, rel=1e-9)
    assert 500 < r.expected_interruptions < 600
    # goodput near Llama 3's reported "> 90% effective training time" (§3.3.4)
    assert 0.9 <= r.goodput < 0.97


def test_failure_loss_first_order_goodput_and_days_by_hand():
    # τ = 1,800 s, δ = 30 s, M = 20,000 s, R = 600 s, W = 100 τ = 180,000 s (10 nodes at 432 per 1,000 node-days:
    # λ = 10 × 432 / 1000 = 4.32 per day → M = 86,400 / 4.32 = 20,000 s)
    # exact E[T] = 20,000 · e^0.03 · (e^0.0915 − 1) = 1,974.697 s → elapsed 197,469.7 s
    # failure loss = elapsed − W − saves = 197,469.7 − 180,000 − 100 × 30 = 14,469.7 s
    # first order E[T] = 1,830 × (1 + 1,830/40,000 + 600/20,000) = 1,830 × 1.07575 = 1,968.6225 s
    # first-order goodput = 180,000 / 196,862.25 = 0.914345; useful days = 180,000 / 86,400 = 2.08333
    spec = OperationsSpec(failures_per_1000_node_days=432.0, restart_seconds=600.0)
    r = assess_reliability(
        ReliabilityRequest(
            n_nodes=10,
            useful_seconds=180_000.0,
            interval_seconds=1800.0,
            save_blocking_seconds=30.0,
            spec=spec,
        )
    )
    assert r.job_mtbf_seconds == pytest.approx(20_000.0)
    assert r.job_interruptions_per_day == pytest.approx(4.32)
    assert r.expected_failure_loss_seconds == pytest.approx(14_469.66, abs=0.01)
    assert r.save_overhead_seconds == pytest.approx(3000.0)
    assert r.first_order_segment_seconds == pytest.approx(1968.6225)
    assert r.first_order_goodput == pytest.approx(0.914345, abs=1e-6)
    assert r.useful_days == pytest.approx(2.083333, abs=1e-6)
    assert r.expected_interruptions == pytest.approx(197_469.66 / 20_000, abs=1e-5)  # 9.873


# ---- checkpointing ------------------------------------------------------------------------------------


def test_young_and_daly_at_the_llama3_mtbf_with_a_two_second_save():
    # δ = 2 s, M = 11,135.08 s: Young sqrt(2 × 2 × 11,135.08) = sqrt(44,540.33) = 211.046 s
    # Daly: δ/2M = 8.9806e-5, factor 1 + sqrt(8.9806e-5)/3 + 8.9806e-5/9 = 1.0031689 → 211.046 × 1.0031689 − 2
    #       = 209.715 s (3.5 min, the interval the 405B example prints)
    m = 54 * 86400 / 419
    assert young_interval_seconds(2.0, m) == pytest.approx(211.046, abs=1e-3)
    assert daly_interval_seconds(2.0, m) == pytest.approx(209.715, abs=1e-3)


def _checkpoint_405b_like(**kw):
    base = dict(
        total_params=400_000_000_000,
        tp=8,
        pp=16,
        dp=64,
        cp=2,
        zero=1,
        step_seconds=6.0,
        tokens_per_step=16_777_216,
        total_steps=940_000,
        training_tokens=15.6e12,
        job_mtbf_seconds=54 * 86400 / 419,
    )
    base.update(kw)
    return plan_checkpoints(CheckpointRequest(**base))


def test_checkpoint_bytes_save_times_and_interval_405b_like():
    c = _checkpoint_405b_like()
    # 14 B/param (bf16 weights 2 + fp32 master 4 + Adam m 4 + v 4; ZeRO §3.1 counts 16 with fp16 grads)
    # = 5.6e12 B; RNG 10,072 B × 16,384 ranks = 165,019,648 B; cursor 1,024 B × dp 64 = 65,536 B (the two
    # cp ranks of a replica share one)
    # total = 5,600,165,085,184 B
    assert c.total_bytes == 5_600_165_085_184
    assert c.bytes_per_param == pytest.approx(14.0004, abs=1e-4)
    parts = {p.name: p for p in c.parts}
    assert parts["weights_bf16"].shards == 128  # t·p = 8·16
    assert parts["master_fp32"].shards == 16_384  # ZeRO-1: t·p·(d·c)
    # fully parallel: 5,600,165,085,184 / 16,384 = 341,806,951 B per rank
    assert c.written_bytes_per_rank == pytest.approx(341_806_951.0)
    # async: 2 s + 341,806,951 / 50e9 = 2.006836 s; sync: 2 + max(5.6e12 / 2e12 = 2.80008,
    # 8 × 341,806,951 / 25e9 = 0.109378) = 4.800083 s
    assert c.async_blocking_seconds == pytest.approx(2.006836, abs=1e-6)
    assert c.sync_seconds == pytest.approx(4.800083, abs=1e-6)
    assert c.save_blocking_seconds == c.async_blocking_seconds
    # Daly at δ = 2.006836, M = 11,135.08: sqrt(2δM) = 211.406, × 1.0031742 − 2.0068 = 210.072 s
    # → round(210.072 / 6) = round(35.01) = 35 steps; 35 × 16,777,216 = 587,202,560 tokens
    assert c.daly_interval_seconds == pytest.approx(210.07, abs=0.01)
    assert c.interval_steps == 35
    assert c.interval_tokens == 587_202_560
    # ⌈940,000 / 35⌉ = 26,858 saves
    assert c.checkpoints_per_run == 26_858
    # milestones: 10% of 15.6e12 = 1.56e12 tokens / 16,777,216 = 92,983.2 steps = 2,656.7 intervals
    # → round → 2,657 × 35 = 92,995 steps; ⌊940,000 / 92,995⌋ = 10 milestones
    assert c.milestone_every_steps == 92_995
    assert c.milestones == 10
    # rollback: 3 generations reach (3 − 1) × 35 = 70 < 300 steps → keep 2 at multiples of ⌈300/35⌉·35 = 315
    assert c.rollback_every_steps == 315 and c.rollback_generations == 2
    # storage = (3 + 1) × total + 2 × total + 10 × total = 16 × 5,600,165,085,184 B = 89.6 TB
    assert c.storage_bytes == pytest.approx(16 * 5_600_165_150_720)


def test_the_sync_note_names_the_node_bandwidth():
    c = _checkpoint_405b_like()
    # per node 8 × 341.8 MB = 2.73 GB over the 25 GB/s node NIC (OperationsSpec default)
    assert "/ 25 GB/s node bandwidth" in c.notes["sync_seconds"]
    assert "3 kept + 1 being written" in c.notes["storage_bytes"]


# ---- schedule -----------------------------------------------------------------------------------------


def test_schedule_of_the_405b_example_by_hand():
    # 15.6e12 tokens at 8,192, dp 64, micro-batch 1, batch 2,048 sequences = 16,777,216 tokens, interleaved PP 16
    s = plan_schedule(
        ScheduleRequest(
            training_tokens=15.6e12,
            compute_flops=4e25,
            seq_len=8192,
            dp=64,
            micro_batch=1,
            microbatch_multiple=16,
            spec=ScheduleSpec(global_batch_tokens=16_777_216),
        )
    )
    # DeepSeek LLM: B_opt = 0.2920 × (4e25)^0.3271 = 6.9154e7 tokens; η = 0.3118 × (4e25)^−0.125 = 1.96616e-4
    assert s.law_batch_tokens == pytest.approx(6.9154e7, rel=1e-4)
    assert s.peak_lr == pytest.approx(1.96616e-4, rel=1e-5)
    # ramp: half of 2,048 = 1,024 sequences (a multiple of u·p = 64 × 16); 0.015 × 15.6e12 = 2.34e11 tokens
    # / 8,388,608 = 27,894.97 → 27,895 steps = 234,000,220,160 tokens
    ramp, main = s.batch_stages
    assert ramp.global_batch_sequences == 1024 and ramp.steps == 27_895
    # main: (15.6e12 − 234,000,220,160) / 16,777,216 = 915,884.96 → 915,885 steps; total 943,780
    assert main.steps == 915_885 and s.total_steps == 943_780
    # scheduled = 234,000,220,160 + 915,885 × 16,777,216 = 15,600,000,696,320 tokens
    assert s.scheduled_tokens == 15_600_000_696_320
    # warmup 1% = 1.56e11 tokens, inside the ramp: 1.56e11 / 8,388,608 = 18,596.65 → 18,597 steps
    assert s.warmup_steps == 18_597
    # cooldown 20% = 3.12e12 tokens at 16,777,216 per step = 185,966.5 → the tie goes to the earlier start: 185,967
    assert s.cooldown_steps == 185_967
    assert "C = M·D" in s.notes["law_batch_tokens"] and "C = M·D" in s.notes["peak_lr"]


# ---- monitoring ---------------------------------------------------------------------------------------


def test_monitoring_numbers_of_the_405b_example_by_hand():
    m = plan_monitoring(
        MonitoringRequest(
            total_steps=943_780,
            tokens_per_step=16_777_216,
            step_seconds=6.142,
            seq_len=8192,
            checkpoint_interval_steps=34,
            retention_generations=3,
            rollback_checkpoint_every_steps=306,
            dp=64,
        )
    )
    # canary 1,024 × 8,192 = 8,388,608 tokens = half a batch, forward only (2N of 6N): 6.142 × 0.5 / 3 = 1.02367 s
    # overhead 1.02367 / (100 × 6.142) = 1/600 = 0.1667%
    assert m.canary_seconds == pytest.approx(1.023667, abs=1e-6)
    assert m.canary_overhead_fraction == pytest.approx(1 / 600)
    # planning defaults printed as given: grad norm 5× over 1,000 steps, canary ± 2σ over 500 steps = 5 evaluations
    assert (m.grad_norm_factor, m.grad_norm_window_steps, m.canary_sigma) == (5.0, 1000, 2.0)
    assert (m.canary_window_steps, m.canary_window_evaluations) == (500, 5)
    # spike recovery 200 steps × 16,777,216 = 3,355,443,200 tokens
    assert m.spike_recovery_tokens == 3_355_443_200
    # PaLM §5.1: margin 100, skip 200-500 batches; redo ≤ 100 + 200 + 306 − 1 = 605 steps (the newest checkpoint
    # at or before s − 100, one every 306 steps, is at most 305 steps older)
    assert m.rollback_margin_steps == 100 and (m.skip_batches_min, m.skip_batches_max) == (200, 500)
    assert m.rollback_max_redo_steps == 605
    assert m.skip_tokens_max == 500 * 16_777_216  # 8,388,608,000
    assert "a planning choice" in m.notes["grad_norm_factor"]
    assert MonitoringSpec().spike_recovery_fraction == 0.05


# ---- time, cost and energy ----------------------------------------------------------------------------


def test_cost_and_energy_at_llama31_405b_published_gpu_hours():
    # Llama 3.1 model card: 405B pre-training took 30.84M H100 GPU-hours at 700 W TDP.
    # On 16,384 GPUs: 30.84e6 / 16,384 = 1,882.32 h = 78.43 days (goodput 1 here)
    # GPU energy 700 W × 30.84e6 h = 21,588 MWh; × PUE 1.2 = 25,905.6 MWh; cost 30.84e6 × 2 USD = 61.68M USD
    seconds = 30.84e6 * 3600 / 16_384
    c = estimate_cost(
        CostRequest(n_gpus=16_384, tdp_watts=700, useful_seconds=seconds, price_per_gpu_hour=2.0)
    )
    assert c.main.billed_gpu_hours == pytest.approx(30.84e6)
    assert c.main.wall_clock_days == pytest.approx(78.43, abs=0.01)
    assert c.main.gpu_only_energy_mwh == pytest.approx(21_588.0)
    assert c.main.energy_mwh == pytest.approx(25_905.6)
    assert c.main.cost == pytest.approx(61.68e6)
    assert c.pue == 1.2  # default: Jean Zay for BLOOM (Luccioni et al. 2023)


def test_totals_and_sweep_fraction_by_hand():
    # main: 512 GPUs × 720 h = 368,640 GPU-h → 737,280 USD, 700 × 368,640 × 1.2 / 1e6 = 309.6576 MWh
    # sweep: 36,864 GPU-h → 73,728 USD, 30.96576 MWh; fraction 73,728 / 737,280 = 10%
    c = estimate_cost(
        CostRequest(n_gpus=512, tdp_watts=700, useful_seconds=720 * 3600.0, sweep_gpu_hours=36_864.0)
    )
    assert c.total_cost == pytest.approx(737_280 + 73_728)
    assert c.total_energy_mwh == pytest.approx(309.6576 + 30.96576)
    assert c.sweep_cost_fraction == pytest.approx(0.10)


def test_the_405b_example_lands_near_llama31_published_gpu_hours(plan405):
    # Llama 3.1 model card: 30.84M GPU-hours for the 405B; the plan bills 16,384 × elapsed hours (28.0M when
    # written). A different time model may move it, but not by a quarter.
    billed = plan405.cost.main.billed_gpu_hours
    assert billed == pytest.approx(16_384 * plan405.reliability.expected_elapsed_seconds / 3600)
    assert 0.75 < billed / 30.84e6 < 1.25
    # energy = 700 W × GPU-h × 1.2 / 1e6; cost = GPU-h × 2 USD
    assert plan405.cost.main.energy_mwh == pytest.approx(700 * billed * 1.2 / 1e6)
    assert plan405.cost.main.cost == pytest.approx(2.0 * billed)


# ---- layout and architecture rows ---------------------------------------------------------------------


def test_layout_rows_of_the_70b_example_are_their_formulas(plan70):
    best, shape = plan70.layout.best, plan70.model.shape
    # tokens/s = batch tokens / step time; per GPU = / 512
    assert best.tokens_per_second == pytest.approx(best.global_batch_tokens / best.step_seconds)
    assert best.tokens_per_second_per_gpu == pytest.approx(best.tokens_per_second / 512)
    # MFU = tokens/s × model FLOPs per token / (512 × 989e12 H100 dense BF16, NVIDIA datasheet)
    assert best.mfu == pytest.approx(best.tokens_per_second * plan70.model.flops_per_token / (512 * 989e12))
    # bubble (p − 1)/(v·m) (Narayanan et al. 2021 §2.2)
    assert best.bubble_fraction == pytest.approx((best.pp - 1) / (best.vpp * best.microbatches))
    # Llama 3.1 70B embeddings: 128,256 × 8,192 × 2 (untied) = 2,101,346,304; total 70,553,706,496 (published)
    assert plan70.model.embedding_params == 2_101_346_304
    assert plan70.model.total_params == 70_553_706_496
    assert plan70.model.non_embedding_params == 70_553_706_496 - 2_101_346_304
    assert shape.vocab_size == 128_256


def test_allocation_rows_explain_the_law_they_use(plan70):
    rows = _rows(plan70)
    # 2e12 / 70,553,706,496 = 28.35 tokens per parameter
    assert rows[("Allocation", "tokens per parameter")][0] == "28.3"
    assert "Hoffmann et al. 2022" in rows[("Allocation", "tokens per parameter")][1]
    assert "PaLM §4.1" in rows[("Parallel layout", "HFU")][1]


def test_a_moe_loss_names_the_moe_law():
    from runplan.plan import build_plan
    from runplan.spec import load_plan

    plan = build_plan(load_plan(EXAMPLES / "moe-mixtral-8x7b.yaml"), EXAMPLES)
    why = _rows(plan)[("Allocation", "predicted loss")][1]
    assert "Krajewski et al. 2024" in why and "Hoffmann" not in why
    assert math.isfinite(plan.allocation.loss)
