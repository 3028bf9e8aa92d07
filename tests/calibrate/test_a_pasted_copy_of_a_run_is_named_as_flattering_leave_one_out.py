"""A run pasted twice under two ids (the same job, the same measurement) is predicted by its copy when left out:
on three Llama 3.1 8B runs (TP 1, 2, 4 on 8, 16, 32 H100s) plus a copy of the third, leave-one-out printed 0.0%
for both copies and the median held-out error the file records fell from 1.4% to 0.2%, with nothing said. A repeat
of one job with its own timing is a measurement (tests/calibrate/test_under_determined_advice.py: each repeat is
predicted by the others); an identical copy is named in a warning, and the runs that differ are not."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app

RUN = """\
  - id: {id}
    model: llama-3.1-8b
    gpu: h100-sxm
    n_gpus: {n}
    seq_len: 8192
    global_batch: {batch}
    layout: {{tp: {tp}, pp: 1, dp: 8, cp: 1, ep: 1, zero: 1, micro_batch: 1, microbatches: {m}, vpp: 1,
             recompute: {rc}, sequence_parallel: {sp}}}
    stack: {{preset: megatron-core}}
    measured: {{step_seconds: {step}}}
"""
A = {"n": 8, "batch": 16, "tp": 1, "m": 2, "rc": "full", "sp": "false", "step": 2.5}
B = {"n": 16, "batch": 32, "tp": 2, "m": 4, "rc": "none", "sp": "true", "step": 2.0}
C = {"n": 32, "batch": 64, "tp": 4, "m": 8, "rc": "none", "sp": "true", "step": 2.1}


def _calibrate(tmp_path, runs):
    path = tmp_path / "measured.yaml"
    path.write_text("runs:\n" + "".join(RUN.format(id=run_id, **run) for run_id, run in runs))
    res = CliRunner().invoke(app, ["calibrate", str(path), "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_a_copy_of_a_run_under_another_id_is_named(tmp_path):
    report = _calibrate(tmp_path, [("a", A), ("b", B), ("c", C), ("c-again", C)])
    rows = {row["id"]: row for row in report["runs"]}
    for run_id in ("c", "c-again"):  # each predicted by the other: left out, it is missed as in the fit
        assert rows[run_id]["leave_one_out_error"] == pytest.approx(rows[run_id]["step_error"], abs=1e-3)
    (line,) = [w for w in report["warnings"] if "same measurement" in w]
    assert line.startswith("runs c and c-again are the same job with the same measurement (a pasted copy?)")
    assert "leave-one-out" in line and "remove the copy" in line


def test_a_repeat_with_its_own_timing_and_distinct_jobs_are_not_named(tmp_path):
    again = dict(C, step=2.15)  # timed again: a measurement, not a copy
    report = _calibrate(tmp_path, [("a", A), ("b", B), ("c", C), ("c-again", again)])
    assert not [w for w in report["warnings"] if "same measurement" in w]
