"""A MoE plan timed with the shipped constants says they were fitted on dense runs only: the shipped fit holds no
MoE run (checked here on benchmarks/published_runs.yaml and the shipped file), and the time model has no
all-to-all constant of its own. A user's calibration for the GPU family takes the caution away."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from typer.testing import CliRunner

from runplan.calibrate.calibration import SHIPPED_MOE_CAUTION, shipped_calibration
from runplan.calibrate.measured import MeasuredFile, resolve_shape
from runplan.calibrate.published import measured_document
from runplan.catalog import shipped_catalog
from runplan.cli.app import app

REPO = Path(__file__).resolve().parents[2]


def test_no_moe_run_is_in_the_shipped_fit():
    data = yaml.safe_load((REPO / "benchmarks" / "published_runs.yaml").read_text())
    measured = MeasuredFile.model_validate(measured_document(data))
    catalog = shipped_catalog()
    moe = {
        run.id for i, run in enumerate(measured.runs) if resolve_shape(run, i, measured, catalog)[0].is_moe
    }
    assert len(moe) >= 4  # NVIDIA's Grok-1 rows, predicted and held out
    fitted = {run for family in shipped_calibration().families.values() for run in family.runs}
    assert fitted and not moe & fitted


def test_parallelize_of_a_moe_model_says_it_in_its_warnings():
    result = CliRunner().invoke(app, ["parallelize", "--model", "mixtral-8x7b", "--gpus", "64", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert SHIPPED_MOE_CAUTION in data["warnings"]
    assert data["calibration"].startswith("runplan/configs/calibration.yaml (published-runs, hopper:")
    dense = CliRunner().invoke(app, ["parallelize", "--model", "70b", "--gpus", "64", "--json"])
    assert SHIPPED_MOE_CAUTION not in json.loads(dense.stdout)["warnings"]


def test_the_moe_example_plan_says_it_and_a_users_calibration_removes_it(tmp_path):
    example = REPO / "examples" / "moe-mixtral-8x7b.yaml"
    planned = CliRunner().invoke(app, ["plan", str(example), "-f", "json"])
    assert planned.exit_code == 0, planned.output
    assert f"calibration: {SHIPPED_MOE_CAUTION}" in json.loads(planned.stdout)["warnings"]
    own = tmp_path / "cal.yaml"
    own.write_text((REPO / "src" / "runplan" / "configs" / "calibration.yaml").read_text())
    result = CliRunner().invoke(
        app, ["parallelize", "--model", "mixtral-8x7b", "--gpus", "64", "--calibration", str(own), "--json"]
    )
    assert result.exit_code == 0, result.output
    assert SHIPPED_MOE_CAUTION not in json.loads(result.stdout)["warnings"]
