"""Physical invariants of the layout model (memory.py, timing.py, search.py) over the catalog's real models.

What a careful ML-infra engineer expects of any layout of a real model on a real cluster, checked by hypothesis
over the catalog's dense and MoE models, GPUs and the shipped stack presets (tests/parallel/test_search.py's
monotonicity test holds Llama 3 8B's total only; this file checks each term, every preset and MoE). Where an
invariant one might expect does not hold, the test says why (docs/parallel.md) and checks what does hold; the
known violations the model still has are strict xfails with their size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runplan.catalog import load_catalog
from runplan.model import ModelShape
from runplan.parallel.grid import Evaluation, LayoutGrid
from runplan.parallel.layout import Constraints, Efficiency, Layout, ParallelRequest, Pins, TimeSeconds
from runplan.parallel.search import divisors, evaluate, evaluate_layout, search
from runplan.parallel.stack import Stack
from runplan.parallel.timing import default_efficiency

CATALOG = load_catalog()
DENSE = (
    "llama-2-7b",
    "llama-2-13b",
    "llama-3.1-8b",
    "llama-3.1-70b",
    "llama-3.1-405b",
    "gpt-3-175b",
    "chinchilla-70b",
)
MOE = ("mixtral-8x7b", "mixtral-8x22b", "qwen3-30b-a3b", "deepseek-v3")
MODELS = DENSE + MOE
HOPPER = ("h100-sxm", "h200")
GPUS = (*HOPPER, "a100-80gb")
STACKS = {
    "default": Stack(),
    "megatron-core": Stack(preset="megatron-core"),
    "megatron-2022": Stack(preset="megatron-2022"),
    "deepspeed": Stack(preset="deepspeed"),
    "torchtitan-fsdp2": Stack(preset="torchtitan-fsdp2"),
    "fp8-tensorwise": Stack(precision="fp8"),
    "fp8-delayed-fp8-weights": Stack(
        preset="megatron-core", precision="fp8", fp8_recipe="delayed", fp8_param_gather=True
    ),
}
MEMORY_TERMS = ("weights", "gradients", "optimizer", "activations", "other", "total")
RECOMPUTES = ("none", "selective", "full")
REL = 1e-9  # rounding only: every comparison below is exact in the formulas

DEGREES = ("tp", "pp", "cp", "ep")
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@dataclass(frozen=True)
class Case:
    """A request on a real model, GPU and stack, and one layout of it (``n_gpus`` = t·p·d·c)."""

    request: ParallelRequest
    layout: Layout

    @property
    def shape(self) -> ModelShape:
        return self.request.model

    def with_layout(self, **change) -> Case:
        """Another layout of the same job (the GPU count follows t·p·d·c)."""
        new = self.layout.model_copy(update=change)
        n = new.tp * new.pp * new.dp * new.cp
        return Case(self.request.model_copy(update={"n_gpus": n}), new)

    def with_stack(self, stack: Stack) -> Case:
        return Case(self.request.model_copy(update={"stack": stack}), self.layout)


def _tp_choices(shape: ModelShape) -> list[int]:
    return [t for t in (1, 2, 4, 8) if shape.n_heads % t == 0 and shape.n_kv_heads % t == 0]


@st.composite
def cases(draw, models=MODELS, stacks=tuple(STACKS), gpus=GPUS) -> Case:
    """A valid layout of a catalog model (the search's divisibility rules), powers of two so that the GPU
    count fills whole nodes."""
    shape = CATALOG.model(draw(st.sampled_from(models)))
    stack = STACKS[draw(st.sampled_from(stacks))]
    gpu = draw(st.sampled_from([g for g in gpus if g in HOPPER] if stack.precision == "fp8" else gpus))
    seq = draw(st.sampled_from((2048, 4096, 8192, 32768)))
    tp = draw(st.sampled_from(_tp_choices(shape)))
    pp = draw(st.sampled_from([p for p in (1, 2, 4, 8, 16) if p <= shape.n_layers]))
    dp = draw(st.sampled_from((1, 2, 4, 8, 16, 32)))
    cp = draw(st.sampled_from((1, 2, 4) if stack.context_parallel else (1,)))
    ep = draw(
        st.sampled_from([e for e in divisors(shape.n_experts) if (dp * cp) % e == 0] if shape.is_moe else [1])
    )
    vpp = 1
    if pp > 1 and stack.interleaved_pipeline:
        vpp = draw(st.sampled_from([v for v in divisors(-(-shape.n_layers // pp)) if v <= 4]))
    m = draw(st.integers(1, 32)) * (pp if vpp > 1 else 1)
    stages = list(stack.zero_stages or (0, 1, 2, 3))
    if stack.fp8_param_gather:
        stages = [z for z in stages if z >= 1]  # Megatron asserts the distributed optimizer
    if pp > 1 and not stack.fsdp_mixed_precision:
        stages = [z for z in stages if z < 3]  # ZeRO-3 under stages is torchtitan's only
    layout = Layout(
        tp=tp,
        pp=pp,
        dp=dp,
        ep=ep,
        cp=cp,
        zero=draw(st.sampled_from(stages)),
        micro_batch=draw(st.sampled_from((1, 2, 4))),
        microbatches=m,
        vpp=vpp,
        recompute=draw(st.sampled_from(RECOMPUTES)),
        sequence_parallel=tp > 1 and draw(st.booleans()),
    )
    request = ParallelRequest(
        model=shape, gpu=CATALOG.gpu(gpu), n_gpus=tp * pp * dp * cp, seq_len=seq, stack=stack
    )
    return Case(request, layout)


def _ev(case: Case) -> Evaluation:
    return evaluate(case.request, LayoutGrid.of([case.layout]))


def _mem(ev: Evaluation, term: str) -> float:
    return float(getattr(ev.memory, term)[0])


def _le(a: float, b: float) -> bool:
    return a <= b * (1 + REL) + 1e-6


def _terms_do_not_grow(before: Evaluation, after: Evaluation, terms, why) -> None:
    """Each term of ``after`` at most ``before``'s. The terms are the more loaded stage's (first or last,
    docs/parallel.md, Memory per GPU): where that stage changes, only the totals compare (e.g. GPT-3 at PP2
    going CP1 -> CP2: the last stage's logits halve, the first stage with its learned positions becomes the
    more loaded and the reported weights grow by 50 MB while every stage's memory falls)."""
    same_stage = bool(before.memory_last_is_max[0]) == bool(after.memory_last_is_max[0])
    for term in terms if same_stage else [t for t in terms if t == "total"]:
        assert _le(_mem(after, term), _mem(before, term)), (term, *why)


# ---- memory ---------------------------------------------------------------------------------------------------


@SETTINGS
@given(cases(), st.data())
def test_no_memory_term_grows_with_tp(case, data):
    # weights, gradients, optimizer, ZeRO-3 buffers and activations are split t ways (MoE: the routed copies and
    # the router logits are gathered over TP, a constant); same d, c, so the same ZeRO group
    bigger = [t for t in _tp_choices(case.shape) if t > case.layout.tp]
    if not bigger:
        return
    sp = case.layout.sequence_parallel or case.layout.tp == 1
    wider = case.with_layout(tp=data.draw(st.sampled_from(bigger)), sequence_parallel=sp)
    _terms_do_not_grow(_ev(case), _ev(wider), MEMORY_TERMS, (case.layout.one_line(), wider.layout.one_line()))


@SETTINGS
@given(cases())
def test_memory_does_not_grow_with_the_zero_stage(case):
    # ZeRO-1 shards the optimizer, ZeRO-2 the gradients, ZeRO-3 the weights over d·c (experts d·c/e) ranks.
    # Not ZeRO-2 -> 3 everywhere: ZeRO-3 adds two gathered layers (4·layer/t) and with pipeline stages keeps the
    # whole stage gathered all step (torchtitan; memory.model_state_bytes), and a group of one shards nothing;
    # it must pay off without stages when the group holds at least two ranks.
    lay = case.layout
    for zero in range(3):
        # (MoE: the gathered layers include its experts, so their group d·c/e must shard something too)
        if zero == 2 and (lay.pp > 1 or lay.dp * lay.cp < 2 or lay.dp * lay.cp < 2 * lay.ep):
            continue
        low, high = _ev(case.with_layout(zero=zero)), _ev(case.with_layout(zero=zero + 1))
        # each state term too, except where FSDP's fp32 gradient shard replaces the bf16 weights (ZeRO-3)
        fsdp = zero == 2 and case.request.stack.fsdp_mixed_precision
        terms = ("weights", "optimizer", "total") if fsdp else ("weights", "gradients", "optimizer", "total")
        _terms_do_not_grow(low, high, terms, (zero, lay.one_line()))


@SETTINGS
@given(cases())
def test_weights_and_optimizer_do_not_grow_with_pp(case):
    # ceil(L/p) layers on the most loaded stage, embedding on the first and the head on the last; ZeRO-3 with
    # stages holds the stage gathered (not compared); plain 1F1B so the chunks stay valid
    lay = case.layout
    if lay.zero == 3 or 2 * lay.pp > case.shape.n_layers:
        return
    shallow, deep = case.with_layout(vpp=1), case.with_layout(pp=2 * lay.pp, vpp=1)
    a, b = _ev(shallow), _ev(deep)
    if bool(a.memory_last_is_max[0]) == bool(b.memory_last_is_max[0]):  # the same stage's (see above)
        for term in ("weights", "optimizer"):
            assert _le(_mem(b, term), _mem(a, term)), (term, lay.one_line())


@SETTINGS
@given(cases(models=MOE))
def test_model_states_do_not_grow_with_ep(case):
    # EP divides the routed experts; their optimizer shards over d·c/e ranks, so ZeRO >= 1 keeps the same share
    lay = case.layout
    wider = [e for e in divisors(case.shape.n_experts) if e > lay.ep and (lay.dp * lay.cp) % e == 0]
    if not wider:
        return
    a, b = _ev(case), _ev(case.with_layout(ep=wider[0]))
    _terms_do_not_grow(a, b, ("weights", "gradients", "optimizer", "total"), (lay.one_line(),))


@SETTINGS
@given(cases())
def test_recomputation_trades_activation_memory_for_compute(case):
    evs = {rc: _ev(case.with_layout(recompute=rc)) for rc in RECOMPUTES}
    act = {rc: _mem(ev, "activations") for rc, ev in evs.items()}
    # full <= none: full keeps each layer's input, and its working set is one layer less that input
    assert act["full"] <= act["none"] * (1 + REL)
    # selective <= none, except torchtitan's op-level policy (every_other_mm) under TP with SP: it saves the
    # down projection's output before the reduce-scatter, 2h per token on every TP rank (its policy saves every
    # odd aten.mm), which no-recompute never stores (memory._every_other_mm_bytes); e.g. Llama 2 7B TP8 SP:
    # +3.6%. Not selective >= full either: with one layer and one micro-batch in flight, full recomputation
    # still holds that layer's whole activations while it recomputes, more than selective keeps.
    op_policy = "every_other_mm" in case.request.stack.selective_recompute
    if not (op_policy and case.layout.sequence_parallel):
        assert _le(act["selective"], act["none"]), case.layout.one_line()
    # compute and the step take longer the more is recomputed
    for lo, hi in (("none", "selective"), ("selective", "full")):
        assert _le(float(evs[lo].time.compute[0]), float(evs[hi].time.compute[0])), (lo, hi)
        assert _le(float(evs[lo].step_seconds[0]), float(evs[hi].step_seconds[0])), (lo, hi)


def test_op_level_selective_recompute_keeps_more_than_none_under_tp_with_sp():
    # the exception above, pinned: torchtitan's every_other_mm at TP8 with SP keeps w2's 2h partial output
    case = Case(
        ParallelRequest(
            model=CATALOG.model("llama-2-7b"),
            gpu=CATALOG.gpu("h100-sxm"),
            n_gpus=8,
            seq_len=4096,
            stack=STACKS["torchtitan-fsdp2"],
        ),
        Layout(
            tp=8, pp=1, dp=1, ep=1, cp=1, zero=0, micro_batch=1, microbatches=1, vpp=1, recompute="none",
            sequence_parallel=True,
        ),
    )  # fmt: skip
    none = _mem(_ev(case), "activations")
    selective = _mem(_ev(case.with_layout(recompute="selective")), "activations")
    h, tokens, layers = case.shape.d_model, 4096, case.shape.n_layers
    # per layer: w2's 2h + two reduce-scatter outputs and the block input 2h/t each, against none's four norm
    # tensors 8h/t and the K, O and w3 products it stores: the excess stays below the 2h of w2 alone
    assert none < selective < none + 2 * h * tokens * layers


def test_full_recompute_counts_the_checkpointed_input_once():
    """The recompute reads the stored checkpoint (Megatron's CheckpointFunction keeps it), so with one layer and
    one micro-batch in flight full recompute keeps exactly none's bytes: the input 2h·x plus the layer's other
    activations (it counted the input twice: +2h·b·s = 33.6 MB for Llama 3.1 8B at s 4096)."""
    case = Case(
        ParallelRequest(model=CATALOG.model("llama-3.1-8b"), gpu=CATALOG.gpu("h100-sxm"), n_gpus=32, seq_len=4096),
        Layout(
            tp=1, pp=32, dp=1, ep=1, cp=1, zero=0, micro_batch=1, microbatches=1, vpp=1, recompute="none",
            sequence_parallel=False,
        ),
    )  # fmt: skip
    none = _mem(_ev(case), "activations")
    full = _mem(_ev(case.with_layout(recompute="full")), "activations")
    assert full == pytest.approx(none, rel=1e-12)


# ---- time, throughput, utilisation ----------------------------------------------------------------------------


@SETTINGS
@given(cases(), st.sampled_from([None, 0.4]))
def test_every_term_is_finite_and_nonnegative_and_the_step_adds_up(case, mfu):
    request = case.request.model_copy(update={"mfu_override": mfu})
    ev = evaluate(request, LayoutGrid.of([case.layout]))
    for term in MEMORY_TERMS:
        value = _mem(ev, term)
        assert math.isfinite(value) and value >= 0, term
    terms = {name: float(getattr(ev.time, name)[0]) for name in TimeSeconds.model_fields}
    for name, value in terms.items():
        assert math.isfinite(value) and value >= 0, name
    step = float(ev.step_seconds[0])
    assert step > 0 and sum(terms.values()) == pytest.approx(step, rel=1e-12)
    assert sum(_mem(ev, t) for t in MEMORY_TERMS[:-1]) == pytest.approx(_mem(ev, "total"), rel=1e-12)
    lay = case.layout
    tokens = lay.dp * lay.micro_batch * lay.microbatches * request.seq_len
    assert float(ev.tokens_per_step[0]) == tokens
    assert float(ev.tokens_per_second[0]) * step == pytest.approx(tokens, rel=1e-12)
    assert float(ev.bubble_fraction[0]) == pytest.approx((lay.pp - 1) / (lay.vpp * lay.microbatches))


@SETTINGS
@given(cases())
def test_mfu_at_most_hfu_and_below_the_peak(case):
    ev = _ev(case)
    mfu, hfu = float(ev.mfu[0]), float(ev.hfu[0])
    assert 0 < mfu <= hfu * (1 + 1e-12)
    if case.layout.recompute == "none":  # HFU adds only what recomputation reruns (timing._recomputed)
        assert hfu == pytest.approx(mfu, rel=1e-12)
    gpu = case.request.gpu
    # MFU is PaLM's against the bf16 peak even for fp8 runs (docs/parallel.md, FP8; torchtitan reports it so),
    # so an fp8 layout may pass 1: the bound there is the fp8 peak
    ceiling = (gpu.fp8_flops or 0) / gpu.bf16_flops if case.request.stack.precision == "fp8" else 1.0
    assert hfu <= ceiling


def test_fp8_mfu_against_the_bf16_peak_can_pass_one():
    # the convention above, pinned: Gopher-scale GEMMs at mbs 1 on H100 in fp8 run above the bf16 peak
    request = ParallelRequest(
        model=CATALOG.model("llama-3.1-405b"), gpu=CATALOG.gpu("h100-sxm"), n_gpus=256, seq_len=2048,
        stack=STACKS["fp8-tensorwise"],
    )  # fmt: skip
    lay = Layout(
        tp=1, pp=1, dp=256, ep=1, cp=1, zero=0, micro_batch=1, microbatches=38, vpp=1, recompute="none",
        sequence_parallel=False,
    )  # fmt: skip
    assert float(evaluate(request, LayoutGrid.of([lay])).mfu[0]) > 1.0


@SETTINGS
@given(cases(gpus=("h100-sxm", "a100-80gb")), st.data())
def test_doubling_gpus_at_a_fixed_global_batch_costs_at_most_the_added_dp_communication(case, data):
    # d -> 2d, m -> m/2: the same tokens per step; each GPU computes half the micro-batches. The bubble, (p-1)/v
    # micro-batch times, and the micro-batch's own time do not change; the optimizer shards over more ranks.
    # What may grow is the DP traffic (a larger ring, maybe across nodes) and the pipeline sends' link.
    lay = case.layout
    half = lay.microbatches // 2
    if lay.microbatches % 2 or (lay.vpp > 1 and half % lay.pp):
        return
    big = case.with_layout(dp=2 * lay.dp, microbatches=half)
    a, b = _ev(case), _ev(big)
    assert float(b.tokens_per_step[0]) == float(a.tokens_per_step[0])
    added = max(0.0, float(b.time.data_parallel[0] - a.time.data_parallel[0]))
    added += max(
        0.0, float(b.time.pipeline_p2p[0] + b.time.bubble[0] - a.time.pipeline_p2p[0] - a.time.bubble[0])
    )
    assert float(b.step_seconds[0]) <= float(a.step_seconds[0]) + added + 1e-9, lay.one_line()


@SETTINGS
@given(
    cases(models=("llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "gpt-3-175b", "llama-2-70b"),
          stacks=("default", "megatron-core", "megatron-2022", "deepspeed"), gpus=HOPPER),
    st.sampled_from(("tensorwise", "delayed", "blockwise")),
)  # fmt: skip
def test_fp8_is_never_slower_than_bf16_on_hopper_for_large_dense_gemms(case, recipe):
    # fp8 halves the linear GEMMs' compute and traffic; it adds the casts (HBM traffic, docs/parallel.md FP8).
    # With TransformerEngine's weight cache (the Megatron stacks) and h >= 4096 the casts never outweigh it.
    # Not an invariant everywhere: torchao recasting every weight every micro-batch (torchtitan-fsdp2) or small
    # expert GEMMs (Qwen3-30B-A3B's 768-wide experts, DeepSeek-V3's 256 experts at EP 1) make fp8 slower, as
    # torchao's own tables show for small shapes (test below).
    fp8 = Stack.model_validate({**case.request.stack.model_dump(), "precision": "fp8", "fp8_recipe": recipe})
    bf16, f8 = _ev(case), _ev(case.with_stack(fp8))
    assert float(f8.step_seconds[0]) <= float(bf16.step_seconds[0]) * (1 + REL), case.layout.one_line()
    assert float(f8.time.compute[0]) <= float(bf16.time.compute[0]) * (1 + REL)


def test_fp8_can_be_slower_where_casts_dominate():
    # the exception above, pinned: DeepSeek-V3 at EP 1 on torchtitan (weights recast each micro-batch)
    lay = Layout(
        tp=1, pp=1, dp=256, ep=1, cp=1, zero=0, micro_batch=1, microbatches=38, vpp=1, recompute="none",
        sequence_parallel=False,
    )  # fmt: skip
    case = Case(
        ParallelRequest(
            model=CATALOG.model("deepseek-v3"), gpu=CATALOG.gpu("h100-sxm"), n_gpus=256, seq_len=2048,
            stack=STACKS["torchtitan-fsdp2"],
        ),
        lay,
    )  # fmt: skip
    fp8 = Stack.model_validate({**case.request.stack.model_dump(), "precision": "fp8"})
    assert float(_ev(case.with_stack(fp8)).step_seconds[0]) > float(_ev(case).step_seconds[0])


@SETTINGS
@given(cases(), st.sampled_from(("flops", "hbm", "nvlink")))
def test_faster_hardware_or_more_overlap_never_slows_the_step(case, faster):
    # a GPU 1.5x faster in one resource, everything else equal, and each overlap switched on: never slower.
    gpu = case.request.gpu
    field = {
        "flops": ("bf16_flops", "fp8_flops"),
        "hbm": ("hbm_bandwidth_bytes_per_s",),
        "nvlink": ("intra_node_bandwidth_bytes_per_s",),
    }[faster]
    quick = gpu.model_copy(update={f: getattr(gpu, f) * 1.5 for f in field if getattr(gpu, f)})
    eff = case.request.efficiency or default_efficiency(gpu)  # the same constants for both
    slow = evaluate(case.request.model_copy(update={"efficiency": eff}), LayoutGrid.of([case.layout]))
    fast = evaluate(
        case.request.model_copy(update={"gpu": quick, "efficiency": eff}), LayoutGrid.of([case.layout])
    )
    assert float(fast.step_seconds[0]) <= float(slow.step_seconds[0]) * (1 + REL), (
        faster,
        case.layout.one_line(),
    )
    stack = case.request.stack
    for flag in ("tp_comm_overlap", "overlap_grad_reduce", "overlap_param_gather"):
        if getattr(stack, flag):
            off = case.with_stack(stack.model_copy(update={flag: False}))
            assert float(slow.step_seconds[0]) <= float(_ev(off).step_seconds[0]) * (1 + REL), flag


def test_a_faster_compute_peak_never_slows_a_context_parallel_step():
    """A cross-node CP ring and the DP reduction share the NICs: the compute that hides the ring is not offered
    again as the DP window (it was: a 1.5x peak made this step 5.5% slower, 164.0 -> 173.0 s)."""
    request = ParallelRequest(
        model=CATALOG.model("qwen3-30b-a3b"), gpu=CATALOG.gpu("h100-sxm"), n_gpus=64, seq_len=32768,
    )  # fmt: skip
    lay = Layout(
        tp=1, pp=1, dp=2, ep=1, cp=32, zero=3, micro_batch=2, microbatches=152, vpp=1, recompute="none",
        sequence_parallel=False,
    )  # fmt: skip
    gpu = request.gpu
    quick = gpu.model_copy(
        update={"bf16_flops": gpu.bf16_flops * 1.5, "fp8_flops": (gpu.fp8_flops or 0) * 1.5}
    )
    eff = default_efficiency(gpu)
    slow = evaluate(request.model_copy(update={"efficiency": eff}), LayoutGrid.of([lay]))
    fast = evaluate(request.model_copy(update={"gpu": quick, "efficiency": eff}), LayoutGrid.of([lay]))
    assert float(fast.step_seconds[0]) <= float(slow.step_seconds[0])


# ---- FLOPs: what the time model executes is the model's active parameters ---------------------------------


#: An ideal GPU and efficiencies: every GEMM and attention call at the peak, no memory-bound kernels, free
#: communication; what remains of the compute time is executed FLOPs / peak.
IDEAL = Efficiency(
    gemm_peak_fraction=1,
    gemm_half_dim=0,
    attention_fraction=1,
    attention_half_seq=0,
    network_efficiency=1,
    tp_overlap_fraction=0,
    dp_overlap_interference=0,
    collective_latency_seconds=0,
    elementwise_time_factor=0,
)


def _executed_flops_per_token(shape: ModelShape, seq: int) -> float:
    """Forward + backward FLOPs the time model should execute per token without recomputation: 6 per active
    matmul weight (the model's active non-embedding parameters less the norms, plus the V·h head) and causal
    FlashAttention, 2·s·a·(d_qk + d_v)·½ forward, 2.5x that backward (docs/parallel.md, Time per step).
    Biases are no GEMM work either: the dense MLP's are left out here as timing.py leaves them out (the
    attention's ride in its fused input projection's width, memory.ShapeTerms.attn_in_width: < 1e-6 of a
    step, counted on both sides)."""
    norms = (
        shape.n_layers * shape.norm_params_per_layer + (2 if shape.norm == "layernorm" else 1) * shape.d_model
    )
    inner = shape.ffn_hidden
    mlp_biases = ((2 * inner if shape.mlp == "swiglu" else inner) + shape.d_model) if shape.linear_bias else 0
    # an aux-loss-free router's E selection biases (model.router_params) are added, not multiplied
    router_biases = shape.moe_layers * (shape.router_params - shape.d_model * shape.n_experts)
    linear = (
        shape.active_non_embedding_params
        - norms
        - shape.dense_layers * mlp_biases
        - router_biases
        + shape.vocab_size * shape.d_model
    )
    # multi-token prediction (DeepSeek-V3 §2.2): each module's active weights less its three h-norms (enorm,
    # hnorm, the shared head's norm), its block's norms and router biases, plus its own pass through the V·h head;
    # and one more layer of attention
    norm = (2 if shape.norm == "layernorm" else 1) * shape.d_model
    router_bias = shape.router_params - shape.d_model * shape.n_experts if shape.is_moe else 0
    mtp = shape.mtp_layers * (
        3 * norm + shape.norm_params_per_layer + router_bias - shape.vocab_size * shape.d_model
    )
    linear += shape.mtp_active_params - mtp
    layers = shape.n_layers + shape.mtp_layers
    return 6.0 * linear + 3.5 * layers * seq * shape.n_heads * (shape.qk_dim + shape.value_dim)


def _ideal_flops_per_token(case: Case) -> float:
    gpu = case.request.gpu.model_copy(update={"hbm_bandwidth_bytes_per_s": 1e30})
    stack = case.request.stack.model_copy(
        update={"attention_kernel": "flash-attention-2", "precision": "bf16"}
    )
    request = case.request.model_copy(update={"gpu": gpu, "efficiency": IDEAL, "stack": stack})
    ev = evaluate(
        request, LayoutGrid.of([case.layout.model_copy(update={"recompute": "none", "pp": 1, "vpp": 1})])
    )
    n_gpus = case.layout.tp * case.layout.dp * case.layout.cp
    return float(ev.time.compute[0]) * gpu.bf16_flops * n_gpus / float(ev.tokens_per_step[0])


@SETTINGS
@given(cases(stacks=("default", "megatron-core", "deepspeed")))
def test_compute_executes_the_active_parameters_flops(case):
    # MoE: top_k routed experts per token (the grouped GEMMs of T·top_k·e/E tokens, E/e of them), whatever EP;
    # TP, CP and DP split the same work; the MoE router too under SP (each rank routes its own T/t tokens)
    if case.shape.is_moe and case.layout.tp > 1 and not case.layout.sequence_parallel:
        case = case.with_layout(tp=1)  # without SP every TP rank routes all T tokens: redundant work
    assert _ideal_flops_per_token(case) == pytest.approx(
        _executed_flops_per_token(case.shape, case.request.seq_len), rel=1e-9
    )
    # and MFU's numerator is PaLM's model FLOPs of the same active weights (attention counted non-causal)
    ev, lay = _ev(case), case.layout
    peak = case.request.gpu.bf16_flops * lay.tp * lay.pp * lay.dp * lay.cp
    assert float(ev.mfu[0]) * peak / float(ev.tokens_per_second[0]) == pytest.approx(
        case.shape.model_flops_per_token(case.request.seq_len), rel=1e-12
    )


def test_the_moe_router_runs_on_the_sequence_parallel_shard():
    """Under SP each TP rank routes its own T/t tokens (Megatron-core requires SP for MoE with TP): the executed
    FLOPs equal the ideal ones (DeepSeek-V3 at TP8 timed the router on all T, +1.7% compute)."""
    case = Case(
        ParallelRequest(model=CATALOG.model("deepseek-v3"), gpu=CATALOG.gpu("h100-sxm"), n_gpus=64, seq_len=4096),
        Layout(
            tp=8, pp=1, dp=8, ep=8, cp=1, zero=1, micro_batch=1, microbatches=8, vpp=1, recompute="none",
            sequence_parallel=True,
        ),
    )  # fmt: skip
    assert _ideal_flops_per_token(case) == pytest.approx(
        _executed_flops_per_token(case.shape, 4096), rel=1e-6
    )


# ---- the search -------------------------------------------------------------------------------------------------


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(models=("llama-3.1-8b", "llama-2-13b", "mixtral-8x7b", "qwen3-30b-a3b"), gpus=("h100-sxm", "a100-80gb")),
       st.sets(st.sampled_from(("tp", "pp", "cp", "zero", "micro_batch", "recompute", "ep"))),
       st.sampled_from((0.0, 0.01, 0.05)))  # fmt: skip
def test_search_answers_within_its_constraints_ranked_and_reproducible(case, pinned, tolerance):
    lay, seq = case.layout, case.request.seq_len
    # a degree above the job's 64 GPUs is bad input (exit 2), not a search answer: such a pin is left out
    usable = [
        a for a in pinned if (a != "ep" or case.shape.is_moe) and not (a in DEGREES and getattr(lay, a) > 64)
    ]
    pins = Pins(**{axis: getattr(lay, axis) for axis in usable})
    request = case.request.model_copy(
        update={
            "n_gpus": 64,
            "pins": pins,
            "top": 8,
            "constraints": Constraints(throughput_tolerance=tolerance),
            "global_batch_tokens": float(2**21),
        }
    )
    result = search(request)
    low, high = result.batch_range_tokens
    for x in result.layouts:
        assert x.memory_bytes.total <= x.memory_limit_bytes
        assert x.tp * x.pp * x.dp * x.cp == 64
        assert x.global_batch_tokens == x.dp * x.micro_batch * x.microbatches * seq
        assert low <= x.global_batch_tokens <= high
        assert x.tokens_per_second * x.step_seconds == pytest.approx(x.global_batch_tokens, rel=1e-12)
        for axis, value in pins.pinned().items():
            assert getattr(x, axis) == value, axis
        assert case.shape.n_experts % x.ep == 0 if case.shape.is_moe else x.ep == 1
        assert (x.dp * x.cp) % x.ep == 0
    if not result.layouts:
        return
    # ranking: the rows within the tolerance of the fastest first, least memory first; then by tokens/s
    assert result.fastest is not None
    best = result.fastest.tokens_per_second
    near = [x.tokens_per_second >= best * (1 - tolerance) for x in result.layouts]
    assert near == sorted(near, reverse=True)
    ties = [x for x, n in zip(result.layouts, near, strict=True) if n]
    rest = [x for x, n in zip(result.layouts, near, strict=True) if not n]
    assert [x.memory_bytes.total for x in ties] == sorted(x.memory_bytes.total for x in ties)
    assert [x.tokens_per_second for x in rest] == sorted((x.tokens_per_second for x in rest), reverse=True)
    assert all(x.tokens_per_second <= best for x in result.layouts)
    # the fully pinned single-layout path gives that row's numbers, through search() and evaluate_layout()
    top = result.layouts[0]
    alone = search(request.model_copy(update={"pins": Pins(**top.layout.axes())}))
    assert alone.candidates == 1 and len(alone.layouts) == 1
    direct = evaluate_layout(request, top.layout)
    for other in (alone.layouts[0], direct):
        assert other.step_seconds == top.step_seconds
        assert other.memory_bytes == top.memory_bytes
        assert other.time_seconds == top.time_seconds
        assert (other.tokens_per_second, other.mfu, other.hfu) == (top.tokens_per_second, top.mfu, top.hfu)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(MOE), st.sampled_from((64, 128, 256)))
def test_expert_parallelism_divides_the_experts_and_the_data_and_context_ranks(model, gpus):
    from runplan.parallel.search import build_grid

    shape = CATALOG.model(model)
    request = ParallelRequest(model=shape, gpu=CATALOG.gpu("h100-sxm"), n_gpus=gpus, seq_len=4096)
    grid, _ = build_grid(request)
    assert grid is not None
    ep, dc = np.asarray(grid.ep), np.asarray(grid.dp) * np.asarray(grid.cp)
    assert (shape.n_experts % ep == 0).all() and (dc % ep == 0).all()
    assert (np.asarray(grid.tp) * np.asarray(grid.pp) * dc == gpus).all()
    # every EP degree the rules allow is searched
    allowed = {e for e in divisors(shape.n_experts) if any(int(x) % e == 0 for x in set(dc.tolist()))}
    assert set(ep.tolist()) == allowed
