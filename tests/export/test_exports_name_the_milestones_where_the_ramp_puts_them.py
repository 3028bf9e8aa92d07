"""A batch ramp moves the plan's milestones off the multiples of milestone_every_steps (ops/checkpoint.py
``_milestone_steps``). Megatron, which runs the ramp and does not keep them itself (no --save-retain-interval),
is told to keep the saves at the steps the plan lists, not at multiples whose saves are rolling generations to
delete; torchtitan and DeepSpeed, which drop the ramp, keep the multiples (every step at the main batch)."""

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


def test_megatron_which_runs_the_ramp_is_told_the_plans_milestone_steps(ramped_plan):
    ck = ramped_plan.checkpointing
    at = ck.milestone_steps
    assert 1 < len(at) <= 12 and at[0] != ck.milestone_every_steps  # the ramp moved them
    (warning,) = [w for w in export_plan(ramped_plan, "megatron").warnings if "(milestones)" in w]
    assert "steps " + ", ".join(f"{s:,}" for s in at) + " (milestones)" in warning
    assert f"multiple of {ck.milestone_every_steps:,} steps" not in warning


@pytest.mark.parametrize("target", ["torchtitan", "deepspeed"])
def test_an_engine_that_drops_the_ramp_keeps_the_multiples_at_the_main_batch(ramped_plan, target):
    """Without the ramp every step is at the main batch, so the milestones' tokens (j × milestone_every_steps ×
    the main batch) fall at the multiples; the ramp's milestone_steps would be the wrong saves."""
    ck = ramped_plan.checkpointing
    (warning,) = [w for w in export_plan(ramped_plan, target).warnings if "(milestones" in w]
    assert (
        f"every one at a multiple of {ck.milestone_every_steps:,} steps (milestones: with the ramp dropped"
        in (warning)
    )
    assert f"{ck.milestone_steps[0]:,}" not in warning


def test_milestones_in_words_without_a_ramp_and_when_there_are_many():
    assert _milestones_in_words(100, (100, 200, 300)) == "every one at a multiple of 100 steps (milestones)"
    assert _milestones_in_words(100, (110,)) == "the one at step 110 (milestones)"
    # 39 milestones: the ramp's irregular head listed, the evenly spaced rest exactly (each step recoverable)
    many = (1_000, 2_500, *range(3_729, 91_510, 2_310))
    assert _milestones_in_words(2_310, many) == (
        "the 41 at steps 1,000, 2,500, 3,729, then every 2,310 through 91,509 (milestones)"
    )


def test_a_run_shorter_than_one_milestone_keeps_its_final_checkpoint(ramped_plan):
    """ops/checkpoint.py's recipe keeps the final checkpoint for good when no milestone falls within the run."""
    ck = ramped_plan.checkpointing.model_copy(update={"milestone_steps": [], "milestones": 0})
    plan = ramped_plan.model_copy(update={"checkpointing": ck})
    (warning,) = [w for w in export_plan(plan, "megatron").warnings if w.startswith("checkpoint retention:")]
    assert "the final checkpoint (no milestone falls within the run: the plan keeps it for good)" in warning
