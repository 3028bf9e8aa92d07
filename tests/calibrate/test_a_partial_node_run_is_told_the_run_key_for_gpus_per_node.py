"""A run on 12 GPUs of 8-GPU nodes is refused at runs[i].n_gpus, and its hint names the key a measured run takes
(gpus_per_node, on the run), not the plan file's cluster.gpus_per_node, which a measured-runs file has no place for."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from runplan.cli.app import app

runner = CliRunner()

TWELVE = """\
runs:
  - id: r0
    model: llama-3.1-8b
    gpu: h100-sxm
    n_gpus: 12
    seq_len: 4096
    global_batch: 96
    layout: {tp: 2, pp: 1, dp: 6, cp: 1, zero: 1, micro_batch: 1, microbatches: 16}
    measured: {step_seconds: 9.8}
"""


def test_a_partial_node_names_the_runs_own_key(tmp_path: Path, one_error_line):
    path = tmp_path / "measured.yaml"
    path.write_text(TWELVE)
    line = one_error_line(runner.invoke(app, ["calibrate", str(path)]))
    assert "measured.yaml:5: runs[0].n_gpus: 12 GPUs do not fill whole nodes of 8" in line
    assert "cluster.gpus_per_node" not in line
    assert "(use a multiple of 8, e.g. 8, or set gpus_per_node on the run)" in line


def test_the_run_key_it_names_is_taken(tmp_path: Path):
    # 12 GPUs in nodes of 4 (as the hint suggests): the run is read and fitted
    path = tmp_path / "measured.yaml"
    path.write_text(TWELVE.replace("    n_gpus: 12\n", "    n_gpus: 12\n    gpus_per_node: 4\n"))
    result = runner.invoke(app, ["calibrate", str(path)])
    assert result.exit_code == 0, result.output
