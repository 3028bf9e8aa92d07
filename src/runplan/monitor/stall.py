"""A job that has stopped logging: a hung job prints nothing, and its log, read alone, looks like a healthy run.

The newest logged step's age is the time since the log was last written (the file's mtime; a directory of event
files: its newest file), plus, in a text log whose lines carry the engine's own timestamps, the time those put
between the last step's line and the newest stamped line after it (a hung job may go on writing warnings, or a
watchdog's messages, which move the mtime but are no step). Only that difference of two of the log's timestamps
is used, never one set against this machine's clock: they are local time without a zone (Python ``logging``'s
``asctime``, ``2026-01-01 00:00:00,000``; Megatron-LM's ``[2024-05-01 12:00:00]`` before ``iteration``), so a
log read on another machine could be off by hours. Lines written without a timestamp after the step still move
the mtime: the age is then a lower bound.

A stall is said when that age exceeds the time the next logged step was due plus ``--stall-seconds``:

- due = the logging interval × the median step time of the last 1,000 steps (the time between two logged
  steps; with no step time logged, the plan's comparison's, else 0): a healthy job writes its next line by then
  (the "k × step time" of the rule is this one logging gap, k = 1, derived, not tuned).
- ``--stall-seconds`` defaults to 600 s, the collective timeout the engines run with: PyTorch's ProcessGroupNCCL
  default of 10 minutes (``torch.distributed.init_process_group``'s ``timeout``, pytorch/pytorch PR 110947; 30
  minutes for gloo) and Megatron-LM's ``--distributed-timeout-minutes`` default 10
  (``megatron/training/arguments.py``). Past it a collective that hung has been ended by the NCCL watchdog (with
  its default error handling) and the log ends in its crash report (:mod:`runplan.monitor.readers.crash`); no new
  step and no report that long after the next step was due is a job hung outside a collective (a data loader, a
  file system) or killed without a word (the out-of-memory killer, a lost node). It also spans a checkpoint save
  or an evaluation of up to 10 minutes, which log nothing while they run.

Said as a ``stall`` event (action ``watch``, so the verdict is not ``healthy``), in the one-shot mode as well as
under ``--follow``: a one-shot ``runplan monitor`` from cron or a dashboard is how a live job is usually checked,
and there the stall is the one thing wrong. A log that is done is not stalled: its last step at the log's own
total (Megatron's ``iteration N/ T``, a trainer state's ``max_steps``) or at the plan's last step, or a log that
ends in a crash report (said already). A finished run's log read later without either says when it was last
written, which is true of it; ``--stall-seconds 0`` leaves the check out.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from runplan.monitor.events import Event, verdict
from runplan.report.format import fmt_duration

if TYPE_CHECKING:
    from runplan.monitor.analyse import Report
    from runplan.monitor.series import MetricLog

#: The default of ``--stall-seconds``: PyTorch's ProcessGroupNCCL timeout and Megatron-LM's
#: ``--distributed-timeout-minutes``, 10 minutes each (module docstring)
STALL_SECONDS = 600.0
#: The step times the expected gap is the median of: the last 1,000 steps, as ``--plan``'s measured step time
RECENT_STEPS = 1000
#: A wall-clock time as the engines write it at the start of a line (module docstring)
_STAMP = re.compile(r"(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})")
#: The end of a text log read for its last step's line and the lines after it
TAIL_BYTES = 1_000_000


@dataclass(frozen=True)
class Due:
    """When the next logged step was due after the last: ``seconds`` (interval × ``step_seconds``), how it was
    found (``source``) and on how many logged step times (``points``)."""

    seconds: float
    step_seconds: float | None
    points: int
    source: str


def last_written(paths: list[Path]) -> float | None:
    """The newest modification time (seconds since the epoch) of the logs, a directory's files included."""
    times: list[float] = []
    for path in paths:
        try:
            times.append(path.stat().st_mtime)
            if path.is_dir():
                times += [entry.stat().st_mtime for entry in os.scandir(path) if entry.is_file()]
        except OSError:
            continue
    return max(times) if times else None


def newest_file(paths: list[Path]) -> Path | None:
    """The file among ``paths`` written last (a directory's files are TensorBoard's: no text to read)."""
    files = [path for path in paths if path.is_file()]
    return max(files, key=lambda path: path.stat().st_mtime) if files else None


def _stamp(line: str) -> datetime | None:
    """The line's timestamp, naive (no zone: only the difference of two is used, which no zone changes), or None."""
    found = _STAMP.search(line)
    if found is None:
        return None
    year, month, day, hour, minute, second = (int(part) for part in found.groups())
    try:
        return datetime(year, month, day, hour, minute, second)
    except ValueError:  # not a date (month 13)
        return None


def written_after_step(path: Path, kind: str) -> float:
    """Seconds the log's own timestamps put between its last step's line (a line of the ``kind`` text format)
    and the newest stamped line after it; 0 where either carries none or the format is not text."""
    from runplan.monitor.readers import text

    record = text.SIGNATURES.get(kind) or text.FALLBACK_SIGNATURES.get(kind)
    if record is None:
        return 0.0
    from runplan.errors import SpecError
    from runplan.fileio import read_tail

    try:
        lines = read_tail(path, TAIL_BYTES).decode("utf-8", "replace").splitlines()
    except SpecError:  # unreadable now (rotated away): the mtime alone
        return 0.0
    last = next(
        (k for k in range(len(lines) - 1, -1, -1) if record.search(text.strip_prefix(lines[k]))), None
    )
    step_time = None if last is None else _stamp(lines[last])
    if last is None or step_time is None:
        return 0.0
    later = [stamp for line in lines[last + 1 :] if (stamp := _stamp(line)) is not None]
    return max(0.0, (max(later) - step_time).total_seconds()) if later else 0.0


def next_step_due(log: MetricLog, plan_step_seconds: float | None) -> Due:
    """The logging interval × the median logged step time of the last 1,000 steps; else × the plan comparison's
    measured step time (from tokens/s or samples/s); else nothing is known to be due (0)."""
    interval = max(1, int(log.interval_steps))
    if log.has("step_seconds"):
        steps, seconds = log.points("step_seconds")
        recent = seconds[steps > int(log.steps[-1]) - RECENT_STEPS]
        recent = recent if recent.size else seconds
        median = float(np.median(recent))
        return Due(interval * median, median, int(recent.size), "the median logged step time")
    if plan_step_seconds:
        return Due(interval * plan_step_seconds, plan_step_seconds, 0, "the step time --plan measured")
    return Due(0.0, None, 0, "no step time logged")


def finished(log: MetricLog, remaining_steps: int | None) -> bool:
    """The log reached its own last step (no further step is due by the log's total) or the plan's."""
    last = int(log.steps[-1])
    if log.total_steps and last + max(1, int(log.interval_steps)) > log.total_steps:
        return True
    return remaining_steps == 0


def stall_event(log: MetricLog, age: float, allowed: float, due: Due, lag: float = 0.0) -> Event | None:
    """The ``stall`` event of a log last written ``age`` − ``lag`` seconds ago, ``lag`` seconds after its last
    step by its own timestamps, or None when ``age`` is within ``due`` + ``allowed`` (``--stall-seconds``)."""
    limit = due.seconds + allowed
    if age <= limit:
        return None
    last = int(log.steps[-1])
    gap = (
        f"the next logged step was due {fmt_duration(due.seconds)} after it ("
        + ("every step" if log.interval_steps <= 1 else f"every {log.interval_steps:,} steps")
        + f" × {due.source} {due.step_seconds:.4g} s)"
        if due.step_seconds is not None
        else "no step time is logged"
    )
    return Event(
        kind="stall",
        start_step=last,
        peak_step=last,
        end_step=None,
        metric="step",
        value=age,
        baseline=limit,
        baseline_points=due.points,
        recovered=None,
        action="watch",
        why=(
            f"no new step since step {last:,}, {fmt_duration(age)} ago ("
            + (
                f"the log's last write {fmt_duration(age - lag)} ago, {fmt_duration(lag)} after the step by its "
                "own timestamps"
                if lag > 0
                else "the log's last write"
            )
            + f"): {gap}, and "
            f"--stall-seconds {allowed:g} s more (the engines' collective timeout) have passed; the job is hung "
            "or stopped without a crash report: check that it is running (a finished run's log: --stall-seconds "
            "0 leaves this out)"
        ),
    )


def add_stall(report: Report, log: MetricLog, paths: list[Path], allowed: float, now: float) -> None:
    """Add the ``stall`` event to ``report`` (and its verdict and counts) where the logs at ``paths`` were last
    written longer ago than the next step was due plus ``allowed`` seconds; ``allowed`` 0 checks nothing."""
    # a log that ends in a crash report has its crash event (detect.crash_events): said already
    if allowed <= 0 or any(event.kind == "crash" for event in report.events):
        return
    vs = report.vs_plan or {}
    if finished(log, vs.get("remaining_steps")):
        return
    written = last_written(paths)
    if written is None:
        return
    newest = newest_file(paths)
    lag = 0.0 if newest is None or "+" in log.format else written_after_step(newest, log.format)
    due = next_step_due(log, vs.get("step_seconds"))
    event = stall_event(log, now - written + lag, allowed, due, lag)
    if event is None:
        return
    report.events.append(event)
    report.events.sort(key=lambda e: (e.start_step, e.kind))
    kinds = report.summary["events_by_kind"]
    kinds["stall"] = kinds.get("stall", 0) + 1
    report.verdict = verdict(report.events)
