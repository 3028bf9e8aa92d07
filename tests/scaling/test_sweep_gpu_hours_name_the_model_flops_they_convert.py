"""`runplan sweep` with a GPU prints the proxies' total as 6·N·D FLOPs and their GPU-hours, which convert the
shapes' model FLOPs (6 × matmul parameters + attention per token, PaLM App. B), a different and larger count:
the line said "total: 1.55e+22 FLOPs ...; 11,918 GPU-hours on h100-sxm at MFU 0.4", and 1.55e22 / (989e12 ×
0.4) / 3600 is 10,912, not 11,918. The FLOPs the hours convert are now printed beside them."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app

runner = CliRunner()
H100_BF16 = 989e12  # NVIDIA H100 SXM datasheet, dense bf16


def _total_line(*flags: str) -> str:
    result = runner.invoke(app, ["sweep", "--flops", "2e23", *flags], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    return text[text.index("total: ") :]


@pytest.mark.parametrize("flags", [(), ("--wsd",)])
def test_the_gpu_hours_say_the_model_flops_they_convert(flags):
    result = runner.invoke(app, ["sweep", "--flops", "2e23", "--gpus", "1024", *flags, "--json"])
    sweep = json.loads(result.stdout)
    model_flops = sweep["gpu_hours"] * 3600 * H100_BF16 * 0.4  # GPU-hours = model FLOPs / (peak × MFU) / 3600
    if not flags:  # independent runs: the hours are every run's model FLOPs
        assert model_flops == pytest.approx(sum(r["model_flops"] for r in sweep["runs"]), rel=1e-9)
    line = _total_line("--gpus", "1024", *flags)
    assert f"GPU-hours on h100-sxm at MFU 0.4 for {model_flops:.3g} model FLOPs" in line


def test_without_a_gpu_no_model_flops_are_said():
    assert "model FLOPs" not in _total_line()
