"""Where the EP group sits on the cluster decides whether its all-to-alls use NVLink (docs/parallel.md, EP)."""

from __future__ import annotations

import numpy as np
import pytest
from tests.parallel.shapes import H100, MIXTRAL

from runplan.parallel.layout import ParallelRequest, Pins
from runplan.parallel.search import build_grid, search
from runplan.parallel.stack import Stack
from runplan.parallel.timing import default_efficiency


def _pinned(cp: int):
    pins = Pins(tp=2, ep=4, pp=1, cp=cp, zero=1, micro_batch=1, recompute="selective")
    return search(ParallelRequest(model=MIXTRAL, gpu=H100, n_gpus=64, seq_len=4096, pins=pins)).layouts[0]


def test_context_parallelism_does_not_push_the_expert_group_off_the_node():
    # Megatron-core lays the expert grid out as tp-ep-dp-pp with cp=1 (parallel_state.py, the expert rank
    # generator; torchtitan's sparse mesh alike): TP 2 x EP 4 = 8 consecutive ranks, one node, with or without
    # CP 2. CP 2 halves the tokens of a micro-batch and doubles the micro-batches, so the bytes per step are the
    # same; only the fixed latency of each of the 4 all-to-alls of the 32 MoE layers is paid per micro-batch.
    one, two = _pinned(1), _pinned(2)
    latency = default_efficiency(H100).collective_latency_seconds
    extra = (two.microbatches - one.microbatches) * 32 * 4 * latency
    assert two.time_seconds.expert_all_to_all - one.time_seconds.expert_all_to_all == pytest.approx(
        extra, rel=1e-6
    )


def _ddp_rows_with_experts_outside_cp(preset: str, pins: Pins | None = None) -> int:
    request = ParallelRequest(
        model=MIXTRAL, gpu=H100, n_gpus=64, stack=Stack(preset=preset), pins=pins or Pins()
    )
    grid, _ = build_grid(request)
    zero, ep, cp = np.asarray(grid.zero), np.asarray(grid.ep), np.asarray(grid.cp)
    return int(((zero == 0) & (ep > 1) & (cp % ep != 0)).sum())


def test_torchtitan_search_leaves_out_expert_parallelism_over_ddp_replicas():
    # torchtitan 0.2.2 builds the experts' mesh from FSDP and CP ranks only (efsdp = dp_shard·cp·tp/(etp·ep),
    # distributed/parallel_dims.py); its ZeRO-0 is DDP with dp_shard 1, so EP must divide CP there. Megatron
    # folds EP into any data-parallel ranks (the default stack keeps those layouts); a zero pin keeps them too.
    assert _ddp_rows_with_experts_outside_cp("torchtitan-fsdp2") == 0
    assert _ddp_rows_with_experts_outside_cp("default") > 0
    assert _ddp_rows_with_experts_outside_cp("torchtitan-fsdp2", Pins(zero=0)) > 0
