"""The 70B example plan saves every 33 steps and keeps 3, and keeps the 2 newest multiples of 330 as rollback points
(examples/70b-512-h100.yaml). A divergence at step 5,000, read when the log is at step 5,300, wants a checkpoint at
a step ≤ 4,900: 4,620 was one until the save at 5,280 deleted it; the rollback points left are 4,950 and 5,280. The
monitor said "No kept checkpoint at a step ≤ 4,900: the oldest one kept is too new, ≥ 100 steps before it, and
skip the batches of steps 4,901-5,100": no step to resume from, a clause that contradicts itself, and batches
skipped from a step nobody resumes at. The oldest kept checkpoint, 4,950, is still before the spike: resume there
(50 steps before it, under the 100-step margin, said) and skip 4,951-5,150. Read at step 7,000, every kept
checkpoint is after the spike: none to resume from, said plainly."""

from __future__ import annotations

from runplan.monitor.analyse import analyse
from runplan.monitor.events import Checkpoints
from runplan.monitor.readers import read_logs
from runplan.monitor.thresholds import Thresholds

PLAN_70B = {
    "interval_steps": 33,
    "retention_generations": 3,
    "rollback_every_steps": 330,
    "rollback_generations": 2,
}


def _divergence(tmp_path, last: int):
    path = tmp_path / "run.csv"
    rows = "".join(f"{s},{(2.0 + 0.001 * (s % 2)) if s < 5000 else 3.0}\n" for s in range(4000, last + 1))
    path.write_text("step,loss\n" + rows)
    log = read_logs([path])
    report = analyse(log, Thresholds(), Checkpoints(**PLAN_70B, source="the plan"), None)
    (event,) = [e for e in report.events if e.kind == "divergence"]
    return event


def test_a_divergence_read_after_its_rollback_point_rotated_resumes_at_the_oldest_kept(tmp_path):
    event = _divergence(tmp_path, 5300)
    assert event.rollback_to_step == 4950
    assert event.skip_steps == [4951, 5150]
    assert (
        "roll back to the checkpoint at step 4,950 (the plan), 50 steps before it: those at a step ≤ 4,900 were "
        "deleted by step 5,300" in event.why.lower()
    )
    assert "too new" not in event.why and "≥ 100 steps before it" not in event.why.lower()


def test_a_divergence_read_after_every_earlier_checkpoint_rotated_says_none_is_left(tmp_path):
    event = _divergence(tmp_path, 7000)
    assert event.rollback_to_step is None
    assert "no checkpoint before step 5,000 is kept at step 7,000 (the plan)" in event.why.lower()
    assert "too new" not in event.why and "≥ 100 steps before it" not in event.why.lower()
