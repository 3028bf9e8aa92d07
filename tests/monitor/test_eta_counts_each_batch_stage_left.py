"""The ETA of a log still in the plan's batch ramp counts every batch stage left at its own step time.

examples/70b-512-h100.yaml plans a ramp of 2,791 steps at 2,624 sequences (10,747,904 tokens) and then 90,542
steps at 5,312 (21,757,952 tokens). A log at step 300 of the ramp, 18.0 s a step and no batch printed (JSONL), is
in the ramp: the planned ramp step is the plan's own (schedule.batch_stages[0].step_seconds, the layout timed at
41 micro-batches per replica: 18.25 s, longer than the main 36.07 s scaled to the ramp's tokens, 17.82 s), so
the log runs at 18.25 / 18.0 = 1.014× the planned speed. What is left: 2,491 ramp steps at 18.0 s, then 90,542
main steps at 36.07 s ÷ 1.014 = 35.58 s each (the same speed ratio): 44,838 + 3,221,778 s = 37.8 days before
the goodput, 38.0 after. Every step left at the ramp's 18 s (93,033 × 18 s ÷ goodput) would say 19.5 days, half.
"""

from __future__ import annotations

import json

import pytest

from runplan.cli.common import plan_from_file
from runplan.monitor.readers import read_logs
from runplan.monitor.vs_plan import compare

PLAN = "examples/70b-512-h100.yaml"


def _log(tmp_path, rows):
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return read_logs([path])


@pytest.fixture(scope="module")
def plan():
    return plan_from_file(PLAN)[2]


def test_eta_in_the_ramp_counts_the_main_stage_at_its_own_step_time(tmp_path, plan):
    ramp, main = plan.schedule.batch_stages
    assert (ramp.end_step, ramp.global_batch_sequences) == (2791, 2624)
    assert (main.steps, main.global_batch_sequences) == (90542, 5312)
    log = _log(tmp_path, [{"step": s, "loss": 3.0, "step_seconds": 18.0} for s in range(1, 301)])
    vs = compare(log, plan)
    main_step = plan.layout.best.step_seconds  # 36.07 s at 21,757,952 tokens
    ramp_step = ramp.step_seconds  # 18.25 s: the layout at 41 micro-batches keeps its bubble
    assert main_step * 10747904 / 21757952 < ramp_step < main_step * 10747904 / 21757952 * 1.05
    assert vs["planned_step_seconds"] == pytest.approx(ramp_step)
    ratio = ramp_step / 18.0
    assert vs["speed_ratio"] == pytest.approx(ratio)
    assert vs["remaining_steps"] == 93333 - 300
    left = 2491 * 18.0 + 90542 * main_step / ratio
    assert vs["eta_seconds"] == pytest.approx(left / plan.reliability.goodput)
    assert vs["eta_seconds"] / 86400 == pytest.approx(38.0, abs=0.05)
    # not every step left at the ramp's step time (19.5 days)
    assert vs["eta_seconds"] > 1.9 * 93033 * 18.0 / plan.reliability.goodput
    assert vs["notes"]["eta_seconds"].startswith(
        "steps left per batch stage × its planned step time ÷ the speed"
    )


def test_eta_in_the_main_stage_is_the_steps_left_times_the_measured_step(tmp_path, plan):
    """Past the ramp only main steps are left: 93,333 − 3,000 = 90,333 steps × 37 s ÷ goodput."""
    log = _log(tmp_path, [{"step": s, "loss": 3.0, "step_seconds": 37.0} for s in range(2901, 3001)])
    vs = compare(log, plan)
    assert vs["remaining_steps"] == 90333
    assert vs["eta_seconds"] == pytest.approx(90333 * 37.0 / plan.reliability.goodput)


def test_a_plan_resolved_before_stages_recorded_their_step_scales_the_main_step(tmp_path, plan):
    """A plan file resolved by an older runplan has no `batch_stages[].step_seconds`: the ramp's planned step is
    the main step × the ramp's tokens ÷ the main stage's (17.82 s), and the note says so."""
    stages = [s.model_copy(update={"step_seconds": None}) for s in plan.schedule.batch_stages]
    old = plan.model_copy(update={"schedule": plan.schedule.model_copy(update={"batch_stages": stages})})
    log = _log(tmp_path, [{"step": s, "loss": 3.0, "step_seconds": 18.0} for s in range(1, 301)])
    vs = compare(log, old)
    scaled = plan.layout.best.step_seconds * 10747904 / 21757952
    assert vs["planned_step_seconds"] == pytest.approx(scaled)
    assert vs["notes"]["planned_step_seconds"].startswith("the ramp 1 stage's batch (2,624 sequences): ")
    assert compare(log, plan)["notes"]["planned_step_seconds"] == (
        "the ramp 1 stage's step in the plan (the layout timed at its 41 micro-batches per replica)"
    )
