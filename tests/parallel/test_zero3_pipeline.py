"""ZeRO-3 under pipeline stages (torchtitan: FSDP2 + PyTorch pipelining): the stage stays gathered for the whole
step (memory.model_state_bytes, docs/parallel.md), hand-derived, and the search offers it only to the stack that
can run it."""

import pytest
from tests.parallel.shapes import H100, LLAMA_70B

from runplan.errors import Infeasible
from runplan.parallel.layout import Layout, ParallelRequest, Pins
from runplan.parallel.memory import model_state_bytes
from runplan.parallel.search import ensure_feasible, evaluate_layout, search
from runplan.parallel.stack import Stack, resolve_stack
from runplan.parallel.timing import default_efficiency

PSI, D = 1e9, 8  # stage params per GPU (after TP), data-parallel ranks


def test_held_stage_states_hand_derived():
    # ZeRO-3 without stages: 2/d bf16 + 4/d fp32 grads + 12/d optimizer = 18 bytes / 8 per parameter
    flat = [float(x) for x in model_state_bytes(PSI, 0.0, 3, D, 1, 1, 4)]
    assert flat == pytest.approx([2 * PSI / D, 4 * PSI / D, 12 * PSI / D])
    # with stages: + 2 bytes of the gathered stage (reshard_after_forward False) + 4 of its unsharded gradient
    held = [float(x) for x in model_state_bytes(PSI, 0.0, 3, D, 1, 1, 4, p=8)]
    assert held == pytest.approx([2 * PSI / D + 2 * PSI, 4 * PSI / D + 4 * PSI, 12 * PSI / D])
    # FSDP mixed precision, bf16 reduction: no bf16 shard; the unsharded gradient accumulates in bf16
    fsdp = [float(x) for x in model_state_bytes(PSI, 0.0, 3, D, 1, 1, 2, fsdp_mixed_precision=True, p=8)]
    assert fsdp == pytest.approx([2 * PSI, 4 * PSI / D + 2 * PSI, 12 * PSI / D])
    # ZeRO-1 and ZeRO-2 do not depend on the stage count
    for zero in (0, 1, 2):
        assert [float(x) for x in model_state_bytes(PSI, 0.0, zero, D, 1, 1, 4, p=8)] == [
            float(x) for x in model_state_bytes(PSI, 0.0, zero, D, 1, 1, 4)
        ]


def _layout(zero: int, pp: int) -> Layout:
    return Layout(
        tp=8,
        pp=pp,
        dp=64 // pp,
        ep=1,
        cp=1,
        zero=zero,
        micro_batch=1,
        microbatches=16,
        vpp=1,
        recompute="full",
        sequence_parallel=True,
    )


def test_held_stage_gathers_once_and_reduce_scatters_after_the_last_backward():
    request = ParallelRequest(
        model=LLAMA_70B, gpu=H100, n_gpus=512, seq_len=4096, stack=resolve_stack("torchtitan-fsdp2")
    )
    zero1, zero3 = (evaluate_layout(request, _layout(z, 4)) for z in (1, 3))
    # ZeRO-1's traffic T (g + 2 = 6 bytes per parameter: the preset reduces in fp32) exceeds one micro-batch's
    # compute W here: exposed T + 2 latencies - W + kappa·W. With stages the gather (T/3) still hides under W at
    # the interference cost kappa, but the reduce-scatter (2T/3) waits for the last backward and is paid whole
    eff = default_efficiency(H100)
    kappa, latency = eff.dp_overlap_interference, 2 * eff.collective_latency_seconds
    window = zero1.time_seconds.compute / 16
    traffic = zero1.time_seconds.data_parallel - latency + window - kappa * window
    gather = traffic / 3 + latency
    by_hand = max(0.0, gather - window) + kappa * min(gather, window) + 2 * traffic / 3
    assert zero3.time_seconds.data_parallel == pytest.approx(by_hand, rel=1e-9)
    assert zero3.step_seconds - zero1.step_seconds == pytest.approx(
        by_hand - zero1.time_seconds.data_parallel
    )
    # without stages, FSDP gathers every layer three times per micro-batch (full recompute): 16 micro-batches
    flat1, flat3 = (evaluate_layout(request, _layout(z, 1)) for z in (1, 3))
    assert flat3.time_seconds.data_parallel > flat1.time_seconds.data_parallel
    # memory: the held bf16 stage is ZeRO-1's weights; its unsharded gradients come on top of the fp32 shard's
    assert zero3.memory_bytes.weights == zero1.memory_bytes.weights
    assert zero3.memory_bytes.gradients == pytest.approx(zero1.memory_bytes.gradients * (1 + 1 / 16))


@pytest.mark.parametrize(
    ("stack", "pins", "offered"),
    [
        (Stack(), Pins(), False),  # Megatron, DeepSpeed: refused by the engine, not searched
        (Stack(), Pins(zero=3), False),  # ZeRO-3 pinned, stages searched: only p = 1
        (Stack(), Pins(zero=3, pp=4), True),  # both pinned: the user asked, it is evaluated
        (resolve_stack("torchtitan-fsdp2"), Pins(), True),
    ],
)
def test_zero3_with_stages_is_searched_only_where_it_runs(stack, pins, offered):
    from runplan.parallel.search import build_grid

    request = ParallelRequest(model=LLAMA_70B, gpu=H100, n_gpus=512, seq_len=4096, stack=stack, pins=pins)
    grid, _ = build_grid(request)
    assert grid is not None
    assert bool(((grid.zero == 3) & (grid.pp > 1)).any()) == offered
    if pins.pp == 4:
        assert search(request).layouts[0].zero == 3


def test_infeasible_with_pinned_stages_does_not_suggest_zero3_there():
    # 70B on 24 H100 (its fully sharded states need 18) with --pp 8: ZeRO-3 with the stages pinned holds each
    # stage gathered (+2 + 4 bytes per stage parameter), so it needs more memory than the ZeRO-1 the search
    # found; the tip must not send the user there
    def run(pins: Pins):
        request = ParallelRequest(model=LLAMA_70B, gpu=H100, n_gpus=24, seq_len=4096, pins=pins)
        result = search(request)
        with pytest.raises(Infeasible):
            ensure_feasible(result)
        return result

    staged = run(Pins(pp=8))
    pinned_zero3 = run(Pins(pp=8, zero=3))
    smallest = min(x.memory_bytes.total for x in staged.nearest_misses)
    assert min(x.memory_bytes.total for x in pinned_zero3.nearest_misses) > smallest
    tips = " ".join(staged.suggestions)
    assert "ZeRO-3 (parallel.zero=3)" not in tips
    assert "ZeRO-3 without pipeline stages (parallel.zero=3 parallel.pp=1)" in tips
    pinned_zero1 = " ".join(run(Pins(pp=1, zero=1, micro_batch=8, recompute="none")).suggestions)
    assert "ZeRO-3 (parallel.zero=3)" in pinned_zero1 and "(parallel.micro_batch=1)" in pinned_zero1
