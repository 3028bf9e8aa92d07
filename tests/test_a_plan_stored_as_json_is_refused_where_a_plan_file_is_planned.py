"""A plan stored by `runplan plan FILE -f json -o plan.json` given to a command that plans from a plan file
(`plan`, `check`, `parallelize`, `allocate`, `whatif`, `diff`) was refused with "plan.json:1: schema_version:
schema_version is missing (add 'schema_version: 1' at the top)": adding the line leads nowhere, the file is
runplan's own output, not a plan file. It is one line naming the file, what it is and the fix (the plan file it
was built from, its ``inputs``; `export` and `monitor --plan` read a stored plan as it is), exit 2. A plan file
written in JSON, whose keys include ``model``, ``schedule`` and ``monitoring`` as a stored plan's do, is still
planned as a plan file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.cli.common import STORED_PLAN_KEYS
from runplan.plan import RunPlan
from runplan.spec import PlanSpec

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "70b-512-h100.yaml"


@pytest.fixture(scope="module")
def stored(stored_70b_plan) -> Path:
    return stored_70b_plan


@pytest.mark.parametrize(
    "args",
    [
        ["plan", "{f}"],
        ["plan", "{f}", "-f", "json"],
        ["check", "{f}"],
        ["parallelize", "{f}"],
        ["allocate", "{f}"],
        ["whatif", "{f}", "--gpus", "256,512"],
        ["diff", str(EXAMPLE), "{f}"],
    ],
    ids=lambda args: args[0] + ("-json" if "json" in args else ""),
)
def test_a_stored_plan_is_one_line_naming_the_file_and_the_fix(stored, args):
    result = CliRunner().invoke(app, [arg.replace("{f}", str(stored)) for arg in args])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    line = lines[0]
    assert line.startswith(
        f"runplan: error: {stored}: a plan stored by `runplan plan -f json`, not a plan file"
    )
    assert "schema_version" not in line  # the fix that led nowhere
    # the fix: the plan file it came from (its inputs, named), or the commands that read it as it is
    assert "its inputs" in line and "'70b-512-h100'" in line
    assert "`runplan export`" in line and "`runplan monitor --plan`" in line


def test_a_plan_file_written_in_json_is_still_planned(tmp_path):
    plan = {
        "schema_version": 1,
        "model": "llama-3.1-8b",
        "budget": {"tokens": 1e11},
        "cluster": {"gpu": "h100-sxm", "gpus": 64},
        "schedule": {},
        "monitoring": {},
        "sweep": {},
    }
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    result = CliRunner().invoke(app, ["plan", str(path), "-f", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["model"]["shape"]["n_layers"] == 32  # Llama 3.1 8B: 32 layers


def test_the_keys_that_tell_a_stored_plan_are_the_plans_own():
    """The keys a stored plan has and a plan file cannot: RunPlan's sections less PlanSpec's keys."""
    assert set(STORED_PLAN_KEYS) == set(RunPlan.model_fields) - set(PlanSpec.model_fields)
    assert "inputs" in STORED_PLAN_KEYS and "schedule" not in STORED_PLAN_KEYS
