"""FlashAttention's rate per GPU family: the published kernel benchmark reproduced, and the time model using it."""

from pathlib import Path

import numpy as np
import pytest
from tests.parallel.reference import layout
from tests.parallel.shapes import H100, LLAMA_70B

from runplan.calibrate.constants import (
    FLASH_ATTENTION_2,
    ISOLATED_GEMM_FRACTION,
    KERNEL_BENCHMARK_RATIOS,
    UNSEEN_KERNEL_RATIO,
    attention_fraction,
)
from runplan.calibrate.fit import with_attention, with_kernel
from runplan.parallel.grid import LayoutGrid
from runplan.parallel.layout import ParallelRequest
from runplan.parallel.search import evaluate
from runplan.parallel.stack import Stack
from runplan.parallel.timing import attention_kernel_speedup, default_efficiency

REPO = Path(__file__).resolve().parents[2]
SEQ = np.array([512, 1024, 2048, 4096, 8192, 16384], dtype=float)
# Forward + backward TFLOP/s, causal, head dim 128 (Dao 2023, arXiv 2307.08691, Fig. 4(d); flash-attention
# README, H100 80GB SXM5 figure). Bars as printed.
PUBLISHED = {
    ("ampere", "flash-attention-2"): ([99, 133, 155, 173, 182, 189], 312.0),
    ("hopper", "flash-attention-2"): ([163, 221, 265, 294, 308, 328], 989.0),
    ("ampere", "flash-attention-1"): ([55, 62, 69, 76, 80, 83], 312.0),
    ("ampere", "triton-flash-2023"): ([50, 61, 68, 74, 78, 80], 312.0),
}


@pytest.mark.parametrize("family", ["ampere", "hopper"])
def test_flash_attention_2_law_reproduces_the_published_bars(family):
    bars, peak = PUBLISHED[(family, "flash-attention-2")]
    r_max, s0 = FLASH_ATTENTION_2[family]
    predicted = r_max * peak / (1 + s0 / SEQ)
    np.testing.assert_allclose(predicted, bars, rtol=0.02)


@pytest.mark.parametrize("kernel", ["flash-attention-1", "triton-flash-2023"])
def test_named_kernel_benchmark_ratios_are_the_published_ratio_to_fa2(kernel):
    # ratio of the long-sequence rates (16k bars) within the fit's length dependence: 83/189 and 80/189 are 0.44
    # and 0.42; the fitted r_max ratios 81.5/193.5 and 80.4/193.5 are 0.42
    bars, _ = PUBLISHED[("ampere", kernel)]
    fa2, _ = PUBLISHED[("ampere", "flash-attention-2")]
    assert KERNEL_BENCHMARK_RATIOS[kernel] == pytest.approx(bars[-1] / fa2[-1], abs=0.025)
    # an unfitted kernel starts at FlashAttention-2's rate (constants.KERNEL_BENCHMARK_RATIOS says why)
    assert UNSEEN_KERNEL_RATIO == 1.0


def test_training_loop_attention_is_derated_as_the_gemms():
    # hand-derived: H100 r_max 333.5/989 = 0.3372; a training loop at gemm 0.70 of peak against 0.803 isolated
    # runs it at 0.3372 x 0.70 / 0.803 = 0.2940
    assert attention_fraction("hopper", 0.70) == pytest.approx(333.5 / 989 * 0.70 / 0.803, rel=1e-12)
    assert attention_fraction("hopper", 0.70) == pytest.approx(0.2940, abs=1e-4)
    # never above the peak, even for an absurd GEMM fraction
    assert attention_fraction("ampere", 1.0) <= 1.0
    assert ISOLATED_GEMM_FRACTION["ampere"] > ISOLATED_GEMM_FRACTION["hopper"]
    eff = with_attention(default_efficiency(H100), "hopper")
    assert eff.attention_half_seq == FLASH_ATTENTION_2["hopper"][1]
    assert with_kernel(eff, 0.5).attention_fraction == pytest.approx(0.5 * eff.attention_fraction)


def _compute_seconds(eff, seq_len, cp=1, kernel="auto"):
    request = ParallelRequest(
        model=LLAMA_70B,
        gpu=H100,
        n_gpus=8 * cp,
        seq_len=seq_len,
        global_batch_tokens=seq_len,
        efficiency=eff,
        stack=Stack(attention_kernel=kernel),
    )
    tp8 = layout(8, 1, 1, 1, cp, 1, 1, 1, 1, "none", True)
    return float(evaluate(request, LayoutGrid.of([tp8]), eff).time.compute[0])


@pytest.mark.parametrize(("seq_len", "cp"), [(4096, 1), (8192, 2)])
@pytest.mark.parametrize(("kernel", "speedup"), [("flash-attention-2", 1.0), ("cudnn", 1.58), ("auto", 1.58)])
def test_short_calls_run_slower_by_one_plus_s0_over_s(seq_len, cp, kernel, speedup):
    # hand-derived attention seconds of Llama 3.1 70B (80 layers, 64 query heads of 128) at TP 8, one sequence per
    # micro-batch: forward 2 T s (64/8) 256 / 2 FLOPs per layer with T = s/c tokens per CP rank, x 3.5 for forward
    # + backward; the law multiplies it by 1 + s0 / (s/c), so s0 = s/c adds exactly that much once more. cuDNN's
    # fused attention (TransformerEngine's choice on Hopper: auto) runs it 1.58x faster
    flat = with_attention(default_efficiency(H100), "hopper").model_copy(update={"attention_half_seq": 0.0})
    at_block = flat.model_copy(update={"attention_half_seq": seq_len / cp})
    tokens = seq_len / cp
    rate = flat.attention_fraction * H100.bf16_flops * speedup
    attention = 80 * 3.5 * 2 * tokens * seq_len * 8 * 256 / 2 / rate
    extra = _compute_seconds(at_block, seq_len, cp, kernel) - _compute_seconds(flat, seq_len, cp, kernel)
    assert extra == pytest.approx(attention, rel=1e-9)


def test_ampere_keeps_flash_attention_2_whatever_the_kernel():
    # TransformerEngine runs flash-attn on Ampere and no cuDNN comparison is published there
    a100 = H100.model_copy(update={"name": "a100-80gb", "bf16_flops": 312e12, "family": "ampere"})
    for kernel in ("auto", "cudnn", "flash-attention-2"):
        assert attention_kernel_speedup(Stack(attention_kernel=kernel), a100) == 1.0
    assert attention_kernel_speedup(Stack(), H100) == pytest.approx(1.58)
    assert attention_kernel_speedup(Stack(preset="torchtitan-fsdp2"), H100) == 1.0


def test_published_rows_run_the_kernel_their_engine_calls():
    # Megatron-core / NeMo go through TransformerEngine (auto: cuDNN on Hopper); every other engine of the
    # published runs calls FlashAttention-2 or a named kernel (runplan.calibrate.published)
    import yaml

    from runplan.calibrate.published import measured_document

    data = yaml.safe_load((REPO / "benchmarks" / "published_runs.yaml").read_text())
    runs = {r["id"]: r for r in measured_document(data)["runs"]}
    assert runs["megatron-readme-70b-768gpu"]["stack"]["attention_kernel"] == "auto"
    assert runs["nv-405b-576gpu"]["stack"]["attention_kernel"] == "auto"
    assert runs["torchtitan-8b-8gpu-eager"]["stack"]["attention_kernel"] == "flash-attention-2"
    assert runs["llama3-405b-16384gpu"]["stack"]["attention_kernel"] == "flash-attention-2"
    assert runs["fa2paper-gpt3-2.7b-s8192-fa1"]["attention_kernel"] == "flash-attention-1"
