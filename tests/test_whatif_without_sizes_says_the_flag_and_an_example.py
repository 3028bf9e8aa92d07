"""`runplan whatif PLAN` without --gpus: one line naming --gpus with a list to write, built from the plan's own
cluster size (it was click's "Missing option '--gpus'. (see `runplan whatif --help`)")."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from runplan.cli.app import app

PLAN70 = str(Path(__file__).resolve().parents[1] / "examples" / "70b-512-h100.yaml")


def test_no_sizes_is_one_line_with_the_plans_own_size():
    result = CliRunner().invoke(app, ["whatif", PLAN70])
    assert result.exit_code == 2 and "Traceback" not in result.output and result.stdout == ""
    line = result.stderr.strip()
    assert "\n" not in line
    # examples/70b-512-h100.yaml: cluster.gpus 512, so the example is that size and its double
    assert line.startswith("runplan: error: --gpus: no cluster sizes to compare")
    assert "(e.g. --gpus 512,1024; the plan's own size is 512 GPUs)" in line
