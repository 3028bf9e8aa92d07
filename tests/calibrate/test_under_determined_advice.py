"""An under-determined fit names each constant it could not identify and the run that would identify it."""

from __future__ import annotations

from runplan.calibrate.constants import FITTED_CONSTANTS
from runplan.calibrate.fit import calibrate, fit_warnings, make_space
from runplan.calibrate.run import prior_efficiencies

from .synthetic import synthetic_runs


def test_each_held_constant_is_named_with_the_run_to_add():
    # 3 runs of one layout (8 GPUs, 8B, DP 8): only the GEMM fraction and what the step lengths separate move
    runs = synthetic_runs()[:2]
    result = calibrate(runs, prior_efficiencies())
    (line,) = [w for w in result.warnings if w.startswith("not identified by these runs")]
    for key in result.held:
        assert f"{key}: add " in line, key
    # the advice for each constant is its own: across nodes for the NIC efficiency, on and off for overlap
    assert (
        "inter_node_network_efficiency: add runs whose data-, pipeline- or expert-parallel groups span nodes"
        in line
    )
    assert "tp_overlap_fraction: add the same job with TP overlap on and off" in line


def test_every_fitted_constant_has_advice():
    space = make_space(synthetic_runs()[:1], prior_efficiencies())
    held = [c.name for c in FITTED_CONSTANTS]
    (line,) = [w for w in fit_warnings(1, space, [], held) if w.startswith("not identified")]
    assert line.count(": add ") == len(FITTED_CONSTANTS)


RUN = """\
  - id: {id}
    model: llama-3.1-8b
    gpu: h100-sxm
    n_gpus: 8
    seq_len: 8192
    global_batch: 16
    layout: {{tp: 1, pp: 1, dp: 8, cp: 1, ep: 1, zero: 1, micro_batch: 1, microbatches: 2, vpp: 1,
             recompute: full, sequence_parallel: false}}
    measured: {{step_seconds: {step}}}
"""


def test_repeats_of_one_layout_fit_the_geometric_mean_and_leave_one_out_is_the_others(tmp_path):
    """Three timings of one layout (2.6, 2.7, 2.5 s) identify one constant (the GEMM fraction), so the fit
    predicts the step that minimises the sum of squared log errors, their geometric mean 2.5984 s: errors
    -0.06%, -3.76%, +3.94%. Left out, each is predicted by the geometric mean of the other two: 2.5981 s for
    2.6 (-0.08%), 2.5495 s for 2.7 (-5.57%), 2.6495 s for 2.5 (+5.98%). (Hand-derived.)"""
    import json
    import math

    import pytest
    from typer.testing import CliRunner

    from runplan.cli.app import app

    steps = [2.6, 2.7, 2.5]
    path = tmp_path / "measured.yaml"
    path.write_text("runs:\n" + "".join(RUN.format(id=f"s{i}", step=s) for i, s in enumerate(steps)))
    res = CliRunner().invoke(app, ["calibrate", str(path), "--json"])
    assert res.exit_code == 0, res.output
    report = json.loads(res.output)
    mean = math.prod(steps) ** (1 / 3)  # 2.5984
    for row, step in zip(report["runs"], steps, strict=True):
        assert row["step_error"] == pytest.approx(mean / step - 1, abs=2e-4)
        others = [s for s in steps if s != step]
        assert row["leave_one_out_error"] == pytest.approx(
            math.sqrt(others[0] * others[1]) / step - 1, abs=2e-4
        )
    residuals = report["calibration"]["residuals"]
    assert residuals["median_abs_error"] == pytest.approx(0.0376, abs=2e-4)
    assert residuals["worst_abs_error"] == pytest.approx(0.0394, abs=2e-4)
    assert residuals["leave_one_out_median_abs_error"] == pytest.approx(0.0557, abs=2e-4)
    assert residuals["leave_one_out_worst_abs_error"] == pytest.approx(0.0598, abs=2e-4)
    assert report["calibration"]["families"]["hopper"]["fitted"] == ["gemm_peak_fraction"]
    assert any("under-determined: 3 runs for 9 constants" in w for w in report["warnings"])


def test_one_run_is_one_run_not_one_runs():
    from runplan.calibrate.fit import fit_warnings, make_space

    space = make_space(synthetic_runs()[:1], prior_efficiencies())
    assert fit_warnings(1, space, ["gemm_peak_fraction[hopper]"], [])[0].startswith(
        "under-determined: 1 run for 9 constants"
    )
