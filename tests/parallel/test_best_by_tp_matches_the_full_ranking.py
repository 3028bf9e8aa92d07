"""`best_by_tp` (the "best layout per TP degree" line of `runplan parallelize`) against the full ranking.

search._best_by_tp ranks only each degree's rows and then the degrees' first rows (no second ranking of every
feasible row); every field it reports must equal the one read off the full ranking of the feasible rows
(search._ranked, top=None): per degree its first row, and behind_best = 1 - (that row's tokens/s) / (tokens/s
of the ranking's first row), negative when a degree's best is faster than the chosen, lower-memory layout.
"""

import numpy as np
import pytest
from tests.parallel.shapes import H100, LLAMA_70B, LLAMA_405B, MIXTRAL

from runplan.parallel.layout import Constraints, ParallelRequest, Pins
from runplan.parallel.search import (
    _best_by_tp,
    _bounds,
    _near,
    _ranked,
    build_grid,
    choose_microbatches,
    evaluate,
)

REQUESTS = {
    "70B on 512, default tolerance": ParallelRequest(model=LLAMA_70B, gpu=H100, n_gpus=512, seq_len=4096),
    "70B on 512, speed alone": ParallelRequest(
        model=LLAMA_70B, gpu=H100, n_gpus=512, seq_len=4096, constraints=Constraints(throughput_tolerance=0)
    ),
    "70B on 512, 10% ties": ParallelRequest(
        model=LLAMA_70B, gpu=H100, n_gpus=512, seq_len=4096, constraints=Constraints(throughput_tolerance=0.1)
    ),
    "405B on 16,384": ParallelRequest(model=LLAMA_405B, gpu=H100, n_gpus=16384, seq_len=8192),
    "Mixtral on 256": ParallelRequest(model=MIXTRAL, gpu=H100, n_gpus=256, seq_len=4096),
    "70B, TP pinned": ParallelRequest(model=LLAMA_70B, gpu=H100, n_gpus=512, seq_len=4096, pins=Pins(tp=4)),
}


def _feasible(request: ParallelRequest):
    grid, _ = build_grid(request)
    bounds, _ = _bounds(request)
    m, batch_ok, _ = choose_microbatches(request, grid, bounds.low_tokens, bounds.high_tokens)
    grid = grid.replace(microbatches=m)
    ev = evaluate(request, grid)
    ok = (
        (ev.memory.total <= bounds.memory_limit_bytes)
        & (ev.bubble_fraction <= request.constraints.max_bubble_fraction + 1e-12)
        & batch_ok
    )
    return grid, ev, np.flatnonzero(ok)


@pytest.mark.parametrize("name", list(REQUESTS))
def test_best_by_tp_reads_the_full_ranking(name):
    request = REQUESTS[name]
    tolerance = request.constraints.throughput_tolerance
    grid, ev, idx = _feasible(request)
    assert idx.size
    full = _ranked(grid, ev, idx, tolerance)
    first: dict[int, int] = {}
    for i in full:
        first.setdefault(int(grid.tp[i]), int(i))
    top = float(ev.tokens_per_second[full[0]])
    got = _best_by_tp(grid, ev, idx, _near(ev, idx, tolerance))
    assert [b.tp for b in got] == sorted(first)
    for b in got:
        row = first[b.tp]
        x = grid.row(row)
        assert b.layout == (
            f"PP{x.pp} DP{x.dp} CP{x.cp} EP{x.ep} ZeRO-{x.zero} mbs{x.micro_batch} v{x.vpp} {x.recompute}"
        )
        assert b.tokens_per_second == float(ev.tokens_per_second[row])
        assert b.mfu == float(ev.mfu[row])
        assert b.behind_best == 1 - float(ev.tokens_per_second[row]) / top
    if name == "70B on 512, 10% ties":  # the chosen TP 8 row holds least memory; TP 2 and 4 run faster
        assert [b.tp for b in got if b.behind_best < 0] == [2, 4]
    if name == "70B, TP pinned":
        assert [(b.tp, b.behind_best) for b in got] == [(4, 0.0)]


def test_best_by_tp_of_no_feasible_row_is_empty():
    grid, ev, idx = _feasible(REQUESTS["70B on 512, default tolerance"])
    none = idx[:0]
    assert _best_by_tp(grid, ev, none, none.astype(bool)) == []
