"""A spike in a run's first 100 steps (the rollback margin, PaLM §5.1) that is not back in 200 steps has no step
to roll back to before it: a divergence at step 60 said "roll back to the newest checkpoint at a step ≤ -40" and
"skip the batches of steps -39-160" (and, with --checkpoint-interval, "no checkpoint is due at a step ≤ -40").
The run's start is the only place to restart from: step 0, the initial weights; the batches skipped run from the
first, 200 of them (PaLM's least, through the peak at 60). A nan at a 0-based log's step 0 likewise has no step
before it."""

from __future__ import annotations

import re

import pytest

from runplan.monitor.analyse import analyse, checkpoints_for
from runplan.monitor.readers import read_logs
from runplan.monitor.thresholds import Thresholds


def _report(tmp_path, rows: str, interval: int | None):
    path = tmp_path / "run.csv"
    path.write_text("step,loss\n" + rows)
    log = read_logs([path])
    return analyse(log, Thresholds(), checkpoints_for(log, interval, None))


def _diverging() -> str:
    # 4.00/4.01 before step 60, then 6.0 (+50%) to step 400: never back within 5%
    return "".join(f"{s},{(4.0 + 0.01 * (s % 2)) if s < 60 else 6.0}\n" for s in range(1, 401))


@pytest.mark.parametrize("interval", [None, 50])
def test_a_divergence_at_step_60_restarts_the_run_from_its_start(tmp_path, interval):
    report = _report(tmp_path, _diverging(), interval)
    (event,) = [e for e in report.events if e.kind == "divergence"]
    assert (event.start_step, event.action) == (60, "rollback")
    assert event.rollback_to_step is None
    assert event.skip_steps == [1, 200]  # from step 0: 200 batches, PaLM's least, through the peak at 60
    assert "restart the run from its start" in event.why.lower()
    assert "≥ 100 steps before it" not in event.why  # the start is 60 steps before it
    assert not re.search(r"(?<![\w.])-\d", event.why), event.why  # no negative step anywhere


def test_a_nan_at_step_0_of_a_zero_based_log_restarts_the_run(tmp_path):
    rows = "0,nan\n1,nan\n2,nan\n" + "".join(f"{s},4.0\n" for s in range(3, 20))
    report = _report(tmp_path, rows, None)
    (event,) = [e for e in report.events if e.kind == "nan"]
    assert event.action == "rollback" and event.rollback_to_step is None
    assert "restart the run from its start" in event.why
    assert "≤ -1" not in event.why
