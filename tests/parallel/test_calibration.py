"""The shipped time-model constants against the published runs (benchmarks/published_runs.yaml)."""

import math
import statistics
import sys
from pathlib import Path

import numpy as np
import pytest
from tests.parallel.shapes import H100, LLAMA_70B

from runplan.calibrate.fit import step_error
from runplan.parallel.layout import ParallelRequest, Pins
from runplan.parallel.search import search
from runplan.parallel.stack import Stack
from runplan.parallel.timing import default_efficiency, dp_bandwidth

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def shipped(validate, published):
    return validate.predict_shipped(published[1])


def test_published_runs_are_sourced_and_enough(published):
    data, prepared = published
    for run in data["runs"]:
        assert run["source"] in data["sources"]
        assert run["metric"] in run["published"]
        assert run["table"] and run["note"] and run["source_id"]
        assert isinstance(run["fit"], bool)
    # issue 12: >= 40 runs from >= 6 independent sources on A100 and H100, some without FlashAttention
    assert len(prepared) >= 40
    assert len({p.run.source_id for p in prepared}) >= 6
    assert {p.family for p in prepared} == {"ampere", "hopper"}
    assert sum(not p.run.stack.flash_attention for p in prepared) >= 8
    assert sum(p.run.peak_memory is not None for p in prepared) >= 8


def test_narayanan_rows_in_fit(shipped):
    # Narayanan et al. 2021 Table 1 (A100, Megatron-LM 2021 stack: no FlashAttention, no TP overlap, dropout,
    # scatter/gather of pipeline sends): the shipped constants, fitted jointly on 13 sources, keep them at
    # median <= 6% (5.0% measured at the stack-aware refit), worst <= 15% (docs/validation.md, every run).
    errors = [abs(step_error(s.log_error)) for key, s in shipped.items() if key.startswith("narayanan-")]
    assert len(errors) == 10
    assert statistics.median(errors) <= 0.06
    assert max(errors) <= 0.15


def test_in_fit_errors_bounded(shipped):
    # docs/validation.md, in-fit table: median ~7% on both GPU families, worst ~30% (IBM fms-fsdp's H100 rows
    # and torchtitan's eager rows run faster than the model); these bounds catch a regression, not noise.
    for family in ("ampere", "hopper"):
        errors = [
            abs(step_error(s.log_error))
            for s in shipped.values()
            if s.prepared.family == family and s.prepared.run.fit and s.prepared.run.measured.speedup is None
        ]
        assert statistics.median(errors) < 0.09, family
        assert max(errors) < 0.35, family


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


def test_tp_overlap_speedup_pairs_reproduced(shipped):
    # torchtitan's async-TP benchmark: the same TP-8 jobs with the TP collectives exposed and overlapped ran
    # 1.092x (70B) and 1.099x (8B) faster; the fitted TP overlap fraction must reproduce both ratios within 8%
    # (127 runs share the constants: 3.4% at the stack-aware refit, 5.4% (70B) and 7.3% (8B) since the Lambda rows'
    # correction raised the fitted overlap fraction from 0.62 to 0.80).
    pairs = [s for s in shipped.values() if s.prepared.run.measured.speedup is not None]
    assert len(pairs) == 2
    for s in pairs:
        assert abs(math.expm1(s.log_error)) < 0.08, s.prepared.id


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
        model=LLAMA_70B, gpu=H100, n_gpus=512, seq_len=4096, pins=pins, stack=Stack(tp_comm_overlap=False)
    )
    assert search(off).layouts[0].time_seconds.tensor_parallel == pytest.approx(steps[0])


def test_search_agrees_with_nvidia_tuned_layouts(validate, published):
    # docs/validation.md, layout agreement: where NVIDIA tuned the layout on H100 (DGX Cloud benchmarks and
    # Megatron-Bridge recipes; Llama 3.1 8B/70B/405B and GPT-3 175B), the unpinned search ranks the published
    # layout within 3% of its best and picks the same TP degree unless the two are within 3% (all six agree
    # since the 2026-12-01 refit, within 2.5%; the two 70B on 64 GPU cases preferred TP 8 before, NVIDIA's TP 4
    # 2.6% and 2.8% behind). Meta's Llama 3 405B layouts (TP 8 PP 16) are only bounded: the search prefers TP 4
    # with CP 4 and puts Meta's 3.7% and 5.3% behind.
    _, outcomes = validate.layout_agreement(published[1])
    nvidia = [o for o in outcomes if o["case"].startswith(("nv-", "Megatron-Bridge"))]
    assert len(nvidia) == 6
    for outcome in nvidia:
        assert outcome["gap"] <= 0.03, outcome
    assert sum(o["tp_agrees"] for o in nvidia) >= 4
    assert all(o["gap"] <= 0.065 for o in outcomes)


#: Published runs the memory model does not fit on their GPUs with the default headroom (5%) and reserve (3 GB):
#: over-estimates by 1-15% of the limit (the FlashAttention-2 paper leaves micro-batch and recompute of its 2.7B
#: runs at 8k open: none of its choices fits). Known, listed so that a fix or a regression shows. MosaicML's
#: MPT-30B on 8 A100 (five sequence lengths) left this list when FSDP's fp32 shards became the master copy
#: (Stack.fsdp_mixed_precision): 2 bytes per parameter less under ZeRO-3; torchtitan's Llama 2 70B on 64 A100 with
#: op-level selective checkpointing left it when that policy was modelled as torchtitan runs it (every_other_mm).
#: The 1.3B 8k rows joined when autocast's fp32 weights and half copies were counted (Stack.autocast_fp32_weights,
#: +4 bytes per parameter under ZeRO-1): 79.0 GB against 76.0 GB, the activations (61 GB at micro-batch 4,
#: no recomputation) being most of it, as at 2.7B.
KNOWN_MEMORY_OVER = {
    "fa2paper-gpt3-1.3b-s8192-fa1",
    "fa2paper-gpt3-1.3b-s8192-fa2",
    "fa2paper-gpt3-2.7b-s8192-fa1",
    "fa2paper-gpt3-2.7b-s8192-fa2",
}


def test_every_published_run_has_a_layout_that_fits(shipped):
    # every published run ran on its GPUs, so the memory model must leave at least one layout with the axes
    # the source states (a one-sided check that catches an over-estimate)
    over = {key for key, s in shipped.items() if not s.memory_fits}
    assert over == KNOWN_MEMORY_OVER


def test_torchtitan_405b_pipeline_schedules_reproduced(shipped):
    # torchtitan's Table 5 (benchmarks/llama3_h100_202412_torchtitan.md; 405B, FSDP 8 x TP 8 x PP 8, 8 micro-batches
    # of 4): Interleaved 1F1B (2 stages per rank) ran 128 / 100 = 1.28x as fast as 1F1B, the bubble 7/8 -> 7/16 of
    # a step's compute by Narayanan et al. 2021 §2.2 (1.875 / 1.4375 = 1.30). Reserved memory 82.5 and 72.7 GiB:
    # with the stage held gathered under PP (memory.model_state_bytes) the model is -14% and -2% (it was -56% and
    # -50% with FSDP's per-layer gathers, and both rows ran under the search's v 16).
    one, interleaved = (shipped[f"torchtitan-405b-512gpu-3d-fp8-{k}"] for k in ("1f1b", "interleaved"))
    assert (one.layout.vpp, interleaved.layout.vpp) == (1, 2)
    ratio = math.exp(interleaved.log_error - one.log_error) * 128 / 100
    assert ratio == pytest.approx(1.28, rel=0.05)
    assert -0.2 < one.memory_error < 0.0 and abs(interleaved.memory_error) < 0.1


def test_torchtitan_memory_rows_reproduced(shipped):
    # torchtitan's reserved peaks (Tables 1-6, 8B to 405B, 8 to 512 GPUs, 8k to 256k tokens): -2% to -23% with
    # its own recomputation policy and uncompiled loss modelled (every_other_mm, cross_entropy unfused); they
    # were -24% to -56% before, with the MLP-activation stand-in and 4 bytes per logit (docs/validation.md)
    errors = [
        s.memory_error
        for key, s in shipped.items()
        if s.prepared.run.source_id == "pytorch-torchtitan" and s.memory_error is not None
    ]
    assert len(errors) == 18
    assert statistics.median(abs(e) for e in errors) <= 0.10
    assert max(abs(e) for e in errors) <= 0.25


def test_breakdown_script_prints_terms_that_sum_to_the_step():
    """benchmarks/breakdown.py on the Megatron README 32B row: its printed terms add up to the printed step, and
    the printed error is the one docs/validation.md's in-fit column gives that row (the shipped constants)."""
    import re
    import subprocess

    out = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "breakdown.py"), "megatron-readme-32b-384gpu"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    step = float(re.search(r"step ([0-9.]+) s =", out).group(1))
    terms = [float(x) for x in re.findall(r"^ {4}\w+ +([0-9.]+) s$", out, flags=re.M)]
    assert len(terms) >= 4 and sum(terms) == pytest.approx(step, abs=5e-4)
    error = re.search(r"step error ([+-][0-9.]+)%", out).group(1)
    row = next(
        line
        for line in (REPO / "docs" / "validation.md").read_text().splitlines()
        if line.startswith("| megatron-readme-32b")
    )
    assert f"| {error}% |" in row


def test_validate_records_held_out_errors_without_touching_the_constants(validate, tmp_path):
    from runplan.calibrate.calibration import HeldOutError, load_calibration

    copy = tmp_path / "calibration.yaml"
    text = validate.SHIPPED_FILE.read_text()
    copy.write_text(text)
    before = load_calibration(copy)
    held_out = HeldOutError(method="leave-one-source-out", runs=7, median_abs_error=0.05, worst_abs_error=0.2)
    validate.record_held_out({"hopper": held_out}, copy)
    after = load_calibration(copy)
    assert after.families["hopper"].held_out == held_out
    assert after.families["ampere"].held_out == before.families["ampere"].held_out  # not in the map: kept
    for family, cal in before.families.items():
        assert after.families[family].efficiency == cal.efficiency
    assert after.residuals == before.residuals and after.created == before.created
    header = [line for line in text.splitlines() if line.startswith("#")]
    assert copy.read_text().splitlines()[: len(header)] == header


def test_engine_bias_is_taken_from_the_engines_other_sources_on_the_same_gpu(validate):
    # benchmarks/validate.py's "does a stack's bias carry over" section, hand-derived: source A's log errors lose
    # the mean of engine E's other source on hopper (B: -0.05), B loses A's mean ((0.10 + 0.20) / 2 = 0.15); C is
    # the only source of its engine and D the only one of E on ampere, so neither moves
    from types import SimpleNamespace

    from runplan.calibrate.fit import HeldOut

    runs = [
        ("a1", "A", "E", "hopper", 0.10),
        ("a2", "A", "E", "hopper", 0.20),
        ("b1", "B", "E", "hopper", -0.05),
        ("c1", "C", "F", "hopper", 0.30),
        ("d1", "D", "E", "ampere", 0.50),
    ]
    held = [HeldOut(rid, source, family, log, None) for rid, source, _, family, log in runs]
    prepared = [
        SimpleNamespace(id=rid, run=SimpleNamespace(measured=SimpleNamespace(speedup=None)))
        for rid, *_ in runs
    ]
    engine_of = {rid: engine for rid, _, engine, _, _ in runs}
    corrected = validate.engine_corrected(held, prepared, engine_of)
    expected = [0.15, 0.25, -0.20, 0.30, 0.50]
    assert corrected == pytest.approx([step_error(e) for e in expected], rel=1e-12)
