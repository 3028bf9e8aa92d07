"""`runplan sweep --flops C --gpus G` prints the proxies' wall-clock days on G GPUs (GPU-hours / G / 24, every
GPU kept busy); before, --gpus without --days was accepted and changed nothing, though the budget hint says
"with --flops, --gpus alone gives the wall-clock days"."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app

runner = CliRunner()


def _sweep(*flags: str) -> dict:
    result = runner.invoke(app, ["sweep", "--flops", "2e23", *flags, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_days_are_gpu_hours_over_gpus_over_24():
    sweep = _sweep("--gpus", "64")
    assert sweep["gpus"] == 64
    assert sweep["days"] == pytest.approx(sweep["gpu_hours"] / 64 / 24, rel=1e-12)
    # 2e23 at the defaults (h100-sxm, MFU 0.4): 11,918 GPU-hours, so 11,918 / 1,536 = 7.76 days
    assert sweep["days"] == pytest.approx(7.76, abs=0.005)


def test_without_gpus_no_days():
    sweep = _sweep()
    assert sweep["gpus"] is None and sweep["days"] is None


def test_the_total_line_says_the_days():
    result = runner.invoke(app, ["sweep", "--flops", "2e23", "--gpus", "64"])
    assert result.exit_code == 0
    assert "7.76 days on 64 GPUs" in " ".join(result.stdout.split())


def test_under_three_days_the_time_is_in_hours():
    """1,024 GPUs: 11,918 GPU-hours / 1,024 = 11.6 h (report.format.fmt_duration), not '0.485 days'."""
    result = runner.invoke(app, ["sweep", "--flops", "2e23", "--gpus", "1024"])
    assert result.exit_code == 0
    assert "11.6 h on 1,024 GPUs" in " ".join(result.stdout.split())
