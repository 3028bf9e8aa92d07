"""HFU = (model FLOPs + recomputed FLOPs) × tokens/s ÷ peak (Korthikanti et al. 2022 §5; Chowdhery et al. 2022
App. B). The recomputed FLOPs are exactly what the time model reruns (timing._recomputed): with Megatron's
``--recompute-method block`` only the first n layers of each stage, and with torchtitan's selective
``every_other_mm`` the K, O and second MLP up projections of every block. Hand-derived here from the shapes."""

import pytest
from tests.parallel.shapes import H100, LLAMA_8B, LLAMA_70B

from runplan.parallel.layout import Constraints, Layout, ParallelRequest
from runplan.parallel.search import evaluate_layout
from runplan.parallel.stack import Stack, resolve_stack


def _estimate(model, n_gpus: int, stack: Stack, layout: Layout):
    request = ParallelRequest(
        model=model,
        gpu=H100,
        n_gpus=n_gpus,
        seq_len=4096,
        stack=stack,
        constraints=Constraints(max_bubble_fraction=0.99),
    )
    return evaluate_layout(request, layout)


def _layout(**fields) -> Layout:
    base = dict(tp=1, pp=1, dp=1, ep=1, cp=1, zero=1, micro_batch=1, microbatches=16, vpp=1)
    return Layout(**(base | fields))


def test_block_recompute_of_one_layer_of_twenty_adds_a_twentieth_of_the_forward():
    # Llama 3.1 70B, TP8 PP4: 20 layers per stage, block recomputes 1 of them (Megatron --recompute-num-layers 1)
    layout = _layout(tp=8, pp=4, dp=16, recompute="full", sequence_parallel=True)
    block = _estimate(LLAMA_70B, 512, Stack(full_recompute_method="block", full_recompute_layers=1), layout)
    s = 4096
    model = LLAMA_70B.model_flops_per_token(s)
    # the forward of the blocks: 2 FLOPs per active block weight + the attention forward (6·L·s·a·(d_qk+d_v) / 3)
    forward = 2 * LLAMA_70B.active_non_embedding_params + 2 * 80 * s * 64 * (128 + 128)
    hfu = block.mfu * (model + forward / 20) / model
    assert block.hfu == pytest.approx(hfu, rel=1e-9)
    assert block.hfu / block.mfu == pytest.approx(1.0 + 0.0164, abs=5e-4)  # not the 4/3 of recomputing all
    uniform = _estimate(LLAMA_70B, 512, Stack(), layout)
    assert uniform.hfu == pytest.approx(uniform.mfu * (model + forward) / model, rel=1e-9)


def test_every_other_mm_adds_the_k_o_and_second_up_projections_of_each_block():
    # Llama 3.1 8B (h 4096, 8 KV heads of 128, FFN 14336, 32 layers) under torchtitan's op-level policy
    stack = resolve_stack("torchtitan-fsdp2")
    assert "every_other_mm" in stack.selective_recompute
    layout = _layout(dp=64, zero=3, recompute="selective", sequence_parallel=False)
    est = _estimate(LLAMA_8B, 64, stack, layout)
    rerun = 32 * 2 * (4096 * 8 * 128 + 4096 * 4096 + 14336 * 4096)  # K, O, the up projection (gated MLP)
    model = LLAMA_8B.model_flops_per_token(4096)
    assert rerun == pytest.approx(5.1e9, rel=0.01)
    assert est.hfu == pytest.approx(est.mfu * (model + rerun) / model, rel=1e-9)
    assert est.hfu > est.mfu * 1.09


def test_flash_attention_core_attn_selective_reruns_no_flops():
    # Megatron-core's default selective (core_attn) under FlashAttention: the kernel recomputes the scores
    # anyway, so the time model reruns nothing more and HFU equals MFU
    layout = _layout(tp=8, pp=4, dp=16, recompute="selective", sequence_parallel=True)
    est = _estimate(LLAMA_70B, 512, resolve_stack("megatron-core"), layout)
    assert est.hfu == pytest.approx(est.mfu, rel=1e-12)
