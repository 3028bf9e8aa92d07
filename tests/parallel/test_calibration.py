"""The shipped time-model constants against the published runs (benchmarks/published_runs.yaml)."""

import importlib.util
import statistics
import sys
from pathlib import Path

import numpy as np
import pytest
from tests.parallel.shapes import H100, LLAMA_70B

from runplan.parallel.layout import ParallelRequest, Pins
from runplan.parallel.search import search
from runplan.parallel.timing import default_efficiency, dp_bandwidth

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def validate():
    spec = importlib.util.spec_from_file_location("runplan_validate", REPO / "benchmarks" / "validate.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["runplan_validate"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def runs(validate):
    return validate.load_runs()


def test_published_runs_are_sourced_and_enough(runs):
    h100_bf16 = [r for r in runs["runs"] if r["gpu"].startswith("h100") and r["precision"] == "bf16"]
    assert len(h100_bf16) >= 6
    assert len({r["source"] for r in h100_bf16}) >= 3  # independent software stacks
    assert sum(not r["fit"] for r in h100_bf16) >= 2  # held-out validation set
    for run in runs["runs"]:
        assert run["source"] in runs["sources"]
        assert run["metric"] in run["published"]
        assert run["table"] and run["note"]
        assert isinstance(run["fit"], bool)


def test_narayanan_calibration_quality_kept(validate):
    params = validate.shipped()
    eff = params.efficiency(validate.A100)
    errors = [abs(validate.predict_narayanan(r, eff)[0] / r[-1] - 1) for r in validate.NARAYANAN_TABLE_1]
    assert statistics.median(errors) <= 0.05
    assert max(errors) <= 0.10


def test_h100_rows_within_published_tolerance(validate, runs):
    params = validate.shipped()
    by_id = {r["id"]: r for r in runs["runs"]}
    fitted, held = [], []
    for run in runs["runs"]:
        err = validate.predict_run(run, params, by_id).value / run["published"][run["metric"]] - 1
        (fitted if run["fit"] else held).append(err)
    # docs/validation.md: in-fit median ~2%, held-out median ~20% (torchtitan's op-level recompute and 500 W
    # power cap are outside the model); these bounds catch a regression, not noise.
    assert statistics.median(abs(e) for e in fitted) < 0.06
    assert statistics.median(abs(e) for e in held) < 0.30
    assert max(abs(e) for e in held) < 0.45


def test_dp_bandwidth_scales_with_nics_per_node():
    # Inside a node: NVLink. Across nodes: k = node/t group members per node, one NIC each (NCCL channels).
    assert dp_bandwidth(H100, 1, 8, 8) == H100.intra_node_bandwidth_bytes_per_s
    assert dp_bandwidth(H100, 8, 64, 8) == H100.inter_node_bandwidth_bytes_per_s
    assert dp_bandwidth(H100, 2, 64, 8) == 4 * H100.inter_node_bandwidth_bytes_per_s
    assert dp_bandwidth(H100, 1, 64, 8) == min(450e9, 8 * 50e9)
    assert np.allclose(dp_bandwidth(H100, np.array([1, 4]), np.array([512, 512]), 8), [400e9, 100e9])


def test_overlap_interference_costs_time_monotonically():
    pins = Pins(tp=8, pp=1, dp=64, cp=1, zero=3, micro_batch=1, microbatches=8, recompute="selective")
    steps = []
    for value in (0.0, 0.5, 1.0):
        eff = default_efficiency(H100, dp_overlap_interference=value)
        request = ParallelRequest(
            model=LLAMA_70B, gpu=H100, n_gpus=512, seq_len=4096, pins=pins, efficiency=eff
        )
        steps.append(search(request).layouts[0].step_seconds)
    assert steps[0] < steps[1] < steps[2]
    assert 0.0 <= default_efficiency(H100).dp_overlap_interference <= 1.0


def test_tp_overlap_speedup_pairs_reproduced(validate, runs):
    # torchtitan's async-TP benchmark: the same TP-8 jobs with the TP collectives exposed and overlapped ran
    # 1.092x (70B) and 1.099x (8B) faster; the fitted TP overlap fraction must reproduce both ratios.
    params = validate.shipped()
    by_id = {r["id"]: r for r in runs["runs"]}
    pairs = [r for r in runs["runs"] if r["metric"] == "speedup"]
    assert len(pairs) == 2
    for run in pairs:
        predicted = validate.predict_run(run, params, by_id).value
        assert abs(predicted / run["published"]["speedup"] - 1) < 0.03, run["id"]


def test_tp_overlap_hides_communication_monotonically():
    pins = Pins(tp=8, pp=2, dp=32, cp=1, zero=1, micro_batch=2, microbatches=32, vpp=2, recompute="none")
    steps = []
    for fraction in (0.0, 0.4, 0.8):
        eff = default_efficiency(H100, tp_overlap_fraction=fraction)
        request = ParallelRequest(
            model=LLAMA_70B, gpu=H100, n_gpus=512, seq_len=4096, pins=pins, efficiency=eff
        )
        steps.append(search(request).layouts[0].time_seconds.tensor_parallel)
    assert steps[0] > steps[1] > steps[2] > 0
    # fraction 0 is the same as switching the overlap off
    off = ParallelRequest(
        model=LLAMA_70B, gpu=H100, n_gpus=512, seq_len=4096, pins=pins, tp_comm_overlap=False
    )
    assert search(off).layouts[0].time_seconds.tensor_parallel == pytest.approx(steps[0])


def test_search_agrees_with_nvidia_tuned_layouts(validate, runs):
    # docs/validation.md, layout agreement: where NVIDIA tuned the layout on H100 (DGX Cloud benchmarks and
    # Megatron-Bridge recipes; Llama 3.1 8B/70B/405B and GPT-3 175B), the unpinned search ranks the published
    # layout within 2% of its best, and picks the same TP degree unless the two are within 0.5%. Meta's Llama 3 405B layouts (TP 8 PP 16)
    # are only bounded: the search prefers TP 4 with CP 4 there and puts Meta's 3-5% behind.
    _, outcomes = validate.layout_agreement(runs, validate.shipped())
    nvidia = [o for o in outcomes if o["case"].startswith(("nv-", "Megatron-Bridge"))]
    assert len(nvidia) == 6
    for outcome in nvidia:
        assert outcome["gap"] <= 0.02, outcome
        # another TP degree only where the published layout is a near-tie (within the model's resolution)
        assert outcome["tp_agrees"] or outcome["gap"] <= 0.005, outcome
    assert all(o["gap"] <= 0.06 for o in outcomes)


def test_every_published_run_has_a_layout_that_fits(validate, runs):
    # every published run ran on its GPUs, so the memory model must leave at least one layout with the axes
    # the source states (a one-sided check that catches an over-estimate; where a source leaves ZeRO stage,
    # recompute or micro-batch open, some choice of them must fit, not necessarily the one used)
    params = validate.shipped()
    by_id = {r["id"]: r for r in runs["runs"]}
    over = [r["id"] for r in runs["runs"] if not validate.predict_run(r, params, by_id).memory_fits]
    assert not over


def test_memory_against_published_peaks(validate, runs):
    # torchtitan Tables 1 and 3 (Llama 3.1 8B, FSDP, bf16, selective AC): peak reserved 77.0 and 62.0 GiB.
    # Reserved memory includes allocator slack, so the prediction may sit below it, by at most 15%.
    _, errors = validate.memory_section(runs, validate.shipped())
    assert len(errors) == 2
    for err in errors:
        assert -0.15 < err <= 0.05
