"""Plan files: strict keys, human numbers, one-line errors with file:line, JSON Schema for editors."""

import json
from pathlib import Path

import jsonschema
import pytest
import yaml
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.errors import SpecError
from runplan.spec import load_plan, load_plan_text, plan_json_schema

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.yaml"))
GOOD = "schema_version: 1\nbudget:\n  flops: 2e23\ncluster:\n  gpus: 512\n"


def test_minimal_plan_and_human_numbers():
    spec = load_plan_text(GOOD + "schedule:\n  peak_lr: 3e-4\n  global_batch_tokens: 4M\n")
    assert spec.budget.flops == 2e23
    assert spec.schedule.peak_lr == pytest.approx(3e-4)
    assert spec.schedule.global_batch_tokens == 4e6
    assert spec.cluster.gpu == "h100-sxm"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            GOOD.replace("flops:", "flop:"),
            "plan.yaml:3: budget.flop: unknown key 'flop' (did you mean 'flops'?)",
        ),
        (GOOD.replace("gpus: 512", "gpus: -8"), "plan.yaml:5: cluster.gpus: must be greater than 0, got -8"),
        (GOOD.replace("gpus: 512", "gpus: lots"), "plan.yaml:5: cluster.gpus: expected a number, got 'lots'"),
        (GOOD.replace("flops: 2e23", "flops: .nan"), "plan.yaml:3: budget.flops: expected a finite number"),
        (GOOD + "cluster:\n  gpus: 8\n", "plan.yaml:6: cluster: duplicate key 'cluster' (first on line 4)"),
        (
            GOOD.replace("schema_version: 1", "schema_version: 7"),
            "plan.yaml:1: schema_version: schema version 7",
        ),
        (
            GOOD + "objective:\n  kind: compute_optimum\n",
            "plan.yaml:7: objective.kind: 'compute_optimum' is not one of",
        ),
        (
            GOOD + "paralel:\n  tp: 8\n",
            "plan.yaml:6: paralel: unknown key 'paralel' (did you mean 'parallel'?)",
        ),
        (
            GOOD.replace("budget:\n  flops: 2e23\n", "budget:\n  flops: 2e23\n  days: 3\n"),
            "plan.yaml:2: budget: give exactly one of flops, gpu_hours, days or tokens (got flops, days)",
        ),
        ("- just\n- a list\n", "plan.yaml:1: a plan file is a mapping"),
    ],
)
def test_bad_plan_files_give_one_line_with_location(text, expected):
    with pytest.raises(SpecError) as info:
        load_plan_text(text, "plan.yaml")
    message = str(info.value)
    assert message.startswith(expected), message
    assert "\n" not in message


def _run(*args):
    return CliRunner().invoke(app, list(args))


def test_cli_bad_plan_file_exits_2_with_one_line(tmp_path):
    cases = {
        "misspelt key": (GOOD.replace("gpus:", "gpu_count:"), "did you mean 'gpus'?"),
        "negative gpus": (GOOD.replace("512", "-512"), "cluster.gpus"),
        "string for number": (GOOD.replace("2e23", "two"), "budget.flops"),
        "duplicate key": (GOOD + "budget:\n  flops: 1e22\n", "duplicate key 'budget'"),
        "unknown gpu": (GOOD + "  gpu: h10\n", "did you mean"),
    }
    for name, (text, needle) in cases.items():
        path = tmp_path / f"{name.replace(' ', '_')}.yaml"
        path.write_text(text)
        result = _run("plan", str(path))
        assert result.exit_code == 2, (name, result.output)
        lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1, (name, result.stderr)
        assert needle in lines[0] and str(path) in lines[0], (name, lines[0])
        assert "Traceback" not in result.output


def test_schema_command_prints_valid_json_schema():
    result = _run("schema")
    assert result.exit_code == 0
    schema = json.loads(result.stdout)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert (
        schema["properties"]["schema_version"]["const"] == 1
        or "enum" in schema["properties"]["schema_version"]
    )


def _descriptions_everywhere(schema: dict) -> list[str]:
    missing = []
    for name, definition in [("PlanSpec", schema), *schema.get("$defs", {}).items()]:
        for key, prop in definition.get("properties", {}).items():
            if "description" not in prop:
                missing.append(f"{name}.{key}")
    return missing


def test_every_input_field_has_a_description():
    schema = plan_json_schema()
    assert _descriptions_everywhere(schema) == []


def test_shipped_schema_file_is_current():
    shipped = Path(__file__).resolve().parents[1] / "docs" / "plan.schema.json"
    assert json.loads(shipped.read_text()) == plan_json_schema(), (
        "regenerate: runplan schema > docs/plan.schema.json"
    )


def test_schema_id_names_no_unpublished_domain():
    """Issue 15: the $id was https://runplan.dev/..., a domain the project does not publish."""
    schema = plan_json_schema()
    assert schema["$id"] == "urn:runplan:plan-schema:v1"
    assert "runplan.dev" not in json.dumps(schema)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_examples_validate_against_schema_and_model(path):
    validator = jsonschema.Draft202012Validator(plan_json_schema())
    data = yaml.safe_load(path.read_text())
    errors = [e.message for e in validator.iter_errors(data)]
    assert errors == []
    assert path.read_text().startswith("# yaml-language-server: $schema=../docs/plan.schema.json")
    load_plan(path)


def test_a_scalar_where_a_section_goes_names_yaml_not_a_python_class(tmp_path):
    from runplan.errors import SpecError

    for text, where in (
        ("budget: 5\n", "budget"),
        ("budget: {tokens: 1T}\nschedule: {batch_ramp: ['x']}\n", "schedule.batch_ramp[0]"),
    ):
        with pytest.raises(SpecError) as info:
            load_plan_text("schema_version: 1\nmodel: llama-3.1-8b\ncluster: {gpus: 8}\n" + text)
        assert info.value.where == where
        assert "must be a mapping of keys (key: value)" in info.value.message
        assert "instance of" not in info.value.message


def test_schema_refuses_two_budgets_as_runplan_does():
    validator = jsonschema.Draft202012Validator(plan_json_schema())
    two = yaml.safe_load(GOOD.replace("  flops: 2e23\n", "  flops: 2e23\n  days: 30\n"))
    assert list(validator.iter_errors(two))  # an editor flags it
    with pytest.raises(SpecError, match="exactly one of flops, gpu_hours, days or tokens"):
        load_plan_text(yaml.safe_dump(two))
    assert not list(validator.iter_errors(yaml.safe_load(GOOD)))
