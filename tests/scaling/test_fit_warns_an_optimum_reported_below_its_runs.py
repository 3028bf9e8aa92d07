"""`runplan fit --flops C` with C far below every run printed an optimum (N_opt 9.35e+03 parameters at 1e10 FLOPs
on the example's 1e18..1e21 runs) without a word, while C more than 10× above the largest run is warned as an
extrapolation (docs/scaling.md, Warnings). Both directions are extrapolations of the fitted power laws."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "isoflop_synthetic.csv"
runner = CliRunner()


def _warnings(at: str) -> tuple[list[str], list[str]]:
    result = runner.invoke(
        app, ["fit", str(EXAMPLE), "--flops", at, "--bootstrap", "0", "--starts", "4", "--json"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    return data["parametric"]["warnings"], data["isoflop"]["warnings"]


@pytest.mark.parametrize("at", ["1e10", "9.9e16"])
def test_far_below_the_smallest_run_is_warned(at):
    for found in _warnings(at):
        extrapolated = [w for w in found if "extrapolation" in w]
        assert len(extrapolated) == 1, found
        # the example's smallest budget is 1e18: 1e18 / 1e10 = 1e8, 1e18 / 9.9e16 = 10.1
        assert "× below the smallest run (1e+18)" in extrapolated[0]


@pytest.mark.parametrize("at", ["1e17", "1e18", "1e21", "1e22"])
def test_within_ten_times_of_the_runs_is_not_warned(at):
    for found in _warnings(at):
        assert not [w for w in found if "extrapolation" in w], found
