"""Each `runplan whatif` row is the plan at that size: its days are the batch stages' steps × step times over
the goodput, its cost the GPUs × those hours × the price, its MFU the chosen layout's, recomputed here from
`runplan plan --json` of the same file with cluster.gpus set to that size (and at the file's own size, 512,
equal to the plan's numbers exactly)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "70b-512-h100.yaml"
runner = CliRunner()


def _json(*args: str):
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def rows():
    return {r["gpus"]: r for r in _json("whatif", str(EXAMPLE), "--gpus", "256,512,1024", "--json")}


@pytest.mark.parametrize("gpus", [256, 512, 1024])
def test_a_row_is_the_plans_steps_over_goodput(rows, gpus, tmp_path):
    text = EXAMPLE.read_text().replace("\n  gpus: 512\n", f"\n  gpus: {gpus}\n")
    assert f"gpus: {gpus}" in text
    path = tmp_path / "plan.yaml"
    path.write_text(text)
    plan = _json("plan", str(path), "--json")
    stages = plan["schedule"]["batch_stages"]
    useful = sum(stage["steps"] * stage["step_seconds"] for stage in stages)  # seconds without failures
    goodput = plan["reliability"]["goodput"]
    days = useful / goodput / 86400
    row = rows[gpus]
    assert row["goodput"] == goodput
    assert row["wall_clock_days"] == pytest.approx(days, rel=1e-9)
    assert row["cost"] == pytest.approx(gpus * days * 24 * 2.0, rel=1e-9)  # the example's 2 USD per GPU-hour
    assert row["mfu"] == plan["layout"]["best"]["mfu"]
    # the magnitudes (70B on 2T tokens): about 76, 38.6 and 19.7 days
    assert days == pytest.approx({256: 76.1, 512: 38.58, 1024: 19.71}[gpus], abs=0.05)
