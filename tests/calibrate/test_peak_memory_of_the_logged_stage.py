"""A measured run's logged peak is compared with the pipeline stage it is from (``peak_memory.stage``), as
`runplan monitor --plan` compares a log's peak (monitor/vs_plan.py): Megatron writes its TensorBoard scalars,
``mem-max-allocated-bytes`` included, on the last rank only (megatron/training/global_vars.py
``_set_tensorboard_writer``, ``args.rank == args.world_size - 1``, @ d98e8a64), a GPU of the last stage; torchtitan's
TensorBoard under 1F1B on the first rank of the last stage (components/metrics.py ``_get_metrics_rank`` @ b5bcd76c).
Without ``stage`` the peak is the largest over ranks or not stated: the most loaded stage's, as before.

The run: Megatron-Core's Mixtral 8x7B release run (its files under training_logs/megatron; the layout and stack of
tests/monitor/test_peak_memory_against_the_logs_own_stage.py: TP2 PP4 EP4 on 128 H100, ZeRO-1, 256,000-token
vocabulary, fp32 gradients, no recompute). Its TensorBoard peak, 26,495,959,040 allocated bytes, is the last stage's;
the first stage (4 micro-batches in flight) is the most loaded. The last stage's weights, gradients and optimizer
state alone are the hand-derived 17,356,101,120 bytes (that test's MIXTRAL_LAST_STATE)."""

from __future__ import annotations

import pytest

from runplan.calibrate.fit import memory_error, predict, prepare
from runplan.calibrate.measured import MeasuredFile, PeakMemory
from runplan.catalog import load_catalog
from runplan.parallel.grid import LayoutGrid
from runplan.parallel.search import evaluate

PEAK = 26_495_959_040
LAST_STATE = 17_356_101_120
RESERVE = 3e9  # constraints.reserve_bytes default; an allocated peak is compared without it

RUN = {
    "id": "mixtral-release",
    "model": "mixtral-release",
    "gpu": "h100-sxm",
    "n_gpus": 128,
    "seq_len": 4096,
    "global_batch": 1024,
    "layout": {
        **dict(tp=2, pp=4, dp=16, cp=1, ep=4, zero=1, micro_batch=1, microbatches=64, vpp=1),
        **dict(recompute="none", sequence_parallel=True),
    },
    "stack": {"preset": "megatron-core", "gradient_dtype": "fp32"},
    "measured": {"step_seconds": 5.0},
    "fit": False,
}
SHAPE = {
    **dict(n_layers=32, d_model=4096, n_heads=32, n_kv_heads=8, head_dim=128, ffn_hidden=14336, mlp="swiglu"),
    **dict(
        vocab_size=256000,
        tied_embeddings=False,
        norm="rmsnorm",
        n_experts=8,
        top_k=2,
        expert_ffn_hidden=14336,
    ),
}


def _prepared(**peak):
    run = {**RUN, "peak_memory": {"gib": PEAK / 2**30, "kind": "allocated", **peak}}
    (p,) = prepare(
        MeasuredFile.model_validate({"models": {"mixtral-release": SHAPE}, "runs": [run]}), load_catalog([])
    )
    return p


def _stage_totals(p):
    ev = evaluate(p.request, LayoutGrid.of([p.run.layout]))
    return float(ev.memory_stage_totals.first[0]), float(ev.memory_stage_totals.last[0])


def test_a_last_stage_peak_is_compared_with_the_last_stage():
    p = _prepared(stage="last", rank="last rank: Megatron's TensorBoard")
    first, last = _stage_totals(p)
    assert first > last  # the first stage is the most loaded: the two are different GPUs
    assert last - RESERVE > LAST_STATE  # activations and logits on top of the hand-derived state
    error = memory_error(p, predict(p, p.run.layout, p.request.efficiency)[1])
    assert error == pytest.approx((last - RESERVE) / PEAK - 1, rel=1e-12)
    assert abs(error) < 0.10  # -6.6%: monitor's +7.1% the other way round (logged / planned)


def test_without_a_stage_the_most_loaded_stage_is_compared_as_before():
    p = _prepared()
    first, _ = _stage_totals(p)
    error = memory_error(p, predict(p, p.run.layout, p.request.efficiency)[1])
    assert error == pytest.approx((first - RESERVE) / PEAK - 1, rel=1e-12)


def test_the_stage_is_first_or_last():
    assert PeakMemory.model_validate({"gib": 40, "stage": "last"}).stage == "last"
    assert PeakMemory.model_validate({"gib": 40}).stage is None
    with pytest.raises(ValueError, match="stage"):
        PeakMemory.model_validate({"gib": 40, "stage": "middle"})


def test_a_published_row_carries_its_peak_memory_stage():
    from runplan.calibrate.published import _peak_memory

    row = {"peak_memory_gib": 56.335, "peak_memory_kind": "allocated", "peak_memory_rank": "last rank (7)"}
    assert "stage" not in _peak_memory(row)
    assert _peak_memory({**row, "peak_memory_stage": "last"})["stage"] == "last"
