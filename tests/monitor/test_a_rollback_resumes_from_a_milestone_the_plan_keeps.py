"""A batch ramp moves the plan's milestones off the multiples of milestone_every_steps (ops/checkpoint.py
``_milestone_steps``): a rollback must resume from a milestone the plan keeps, not from a multiple that was a
rolling save long deleted."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.monitor.analyse import checkpoints_for
from runplan.monitor.events import Checkpoints
from runplan.plan import RunPlan

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "70b-512-h100.yaml"


def test_the_newest_kept_save_before_a_step_can_be_a_milestone():
    # rolling saves every 33 steps, 3 kept: at step 50,000 they are 49,929..49,995; milestones at 10,626 and
    # 19,833 stay for good; 9,207 (the old multiple) was a rolling save rotated away long ago
    cp = Checkpoints(interval_steps=33, retention_generations=3, milestone_steps=[10_626, 19_833])
    assert cp.newest_at_or_before(12_000, now=50_000) == 10_626
    assert cp.newest_at_or_before(25_000, now=50_000) == 19_833
    assert cp.newest_at_or_before(10_000, now=50_000) is None


def test_the_70b_plans_milestones_reach_the_monitor_as_the_plan_lists_them():
    result = CliRunner().invoke(app, ["plan", str(EXAMPLE), "-f", "json"])
    assert result.exit_code == 0, result.output
    plan = RunPlan.model_validate(json.loads(result.stdout))
    at = plan.checkpointing.milestone_steps
    every = plan.checkpointing.milestone_every_steps
    assert at and at[0] != every  # the ramp moves the first milestone off the multiple
    log = SimpleNamespace(saved_steps=[], checkpoint_interval_steps=None)
    cp = checkpoints_for(log, None, plan)
    assert cp.milestone_steps == at
    # long after the rolling saves of that time rotated away, the rollback point is the first milestone
    assert cp.newest_at_or_before(at[1] - 1, now=at[-1]) == at[0]


def test_weights_only_milestones_are_not_rollback_points(tmp_path):
    """operations.milestone_weights_only keeps bf16/fp32 weights without optimizer state: no run resumes from
    them, so the monitor does not offer them as a rollback step."""
    plan_file = tmp_path / "plan.yaml"
    text = EXAMPLE.read_text(encoding="utf-8")
    assert "\noperations:\n" in text
    plan_file.write_text(
        text.replace("\noperations:\n", "\noperations:\n  milestone_weights_only: true\n"), encoding="utf-8"
    )
    result = CliRunner().invoke(app, ["plan", str(plan_file), "-f", "json"])
    assert result.exit_code == 0, result.output
    plan = RunPlan.model_validate(json.loads(result.stdout))
    assert (
        plan.checkpointing.milestone_steps
        and plan.checkpointing.milestone_bytes < plan.checkpointing.total_bytes
    )
    cp = checkpoints_for(SimpleNamespace(saved_steps=[], checkpoint_interval_steps=None), None, plan)
    assert cp.milestone_steps == []
