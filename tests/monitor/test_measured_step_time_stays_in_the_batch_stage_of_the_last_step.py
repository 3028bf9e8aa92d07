"""The measured step time of a log that prints no global batch is the median over the last 1,000 steps of the
plan's batch stage its last step is in, not across the end of the batch ramp.

examples/70b-512-h100.yaml plans a ramp over steps 0-2,791 (2,624 sequences) and then the main stage from step
2,791 to 93,333 (5,312 sequences, 36.07 s a step, MFU 53.5%, goodput 0.9949). A JSONL log with steps 1-2,791 at
18 s (the ramp's half batch) and 2,792-3,000 at 36.4 s, read at step 3,000: the last 1,000 steps (2,001-3,000)
hold 791 ramp times of 18 s and 209 main ones, so their median is 18 s (2.00x the planned speed, MFU 107%, ETA
90,333 × 18 s ÷ 0.9949 = 18.9 days). In the main stage only (steps 2,791-3,000): 18 s once and 36.4 s 209 times,
median 36.4 s: 36.07 / 36.4 = 0.991x the planned speed, MFU 53.5% × 0.991 = 53.0%, ETA 90,333 × 36.4 s ÷ 0.9949
= 3,304,834 s = 38.25 days.
"""

from __future__ import annotations

import json

import pytest

from runplan.cli.common import plan_from_file
from runplan.monitor.readers import read_logs
from runplan.monitor.vs_plan import compare

PLAN = "examples/70b-512-h100.yaml"


@pytest.fixture(scope="module")
def plan():
    return plan_from_file(PLAN)[2]


def _log(tmp_path, rows):
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return read_logs([path])


def test_after_the_ramp_the_step_time_is_the_main_stages(tmp_path, plan):
    ramp, main = plan.schedule.batch_stages
    assert (ramp.end_step, main.start_step, main.end_step) == (2791, 2791, 93333)
    rows = [{"step": s, "loss": 3.0, "step_seconds": 18.0 if s <= 2791 else 36.4} for s in range(1, 3001)]
    vs = compare(_log(tmp_path, rows), plan)
    assert vs["step_seconds"] == pytest.approx(36.4)
    main_step = plan.layout.best.step_seconds  # 36.07 s
    assert main_step == pytest.approx(36.07, abs=0.005)
    assert vs["speed_ratio"] == pytest.approx(main_step / 36.4)  # 0.991
    assert vs["mfu"] == pytest.approx(0.5352 * 36.07 / 36.4, abs=5e-4)  # 53.0%
    assert vs["eta_seconds"] == pytest.approx(90333 * 36.4 / plan.reliability.goodput)
    assert vs["eta_seconds"] / 86400 == pytest.approx(38.25, abs=0.01)
    assert vs["notes"]["step_seconds"] == (
        "median of 210 logged step times (last 1,000 steps, from the main stage's start at step 2,791)"
    )


def test_a_sparse_log_keeps_at_least_one_step_time_of_the_stage(tmp_path, plan):
    """Logged every 100 steps: 100-2,700 at 18 s (ramp), then 2,800 at 36.4 s, the one point in the main stage."""
    rows = [{"step": s, "loss": 3.0, "step_seconds": 18.0} for s in range(100, 2701, 100)]
    rows.append({"step": 2800, "loss": 3.0, "step_seconds": 36.4})
    vs = compare(_log(tmp_path, rows), plan)
    assert vs["step_seconds"] == pytest.approx(36.4)


def test_a_log_that_printed_its_step_times_only_in_the_ramp_keeps_its_last_one(tmp_path, plan):
    """Step times at 100-2,700 (18 s and, the last, 20 s); the record at 2,800 has a loss only: no step time in
    the main stage, so the last one logged stands (at least one step), not the median of all (18 s)."""
    rows = [{"step": s, "loss": 3.0, "step_seconds": 18.0} for s in range(100, 2601, 100)]
    rows += [{"step": 2700, "loss": 3.0, "step_seconds": 20.0}, {"step": 2800, "loss": 3.0}]
    vs = compare(_log(tmp_path, rows), plan)
    assert vs["step_seconds"] == pytest.approx(20.0)


def test_inside_one_stage_the_window_is_the_last_1000_steps(tmp_path, plan):
    """Steps 4,001-6,000, all in the main stage: 4,001-5,000 at 40 s, 5,001-6,000 at 37 s: the last 1,000 are
    37 s."""
    rows = [{"step": s, "loss": 3.0, "step_seconds": 40.0 if s <= 5000 else 37.0} for s in range(4001, 6001)]
    vs = compare(_log(tmp_path, rows), plan)
    assert vs["step_seconds"] == pytest.approx(37.0)
    assert vs["notes"]["step_seconds"] == "median of 1000 logged step times (last 1,000 steps)"
