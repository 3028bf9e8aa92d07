"""0.04 days on 64 H100s with tp 8 at 20 tokens per parameter (a fill by C alone): the first size, 545.8 M, takes
0.0437 days and the shape below it has 14 heads, which tp 8 cannot split; the fill stopped there and refused the
budget ("cannot hold the smallest plan", exit 1), though the next shape down, 489.2 M with 16 heads, fits.
The fill by C alone now steps on (secant steps, FILL_MAX_STEPS_BY_COMPUTE) and plans 489.2 M: no feasible size
fills the days within 1%, so the plan ends short of them and says which larger size was infeasible."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.plan import build_plan
from runplan.spec import load_plan

PLAN = (
    "schema_version: 1\nname: t\nbudget: {days: 0.04}\ncluster: {gpu: h100-sxm, gpus: 64}\nparallel: {tp: 8}\n"
    "objective: {kind: tokens_per_param, tokens_per_param: 20}\n"
)


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    path = tmp_path_factory.mktemp("tiny") / "tiny.yaml"
    path.write_text(PLAN)
    return path


def test_the_16_head_shape_below_the_14_head_one_is_planned_within_the_days(path):
    plan = build_plan(load_plan(path), path.parent)
    assert plan.model.total_params == pytest.approx(489.2e6, rel=1e-3)
    assert plan.model.shape.n_heads % 8 == 0
    assert plan.allocation.tokens == pytest.approx(20 * plan.allocation.params)
    days = plan.cost.main.wall_clock_days
    assert 0.038 < days <= 0.04  # 0.0387: 3.3% short, the largest feasible shape at 20 tokens per parameter
    (warning,) = [w for w in plan.warnings if w.startswith("budget:")]
    assert warning == (
        f"budget: the plan fills {days:.3g} of the budget's 0.04 days: a larger size is infeasible "
        "(tp=8 does not divide the 14 heads and 14 KV heads)"
    )


def test_allocate_sizes_the_same_model(path):
    import json

    result = CliRunner().invoke(app, ["allocate", str(path), "--json"])
    assert result.exit_code == 0, result.output
    plan = build_plan(load_plan(path), path.parent)
    assert json.loads(result.stdout)["params"] == plan.allocation.params
