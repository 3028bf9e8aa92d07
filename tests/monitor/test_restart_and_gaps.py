"""Restarts (in one file or across files), recoveries across a hole in the log, the vs-plan step-time window and
the plan's checkpoint wording. Every log is a tiny hand-made Megatron log written in tmp_path."""

from __future__ import annotations

import pytest

from runplan.cli.common import plan_from_file
from runplan.monitor.analyse import analyse, checkpoints_for
from runplan.monitor.readers import read_logs
from runplan.monitor.thresholds import Thresholds
from runplan.monitor.vs_plan import compare

MEGATRON = (
    " iteration {step:>6}/ 1000 | consumed samples: {samples} | elapsed time per iteration (ms): {ms} | "
    "learning rate: 3.0E-04 | global batch size: 8 | lm loss: {loss} | grad norm: {norm} | TFLOPs: 100.0 |"
)
PLAN = "examples/70b-512-h100.yaml"


def _lines(steps, ms: float = 1000.0, norm: str = "0.300", loss: str = "3.0E+00") -> list[str]:
    return [MEGATRON.format(step=s, samples=s * 8, ms=ms, loss=loss, norm=norm) for s in steps]


def _write(path, lines: list[str]):
    path.write_text("\n".join(lines) + "\n")
    return path


def _report(paths):
    log = read_logs(paths)
    return log, analyse(log, Thresholds(), checkpoints_for(log, None, None))


# 1. goodput counts the time of an abandoned attempt, in one file and across two files


def test_goodput_counts_the_abandoned_attempts_logged_time(tmp_path):
    """Steps 1-20, the attempt's steps 11-20 took 2 s each; the job restarted from step 11 and reached 30 at
    1 s a step. Kept: 30 steps × median 1 s; spent: 30 × 1 s + 10 × 2 s (the abandoned rows): 30 / 50 = 0.6."""
    first = _lines(range(1, 11)) + _lines(range(11, 21), ms=2000.0)
    second = _lines(range(11, 31))
    plan = plan_from_file(PLAN)[2]
    one = read_logs([_write(tmp_path / "one.log", first + second)])
    two = read_logs([_write(tmp_path / "a.log", first), _write(tmp_path / "b.log", second)])
    for log in (one, two):
        assert log.steps.tolist() == list(range(1, 31))
        assert compare(log, plan)["goodput"] == pytest.approx(0.6)


# 2. a later file that ends before the earlier one: as in one file (the abandoned steps past it are left out)


def test_a_later_file_that_ends_first_is_read_as_the_same_lines_in_one_file(tmp_path):
    first, second = _lines(range(1, 31), norm="0.400"), _lines(range(21, 26))
    one_log, one = _report([_write(tmp_path / "one.log", first + second)])
    two_log, two = _report([_write(tmp_path / "a.log", first), _write(tmp_path / "b.log", second)])
    for log, report in ((two_log, two), (one_log, one)):
        assert log.steps.tolist() == list(range(1, 26))
        assert log.values["grad_norm"].tolist() == [0.4] * 20 + [0.3] * 5  # the later attempt's values
        assert report.summary["logged_steps"] == 25
        assert log.abandoned_seconds.size == 10  # steps 21-30 of the first attempt
        (restart,) = [e for e in report.events if e.kind == "restart"]
        # what was redone: steps 21-25, 5 of them (not "peak 30 end 21", not "redid 10 steps")
        assert (restart.start_step, restart.peak_step, restart.end_step, restart.value) == (21, 25, 25, 5.0)
        assert (
            "redid 5 steps (steps 21-25" in restart.why and "steps 26-30 are not reached again" in restart.why
        )
    assert any("steps 26-30" in note and "left out" in note for note in two_log.notes)


# 3. a grad-norm alert is not recovered across a hole in the log, as a loss spike is not


def test_grad_norm_recovery_needs_the_confirming_points_after_a_gap(tmp_path):
    """An alert at steps 21-23, then nothing logged until 50: 2 points back under it do not confirm a recovery
    (as for the loss); 3 do, and the alert ends at the first of them."""
    head = _lines(range(1, 21)) + _lines(range(21, 24), norm="100.0")
    _, short = _report([_write(tmp_path / "short.log", head + _lines([50, 51]))])
    (alert,) = [e for e in short.events if e.kind == "grad_norm_alert"]
    assert alert.end_step is None and alert.recovered is None
    assert "fewer than the 3 that confirm a recovery" in alert.why and "24-49 are not in the log" in alert.why
    _, longer = _report([_write(tmp_path / "long.log", head + _lines([50, 51, 52]))])
    (alert,) = [e for e in longer.events if e.kind == "grad_norm_alert"]
    assert alert.end_step == 50 and alert.recovered is True


# 4. the vs-plan step time: the median over the last 1,000 steps, not 1,001


def test_step_time_median_is_over_the_last_1000_steps(tmp_path):
    """1 s steps to 1,500, 3 s after, to 2,000: steps 1,001-2,000 are half 1 s, half 3 s (median 2 s); step
    1,000 as well would make the median 1 s."""
    lines = _lines(range(1, 1501)) + _lines(range(1501, 2001), ms=3000.0)
    log = read_logs([_write(tmp_path / "run.log", lines)])
    vs = compare(log, plan_from_file(PLAN)[2])
    assert vs["step_seconds"] == pytest.approx(2.0)
    assert vs["notes"]["step_seconds"].startswith("median of 1000 logged step times")


# 5. a plan that keeps no separate rollback points says so (was "rollback points every 0")

T5_PLAN = """schema_version: 1
name: t5-check
model: 220m
budget:
  tokens: 26.2144B
training:
  seq_len: 512
cluster:
  gpu: h100-sxm
  gpus: 8
parallel:
  tp: 4
  dp: 2
  pp: 1
  micro_batch: 32
  microbatches: 8
constraints:
  min_global_batch_tokens: 250k
  max_global_batch_tokens: 265k
"""


def test_plan_without_rollback_points_says_why(tmp_path):
    path = tmp_path / "t5.yaml"
    path.write_text(T5_PLAN)
    plan = plan_from_file(path)[2]
    cp = plan.checkpointing
    assert cp.rollback_every_steps == 0  # the rolling generations reach back far enough
    log = read_logs([_write(tmp_path / "run.log", _lines(range(1, 11)))])
    source = checkpoints_for(log, None, plan).source
    assert "every 0" not in source and "no separate rollback points" in source
    reach = (cp.retention_generations - 1) * cp.interval_steps
    assert f"reach {reach:,} steps back" in source
