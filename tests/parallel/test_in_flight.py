"""Micro-batches in flight are capped at the step's micro-batches, in the vectorized model and the reference."""

from __future__ import annotations

import pytest
from tests.parallel.reference import evaluate_layout
from tests.parallel.shapes import H100, LLAMA_8B

from runplan.parallel.layout import ParallelRequest, Pins
from runplan.parallel.memory import in_flight
from runplan.parallel.search import build_grid, choose_microbatches, evaluate


def test_in_flight_is_capped_at_the_step_micro_batches():
    # interleaved p = 4, v = 2: p + (p-1)/v = 5.5 stage-equivalents, but m = 2 micro-batches are all there is
    assert in_flight(4, 8, 2, last=False) == pytest.approx(5.5)
    assert in_flight(4, 2, 2, last=False) == pytest.approx(2.0)
    assert in_flight(4, 4, 2, last=False) == pytest.approx(4.0)  # m = p: every chunk of the step is in flight
    assert in_flight(4, 2, 1, last=False) == pytest.approx(2.0)  # 1F1B: min(m, p)
    assert in_flight(4, 1, 2, last=True) == pytest.approx(1.0)
    assert in_flight(4, 8, 2, last=True) == pytest.approx(2.5)  # ((v-1)p + 1)/v


def test_pinned_microbatches_below_p_agree_with_the_reference():
    req = ParallelRequest(model=LLAMA_8B, gpu=H100, n_gpus=16, pins=Pins(microbatches=2, pp=4, vpp=2))
    grid, _ = build_grid(req)
    m, ok, _ = choose_microbatches(req, grid, 4096, 2e7)
    grid = grid.replace(microbatches=m)
    assert not ok.any()  # interleaved m must be a multiple of p: such rows are never feasible
    ev = evaluate(req, grid)
    for i in range(0, len(grid), max(1, len(grid) // 7)):
        ref = evaluate_layout(req, grid.row(i))
        assert float(ev.memory.activations[i]) == pytest.approx(ref["activations"], rel=1e-9)
