"""The time model executes DeepSeek-V3's multi-token-prediction module (arXiv 2412.19437 §2.2) on top of the main
model: one more MoE block with MLA (8 of 256 experts + the shared one), the 2h→h projection and a second pass
through the V·h head, counted as tests/parallel/test_model_invariants.py counts the main model's GEMMs (6 per
active matmul weight, norms and the router's selection biases left out, causal FlashAttention 3.5·s·a·(d_qk+d_v)
per layer); MFU's numerator is ModelShape.model_flops_per_token, MTP included."""

from __future__ import annotations

import pytest
from tests.parallel.test_model_invariants import (
    CATALOG,
    Case,
    _ev,
    _executed_flops_per_token,
    _ideal_flops_per_token,
)

from runplan.parallel.layout import Layout, ParallelRequest

V3 = CATALOG.model("deepseek-v3")
H, V = 7168, 129280


def _case(shape, seq: int = 4096) -> Case:
    return Case(
        ParallelRequest(model=shape, gpu=CATALOG.gpu("h100-sxm"), n_gpus=64, seq_len=seq),
        Layout(
            tp=8, pp=1, dp=8, ep=8, cp=1, zero=1, micro_batch=1, microbatches=8, vpp=1, recompute="none",
            sequence_parallel=True,
        ),
    )  # fmt: skip


def test_step_compute_adds_the_mtp_block_projection_and_head():
    plain = V3.model_copy(update={"mtp_layers": 0, "mtp_loss_weight": None})
    # the module's active matmul weights: 688,100,608 (tests/test_mtp_counts.py) less its five RMSNorms (hnorm,
    # enorm, final, and the block's two) and the router's 256 selection biases, plus its own V·h logits
    linear = 688_100_608 - 5 * H - 256 + V * H
    extra = 6.0 * linear + 3.5 * 4096 * 128 * (192 + 128)
    assert extra == 10_275_663_872
    assert _ideal_flops_per_token(_case(plain)) == pytest.approx(
        _executed_flops_per_token(plain, 4096), rel=1e-6
    )
    assert _ideal_flops_per_token(_case(V3)) == pytest.approx(
        _executed_flops_per_token(plain, 4096) + extra, rel=1e-6
    )


def test_mfu_counts_the_mtp_module():
    case = _case(V3)
    ev, lay = _ev(case), case.layout
    peak = case.request.gpu.bf16_flops * lay.tp * lay.pp * lay.dp * lay.cp
    flops = float(ev.mfu[0]) * peak / float(ev.tokens_per_second[0])
    assert flops == pytest.approx(V3.model_flops_per_token(4096), rel=1e-12)
    assert flops == pytest.approx(
        V3.model_copy(update={"mtp_layers": 0}).model_flops_per_token(4096) * 1.0380, rel=1e-3
    )
