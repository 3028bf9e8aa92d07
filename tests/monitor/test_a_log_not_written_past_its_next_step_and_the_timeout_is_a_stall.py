"""A hung job prints nothing: its log, read alone, looks healthy, and ``--follow`` printed nothing at all. The
monitor says a ``stall`` (action ``watch``, so the verdict is not ``healthy``) when the log has not been written for
longer than its next logged step was due plus ``--stall-seconds`` (default 600 s: PyTorch's ProcessGroupNCCL
timeout and Megatron-LM's ``--distributed-timeout-minutes``, 10 minutes each).

Hand-derived: a Megatron log of 40 steps at 36,000 ms each, logged every step: the next step is due 36 s after
step 40; with the default 600 s a stall is said past 636 s without a write. The same at 105 s a step logged every
10 steps (BLOOM's step time, Megatron's ``--log-interval 10``): due 1,050 s, said past 1,650 s.
The mtime is set with ``os.utime`` and the clock is passed in (``now``), so the ages are exact.
"""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys

import pytest

from runplan.monitor.analyse import analyse, checkpoints_for
from runplan.monitor.readers import read_logs
from runplan.monitor.stall import STALL_SECONDS, add_stall, finished, last_written, next_step_due
from runplan.monitor.thresholds import Thresholds

NOW = 1_800_000_000.0  # the fake clock: 2027-01-15, seconds since the epoch
LINE = (
    " iteration {step:>6}/ {total} | elapsed time per iteration (ms): {ms:.1f} | learning rate: 3.0E-04 | "
    "lm loss: 3.000000E+00 | grad norm: 0.300 |"
)


def _log(tmp_path, steps, ms=36000.0, total=100000, tail=""):
    path = tmp_path / "run.log"
    path.write_text("".join(LINE.format(step=s, total=total, ms=ms) + "\n" for s in steps) + tail)
    return path


def _report(path, age, stall_seconds=STALL_SECONDS):
    os.utime(path, (NOW - age, NOW - age))
    log = read_logs([path])
    report = analyse(log, Thresholds(), checkpoints_for(log, None, None))
    add_stall(report, log, [path], stall_seconds, NOW)
    return report


def _stalls(report):
    return [e for e in report.events if e.kind == "stall"]


def test_the_default_is_the_engines_ten_minute_collective_timeout():
    from runplan.cli.monitor import monitor

    assert STALL_SECONDS == 10 * 60
    assert inspect.signature(monitor).parameters["stall_seconds"].default.default == STALL_SECONDS


def test_a_log_silent_past_its_next_step_and_the_timeout_is_a_stall_naming_its_last_step(tmp_path):
    report = _report(_log(tmp_path, range(1, 41)), age=3600)
    (stall,) = _stalls(report)
    assert (stall.start_step, stall.end_step, stall.action, report.verdict) == (40, None, "watch", "watch")
    assert stall.value == pytest.approx(3600.0)
    assert stall.baseline == pytest.approx(36.0 + 600.0)
    assert stall.baseline_points == 40
    assert stall.why.startswith("no new step since step 40, 60 min ago (the log's last write)")
    assert "the next logged step was due 36 s after it (every step × the median logged step time 36 s)" in (
        stall.why
    )
    assert report.summary["events_by_kind"] == {"stall": 1}


@pytest.mark.parametrize(("age", "stalled"), [(630, False), (636, False), (637, True)])
def test_the_limit_is_the_next_steps_due_time_plus_the_timeout(tmp_path, age, stalled):
    report = _report(_log(tmp_path, range(1, 41)), age=age)
    assert bool(_stalls(report)) is stalled
    assert report.verdict == ("watch" if stalled else "healthy")


@pytest.mark.parametrize(("age", "stalled"), [(1600, False), (1700, True)])
def test_a_log_every_ten_steps_is_due_one_interval_of_steps_later(tmp_path, age, stalled):
    report = _report(_log(tmp_path, range(10, 401, 10), ms=105000.0), age=age)
    assert report.summary["interval_steps"] == 10
    assert bool(_stalls(report)) is stalled
    if stalled:
        (stall,) = _stalls(report)
        assert stall.start_step == 400 and stall.baseline == pytest.approx(10 * 105.0 + 600.0)
        assert "due 17.5 min after it (every 10 steps × the median logged step time 105 s)" in stall.why


TITAN = (
    "[rank0]:[titan] 2026-01-01 00:{minute:02d}:{second:02d},000 - root - INFO - step: {step:2d}  loss:  3.0000  "
    "grad_norm:  0.3000  tps: 1,118  mfu: 48.61%"
)


def test_lines_stamped_after_the_last_step_count_in_its_age(tmp_path):
    """A hung job may go on writing (a watchdog's warnings): the mtime is fresh, the step is not. torchtitan's
    steps 1-40 one second apart end at 00:00:40; a warning stamped 00:15:40 follows, 15 min later; the file was last
    written 45 min ago, so step 40 is 60 min old, past 600 s + the 1 s due."""
    path = tmp_path / "run.log"
    steps = "".join(TITAN.format(minute=0, second=s, step=s) + "\n" for s in range(1, 41))
    warning = "[rank0]:[titan] 2026-01-01 00:15:40,000 - root - WARNING - dataloader worker 3 is slow\n"
    path.write_text(steps + warning)
    os.utime(path, (NOW - 2700, NOW - 2700))
    log = read_logs([path])
    report = analyse(log, Thresholds(), checkpoints_for(log, None, None))
    add_stall(report, log, [path], STALL_SECONDS, NOW)
    (stall,) = _stalls(report)
    assert stall.value == pytest.approx(3600.0)
    assert stall.why.startswith(
        "no new step since step 40, 60 min ago (the log's last write 45 min ago, 15 min after the step by its own "
        "timestamps)"
    )
    path.write_text(steps)  # no line after the step: the mtime alone
    os.utime(path, (NOW - 2700, NOW - 2700))
    report = analyse(log, Thresholds(), checkpoints_for(log, None, None))
    add_stall(report, log, [path], STALL_SECONDS, NOW)
    (stall,) = _stalls(report)
    assert stall.value == pytest.approx(2700.0) and "(the log's last write)" in stall.why


def test_the_flag_sets_the_timeout_and_zero_turns_the_check_off(tmp_path):
    path = _log(tmp_path, range(1, 41))
    (stall,) = _stalls(_report(path, age=100, stall_seconds=60))
    assert stall.baseline == pytest.approx(96.0) and "--stall-seconds 60 s more" in stall.why
    assert not _stalls(_report(path, age=10**7, stall_seconds=0))


def test_a_log_without_step_times_waits_the_timeout_alone(tmp_path):
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps({"step": s, "loss": 3.0}) + "\n" for s in range(1, 41)))
    assert not _stalls(_report(path, age=600))
    (stall,) = _stalls(_report(path, age=601))
    assert stall.baseline == pytest.approx(600.0) and "no step time is logged" in stall.why


def test_a_log_at_its_own_last_step_is_finished_not_stalled(tmp_path):
    """Megatron's ``iteration N/ T``: at step 40 of 40 no further step is due, however old the file."""
    path = _log(tmp_path, range(1, 41), total=40)
    assert not _stalls(_report(path, age=10**7))
    path = _log(tmp_path, range(1, 40), total=40)  # step 40 still to come
    assert _stalls(_report(path, age=10**7))


def test_the_plans_last_step_is_finished_too(tmp_path):
    log = read_logs([_log(tmp_path, range(1, 41))])
    assert (
        finished(log, remaining_steps=0) and not finished(log, remaining_steps=5) and not finished(log, None)
    )


def test_a_log_that_ends_in_a_crash_is_not_said_stalled_as_well(tmp_path):
    trace = 'Traceback (most recent call last):\n  File "train.py", line 1\nRuntimeError: CUDA error\n'
    report = _report(_log(tmp_path, range(1, 41), tail=trace), age=3600)
    assert not _stalls(report)
    assert [w for w in report.summary["warnings"] if w.startswith("the log ends in a crash")]


def test_the_newest_write_among_the_logs_and_a_directorys_files_counts(tmp_path):
    events = tmp_path / "tb"
    events.mkdir()
    old, new = events / "events.out.tfevents.1", events / "events.out.tfevents.2"
    old.write_bytes(b"x")
    new.write_bytes(b"x")
    os.utime(old, (NOW - 5000, NOW - 5000))
    os.utime(new, (NOW - 700, NOW - 700))
    os.utime(events, (NOW - 9000, NOW - 9000))
    assert last_written([events]) == pytest.approx(NOW - 700)
    first = tmp_path / "a.log"
    first.write_text("x")
    os.utime(first, (NOW - 100, NOW - 100))
    assert last_written([events, first]) == pytest.approx(NOW - 100)


def test_the_median_of_the_last_thousand_steps_sets_the_due_time(tmp_path):
    """Steps 1-2,000 logged every step: 10 s each up to 1,000, 20 s after: the last 1,000 steps' median is 20 s."""
    path = tmp_path / "run.jsonl"
    rows = [{"step": s, "loss": 3.0, "step_seconds": 10.0 if s <= 1000 else 20.0} for s in range(1, 2001)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    due = next_step_due(read_logs([path]), None)
    assert (due.seconds, due.step_seconds, due.points) == (20.0, 20.0, 1000)


def test_one_shot_cli_says_the_stall_and_is_not_healthy(tmp_path):
    path = _log(tmp_path, range(1, 41))
    written = os.stat(path).st_mtime - 3600
    os.utime(path, (written, written))
    result = subprocess.run(
        [sys.executable, "-m", "runplan", "monitor", str(path), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    (stall,) = [e for e in data["events"] if e["kind"] == "stall"]
    assert data["verdict"] == "watch" and stall["start_step"] == 40
    assert stall["value"] == pytest.approx(3600.0, abs=60.0) and stall["baseline"] == pytest.approx(636.0)


def test_follow_prints_the_stall_once(tmp_path):
    """--follow printed nothing for a hung job; now one line, however many polls see it."""
    path = _log(tmp_path, range(1, 41))
    written = os.stat(path).st_mtime - 3600
    os.utime(path, (written, written))
    result = subprocess.run(
        [sys.executable, "-m", "runplan", "monitor", str(path), "--follow"]
        + ["--poll-seconds", "0.1", "--max-seconds", "1.5"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stdout.splitlines() if "stall" in line]
    assert len(lines) == 1 and lines[0].startswith("step 40: stall → watch: no new step since step 40, 60")


def test_a_negative_flag_is_one_line_exit_2(tmp_path):
    path = _log(tmp_path, range(1, 41))
    result = subprocess.run(
        [sys.executable, "-m", "runplan", "monitor", str(path), "--stall-seconds", "-1"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert "--stall-seconds" in result.stderr and "Traceback" not in result.stderr
