"""A rollback that finds no checkpoint old enough restarts from step 0 and redoes the whole run: its "at most"
tokens and seconds are the run's own (ramp included), not its steps × the main batch. An 8B model on 2B tokens
(64 H100s, 1,936 steps of which 57 in a half-batch ramp, one save at the end) printed "work redone: 300 to 1,936
steps (2.03 B tokens, up to 3,289 s)", more than the run's 2.0 B tokens and its 3,246 s of work."""

from __future__ import annotations

import pytest

from runplan.ops import MonitoringRequest, plan_monitoring


def _request(**kw) -> MonitoringRequest:
    # 1,000 steps of 1 M tokens and 2 s, a save every 2,000 steps: margin 100 + detection 200 + 2,000 − 1 > 1,000
    base = dict(
        total_steps=1000, tokens_per_step=1e6, step_seconds=2.0, seq_len=4096, checkpoint_interval_steps=2000
    )
    return MonitoringRequest(**{**base, **kw})


def test_capped_rollback_redoes_the_runs_tokens_and_seconds():
    # a ramp ran the first 100 steps at half the batch and half the step: 100 × 0.5 M + 900 × 1 M = 950 M tokens,
    # 100 × 1 s + 900 × 2 s = 1,900 s
    m = plan_monitoring(_request(run_tokens=950e6, run_seconds=1900.0))
    assert m.rollback_max_redo_steps == 1000
    assert m.rollback_max_redo_tokens == pytest.approx(950e6)
    assert m.rollback_max_redo_seconds == pytest.approx(1900.0)
    assert "the whole run" in m.notes["rollback_max_redo_tokens"]
    line = next(s for s in m.rollback_procedure if s.startswith("work redone"))
    assert "950 M tokens" in line and "1,900 s" in line


def test_uncapped_rollback_counts_main_batch_steps():
    # a save every 50 steps: at most 100 + 200 + 50 − 1 = 349 steps of 1 M tokens and 2 s
    m = plan_monitoring(_request(checkpoint_interval_steps=50, run_tokens=950e6, run_seconds=1900.0))
    assert m.rollback_max_redo_steps == 349
    assert m.rollback_max_redo_tokens == pytest.approx(349e6)
    assert m.rollback_max_redo_seconds == pytest.approx(698.0)
