"""30 days of 512 H100s with the inference-optimal objective (2e13 tokens served): the target loss is the
compute-optimal loss of the C the days are worth, and training the smaller model to it takes 1.69x that C, which
the plan's fill makes fit the 30 days (29.95 planned). The allocation's caution said "budget overrun ... raise the
budget", a fix the run does not need: its bound is the days. It now says what that C is; a FLOPs budget, where C
is the bound, keeps the overrun caution."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app

runner = CliRunner()
PLAN = (
    "schema_version: 1\nname: inf\nbudget: {budget}\ncluster: {{gpu: h100-sxm, gpus: 512}}\n"
    "objective: {{kind: inference_optimal, inference_tokens: 2e13}}\n"
)


@pytest.fixture(scope="module")
def days_plan(tmp_path_factory):
    path = tmp_path_factory.mktemp("inf") / "plan.yaml"
    path.write_text(PLAN.format(budget="{days: 30}"))
    result = runner.invoke(app, ["plan", str(path), "-f", "json"])
    assert result.exit_code == 0, result.output
    return path, json.loads(result.stdout)


def test_the_plan_says_the_days_hold_the_run(days_plan):
    _, plan = days_plan
    a = plan["allocation"]
    assert plan["cost"]["main"]["wall_clock_days"] <= 30
    ratio = a["flops"] / a["budget_flops"]
    assert ratio == pytest.approx(1.69, abs=0.01)  # 6.11e23 / 3.61e23
    expected = (
        f"the target loss is the compute-optimal loss of C = {a['budget_flops']:.3g} FLOPs; training the smaller "
        f"model to it takes 6·N·D = {a['flops']:.3g} FLOPs ({ratio:.3g}×), which the budget's 30 days hold"
    )
    assert any(w.startswith(expected) for w in a["warnings"])
    assert any(w.startswith("allocation: " + expected) for w in plan["warnings"])
    assert not [w for w in plan["warnings"] if "raise the budget" in w or "budget overrun" in w]


def test_allocate_on_the_file_says_the_same(days_plan):
    path, plan = days_plan
    result = runner.invoke(app, ["allocate", str(path), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["warnings"] == plan["allocation"]["warnings"]


def test_a_flops_budget_keeps_the_overrun_caution(tmp_path):
    path = tmp_path / "plan.yaml"
    path.write_text(PLAN.format(budget="{flops: 3.6e23}"))
    result = runner.invoke(app, ["allocate", str(path), "--json"])
    assert result.exit_code == 0, result.output
    assert any(w.startswith("budget overrun: training takes") for w in json.loads(result.stdout)["warnings"])
