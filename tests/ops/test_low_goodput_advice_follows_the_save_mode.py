"""The goodput-below-90% caution advised "faster saves (async staging)" to a plan whose saves were already async
(operations.host_staging, on by default): an async save is made faster by its host link and fixed cost."""

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from runplan.cli.app import app

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "70b-512-h100.yaml"


@pytest.mark.parametrize(
    ("staging", "advice"),
    [
        (True, "faster saves (a faster host link or fixed cost)"),
        (False, "faster saves (async staging, operations.host_staging)"),
    ],
)
def test_low_goodput_names_what_speeds_up_this_plans_saves(tmp_path, staging, advice):
    plan = yaml.safe_load(EXAMPLE.read_text())
    plan.setdefault("operations", {}).update(
        failures_per_1000_node_days=600, restart_seconds=3600, host_staging=staging
    )
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(plan))
    result = CliRunner().invoke(app, ["plan", str(path), "-f", "json"])
    assert result.exit_code == 0, result.output
    (caution,) = [w for w in json.loads(result.stdout)["warnings"] if w.startswith("operations: goodput")]
    assert advice in caution
