"""Megatron leaves a NaN loss out of the loss it prints: ``training_log`` (megatron/training/training.py) adds a
step's loss to the interval's average only when the update was not skipped; a skipped step whose loss was nan or
inf is counted in ``number of nan iterations`` instead, and an interval of only skipped steps prints no ``lm loss``
at all (its average is 0, printed only when > 0). Under fp16 a NaN loss is skipped, so those records were read as
healthy steps without a loss. The count is read: a record with ``number of nan iterations`` > 0 is a nan point of
the loss, as a loss written as nan is (1 point: watch; 3 in a row: roll back).

Hand-derived: steps 1-120 at loss 3.0, loss scale 65,536; steps 100-102 skipped with a nan loss (no lm loss, nan
iterations 1): 3 logged points in a row → rollback to the checkpoint before 100 (--checkpoint-interval 50: 50) and
skip 100-102. Only step 100 skipped: 1 point → watch.
"""

from __future__ import annotations

from runplan.monitor.analyse import analyse, checkpoints_for
from runplan.monitor.readers import read_logs
from runplan.monitor.thresholds import Thresholds

HEAD = " iteration {step:>6}/ 1000 | elapsed time per iteration (ms): 1000.0 | learning rate: 3.0E-04 |"
TAIL = (
    " loss scale: 65536.0 | number of skipped iterations: {skipped:3d} | number of nan iterations: {nan:3d} |"
)


def _line(step, nan_steps):
    if step in nan_steps:
        return HEAD.format(step=step) + TAIL.format(skipped=1, nan=1)
    return (
        HEAD.format(step=step) + " lm loss: 3.000000E+00 | grad norm: 0.300 |" + TAIL.format(skipped=0, nan=0)
    )


def _events(tmp_path, nan_steps):
    path = tmp_path / "run.log"
    path.write_text("".join(_line(s, nan_steps) + "\n" for s in range(1, 121)))
    log = read_logs([path])
    return analyse(log, Thresholds(), checkpoints_for(log, 50, None)).events


def test_three_skipped_nan_iterations_in_a_row_are_a_rollback(tmp_path):
    (event,) = _events(tmp_path, {100, 101, 102})
    assert (event.kind, event.start_step, event.end_step, event.metric) == ("nan", 100, 102, "loss")
    assert event.action == "rollback" and event.rollback_to_step == 50 and event.skip_steps == [100, 102]
    assert "number of nan iterations" in event.why


def test_one_skipped_nan_iteration_is_watched(tmp_path):
    (event,) = _events(tmp_path, {100})
    assert (event.kind, event.start_step, event.action) == ("nan", 100, "watch")


def test_no_nan_iterations_no_event(tmp_path):
    assert _events(tmp_path, set()) == []
