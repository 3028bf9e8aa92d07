"""fp8 precision (docs/parallel.md, FP8): hand-derived GEMM and cast costs, one whole step by hand, the A100
refusal, the fp8 weight copy, and the vectorized model against the reference on fp8 stacks."""

import pytest
from tests.parallel.reference import evaluate_layout as reference_layout
from tests.parallel.shapes import H100, LLAMA_8B, MIXTRAL, TINY_MOE

from runplan.errors import SpecError
from runplan.parallel.layout import Layout as _Layout
from runplan.parallel.layout import ParallelRequest
from runplan.parallel.search import evaluate_layout
from runplan.parallel.stack import Stack
from runplan.parallel.timing import default_efficiency, fp8_cast_bytes, gemm_seconds

FP8 = Stack(precision="fp8")  # tensorwise


def Layout(**axes):
    """A Layout with ep, cp 1, zero 0, no interleaving or recompute, SP on with TP, unless given."""
    base = dict(ep=1, cp=1, zero=0, vpp=1, recompute="none", sequence_parallel=axes.get("tp", 1) > 1)
    return _Layout(**{**base, **axes})


A100 = H100.model_copy(
    update={"name": "a100-80gb", "bf16_flops": 312e12, "fp8_flops": None, "family": "ampere"}
)


def test_fp8_gemm_runs_at_the_fp8_peak_with_the_same_eta():
    # 8192 x 4096 x 4096 on H100 SXM: compute-bound in both precisions, so fp8 takes exactly half the time
    eff = default_efficiency(H100).model_copy(update={"gemm_half_dim": 0.0})  # eta = eta_max
    flops = 2 * 8192 * 4096 * 4096
    fp8 = float(gemm_seconds(8192, 4096, 4096, H100, eff, fp8=True))
    assert fp8 == pytest.approx(flops / (eff.gemm_peak_fraction * 1979e12))
    assert float(gemm_seconds(8192, 4096, 4096, H100, eff)) == pytest.approx(2 * fp8, rel=1e-3)  # 1979/989


def test_tensorwise_cast_bytes_worked_example():
    # docs/parallel.md worked example: 5(MK + KN) = 252 MB forward; 5MN + 2(MK + KN + MN) = 336 MB backward
    fwd, bwd = fp8_cast_bytes(8192, 4096, 4096, "tensorwise")
    assert float(fwd) == pytest.approx(251.66e6, rel=1e-4)
    assert float(bwd) == pytest.approx(335.54e6, rel=1e-4)
    # delayed: the amax pass is fused into the cast (3 B); rowwise: the other layout is a second cast (3 B)
    assert float(fp8_cast_bytes(8192, 4096, 4096, "delayed")[0]) == pytest.approx(3 / 5 * 251.66e6, rel=1e-4)
    assert float(fp8_cast_bytes(1, 1, 1, "rowwise")[1]) == 3 + 3 * 3


def test_fp8_step_time_hand_derived():
    # Llama 3.1 8B, one GPU (TP 1, PP 1, DP 1), b = 1, s = 8192, no recompute, eta = eta_max exactly.
    # fp8 changes only the linear layers: step_fp8 - step_bf16 = linear FLOPs x (1/fp8 - 1/bf16 peak)/eta_max
    # + the tensorwise casts / HBM bandwidth. Attention core, head, elementwise, optimizer are unchanged.
    # eta_max pinned to 0.68 so that the worked numbers below do not move with the shipped calibration.
    eff = default_efficiency(H100).model_copy(update={"gemm_half_dim": 0.0, "gemm_peak_fraction": 0.68})
    lay = Layout(tp=1, pp=1, dp=1, zero=0, micro_batch=1, microbatches=1, recompute="none")

    def step(stack):
        req = ParallelRequest(model=LLAMA_8B, gpu=H100, n_gpus=1, seq_len=8192, stack=stack, efficiency=eff)
        return evaluate_layout(req, lay).step_seconds

    T, h, F, L = 8192, 4096, 14336, 32
    linear_params = h * (h + 2 * 8 * 128) + h * h + 3 * h * F  # QKV, output projection, SwiGLU up/gate/down
    assert linear_params == 218_103_808
    gemm_flops = 3 * 2 * T * linear_params * L  # forward + two backward GEMMs
    gemm_delta = gemm_flops / eff.gemm_peak_fraction * (1 / 1979e12 - 1 / 989e12)
    shapes = [(T, 6144, h), (T, h, h), (T, 2 * F, h), (T, h, F)]  # (M, N, K)
    casts = L * sum(5 * (m * k + k * n) + 5 * m * n + 2 * (m * k + k * n + m * n) for m, n, k in shapes)
    # 176.6 GB of cast traffic per step (52.7 ms at 3.35 TB/s) against 3.43e14 linear FLOPs, whose time drops
    # from 0.510 s (bf16) to 0.255 s (fp8) at eta_max = 0.68: net 0.202 s faster per 8k-token step
    assert casts == 176_630_530_048 and gemm_flops == pytest.approx(3.4305e14, rel=1e-4)
    expected = gemm_delta + casts / 3.35e12
    assert expected == pytest.approx(-0.2551 + 0.0527, abs=2e-4)
    assert step(FP8) - step(Stack()) == pytest.approx(expected, rel=1e-6)


def test_fp8_on_a100_is_refused_naming_stack_precision():
    req = ParallelRequest(model=LLAMA_8B, gpu=A100, n_gpus=8, seq_len=4096, stack=FP8)
    with pytest.raises(SpecError, match="no fp8 tensor cores") as info:
        evaluate_layout(req, Layout(tp=8, pp=1, dp=1, micro_batch=1, microbatches=1))
    assert info.value.where == "stack.precision" and "\n" not in str(info.value)


def test_mxfp8_needs_blackwell():
    req = ParallelRequest(
        model=LLAMA_8B, gpu=H100, n_gpus=8, seq_len=4096, stack=Stack(precision="fp8", fp8_recipe="mxfp8")
    )
    with pytest.raises(SpecError, match="Blackwell") as info:
        evaluate_layout(req, Layout(tp=8, pp=1, dp=1, micro_batch=1, microbatches=1))
    assert info.value.where == "stack.fp8_recipe"


@pytest.mark.parametrize("zero", [1, 3])
def test_fp8_weight_copy_is_one_byte_per_linear_weight(zero):
    lay = Layout(tp=2, pp=1, dp=4, zero=zero, micro_batch=1, microbatches=2, recompute="full")

    def weights(stack):
        req = ParallelRequest(model=LLAMA_8B, gpu=H100, n_gpus=8, seq_len=4096, stack=stack)
        return evaluate_layout(req, lay).memory_bytes.weights

    copy = 32 * 218_103_808 / 2 / (4 if zero == 3 else 1)  # layers' linear weights / t (/ d under ZeRO-3)
    assert weights(FP8) - weights(Stack()) == pytest.approx(copy)
    # fp8 weights (Megatron --fp8-param-gather): the linear weights held in 1 byte instead of bf16's 2
    fp8_weights = FP8.model_copy(update={"fp8_param_gather": True})
    assert weights(fp8_weights) - weights(Stack()) == pytest.approx(-copy)


def test_fp8_weights_gather_one_byte_per_linear_weight():
    # Llama 3.1 8B, ZeRO-1 over 8 GPUs of one node, no DP overlap (every DP second exposed): the parameter
    # all-gather moves the 32 x 218,103,808 linear weights in 1 byte instead of 2, a ring (8 - 1)/8 of them,
    # at NVLink 450 GB/s x the network efficiency
    lay = Layout(tp=1, pp=1, dp=8, zero=1, micro_batch=1, microbatches=2)
    base = Stack(precision="fp8", overlap_grad_reduce=False, overlap_param_gather=False)

    def step(fp8_weights: bool) -> float:
        stack = base.model_copy(update={"fp8_param_gather": fp8_weights})
        req = ParallelRequest(model=LLAMA_8B, gpu=H100, n_gpus=8, seq_len=4096, stack=stack)
        return evaluate_layout(req, lay).step_seconds

    saved_bytes = 7 / 8 * 32 * 218_103_808
    expected = saved_bytes / (450e9 * default_efficiency(H100).network_efficiency)
    assert step(False) - step(True) == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize(
    ("stack", "message"),
    [
        ({"fp8_param_gather": True}, "applies only with precision fp8"),
        (
            {"precision": "fp8", "fsdp_mixed_precision": True, "fp8_param_gather": True},
            "does not go with fsdp_mixed_precision",
        ),
    ],
)
def test_fp8_weights_need_fp8_linears_and_no_fsdp_master(stack, message):
    with pytest.raises(ValueError, match=message):
        Stack(**stack)


@pytest.mark.parametrize("recipe", ["tensorwise", "delayed", "rowwise", "blockwise"])
@pytest.mark.parametrize(
    ("shape", "lay"),
    [
        (MIXTRAL, Layout(tp=2, pp=2, dp=2, ep=2, zero=1, micro_batch=1, microbatches=4, recompute="full")),
        (TINY_MOE, Layout(tp=1, pp=1, dp=8, ep=4, zero=3, micro_batch=2, microbatches=1, recompute="none")),
        (
            LLAMA_8B,
            Layout(tp=4, pp=2, dp=1, zero=0, micro_batch=1, microbatches=8, vpp=2, recompute="selective"),
        ),
    ],
)
@pytest.mark.parametrize("fp8_weights", [False, True])
def test_fp8_agrees_with_the_reference(recipe, shape, lay, fp8_weights):
    stack = Stack(
        precision="fp8",
        fp8_recipe=recipe,
        full_recompute_method="block",
        full_recompute_layers=2,
        fp8_param_gather=fp8_weights,
        overlap_param_gather=not fp8_weights,  # the late ZeRO-1 gather too
    )
    req = ParallelRequest(model=shape, gpu=H100, n_gpus=8, seq_len=4096, stack=stack)
    got = evaluate_layout(req, lay)
    ref = reference_layout(req, lay)
    assert got.step_seconds == pytest.approx(ref["step_seconds"], rel=1e-9)
    assert got.memory_bytes.total == pytest.approx(ref["total"], rel=1e-9)
    assert got.memory_bytes.weights == pytest.approx(ref["weights"], rel=1e-9)


def test_cached_fp8_weights_are_cast_once_per_step():
    # Llama 3.1 8B on one GPU, 4 micro-batches. TransformerEngine (Megatron) makes each weight's fp8 copy and
    # transpose on the first micro-batch only; torchao recasts every micro-batch. Tensorwise: 5 bytes (amax read +
    # cast) forward and 2 (transposed copy) backward per weight element, 218,103,808 linear weights per layer, 32
    # layers: (4 - 1) x 7 x 218,103,808 x 32 B / 3.35 TB/s = 43.7 ms more per step without the cache.
    lay = Layout(tp=1, pp=1, dp=1, zero=0, micro_batch=1, microbatches=4, recompute="none")

    def step(cache: bool) -> float:
        stack = FP8.model_copy(update={"fp8_weight_cache": cache})
        req = ParallelRequest(model=LLAMA_8B, gpu=H100, n_gpus=1, seq_len=8192, stack=stack)
        return evaluate_layout(req, lay).step_seconds

    expected = 3 * 7 * 218_103_808 * 32 / 3.35e12
    assert expected == pytest.approx(0.04371, rel=1e-3)
    assert step(False) - step(True) == pytest.approx(expected, rel=1e-6)
    assert Stack(preset="torchtitan-fsdp2").fp8_weight_cache is False and Stack().fp8_weight_cache


def test_fp8_weight_copy_of_a_moe_leaves_the_router_in_bf16():
    # Mixtral 8x7B on one GPU, ZeRO 0: the copy is 1 byte per attention, expert and shared-expert weight of every
    # layer; the router (h x E per layer) stays bf16 (docs/parallel.md, FP8), as do embedding, head and norms
    lay = Layout(tp=1, pp=1, dp=1, zero=0, micro_batch=1, microbatches=1, recompute="full")

    def weights(stack):
        req = ParallelRequest(model=MIXTRAL, gpu=H100, n_gpus=1, seq_len=4096, stack=stack)
        return evaluate_layout(req, lay).memory_bytes.weights

    m = MIXTRAL
    attention = m.d_model * (m.n_heads * m.head_dim * 2 + 2 * m.n_kv_heads * m.head_dim)  # q, o and k, v
    per_layer = attention + m.n_experts * m.expert_params + m.shared_expert_params
    assert m.router_params == m.d_model * m.n_experts  # what is left out
    assert weights(FP8) - weights(Stack()) == pytest.approx(m.n_layers * per_layer)


def test_selective_mlp_recompute_repeats_the_mlp_forward_and_its_casts():
    # Llama 3.1 8B on one GPU, b = 1, s = 8192, one micro-batch (so the weight cast counts whole): recomputing
    # `mlp` adds, per layer, the MLP's two forward GEMMs at the fp8 peak and their tensorwise casts, 5 bytes per
    # element of X and W (docs/parallel.md, FP8): 5(T·h + h·2F) + 5(T·F + F·h).
    eff = default_efficiency(H100).model_copy(update={"gemm_half_dim": 0.0, "gemm_peak_fraction": 0.68})
    lay = Layout(tp=1, pp=1, dp=1, micro_batch=1, microbatches=1, recompute="selective")

    def step(modules):
        stack = FP8.model_copy(update={"selective_recompute": modules})
        req = ParallelRequest(model=LLAMA_8B, gpu=H100, n_gpus=1, seq_len=8192, stack=stack, efficiency=eff)
        return evaluate_layout(req, lay).step_seconds

    T, h, F, L = 8192, 4096, 14336, 32
    gemms = float(gemm_seconds(T, 2 * F, h, H100, eff, fp8=True) + gemm_seconds(T, h, F, H100, eff, fp8=True))
    casts = (5 * (T * h + h * 2 * F) + 5 * (T * F + F * h)) / H100.hbm_bandwidth_bytes_per_s
    assert step(("mlp",)) - step(()) == pytest.approx(L * (gemms + casts), rel=1e-9)
