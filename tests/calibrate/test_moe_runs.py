"""Mixture-of-experts runs in `runplan calibrate`: accepted with their expert parallelism, fitted, and named
where a constant rests on them alone (the time model has no all-to-all constant of its own)."""

from __future__ import annotations

import pytest

from runplan.calibrate.fit import calibrate, predicted_tps, with_attention
from runplan.calibrate.run import prior_efficiencies
from runplan.parallel.layout import Efficiency, Layout

from .synthetic import TRUTH, synthetic_runs


def test_dense_and_moe_runs_recover_known_constants_within_two_percent():
    # the 18 dense runs and 6 MoE runs (EP 2-32, inside and across nodes) generated with TRUTH: every constant
    # identified and each within 2% of the value it was generated with
    result = calibrate(synthetic_runs(moe=True), prior_efficiencies())
    assert result.held == []
    assert len(result.log_errors) == 24
    for key, value in result.values.items():
        assert value == pytest.approx(TRUTH[key.split("[")[0]], rel=0.02), key
    assert max(abs(e) for e in result.log_errors) < 1e-6


def test_an_expert_all_to_all_across_nodes_moves_with_the_inter_node_efficiency():
    # qwen3-30b-a3b on 32 H100s with EP 32 (4 nodes): its all-to-alls run on the NICs at the inter-node
    # efficiency, so halving that efficiency must slow it (the run responds to the constant the fit moves)
    run = next(p for p in synthetic_runs(dense=False, moe=True) if p.request.pins.ep == 32)
    layout = Layout(**run.request.pins.pinned())
    eff = with_attention(
        Efficiency(**TRUTH, attention_fraction=1.0, collective_latency_seconds=2e-5), "hopper"
    )
    fast = predicted_tps(run, layout, eff)
    slow = predicted_tps(run, layout, eff.model_copy(update={"inter_node_network_efficiency": 0.275}))
    assert slow < 0.9 * fast


def test_a_constant_only_the_moe_runs_identify_is_named():
    # dense runs all inside one node (1 or 8 GPUs) beside MoE runs across nodes: the inter-node efficiency is
    # fitted, but only the MoE runs move it, and their all-to-alls share it with every dense collective
    runs = [p for p in synthetic_runs(moe=True) if p.request.n_gpus <= 8 or p.request.model.is_moe]
    result = calibrate(runs, prior_efficiencies())
    assert "inter_node_network_efficiency" in result.identified
    (line,) = [w for w in result.warnings if "only the MoE runs" in w]
    assert "inter_node_network_efficiency" in line
    assert "all-to-all" in line and "run22" in line and "run0" not in line
    # a dense-only fit says nothing about MoE runs
    dense = calibrate(synthetic_runs(), prior_efficiencies())
    assert not any("MoE" in w for w in dense.warnings)


MEASURED = """\
runs:
  - id: dense-8
    model: llama-3.1-8b
    gpu: h100-sxm
    n_gpus: 8
    seq_len: 8192
    global_batch: 32
    layout: {{tp: 1, pp: 1, dp: 8, cp: 1, ep: 1, zero: 1, micro_batch: 1, microbatches: 4, vpp: 1,
             recompute: full, sequence_parallel: false}}
    measured: {{step_seconds: 5.0}}
  - id: mixtral-ep8
    model: mixtral-8x7b
    gpu: h100-sxm
    n_gpus: 64
    seq_len: 4096
    global_batch: 256
    layout: {{tp: 1, pp: 4, dp: 16, cp: 1, ep: 8, zero: 1, micro_batch: 1, microbatches: 16, vpp: 1,
             recompute: full, sequence_parallel: false}}
    measured: {{tokens_per_second_per_gpu: 2500}}
    peak_memory: {{gib: {gib}, kind: allocated, rank: 0}}
"""


def _calibrate(tmp_path, gib):
    import json

    from typer.testing import CliRunner

    from runplan.cli.app import app

    path = tmp_path / "measured.yaml"
    path.write_text(MEASURED.format(gib=gib))
    out = tmp_path / "cal.yaml"
    res = CliRunner().invoke(app, ["calibrate", str(path), "-o", str(out), "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.output), out


def test_a_moe_run_with_a_peak_in_mib_is_fitted_and_its_file_plans_a_moe_layout(tmp_path):
    from typer.testing import CliRunner

    from runplan.cli.app import app

    report, cal = _calibrate(tmp_path, "40GiB")
    rows = {r["id"]: r for r in report["runs"]}
    assert "EP8" in rows["mixtral-ep8"]["layout"]
    assert report["calibration"]["families"]["hopper"]["runs"] == ["dense-8", "mixtral-ep8"]
    # the same peak in MiB, in decimal GB and as a plain number of GiB: the same memory error
    for written in ("40960MiB", f"{40 * 2**30 / 1e9}GB", "40"):
        again, _ = _calibrate(tmp_path, written)
        other = {r["id"]: r for r in again["runs"]}["mixtral-ep8"]["memory_error"]
        assert other == pytest.approx(rows["mixtral-ep8"]["memory_error"], rel=1e-9), written
    res = CliRunner().invoke(
        app, ["parallelize", "--model", "mixtral-8x7b", "--gpus", "64", "--calibration", str(cal)]
    )
    assert res.exit_code == 0, res.output
    said = "".join(res.output.split())  # the terminal folds the long path anywhere
    assert f"time-modelconstants:{cal}(measured,hopper:2runs,fitted" in said
