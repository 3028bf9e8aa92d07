"""The vectorized search against the pure-Python reference, brute force, constraints and acceptance cases."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.parallel.reference import evaluate_layout, layout
from tests.parallel.shapes import (
    GPT_SMALL,
    H100,
    LLAMA_8B,
    LLAMA_70B,
    LLAMA_405B,
    MIXTRAL,
    QK_NORM,
    TINY_MOE,
)

from runplan.errors import Infeasible
from runplan.parallel.layout import Constraints, Layout, ParallelRequest, Pins
from runplan.parallel.search import build_grid, choose_microbatches, ensure_feasible, evaluate, search
from runplan.parallel.stack import PRESETS, Stack
from runplan.parallel.timing import default_efficiency

#: Rank by speed alone (no memory-margin tie, constraints.throughput_tolerance): agreement with tuned recipes.
FASTEST = Constraints(throughput_tolerance=0)


def _autocast(stack: Stack, on: bool) -> Stack:
    """The stack under torch.autocast over fp32 weights where it can be (fp32 gradients, no FSDP mixed
    precision, bf16 linears: Stack refuses the rest)."""
    fits = stack.gradient_dtype == "fp32" and not stack.fsdp_mixed_precision and stack.precision == "bf16"
    return (
        Stack.model_validate({**stack.model_dump(), "autocast_fp32_weights": True}) if on and fits else stack
    )


#: Any stack: a preset with any selective modules, dropout, scatter/gather, DP overlap, full-recompute rule and
#: FSDP mixed precision, precision (bf16, or fp8 with any recipe Hopper runs), parameter-gather overlap, loss,
#: autocast over fp32 weights.
STACKS = st.builds(
    lambda preset, modules, dropout, scatter, overlap_dp, method, layers, fsdp, precision, gather, loss, amp: (
        _autocast(
            Stack(
                preset=preset,
                selective_recompute=modules,
                hidden_dropout=dropout,
                attention_dropout=dropout,
                pipeline_scatter_gather=scatter,
                overlap_grad_reduce=overlap_dp,
                full_recompute_method=method,
                full_recompute_layers=layers,
                fsdp_mixed_precision=fsdp,
                overlap_param_gather=gather,
                cross_entropy=loss,
                **dict(zip(("precision", "fp8_recipe"), precision, strict=False)),
            ),
            amp,
        )
    ),
    st.sampled_from(list(PRESETS)),
    st.lists(
        st.sampled_from(["core_attn", "layernorm", "mlp_act", "mlp", "moe_act", "every_other_mm"]),
        unique=True,
    ).map(  # torchtitan's op-level policy goes alone, or with moe_act (Stack refuses the rest beside it)
        lambda ms: tuple(m for m in ms if "every_other_mm" not in ms or m in ("every_other_mm", "moe_act"))
    ),
    st.sampled_from([0.0, 0.1]),
    st.booleans(),
    st.booleans(),
    st.sampled_from(["uniform", "block"]),
    st.integers(1, 5),
    st.booleans(),
    st.sampled_from([("bf16",)] + [("fp8", r) for r in ("tensorwise", "delayed", "rowwise", "blockwise")]),
    st.booleans(),
    st.sampled_from(["fused", "unfused"]),
    st.booleans(),
)

KEYS = ("weights", "gradients", "optimizer", "activations", "other", "total")


def _row(grid, ev, i):
    return {
        **{k: float(getattr(ev.memory, k)[i]) for k in KEYS},
        "step_seconds": float(ev.step_seconds[i]),
        "tokens_per_second": float(ev.tokens_per_second[i]),
        "mfu": float(ev.mfu[i]),
        "hfu": float(ev.hfu[i]),
        "bubble_fraction": float(ev.bubble_fraction[i]),
    }


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    shape=st.sampled_from([LLAMA_8B, GPT_SMALL, TINY_MOE, MIXTRAL, QK_NORM]),
    n_gpus=st.sampled_from([8, 16, 64, 96]),
    seq=st.sampled_from([1024, 4096, 32768]),
    flash=st.booleans(),
    overlap=st.booleans(),
    grad_bytes=st.sampled_from([2, 4]),
    sp=st.sampled_from([None, False]),
    cross_node_tp=st.booleans(),
    efficiency=st.sampled_from(
        [
            None,
            default_efficiency(H100, dp_overlap_interference=0.3, tp_overlap_fraction=0.7),
            # calibrated per-tier network efficiency and a fixed per-step overhead (runplan calibrate)
            default_efficiency(H100).model_copy(
                update={"inter_node_network_efficiency": 0.55, "step_overhead_seconds": 0.07}
            ),
        ]
    ),
    stack=STACKS,
    pick=st.integers(0, 10**9),
)
def test_search_equals_reference_on_random_layouts(
    shape, n_gpus, seq, flash, overlap, grad_bytes, sp, cross_node_tp, efficiency, stack, pick
):
    # sp=False and TP wider than a node exercise the gates of the TP overlap; a non-default efficiency the
    # overlap and interference arithmetic
    req = ParallelRequest(
        model=shape,
        gpu=H100,
        n_gpus=n_gpus,
        seq_len=seq,
        stack=stack.model_copy(
            update={
                "flash_attention": flash,
                "tp_comm_overlap": overlap,
                "gradient_dtype": "fp32" if grad_bytes == 4 else "bf16",
                # autocast over fp32 weights keeps fp32 gradients (Stack refuses bf16 beside it)
                "autocast_fp32_weights": stack.autocast_fp32_weights and grad_bytes == 4,
            }
        ),
        efficiency=efficiency,
        pins=Pins(sequence_parallel=sp),
        constraints=Constraints(max_global_batch_tokens=2e7, allow_cross_node_tp=cross_node_tp),
    )
    grid, _ = build_grid(req)
    m, _, _ = choose_microbatches(req, grid, seq, 2e7)
    grid = grid.replace(microbatches=m)
    ev = evaluate(req, grid)
    for i in {pick % len(grid), (pick // 7) % len(grid)}:
        ref = evaluate_layout(req, grid.row(i))
        got = _row(grid, ev, i)
        for key, value in got.items():
            assert value == pytest.approx(ref[key], rel=1e-9), key


def test_brute_force_best_equals_search_best():
    # every m in the batch range, every axis: the search (which evaluates only the largest m) must agree
    req = ParallelRequest(
        model=TINY_MOE,
        gpu=H100,
        n_gpus=16,
        seq_len=2048,
        global_batch_tokens=2**19,
        global_batch_tolerance=0.2,
        micro_batch_choices=(1, 2, 4),
        constraints=Constraints(throughput_tolerance=0),  # fastest first: the brute force's maximum
    )
    result = search(req)
    low, high = result.batch_range_tokens
    limit = H100.hbm_bytes * (1 - req.constraints.memory_headroom_fraction)
    best = 0.0
    names = ("none", "selective", "full")
    for tp, pp, cp in itertools.product((1, 2, 4, 8, 16), repeat=3):
        if 16 % (tp * pp * cp) or TINY_MOE.n_heads % tp or TINY_MOE.n_kv_heads % tp or tp > 8 or pp > 8:
            continue
        if cp > 1 and 2048 % (2 * cp):
            continue
        dp = 16 // (tp * pp * cp)
        for ep, zero, b, rc, v in itertools.product((1, 2, 4, 8), range(4), (1, 2, 4), names, (1, 2, 4, 8)):
            if dp % ep or (v > 1 and (pp < 2 or 8 % (pp * v))):
                continue
            for m in range(1, 600):
                tokens = dp * b * m * 2048
                if tokens > high:
                    break
                if tokens < low or (v > 1 and m % pp):
                    continue
                lay = layout(tp, pp, dp, ep, cp, zero, b, m, v, rc, tp > 1)
                r = evaluate_layout(req, lay)
                if r["total"] <= limit and r["bubble_fraction"] <= 0.15 + 1e-12:
                    best = max(best, r["tokens_per_second"])
    assert result.feasible > 0
    assert result.layouts[0].tokens_per_second == pytest.approx(best, rel=1e-9)


@pytest.mark.parametrize(
    "shape,gpus,seq", [(LLAMA_70B, 512, 4096), (MIXTRAL, 64, 4096), (LLAMA_8B, 64, 131072)]
)
def test_every_reported_layout_satisfies_every_constraint(shape, gpus, seq):
    fastest_first = Constraints(throughput_tolerance=0)
    req = ParallelRequest(model=shape, gpu=H100, n_gpus=gpus, seq_len=seq, top=20, constraints=fastest_first)
    result = search(req)
    low, high = result.batch_range_tokens
    for x in result.layouts:
        lay = x.layout
        ref = evaluate_layout(req, lay)
        assert ref["total"] <= H100.hbm_bytes * 0.95
        assert ref["bubble_fraction"] <= 0.15 + 1e-12
        assert low <= x.global_batch_tokens <= high
        assert x.tp * x.pp * x.dp * x.cp == gpus
        assert shape.n_heads % x.tp == 0 and shape.n_kv_heads % x.tp == 0 and x.tp <= 8
        assert x.dp % x.ep == 0 and (shape.n_experts or 1) % x.ep == 0
        assert seq % (2 * x.cp) == 0 or x.cp == 1
        assert ref["tokens_per_second"] == pytest.approx(x.tokens_per_second, rel=1e-9)
    tps = [x.tokens_per_second for x in result.layouts]
    assert tps == sorted(tps, reverse=True)


BASE = dict(
    tp=2,
    pp=2,
    dp=4,
    ep=1,
    cp=1,
    zero=0,
    micro_batch=2,
    microbatches=8,
    vpp=1,
    recompute="none",
    sequence_parallel=True,
)


def _mem(**change):
    req = ParallelRequest(model=LLAMA_8B, gpu=H100, n_gpus=64, seq_len=4096)
    return evaluate_layout(req, Layout(**{**BASE, **change}))["total"]


@given(
    tp=st.sampled_from([1, 2, 4]),
    pp=st.sampled_from([1, 2, 4, 8]),
    zero=st.integers(0, 2),
    b=st.sampled_from([1, 2, 4]),
    rc=st.sampled_from(["none", "selective", "full"]),
)
@settings(max_examples=30, deadline=None)
def test_memory_monotone(tp, pp, zero, b, rc):
    cur = dict(tp=tp, pp=pp, zero=zero, micro_batch=b, recompute=rc, sequence_parallel=tp > 1)
    here = _mem(**cur)
    assert _mem(**{**cur, "tp": tp * 2, "sequence_parallel": True}) < here
    assert _mem(**{**cur, "pp": pp * 2}) < here  # 1F1B: in-flight micro-batches × layers stays ~L
    if zero + 1 == 3 and pp > 1:  # torchtitan holds a gathered stage and its unsharded gradients (memory.py)
        assert _mem(**{**cur, "zero": 3}) > here
    else:
        assert _mem(**{**cur, "zero": zero + 1}) < here
    assert _mem(**{**cur, "micro_batch": b * 2}) > here
    order = ["none", "selective", "full"]
    if rc != "full":
        assert _mem(**{**cur, "recompute": order[order.index(rc) + 1]}) < here


def test_70b_on_512_h100_searches_everything_and_lands_in_published_mfu_range():
    result = search(ParallelRequest(model=LLAMA_70B, gpu=H100, n_gpus=512, seq_len=4096))
    assert result.candidates > 10_000
    assert result.layouts[0].tp in (2, 4, 8)
    # Published dense bf16 H100 runs report 38-59% MFU (Llama 3 Table 4: 38-43%; NVIDIA's DGX Cloud benchmarks:
    # 53-59%); the calibrated model must not return the 70% an isolated-GEMM anchor gave.
    assert 0.35 < result.layouts[0].mfu < 0.6


# issue 4's acceptance point, contradicted by published evidence (NVIDIA's tuned 70B H100 recipe is TP 4): TP 4
# and TP 8 tie within 0.3% and the tie goes to TP 4's memory margin (test_cli_70b_512_best_tp_is_8 says more)
@pytest.mark.xfail(strict=True, reason="issue 4: published evidence (NVIDIA's tuned 70B recipe) is TP 4")
def test_70b_on_512_h100_prefers_tp8():
    result = search(ParallelRequest(model=LLAMA_70B, gpu=H100, n_gpus=512, seq_len=4096))
    assert result.layouts[0].tp == 8


def _recipe_gap(model, n_gpus: int, global_batch_sequences: int, axes: tuple[int, int, int]) -> float:
    """How far the recipe's TP/PP/CP (everything else searched) is below the fastest layout, in tokens/s."""
    result = search(
        ParallelRequest(  # the fastest layout, as the recipe was tuned for speed
            model=model,
            gpu=H100,
            n_gpus=n_gpus,
            seq_len=8192,
            constraints=FASTEST,
            global_batch_tokens=global_batch_sequences * 8192,
            top=500,
        )
    )
    fastest = result.layouts[0].tokens_per_second
    recipe = [x for x in result.layouts if (x.tp, x.pp, x.cp) == axes]
    return 1.0 - recipe[0].tokens_per_second / fastest


def test_70b_on_64_h100_ranks_nvidia_tuned_recipe_near_the_top():
    # Megatron-Bridge's H100 bf16 performance recipe for Llama 3 70B on 64 GPUs: TP 4, PP 4, CP 2, global batch
    # 256 x 8192 (docs/validation.md, layout agreement). The search picked exactly these axes before the Lambda
    # rows' correction; the refit prefers TP 8 PP 2 and puts the recipe 1.1% behind, far inside the model's
    # leave-one-source-out error (docs/validation.md), so the claim kept is "within 1.5%".
    assert _recipe_gap(LLAMA_70B, 64, 256, (4, 4, 2)) <= 0.015


def test_405b_on_1024_h100_ranks_nvidia_tuned_recipe_near_the_top():
    # Megatron-Bridge's H100 bf16 recipe for Llama 3.1 405B on 1,024 GPUs: TP 8, PP 8, CP 2. Within the default 1%
    # tolerance the search picks it (layout agreement: gap 0.0%); the fastest row alone has CP 4, 0.24% ahead.
    assert _recipe_gap(LLAMA_405B, 1024, 512, (8, 8, 2)) <= 0.005


def test_moe_searches_expert_parallelism():
    result = search(ParallelRequest(model=MIXTRAL, gpu=H100, n_gpus=64, seq_len=4096, top=50))
    assert {x.ep for x in result.layouts} - {1}
    grid, _ = build_grid(ParallelRequest(model=MIXTRAL, gpu=H100, n_gpus=64))
    assert set(np.unique(grid.ep)) == {1, 2, 4, 8}


def test_long_sequence_makes_cp_appear():
    short = search(ParallelRequest(model=LLAMA_8B, gpu=H100, n_gpus=64, seq_len=4096))
    long = search(ParallelRequest(model=LLAMA_8B, gpu=H100, n_gpus=64, seq_len=131072))
    assert short.layouts[0].cp == 1
    assert long.layouts[0].cp > 1


def test_infeasible_names_memory_and_suggests():
    result = search(ParallelRequest(model=LLAMA_405B, gpu=H100, n_gpus=8, seq_len=4096))
    assert result.feasible == 0
    assert result.eliminated["memory"] == result.candidates
    assert result.nearest_misses
    with pytest.raises(Infeasible) as info:
        ensure_feasible(result)
    text = str(info.value)
    # 405B's fully sharded states need 101 GPUs (104 in whole nodes): no memory knob can help 8, so none is offered
    assert "memory" in text and "need at least 104 h100-sxm GPUs" in text
    advice = text.split("to make it feasible", 1)[1]  # (a nearest miss may be a ZeRO-3 layout)
    assert "ZeRO-3" not in advice and "recomputation" not in advice and "unpin" not in advice


def test_infeasible_suggests_relaxing_only_pinned_memory_axes():
    """On 128 GPUs 405B's states fit fully sharded; the pinned ZeRO-1 is the one axis to relax. The search
    already tried full recomputation and micro-batch 1 (unpinned), so suggesting them would change nothing."""
    result = search(
        ParallelRequest(model=LLAMA_405B, gpu=H100, n_gpus=128, seq_len=4096, pins=Pins(tp=8, pp=1, zero=1))
    )
    with pytest.raises(Infeasible) as info:
        ensure_feasible(result)
    text = str(info.value)
    assert "ZeRO-3 (parallel.zero=3)" in text and "unpin" in text
    assert "recomputation" not in text and "micro-batch" not in text


def test_batch_ceiling_infeasible():
    result = search(
        ParallelRequest(
            model=LLAMA_8B,
            gpu=H100,
            n_gpus=4096,
            seq_len=4096,
            pins=Pins(tp=1, cp=1),
            constraints=Constraints(max_global_batch_tokens=1e6),
        )
    )
    assert result.feasible == 0
    with pytest.raises(Infeasible, match="global_batch"):
        ensure_feasible(result)


def test_nearest_miss_names_every_axis_and_the_rule_it_breaks():
    """8 stages, 1 micro-batch pinned: the nearest misses interleave (v10: bubble 7/10), which also needs m to
    be a multiple of pp; the line says so (not 'outside' a batch range the batch is inside) and shows v and m."""
    pins = Pins(tp=8, pp=8, dp=8, micro_batch=1, microbatches=1)
    result = search(ParallelRequest(model=LLAMA_70B, gpu=H100, n_gpus=512, seq_len=4096, pins=pins))
    assert result.feasible == 0
    with pytest.raises(Infeasible) as info:
        ensure_feasible(result)
    text = str(info.value)
    assert "TP8 PP8 DP8 CP1 ZeRO-1 mbs1 m1 v10 none SP: bubble 0.700 > 0.15" in text
    assert "1 micro-batches not a multiple of pp 8 (interleaved, v > 1)" in text
    assert "outside" not in text


def test_torchtitan_cp_caution_only_when_the_best_layout_uses_cp_on_torchtitan():
    def warned(stack: Stack, cp: int | None) -> tuple[int, bool]:
        request = ParallelRequest(
            model=LLAMA_8B, gpu=H100, n_gpus=64, seq_len=262144, stack=stack, pins=Pins(cp=cp)
        )
        result = search(request)
        return result.layouts[0].cp, any("context parallelism on torchtitan" in w for w in result.warnings)

    cp, caution = warned(Stack(preset="torchtitan-fsdp2"), None)  # CP 4 (ZeRO-3: torchtitan has no ZeRO-1/2)
    assert cp > 1 and caution
    assert warned(Stack(preset="torchtitan-fsdp2"), 1) == (1, False)
    assert warned(Stack(), None)[1] is False


def test_memory_suggestions_name_the_largest_term_and_offer_cp_only_where_pinned():
    # torchtitan's 8B at 256k on 8 GPUs: even the smallest layout overflows, by its activations (its unfused
    # cross-entropy keeps 12 bytes per logit); CP was searched unless pinned, so only a pinned CP is worth raising
    def suggestions(cp: int | None) -> str:
        request = ParallelRequest(
            model=LLAMA_8B,
            gpu=H100,
            n_gpus=8,
            seq_len=262144,
            pins=Pins(cp=cp),
            stack=Stack(preset="torchtitan-fsdp2"),
        )
        return " | ".join(search(request).suggestions)

    free, pinned = suggestions(None), suggestions(1)
    assert "its largest term is activations at" in free
    assert "context parallelism" not in free
    # the free search tried every CP and none fits: raising the pinned CP is not offered (it named no value and
    # could not work); where one does fit, the least such CP is named (test_long_context_128k: --cp 2)
    assert "its largest term is activations at" in pinned and "context parallelism" not in pinned


def test_one_line_shows_expert_parallelism_only_when_used():
    dense = layout(2, 1, 4, 1, 1, 1, 2, 4, 1, "full", True)
    assert dense.one_line() == "TP2 PP1 DP4 CP1 ZeRO-1 mbs2 m4 v1 full SP"
    assert dense.model_copy(update={"ep": 4}).one_line() == "TP2 PP1 DP4 CP1 EP4 ZeRO-1 mbs2 m4 v1 full SP"


def test_all_pinned_evaluates_one_layout():
    pins = Pins(tp=8, pp=4, dp=16, cp=1, zero=1, micro_batch=1, microbatches=64, vpp=5, recompute="selective")
    result = search(ParallelRequest(model=LLAMA_70B, gpu=H100, n_gpus=512, seq_len=4096, pins=pins))
    assert result.candidates == 1 and result.feasible == 1
    x = result.layouts[0]
    assert (x.tp, x.pp, x.dp, x.vpp, x.microbatches) == (8, 4, 16, 5, 64)
    assert x.global_batch_tokens == 16 * 64 * 4096
    assert x.bubble_fraction == pytest.approx(3 / (5 * 64))
    assert 0.2 < x.mfu < 0.8


def test_405b_16k_speed():
    result = search(ParallelRequest(model=LLAMA_405B, gpu=H100, n_gpus=16384, seq_len=8192))
    assert result.feasible > 0
    assert result.search_seconds < 1.5
    assert math.isfinite(result.layouts[0].step_seconds)


def test_best_by_tp_equals_the_search_pinned_to_that_tp():
    # best_by_tp summarises the full grid per TP degree; pinning TP shrinks the grid to that slice, so the
    # best layout of each pinned search must have exactly the tokens/s the summary reports
    request = ParallelRequest(
        model=LLAMA_70B, gpu=H100, n_gpus=512, seq_len=4096, constraints=Constraints(throughput_tolerance=0)
    )
    result = search(request)
    assert len(result.best_by_tp) >= 3
    for entry in result.best_by_tp:
        pinned = search(request.model_copy(update={"pins": Pins(tp=entry.tp)})).layouts[0]
        assert pinned.tokens_per_second == pytest.approx(entry.tokens_per_second, rel=1e-12)
        assert entry.behind_best == pytest.approx(
            1 - pinned.tokens_per_second / result.layouts[0].tokens_per_second
        )


def test_best_by_tp_is_empty_under_an_mfu_override():
    # with --mfu every layout runs at the same MFU, so "how far behind is TP 8" has no answer
    request = ParallelRequest(model=LLAMA_70B, gpu=H100, n_gpus=512, seq_len=4096, mfu_override=0.4)
    assert search(request).best_by_tp == []


def test_tp_overlap_needs_sequence_parallelism():
    # Megatron asserts SP for --tp-comm-overlap and torchtitan's async TP rides on its SP plan: without SP the
    # overlap switch must change nothing
    pins = Pins(tp=8, pp=2, dp=32, cp=1, zero=1, micro_batch=1, microbatches=64, vpp=2, recompute="full")
    times = []
    for overlap in (True, False):
        request = ParallelRequest(
            model=LLAMA_70B,
            gpu=H100,
            n_gpus=512,
            seq_len=4096,
            stack=Stack(tp_comm_overlap=overlap),
            pins=pins.model_copy(update={"sequence_parallel": False}),
        )
        times.append(search(request).layouts[0].time_seconds.tensor_parallel)
    assert times[0] == times[1] > 0


def test_context_parallel_pays_the_ring_merge():
    # hand-derived: one extra ring step (c = 2) of Llama 3 70B, TP 8, b = 1, s = 8192 (T = 4096 tokens per
    # rank): forward merge 10 B x T x a/t x d_v and backward 10 B x T x (a/t x d_qk + kv/t x (d_qk + d_v)), over
    # 3.35 TB/s, plus one latency each way, for each of the 80 layers on one stage of one micro-batch
    from runplan.parallel.timing import COLLECTIVE_LATENCY_SECONDS

    T, a, kv, d = 4096, 64 // 8, 8 // 8, 128
    forward = 10 * T * a * d
    backward = 10 * T * (a * d + kv * 2 * d)
    expected = 80 * ((forward + backward) / 3.35e12 + 2 * COLLECTIVE_LATENCY_SECONDS)
    pins = Pins(tp=8, pp=1, dp=32, cp=2, zero=1, micro_batch=1, microbatches=1, recompute="none")
    request = ParallelRequest(model=LLAMA_70B, gpu=H100, n_gpus=512, seq_len=8192, pins=pins)
    got = search(request).layouts[0].time_seconds.context_parallel
    # the K/V exchange itself hides under the attention kernel here, so the merge is all that shows
    assert got == pytest.approx(expected, rel=1e-9)


def test_mfu_override_keeps_the_time_models_ranking():
    # under --mfu every layout runs at the same tokens/s; the order among them is the time model's, not the
    # memory tie-break (which put TP 8 with CP 64 first)
    base = ParallelRequest(model=LLAMA_70B, gpu=H100, n_gpus=512, seq_len=4096)
    modelled = search(base).layouts[0]
    overridden = search(base.model_copy(update={"mfu_override": 0.4})).layouts[0]
    axes = ("tp", "pp", "dp", "cp", "ep", "zero", "micro_batch", "microbatches", "vpp", "recompute")
    assert [getattr(overridden, a) for a in axes] == [getattr(modelled, a) for a in axes]
    assert overridden.mfu == pytest.approx(0.4)


def test_within_the_throughput_tolerance_the_most_memory_margin_ranks_first():
    # issue 15: 70B on 512 H100 had its fastest layout at 98% of the memory limit; among layouts within 1% of
    # the fastest tokens/s the one with least memory is chosen, and a 0 tolerance gives the fastest back
    base = ParallelRequest(model=LLAMA_70B, gpu=H100, n_gpus=512, seq_len=4096, top=50)
    fastest = search(base.model_copy(update={"constraints": Constraints(throughput_tolerance=0)})).layouts
    chosen = search(base).layouts[0]
    top = fastest[0].tokens_per_second
    near = [x for x in fastest if x.tokens_per_second >= 0.99 * top]
    assert chosen.tokens_per_second >= 0.99 * top
    assert chosen.memory_bytes.total <= min(x.memory_bytes.total for x in near)
    assert chosen.memory_bytes.total < fastest[0].memory_bytes.total


@pytest.mark.parametrize("tolerance", [0.0, 0.01, 0.2])
@pytest.mark.parametrize("mfu", [None, 0.45])
def test_ranking_only_the_contenders_gives_the_full_ranking_head(tolerance, mfu):
    # search ranks only the rows that can reach the top (search._contenders); its head must equal the head of
    # ranking every feasible row, ties and the throughput tolerance included
    from runplan.parallel.search import _best_by_tp, _bounds, _near, _ranked

    request = ParallelRequest(
        model=LLAMA_70B,
        gpu=H100,
        n_gpus=512,
        seq_len=4096,
        mfu_override=mfu,
        constraints=Constraints(throughput_tolerance=tolerance),
    )
    grid, _ = build_grid(request)
    bounds, _ = _bounds(request)
    m, batch_ok, _ = choose_microbatches(request, grid, bounds.low_tokens, bounds.high_tokens)
    grid = grid.replace(microbatches=m)
    ev = evaluate(request, grid)
    idx = np.flatnonzero(batch_ok & (ev.memory.total <= bounds.memory_limit_bytes))
    full = _ranked(grid, ev, idx, tolerance)
    for top in (1, 5, 50, 2000):
        assert list(_ranked(grid, ev, idx, tolerance, top)) == list(full[:top])
    # the best row of each TP degree is its first row in the full ranking
    first = {}
    for i in full:
        first.setdefault(int(grid.tp[i]), int(i))
    best = _best_by_tp(grid, ev, idx, _near(ev, idx, tolerance))
    assert [(b.tp, b.tokens_per_second) for b in best] == [
        (t, float(ev.tokens_per_second[first[t]])) for t in sorted(first)
    ]


@pytest.mark.parametrize("model", [LLAMA_70B, MIXTRAL])
def test_the_time_terms_add_up_to_the_step(model):
    # every number printed is explained: the breakdown (fixed per-step overhead included) is the step time
    result = search(ParallelRequest(model=model, gpu=H100, n_gpus=512, seq_len=4096, top=20))
    assert result.layouts
    for x in result.layouts:
        terms = x.time_seconds.model_dump()
        assert terms["overhead"] == default_efficiency(H100).step_overhead_seconds
        assert sum(terms.values()) == pytest.approx(x.step_seconds, rel=1e-12)
