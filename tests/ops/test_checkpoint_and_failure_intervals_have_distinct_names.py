"""The plan JSON had two ``interval_seconds``: checkpointing's (interval steps × the main step, 1,190.3 s on the 70B
example) and reliability's (the failure model's τ, the mean work between saves over all batch stages, 1,172.7 s).
Checkpointing's is now ``main_interval_seconds``; each reason line names the other.

Hand numbers (the tests' 70B run, tests/ops/_run70b.py): reliability τ = W × k / S, the work of the run spread
over its saves, below the main stage's k × step time because ramp steps are shorter.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from tests.ops._run70b import operations_70b
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.ops import ScheduleRequest, plan_schedule
from runplan.ops.checkpoint import CheckpointPlan

FROZEN = Path(__file__).resolve().parent / "resolved_before_77efb0d" / "70b-512-h100.yaml"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "70b-512-h100.yaml"


def test_two_names_two_meanings():
    ops = operations_70b()
    ck, rel = ops.checkpointing, ops.reliability
    assert "interval_seconds" not in type(ck).model_fields
    assert ck.main_interval_seconds == pytest.approx(ck.interval_steps * 9.0)
    schedule = plan_schedule(
        ScheduleRequest(training_tokens=1.4e12, compute_flops=5.88e23, seq_len=4096, dp=16, micro_batch=1)
    )
    assert rel.interval_seconds == pytest.approx(
        ops.useful_seconds * ck.interval_steps / schedule.total_steps, rel=1e-12
    )
    assert rel.interval_seconds < ck.main_interval_seconds
    assert "reliability.interval_seconds" in ck.notes["main_interval_seconds"]
    assert "checkpointing.main_interval_seconds" in rel.notes["interval_seconds"]
    assert "mean" in rel.notes["interval_seconds"]


def test_plan_json_has_one_interval_seconds():
    dumped = operations_70b().model_dump(mode="json")
    assert (
        "interval_seconds" not in dumped["checkpointing"]
        and "main_interval_seconds" in dumped["checkpointing"]
    )
    assert "interval_seconds" in dumped["reliability"]


def test_a_plan_written_before_the_rename_still_loads():
    # the 70B example's checkpointing as runplan wrote it at 3521ea3, before the rename: a frozen fixture (the
    # checked-in tests/export/plans/ are rewritten by `python -m tests.export._plans` and lose the old name)
    old = yaml.safe_load(FROZEN.read_text(encoding="utf-8"))["resolved"]["checkpointing"]
    assert "interval_seconds" in old and "milestone_steps" not in old
    ck = CheckpointPlan.model_validate(old)
    # 33 steps × 36.07 s main steps = 1,190.3 s (docs/operations.md)
    assert ck.main_interval_seconds == old["interval_seconds"] == pytest.approx(1_190.3, abs=0.05)
    assert ck.notes["main_interval_seconds"] == old["notes"]["interval_seconds"]
    # its milestones were the multiples of its spacing: ⌊93,333 steps / 9,207⌋ = 10 of them
    assert ck.milestone_steps == [9_207 * j for j in range(1, 11)]


def test_a_whole_plan_written_before_the_rename_still_loads():
    # today's plan of the example with checkpointing written the old way: the key renamed back, no milestone_steps
    from runplan.plan import RunPlan

    result = CliRunner().invoke(app, ["plan", str(EXAMPLE), "-f", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    ck = data["checkpointing"]
    ck["interval_seconds"] = ck.pop("main_interval_seconds")
    ck["notes"]["interval_seconds"] = ck["notes"].pop("main_interval_seconds")
    del ck["milestone_steps"], ck["notes"]["milestone_steps"]
    plan = RunPlan.model_validate(data)
    assert plan.checkpointing.main_interval_seconds == ck["interval_seconds"]
    every = ck["milestone_every_steps"]
    assert plan.checkpointing.milestone_steps == [every * j for j in range(1, ck["milestones"] + 1)]
    assert plan.reliability.interval_seconds == data["reliability"]["interval_seconds"]
