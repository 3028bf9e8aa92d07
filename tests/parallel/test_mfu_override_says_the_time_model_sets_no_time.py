"""`parallelize --mfu X` times every layout at MFU X (step = model FLOPs x tokens / (X x peak)): the time model's
constants only order the layouts that tie (search._near). The calibration line still read as if it stood behind
the times ("time-model constants: ...; held-out step error 5.4% median"): it now says the times are --mfu's,
in the terminal view and in --json's `calibration`."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from runplan.cli.app import app

ARGV = ["parallelize", "--model", "8b", "--gpus", "64", "--mfu", "0.4", "--top", "1"]


def test_the_calibration_line_says_the_mfu_sets_the_times():
    text = " ".join(CliRunner().invoke(app, ARGV, env={"COLUMNS": "200"}).stdout.split())
    assert "not behind the step times: --mfu 0.4 sets them" in text
    data = json.loads(CliRunner().invoke(app, [*ARGV, "--json"]).stdout)
    assert "not behind the step times: --mfu 0.4 sets them" in data["calibration"]
    assert data["layouts"][0]["mfu"] == 0.4


def test_without_mfu_the_line_is_the_calibration_alone():
    text = " ".join(CliRunner().invoke(app, ARGV[:5], env={"COLUMNS": "200"}).stdout.split())
    assert "time-model constants:" in text and "--mfu" not in text
