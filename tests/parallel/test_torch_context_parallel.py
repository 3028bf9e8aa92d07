"""Context parallelism as PyTorch's context_parallel runs it under torchtitan (Stack.context_parallel_impl
'pytorch'), against hand-derived values, the oracle, and the TransformerEngine ring left as it was."""

from __future__ import annotations

import pytest
from tests.parallel.reference import evaluate_layout as reference_layout
from tests.parallel.shapes import H100, LLAMA_8B, LLAMA_405B

from runplan.parallel.grid import LayoutGrid
from runplan.parallel.layout import Efficiency, Layout, ParallelRequest
from runplan.parallel.search import evaluate
from runplan.parallel.stack import Stack
from runplan.parallel.timing import context_parallel_notes

#: explicit constants (not the shipped calibration, so a refit cannot move these hand-derived values)
EFF = Efficiency(
    gemm_peak_fraction=0.8,
    gemm_half_dim=100.0,
    attention_fraction=0.5,
    attention_half_seq=1000.0,
    network_efficiency=0.9,
    inter_node_network_efficiency=None,
    step_overhead_seconds=0.0,
    tp_overlap_fraction=0.5,
    dp_overlap_interference=0.3,
    collective_latency_seconds=2e-5,
    elementwise_time_factor=1.0,
    eager_elementwise_share=1.0,
)
TORCHTITAN = Stack(preset="torchtitan-fsdp2")
#: torchtitan as its published CP runs ran it (before ff0829c): K/V repeated to all query heads before SDPA
REPEATED = TORCHTITAN.model_copy(update={"kv_repeated_before_attention": True})
# Llama 3.1 8B on one 8-GPU node, 64k tokens, CP 2 (torchtitan's Table 2 layout: FSDP 4, CP 2)
CP2 = Layout(
    tp=1, pp=1, dp=4, cp=2, ep=1, zero=3, micro_batch=1, microbatches=1, vpp=1, recompute="none",
    sequence_parallel=False,
)  # fmt: skip


def _cp_seconds(
    stack: Stack, layout: Layout = CP2, *, shape=LLAMA_8B, seq: int = 65536
) -> tuple[float, float]:
    n = layout.tp * layout.pp * layout.dp * layout.cp
    request = ParallelRequest(model=shape, gpu=H100, n_gpus=n, seq_len=seq, stack=stack)
    ev = evaluate(request, LayoutGrid.of([layout]), EFF)
    return float(ev.time.context_parallel[0]), float(ev.time.data_parallel[0])


def test_the_presets_pick_their_engines_cp():
    assert TORCHTITAN.context_parallel_impl == "pytorch"
    for preset in ("default", "megatron-core", "megatron-2022", "deepspeed"):
        assert Stack(preset=preset).context_parallel_impl == "transformer-engine"


def test_pytorch_cp_compiled_hand_derived():
    # T = 65536 / 2 = 32,768 tokens per rank; K/V of all a/t = 32 heads (repeat_kv), d_qk = d_v = 128:
    # K = 2 B x 32,768 x 32 x 256 = 536,870,912 bytes per rank. Link: NVLink 450e9 x 0.9 = 405e9 B/s (t·c = 2).
    # Forward one all-gather of the c - 1 = 1 other shard: K / 405e9 + 20 us; backward one more all-gather and
    # c = 2 sends of fp32 dK/dV, 2K / 405e9 + 20 us each: 2 (K/B + lat) + 2 (2K/B + lat) = 6K/B + 4 lat.
    K, B, lat, hbm = 536_870_912, 405e9, 2e-5, 3.35e12
    exchange = 6 * K / B + 4 * lat
    # compiled merges (fused_elementwise), 10 B per element: forward (c-1) x output T x 32 x 128 = 134,217,728;
    # backward c x (dQ 134,217,728 + dK/dV T x 32 x 256 = 268,435,456)
    merge = (10 * 134_217_728 + 2 * 10 * (134_217_728 + 268_435_456)) / hbm
    expected = 32 * (exchange + merge)  # 32 layers, one micro-batch; ~0.33 s, 10x the TE ring's 0.033 s
    got, _ = _cp_seconds(REPEATED.model_copy(update={"fused_elementwise": True}))
    assert got == pytest.approx(expected, rel=1e-12)


def test_pytorch_cp_with_gqa_moves_the_kv_heads_hand_derived():
    # today's torchtitan (SDPA enable_gqa, the preset): K/V of kv/t = 8 heads, K = 2 B x 32,768 x 8 x 256 =
    # 134,217,728 bytes, a quarter of the repeated case; the same 6K/B + 4 lat exchange; compiled merges:
    # forward output T x 32 x 128 = 134,217,728 elements, backward c x (dQ 134,217,728 + dK/dV T x 8 x 256 =
    # 67,108,864)
    K, B, lat, hbm = 134_217_728, 405e9, 2e-5, 3.35e12
    merge = (10 * 134_217_728 + 2 * 10 * (134_217_728 + 67_108_864)) / hbm
    got, _ = _cp_seconds(TORCHTITAN.model_copy(update={"fused_elementwise": True}))
    assert got == pytest.approx(32 * (6 * K / B + 4 * lat + merge), rel=1e-12)


def test_pytorch_cp_eager_with_full_recompute_hand_derived():
    # the preset itself (eager merges) with full recompute: the forward, and its all-gather, runs twice
    K, B, lat, hbm = 536_870_912, 405e9, 2e-5, 3.35e12
    out, dq, kv = 134_217_728, 134_217_728, 268_435_456  # elements: T·a/t·d_v, T·a/t·d_qk, T·a/t·(d_qk+d_v)
    exchange = 3 * (K / B + lat) + 2 * (2 * K / B + lat)  # 2 forward all-gathers + 1 backward, 2 dK/dV sends
    # eager kernels: per forward pass and extra step 32.5 B per output element + 4 B per K/V element (the bf16
    # torch.cat of K and V), x 2 passes; the backward's own K/V cat (c-1 = 1); per backward step (c = 2)
    # 10 B per dQ element and 18 per K/V element (accumulate 10 + fp32 cat 8)
    merge = (2 * 1 * (32.5 * out + 4 * kv) + 1 * 4 * kv + 2 * (10 * dq + 18 * kv)) / hbm
    full = CP2.model_copy(update={"recompute": "full"})
    got, _ = _cp_seconds(REPEATED, full)
    assert got == pytest.approx(32 * (exchange + merge), rel=1e-12)


def test_transformer_engine_ring_unchanged_hand_derived():
    # the same layout on TransformerEngine's ring: the kv/t = 8 heads' exchange, (c-1) x 2 B x T x 8 x 256 /
    # 405e9 = 0.33 ms, hides under the attention kernel, so only the merge shows: 10 B x (forward T x 32 x 128 +
    # backward T x (32 x 128 + 8 x 256)) / 3.35e12 + 2 latencies, per layer
    T, hbm, lat = 32_768, 3.35e12, 2e-5
    merge = 10 * (T * 32 * 128 + T * (32 * 128 + 8 * 256)) / hbm + 2 * lat
    for stack in (Stack(), TORCHTITAN.model_copy(update={"context_parallel_impl": "transformer-engine"})):
        got, _ = _cp_seconds(stack)
        assert got == pytest.approx(32 * merge, rel=1e-12)


def test_transformer_engine_ring_across_nodes_as_before():
    # 405B, TP 8 PP 8 CP 8 at 256k (the ring crosses nodes: exposed exchange, and ring seconds taken from the DP
    # window): the values the model gave before Stack.context_parallel_impl existed (HEAD's timing.py, EFF)
    layout = Layout(
        tp=8, pp=8, dp=1, cp=8, ep=1, zero=3, micro_batch=1, microbatches=8, vpp=1, recompute="full",
        sequence_parallel=True,
    )  # fmt: skip
    got = _cp_seconds(Stack(), layout, shape=LLAMA_405B, seq=262144)
    assert got == pytest.approx((0.6146699080597016, 0.5937511945955556), rel=1e-12)
    pytorch = _cp_seconds(
        Stack(context_parallel_impl="pytorch", kv_repeated_before_attention=True),
        layout,
        shape=LLAMA_405B,
        seq=262144,
    )
    assert pytorch[0] > 10 * got[0]  # 16x the K/V bytes (a/t = 16 heads, not kv/t = 1), nothing hidden


@pytest.mark.parametrize("repeated", [False, True])
@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("recompute", ["none", "selective", "full"])
@pytest.mark.parametrize("cp,dp", [(2, 4), (4, 2), (8, 1)])
def test_the_oracle_agrees_on_pytorch_cp(repeated, fused, recompute, cp, dp):
    layout = CP2.model_copy(update={"cp": cp, "dp": dp, "recompute": recompute})
    stack = TORCHTITAN.model_copy(
        update={"fused_elementwise": fused, "kv_repeated_before_attention": repeated}
    )
    request = ParallelRequest(model=LLAMA_8B, gpu=H100, n_gpus=8, seq_len=65536, stack=stack)
    ev = evaluate(request, LayoutGrid.of([layout]), EFF)
    ref = reference_layout(request, layout, EFF)
    assert float(ev.step_seconds[0]) == pytest.approx(ref["step_seconds"], rel=1e-9)


def test_the_caution_follows_the_cp_implementation():
    assert context_parallel_notes(TORCHTITAN, 1) == []
    assert context_parallel_notes(Stack(), 4) == []
    (note,) = context_parallel_notes(TORCHTITAN, 4)
    assert "context parallelism on torchtitan" in note and "0.99x to 1.34x" in note
