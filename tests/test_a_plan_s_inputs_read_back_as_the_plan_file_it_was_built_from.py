"""runplan.plan.plan_spec_of reads a plan's ``inputs`` back as the plan file it was built from: the inverse of the
echo (plan._echoed_inputs) beside it in plan.py, which writes ``objective: {kind: fixed_params}`` for a fixed
model with no objective. cli/common undid that echo from outside plan.py; export now calls this."""

from __future__ import annotations

from pathlib import Path

import pytest

from runplan.plan import RunPlan, _echoed_inputs, plan_spec_of
from runplan.spec import load_plan_text

ROOT = Path(__file__).resolve().parents[1]


def _stored(name: str) -> RunPlan:
    return RunPlan.model_validate_json((ROOT / "tests" / "export" / "plans" / f"{name}.json").read_text())


@pytest.mark.parametrize(
    "name", ["70b-512-h100", "moe-mixtral-8x7b", "2e23-7b-overtrained", "2e23-inference-optimal"]
)
def test_the_read_back_spec_is_the_example_s_own(name):
    written = load_plan_text((ROOT / "examples" / f"{name}.yaml").read_text(), f"{name}.yaml")
    read_back = plan_spec_of(_stored(name))
    assert read_back == written
    assert _echoed_inputs(read_back) == _echoed_inputs(written)


def test_a_fixed_model_s_echoed_objective_is_not_read_back_as_written():
    plan = _stored("70b-512-h100")
    assert plan.inputs["objective"] == {"kind": "fixed_params"}  # the echo: the planner's reading of model:
    spec = plan_spec_of(plan)
    assert "objective" not in spec.model_fields_set and spec.model is not None


def test_a_stated_fixed_params_objective_with_its_params_is_kept():
    spec = plan_spec_of(_stored("2e23-7b-overtrained"))
    assert spec.objective.kind == "fixed_params" and spec.objective.params == 7e9
