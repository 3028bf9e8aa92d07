"""A batch ramp moves the plan's milestones off the multiples of milestone_every_steps (ops/checkpoint.py
``_milestone_steps``); an engine that does not keep them itself (Megatron without --save-retain-interval,
torchtitan with keep_latest_k = 0, DeepSpeed) is told to keep the saves at the steps the plan lists, not at
multiples whose saves are rolling generations to delete."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.export import export_plan
from runplan.export._common import _milestones_in_words
from runplan.plan import RunPlan

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "70b-512-h100.yaml"


@pytest.fixture(scope="module")
def ramped_plan() -> RunPlan:
    result = CliRunner().invoke(app, ["plan", str(EXAMPLE), "-f", "json"])
    assert result.exit_code == 0, result.output
    return RunPlan.model_validate(json.loads(result.stdout))


@pytest.mark.parametrize("target", ["megatron", "torchtitan", "deepspeed"])
def test_the_retention_warning_lists_the_plans_milestone_steps(ramped_plan, target):
    ck = ramped_plan.checkpointing
    at = ck.milestone_steps
    assert 1 < len(at) <= 12 and at[0] != ck.milestone_every_steps  # the ramp moved them
    (warning,) = [w for w in export_plan(ramped_plan, target).warnings if "(milestones)" in w]
    assert "steps " + ", ".join(f"{s:,}" for s in at) + " (milestones)" in warning
    assert f"multiple of {ck.milestone_every_steps:,} steps (milestones)" not in warning


def test_milestones_in_words_without_a_ramp_and_when_there_are_many():
    assert _milestones_in_words(100, (100, 200, 300)) == "every one at a multiple of 100 steps (milestones)"
    assert _milestones_in_words(100, (110,)) == "the one at step 110 (milestones)"
    many = tuple(range(33, 33 * 21, 33))  # 20 saves, not the multiples of 30
    assert _milestones_in_words(30, many) == (
        "the 20 at steps 33, 66, 99, ... 660 (milestones; all in the plan's checkpointing.milestone_steps)"
    )
