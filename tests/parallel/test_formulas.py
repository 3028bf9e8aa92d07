"""Hand-derived values: the design brief's worked example, the bubble, the batch law."""

import math

import numpy as np
import pytest
from tests.parallel.reference import layout
from tests.parallel.shapes import H100, LLAMA_8B, MIXTRAL

from runplan.parallel.batch import critical_batch
from runplan.parallel.grid import LayoutGrid
from runplan.parallel.layout import ParallelRequest, Pins
from runplan.parallel.memory import ShapeTerms, layer_activation_bytes_per_token, model_state_bytes
from runplan.parallel.search import evaluate, search
from runplan.parallel.stack import Stack
from runplan.parallel.timing import default_efficiency
from runplan.scaling.hyperparams import deepseek_batch_tokens


def test_worked_example_7b_tp8_pp8_dp8_zero1():
    # 7.0e9 params at TP8 PP8: 7e9/64 params per GPU; ZeRO-1 shards the 12 optimizer bytes over DP 8.
    psi = 7.0e9 / 64
    weights, grads, opt = model_state_bytes(psi, 0.0, 1, 8, 1, 1, 4)
    assert float(weights) == pytest.approx(14e9 / 64)  # 219 MB
    assert float(weights) == pytest.approx(218.75e6)
    assert float(opt) == pytest.approx(84e9 / 512)  # 164 MB
    assert float(grads) == pytest.approx(4 * 7e9 / 64)  # fp32 gradients, not sharded by ZeRO-1
    _, grads_bf16, _ = model_state_bytes(psi, 0.0, 1, 8, 1, 1, 2)
    assert float(grads_bf16) == pytest.approx(14e9 / 64)


def test_zero_stages_match_rajbhandari():
    psi, d = 1e9, 16
    for zero, expected in ((0, 16), (1, 4 + 12 / d), (2, 2 + 14 / d), (3, 16 / d)):
        w, g, o = model_state_bytes(psi, 0.0, zero, d, 1, 1, 2)
        assert float(w + g + o) / psi == pytest.approx(expected)


def test_fsdp_keeps_fp32_shards_as_the_master_copy():
    # MPT-30B (2.998e10 params) on 8 GPUs, ZeRO-3 (FULL_SHARD), fp32 gradient reduction. Megatron/DeepSpeed
    # style: 2 (bf16 shard) + 4 (grads) + 12 (fp32 master, m, v) = 18 bytes per param over 8 GPUs = 67.4 GB;
    # FSDP: the fp32 shard is the master, so 4 (grads) + 12 = 16 bytes = 60.0 GB; with bf16 reduction the
    # gradient shard is still fp32 (FSDP casts it to the parameter's dtype).
    psi, d = 2.9975e10, 8
    w, g, o = model_state_bytes(psi, 0.0, 3, d, 1, 1, 4)
    assert float(w + g + o) == pytest.approx(18 * psi / d)
    for reduce_bytes in (4, 2):
        w, g, o = model_state_bytes(psi, 0.0, 3, d, 1, 1, reduce_bytes, fsdp_mixed_precision=True)
        assert (float(w), float(g), float(o)) == pytest.approx((0.0, 4 * psi / d, 12 * psi / d))
        assert float(w + g + o) / 1e9 == pytest.approx(59.95, abs=0.01)
    # below ZeRO-3 the rule does not apply: FSDP's NO_SHARD / SHARD_GRAD_OP keep gathered bf16 weights
    fsdp_zero2 = model_state_bytes(psi, 0.0, 2, d, 1, 1, 4, fsdp_mixed_precision=True)
    assert [float(x) for x in fsdp_zero2] == [float(x) for x in model_state_bytes(psi, 0.0, 2, d, 1, 1, 4)]


@pytest.mark.parametrize(("vpp", "expected"), [(1, 7 / 32), (2, 7 / 64)])
def test_bubble_paper_formula(vpp, expected):
    req = ParallelRequest(
        model=LLAMA_8B,
        gpu=H100,
        n_gpus=64,
        seq_len=4096,
        top=1,
        pins=Pins(tp=1, pp=8, dp=8, cp=1, zero=1, micro_batch=1, microbatches=32, vpp=vpp, recompute="full"),
        constraints={"max_bubble_fraction": 0.5, "max_global_batch_tokens": 1e9},
    )
    result = search(req)
    assert result.candidates == 1
    layout = (result.layouts or result.nearest_misses)[0]
    assert layout.bubble_fraction == pytest.approx(expected)


def test_deepseek_batch_law():
    assert deepseek_batch_tokens(1e21) == pytest.approx(0.2920 * 1e21**0.3271)
    crit = critical_batch(LLAMA_8B, 4096)
    assert crit.assumed_training_tokens
    assert crit.training_tokens == 20 * LLAMA_8B.total_params
    m = 6 * LLAMA_8B.active_non_embedding_params + 12 * 32 * 4096 * 4096  # 72Lh²-style + 12·L·h·s
    assert crit.compute_flops == pytest.approx(m * crit.training_tokens)
    assert math.isclose(crit.tokens, 0.292 * crit.compute_flops**0.3271, rel_tol=1e-9)
    assert 1e6 < crit.tokens < 2e7


def test_arrays_and_scalars_agree():
    w, _, _ = model_state_bytes(np.array([1e9, 2e9]), np.array([0.0, 0.0]), np.array([3, 0]), 4, 1, 1, 4)
    assert w.tolist() == [2e9 / 4, 4e9]


@pytest.mark.parametrize("overlap", [False, True])
def test_moe_tp_term_gathers_the_routed_tokens_unhidden(overlap):
    # Mixtral 8x7B (32 MoE layers, h 4096, top 2, no shared experts) at TP 2 with SP, one micro-batch of 4,096
    # tokens, no recompute: per layer 4 collectives of 2·T·h bytes; the MLP's 2 are the dispatcher's gather and
    # scatter of the routed tokens, 2 × top_k of them and never hidden; the attention's 2 may be overlapped.
    # One collective: 2·(1/2)·2·4096·4096 B over NVLink (450e9 × network efficiency) + the fixed latency.
    eff = default_efficiency(H100)
    request = ParallelRequest(
        model=MIXTRAL, gpu=H100, n_gpus=2, seq_len=4096, stack=Stack(tp_comm_overlap=overlap)
    )
    one_gpu_pair = layout(2, 1, 1, 1, 1, 0, 1, 1, 1, "none", True)  # tp 2, everything else 1, ZeRO-0, SP
    ev = evaluate(request, LayoutGrid.of([one_gpu_pair]), eff)
    one = 2 * 0.5 * 2 * 4096 * 4096 / (H100.intra_node_bandwidth_bytes_per_s * eff.network_efficiency)
    one += eff.collective_latency_seconds
    attention, routed = 32 * 2 * one, 32 * 2 * 2 * one
    hidden = eff.tp_overlap_fraction * attention if overlap else 0.0  # (far below the GEMM time here)
    assert float(ev.time.tensor_parallel[0]) == pytest.approx(attention - hidden + routed, rel=1e-12)


def test_moe_layer_keeps_its_routed_copies_gathered_over_tp():
    # Mixtral 8x7B layer at TP 2 with SP, no recompute, bytes per token: norm inputs + outputs 4h·x + 4h·x
    # = 16,384; attention Q, K, V 2·(32 + 8 + 8)·128, output 2·32·128, LSE 4·32, ÷2 = 10,304; MoE: the top 2
    # routed copies 2·2h = 16,384 not ÷t (the dispatcher gathers them over TP), the experts' SwiGLU
    # 2·6·14,336 ÷ 2 = 86,016, router 8·8 = 64: 129,152
    kept, everything = layer_activation_bytes_per_token(
        ShapeTerms.from_shape(MIXTRAL), 2, True, 0, moe=True, seq_len=4096
    )
    assert float(everything) == float(kept) == 129_152
