"""A divergence whose rollback margin reaches back before the first checkpoint due (saves every 1,000 steps, a
spike at step 1,050, a margin of 100: none due at a step ≤ 950) said "no checkpoint is due at a step ≤ 950: the
first comes later; restart the run from its start", 1,050 steps of training thrown away, while the checkpoint
at step 1,000, 50 steps before the spike, is kept. The rule the same change gave a rollback whose margin's
checkpoint was rotated away (detect.Context.rollback: the newest checkpoint still kept before the spike, under
the margin, said) now holds here too; with no checkpoint before the spike the run still restarts from its start."""

from __future__ import annotations

from runplan.monitor.analyse import analyse
from runplan.monitor.events import Checkpoints
from runplan.monitor.readers import read_logs
from runplan.monitor.thresholds import Thresholds


def _divergence(tmp_path, spike: int, interval: int):
    path = tmp_path / "run.csv"
    rows = "".join(f"{s},{(2.0 + 0.001 * (s % 2)) if s < spike else 3.0}\n" for s in range(1, spike + 351))
    path.write_text("step,loss\n" + rows)
    checkpoints = Checkpoints(interval_steps=interval, retention_generations=3, source="the plan")
    report = analyse(read_logs([path]), Thresholds(), checkpoints, None)
    (event,) = [e for e in report.events if e.kind == "divergence"]
    return event


def test_the_checkpoint_kept_before_the_spike_is_resumed_from(tmp_path):
    event = _divergence(tmp_path, 1050, 1000)
    assert event.rollback_to_step == 1000
    assert event.skip_steps == [1001, 1200]  # PaLM's least, 200 batches, from the step resumed at
    why = event.why.lower()
    assert "roll back to the checkpoint at step 1,000 (the plan), 50 steps before it" in why
    assert "none is due at a step ≤ 950" in why
    assert "restart the run from its start" not in why and "≥ 100 steps before it" not in why


def test_with_no_checkpoint_before_the_spike_the_run_restarts(tmp_path):
    event = _divergence(tmp_path, 950, 1000)
    assert event.rollback_to_step is None
    assert (
        "no checkpoint is due at a step ≤ 850 (the plan): the first comes later; restart the run from its start"
        in (event.why.lower())
    )
