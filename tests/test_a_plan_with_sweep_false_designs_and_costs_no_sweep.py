"""`sweep: false` in a plan file: no proxy sweep is designed or costed, and the plan says why.

Found on a review of the shipped examples: the 128k example is a stage of a run already trained (Llama 3 §3.4.2,
about 800B tokens of long context after the main run), yet the plan designed and costed a from-scratch proxy
isoFLOP sweep (+19% of its cost) and a plan file had no way to turn it off."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.plan import build_plan
from runplan.spec import load_plan_text

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
#: the 70B example (512 H100 at 2 USD/GPU-hour) and the same plan without its proxy sweep
BASE = (EXAMPLES / "70b-512-h100.yaml").read_text()
NO_SWEEP = BASE + "sweep: false\n"
REASON = "sweep: no proxy sweep designed or costed (the plan file sets sweep: false)"


def run(*args: str):
    return CliRunner().invoke(app, list(args))


@pytest.fixture(scope="module")
def plans():
    return (
        build_plan(load_plan_text(BASE, "with.yaml"), EXAMPLES),
        build_plan(load_plan_text(NO_SWEEP, "without.yaml"), EXAMPLES),
    )


def test_the_total_cost_is_the_main_runs_alone(plans):
    """Hand-derived: without a sweep, total cost = main cost = GPUs × elapsed hours × price, and total energy =
    main energy; the main run is the one the same plan with a sweep runs (the sweep changes no main number)."""
    with_sweep, plan = plans
    cost = plan.cost
    assert plan.sweep is None and cost.sweep is None and cost.sweep_cost_fraction is None
    elapsed_hours = plan.reliability.expected_elapsed_seconds / 3600
    assert cost.main.cost == pytest.approx(512 * elapsed_hours * 2.0, rel=1e-12)
    assert cost.total_cost == cost.main.cost
    assert cost.total_energy_mwh == cost.main.energy_mwh
    assert cost.main == with_sweep.cost.main
    # with the sweep: total = main + sweep, and the sweep is what sweep: false takes off the bill
    assert with_sweep.cost.sweep is not None
    assert with_sweep.cost.total_cost == pytest.approx(cost.main.cost + with_sweep.cost.sweep.cost, rel=1e-12)
    assert cost.notes["total_cost"] == f"main {cost.main.cost:,.0f} = {cost.main.cost:,.0f} USD"


def test_the_plan_says_why_it_has_no_sweep(plans):
    _, plan = plans
    assert REASON in plan.warnings
    assert not any(w.startswith("sweep:") and w != REASON for w in plan.warnings)
    assert plan.inputs["sweep"] == {"enabled": False}  # the plan file's choice, echoed


def test_json_has_a_null_sweep_and_no_sweep_cost_line(tmp_path):
    path = tmp_path / "plan.yaml"
    path.write_text(NO_SWEEP)
    result = run("plan", str(path), "-f", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["sweep"] is None
    assert data["cost"]["sweep"] is None and data["cost"]["sweep_cost_fraction"] is None
    assert data["cost"]["total_cost"] == data["cost"]["main"]["cost"]


def test_the_mapping_form_and_true_read_as_the_bool():
    """`sweep: {enabled: false}` is `sweep: false`; `sweep: true` and `enabled: true` are the default sweep."""
    spelled = load_plan_text(BASE + "sweep: {enabled: false}\n", "mapping.yaml").sweep
    assert spelled == load_plan_text(NO_SWEEP, "bool.yaml").sweep and spelled.enabled is False
    for on in ("sweep: true\n", "sweep: {enabled: true, fraction: 0.02}\n"):
        sweep = load_plan_text(BASE + on, "true.yaml").sweep
        assert sweep.enabled is True and "enabled" not in sweep.request_fields()
    default = load_plan_text(BASE, "default.yaml").sweep
    assert default.request_fields() == {} and default.enabled is None  # (echoed as {}: no new input key)
    assert build_plan(load_plan_text(BASE, "default.yaml"), EXAMPLES).inputs["sweep"] == {}


@pytest.mark.parametrize(
    "sweep, key, line",
    [
        ("sweep:\n  enabled: false\n  fraction: 0.02\n", "fraction", 19),
        ("sweep: {budgets: 2, enabled: false}\n", "budgets", 19),
    ],
)
def test_no_sweep_with_sweep_keys_is_one_line_naming_the_key(tmp_path, sweep, key, line):
    path = tmp_path / "plan.yaml"
    path.write_text(BASE + sweep)
    result = run("plan", str(path))
    assert result.exit_code == 2
    assert result.output.count("\n") == 1 and "Traceback" not in result.output
    assert f"plan.yaml:{line}: sweep: enabled: false designs no proxy sweep, so {key} changes nothing" in (
        result.output
    )
    assert f"drop {key}, or enabled: false" in result.output


def test_a_resolved_plan_without_a_sweep_checks_clean(tmp_path):
    """`runplan plan -f yaml` of a plan with sweep: false writes `sweep: null`; `runplan check` recomputes it
    and finds no drift (a null section compares equal to itself)."""
    path = tmp_path / "plan.yaml"
    path.write_text(NO_SWEEP)
    resolved = tmp_path / "resolved.yaml"
    result = run("plan", str(path), "-f", "yaml", "-o", str(resolved))
    assert result.exit_code == 0, result.output
    document = yaml.safe_load(resolved.read_text())
    assert document["sweep"] is False and document["resolved"]["sweep"] is None
    checked = run("check", str(resolved))
    assert checked.exit_code == 0, checked.output
