"""A GPU-time budget is spent: the plan is sized so its predicted wall clock (goodput included) fills it;
`init` takes --days and never writes a silent FLOP budget for a cluster (issue 15)."""

from __future__ import annotations

import pytest
import yaml
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.plan import FILL_RTOL, build_plan
from runplan.spec import load_plan_text


def _plan(budget: dict, gpus: int = 1024):
    text = yaml.safe_dump(
        {"schema_version": 1, "name": "t", "budget": budget, "cluster": {"gpu": "h100-sxm", "gpus": gpus}}
    )
    return build_plan(load_plan_text(text, "<test>"))


def test_thirty_days_on_1024_h100_fills_thirty_days():
    plan = _plan({"days": 30})
    days = plan.cost.main.wall_clock_days
    assert days == pytest.approx(30, rel=FILL_RTOL)
    a = plan.allocation
    assert a.days == 30
    # C = GPUs × peak × effective utilisation × seconds, the effective utilisation below the layout's MFU
    # (goodput < 1) and far from the 0.4 the budget assumed
    assert a.flops == pytest.approx(1024 * 989e12 * a.mfu * 30 * 86400, rel=1e-6)
    assert 0.4 < a.mfu < plan.layout.best.mfu


def test_gpu_hours_budget_is_days_on_the_cluster():
    hours = 30 * 24 * 512
    plan = _plan({"gpu_hours": hours}, gpus=512)
    assert plan.cost.main.wall_clock_days == pytest.approx(30, rel=0.05)
    assert plan.allocation.days == pytest.approx(30)
    assert plan.cost.main.wall_clock_days <= 30 * (1 + FILL_RTOL) or any(
        w.startswith("budget:") for w in plan.warnings
    )


def test_a_flops_budget_is_not_resized():
    plan = _plan({"flops": 2e23})
    assert plan.allocation.flops == pytest.approx(2e23) and plan.allocation.days is None


def _init(*args: str):
    return CliRunner().invoke(app, ["init", *args])


def test_init_days_writes_a_days_budget():
    result = _init("--days", "30", "--gpus", "512")
    assert result.exit_code == 0, result.output
    budget = yaml.safe_load(result.stdout)["budget"]
    assert budget == {"days": "30"} or budget == {"days": 30}


def test_init_gpus_without_a_budget_writes_a_marked_placeholder_not_flops():
    result = _init("--gpus", "1024")
    assert result.exit_code == 0, result.output
    assert "flops" not in yaml.safe_load(result.stdout)["budget"]
    assert "placeholder" in result.stdout


def test_init_refuses_two_budgets():
    result = _init("--days", "3", "--flops", "1e23")
    assert result.exit_code == 2 and "--days" in result.stderr


def test_init_cites_nothing_outside_the_repo():
    text = _init().stdout
    assert "runplan.dev" not in text and "REFERENCES" not in text and "design brief" not in text
    assert "$schema=docs/plan.schema.json" in text
