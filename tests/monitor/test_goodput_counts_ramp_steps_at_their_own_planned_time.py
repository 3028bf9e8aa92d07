"""Goodput so far counts each logged step's useful time at its own batch stage's planned step time. Just past the
plan's batch ramp, every kept step was counted at the main stage's median, so the ramp's short steps made the
useful time exceed the time spent and the goodput read 100.0% (capped) even with a slow ramp.

examples/70b-512-h100.yaml: ramp steps 0-2,790 (planned 18.25 s at 41 micro-batches), main from 2,791 (36.07 s).
A JSONL log of steps 1-3,000, the ramp 10% slow (1.1 × 18.25 s) and the main steps on plan: useful
= 2,790 × 18.25 + 210 × 36.07 s (the main median × the stages' planned ratio), spent = 2,790 × 20.07 + 210 × 36.07
s: 0.920."""

from __future__ import annotations

import json

import pytest

from runplan.cli.common import plan_from_file
from runplan.monitor.readers import read_logs
from runplan.monitor.vs_plan import compare


@pytest.fixture(scope="module")
def plan():
    return plan_from_file("examples/70b-512-h100.yaml")[2]


def _compare(tmp_path, plan, ramp_factor: float):
    ramp, main = plan.schedule.batch_stages
    rows = [
        {
            "step": s,
            "loss": 3.0,
            "step_seconds": ramp.step_seconds * ramp_factor if s < 2791 else main.step_seconds,
        }
        for s in range(1, 3001)
    ]
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return compare(read_logs([path]), plan)


def test_a_slow_ramp_lowers_the_goodput_past_it(tmp_path, plan):
    ramp, main = plan.schedule.batch_stages
    vs = _compare(tmp_path, plan, 1.1)
    useful = 2790 * ramp.step_seconds + 210 * main.step_seconds
    spent = 2790 * 1.1 * ramp.step_seconds + 210 * main.step_seconds
    assert vs["goodput"] == pytest.approx(useful / spent, rel=1e-9)
    assert vs["goodput"] == pytest.approx(0.920, abs=0.001)


def test_a_ramp_on_plan_is_full_goodput(tmp_path, plan):
    assert _compare(tmp_path, plan, 1.0)["goodput"] == pytest.approx(1.0, rel=1e-9)


def test_a_log_at_its_own_batch_counts_each_step_at_its_printed_batch(tmp_path, plan):
    """A log printing its own batches (1,000 then 2,000 sequences, neither the plan's): a step's useful time is
    the last batch's median × its printed batch ÷ the last (1,000 steps of 12 s where 10 s was due, then 1,000 of
    20 s): useful 1,000 × 10 + 1,000 × 20 = 30,000 s of 32,000 spent, 0.9375. It read 100% (every step at the
    last batch's median)."""
    rows = [
        {
            "step": s,
            "loss": 3.0,
            "step_seconds": 12.0 if s <= 1000 else 20.0,
            "global_batch_size": 1000 if s <= 1000 else 2000,
        }
        for s in range(1, 2001)
    ]
    path = tmp_path / "own.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    vs = compare(read_logs([path]), plan)
    assert vs["goodput"] == pytest.approx(30000 / 32000, rel=1e-9)
