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
from tests.ops._run70b import operations_70b

from runplan.ops import ScheduleRequest, plan_schedule

PLANS = Path(__file__).resolve().parents[1] / "export" / "plans"


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
    from runplan.plan import RunPlan

    text = (PLANS / "70b-512-h100.json").read_text(encoding="utf-8")
    old = json.loads(text)["checkpointing"]
    plan = RunPlan.model_validate_json(text)
    ck = plan.checkpointing
    assert ck.main_interval_seconds == old["interval_seconds"]
    assert ck.notes["main_interval_seconds"] == old["notes"]["interval_seconds"]
    # its milestones were multiples of its spacing
    every = old["milestone_every_steps"]
    assert ck.milestone_steps == [every * j for j in range(1, old["milestones"] + 1)]
