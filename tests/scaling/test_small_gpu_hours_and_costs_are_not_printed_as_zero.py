"""GPU-hours and costs under one unit were printed with no decimals: `runplan allocate --flops 1e17 --gpus 1000`
said "GPU-hours 0", and every proxy of `runplan sweep --flops 3e21 --vocab-size 32000 --gpu h100-sxm` below
0.5 GPU-hours had "0" in its GPU-h column. One GPU read "on 1 GPUs". Hand values: GPU-hours = C/(peak × MFU)/3600
with the H100 SXM's 989 TFLOP/s dense bf16 (docs/scaling.md, Budget from hardware)."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.cli.budget import fmt_amount

runner = CliRunner()


@pytest.mark.parametrize(
    ("value", "text"),
    [(0.0702212, "0.0702"), (0.5, "0.5"), (9.994, "9.99"), (10.4, "10"), (140433.66, "140,434"), (0.0, "0")],
)
def test_amounts_keep_three_significant_digits_below_ten(value, text):
    assert fmt_amount(value) == text


def test_allocate_prints_a_fraction_of_a_gpu_hour():
    result = runner.invoke(
        app, ["allocate", "--flops", "1e17", "--gpus", "1000", "--price-per-gpu-hour", "2"]
    )
    assert result.exit_code == 0, result.output
    hours = 1e17 / (989e12 * 0.4) / 3600  # 0.0702 GPU-hours
    assert f"GPU-hours               {hours:.3g} on h100-sxm" in result.output
    assert f"cost                    {2 * hours:.3g} USD" in result.output
    assert "on 1,000 GPUs" in result.output


def test_one_gpu_is_singular():
    result = runner.invoke(app, ["allocate", "--flops", "2e23", "--gpus", "1"])
    assert result.exit_code == 0, result.output
    assert re.search(r"5,851\.4 days on 1 GPU\s*$", result.output, re.M), (
        result.output
    )  # 2e23 FLOPs / one H100
    assert "1 GPUs" not in result.output


def test_sweep_rows_under_half_a_gpu_hour_are_not_zero():
    args = ["sweep", "--flops", "3e21", "--vocab-size", "32000", "--gpu", "h100-sxm"]
    runs = json.loads(runner.invoke(app, [*args, "--json"]).stdout)["runs"]
    small = [r["gpu_hours"] for r in runs if r["gpu_hours"] < 0.5]
    assert small  # the 3e17-FLOP proxies: about 0.2 GPU-hours each
    table = runner.invoke(app, args).stdout
    for hours in small:
        assert re.search(rf" {re.escape(f'{hours:.3g}')}\s*$", table, re.M), (hours, table)
    assert not re.search(r"\s0\s*$", table, re.M)
