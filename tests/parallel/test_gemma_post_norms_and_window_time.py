"""Gemma 2/3 in the memory and time models: post-norms add two norms' traffic and their saved inputs; a sliding
window shrinks the FlashAttention core by the stage's share (timing.stage_attention_share) and changes nothing
without FlashAttention (the eager path computes and masks the full s×s scores)."""

import pytest
from tests.parallel.reference import layout
from tests.parallel.shapes import H100

from runplan.catalog import shipped_catalog
from runplan.parallel.grid import LayoutGrid
from runplan.parallel.layout import ParallelRequest
from runplan.parallel.memory import ShapeTerms, layer_activation_bytes_per_token
from runplan.parallel.search import evaluate
from runplan.parallel.stack import Stack
from runplan.parallel.timing import (
    ATTENTION_BACKWARD_RATIO,
    attention_kernel_speedup,
    default_efficiency,
    elementwise_forward_bytes,
    stage_attention_share,
)

GEMMA_2_9B = shipped_catalog().model("gemma-2-9b")
NO_POST = GEMMA_2_9B.model_copy(update={"post_norms": False})
NO_WINDOW = GEMMA_2_9B.model_copy(update={"sliding_window": 0, "global_every": 0})


def test_post_norms_add_two_norms_of_traffic_and_their_inputs():
    # fused RMSNorm 2+2 bytes over h = 3584 each, two more per layer, h·x each (x = 1 without SP)
    extra = elementwise_forward_bytes(
        ShapeTerms.from_shape(GEMMA_2_9B), Stack(), 1.0, 1.0, 8192, moe=False, eager=False
    ) - elementwise_forward_bytes(
        ShapeTerms.from_shape(NO_POST), Stack(), 1.0, 1.0, 8192, moe=False, eager=False
    )
    assert float(extra) == 2 * 3584 * 4
    # their saved inputs (the attention output projection's and the MLP's outputs, bf16): 2·2h with SP over t = 2
    with_post, _ = layer_activation_bytes_per_token(
        ShapeTerms.from_shape(GEMMA_2_9B), 2.0, True, 0, moe=False
    )
    without, _ = layer_activation_bytes_per_token(ShapeTerms.from_shape(NO_POST), 2.0, True, 0, moe=False)
    assert float(with_post - without) == 4 * 3584 / 2


def _compute_seconds(shape, stack: Stack) -> float:
    request = ParallelRequest(
        model=shape, gpu=H100, n_gpus=8, seq_len=8192, global_batch_tokens=16 * 8192, stack=stack
    )
    grid = LayoutGrid.of([layout(2, 2, 2, 1, 1, 1, 1, 8, 1, "none", True)])  # t 2, p 2, d 2, m 8
    return float(evaluate(request, grid, default_efficiency(H100)).time.compute[0])


def test_window_shrinks_only_the_flash_attention_core():
    """With FlashAttention the window saves (1 − share) of the stage's attention core, forward and 2.5×
    backward (p = 2: 21 layers, the most global stage holds 11, share (11 + 10·0.75)/21)."""
    terms = ShapeTerms.from_shape(GEMMA_2_9B)
    share = stage_attention_share(terms, 2, 8192)
    assert share == pytest.approx((11 + 10 * 0.75) / 21, rel=1e-15)
    saved = _compute_seconds(NO_WINDOW, Stack()) - _compute_seconds(GEMMA_2_9B, Stack())
    # one layer's full causal core forward: 2·T·s·(a/t)·(d_qk + d_v)·½ at the kernel's rate (timing module doc)
    eff = default_efficiency(H100)
    rate = eff.attention_fraction * attention_kernel_speedup(Stack(), H100) * H100.bf16_flops
    full_forward = 2 * 8192 * 8192 * (16 / 2) * 512 * 0.5 / rate * (1 + eff.attention_half_seq / 8192)
    expected = 8 * 21 * (1 + ATTENTION_BACKWARD_RATIO) * (1 - share) * full_forward  # m · layers · fwd+bwd
    assert saved == pytest.approx(expected, rel=1e-9)
    # without FlashAttention nothing changes
    eager = Stack(flash_attention=False)
    assert _compute_seconds(GEMMA_2_9B, eager) == _compute_seconds(NO_WINDOW, eager)
