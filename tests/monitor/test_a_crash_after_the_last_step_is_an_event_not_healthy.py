"""A log that ends in a crash report after its last step is a job that died: a ``crash`` event (action
``rollback`` to the newest checkpoint at or before the last step, so the verdict is ``act``), not the verdict
``healthy`` beside a note. An error the logged steps go on after (the job survived it) stays a note only, and a
crashed log is not also said to have stalled."""

from __future__ import annotations

import json
import os

import pytest

from runplan.cli.app import main
from runplan.monitor.analyse import analyse, checkpoints_for
from runplan.monitor.readers import read_logs
from runplan.monitor.stall import add_stall
from runplan.monitor.thresholds import Thresholds

MEGATRON = (
    " iteration {step:>6}/ 1000 | consumed samples: {s} | elapsed time per iteration (ms): 1000.0 | "
    "learning rate: 3.0E-04 | lm loss: 3.000000E+00 | grad norm: 0.300 |"
)
TRACE = [
    "Traceback (most recent call last):",
    '  File "pretrain_gpt.py", line 200, in <module>',
    "RuntimeError: NCCL error",
]


def _log(tmp_path, lines):
    path = tmp_path / "run.log"
    path.write_text("\n".join(lines) + "\n")
    return path


def _steps(first, last):
    return [MEGATRON.format(step=s, s=8 * s) for s in range(first, last + 1)]


def _report(path, interval=None):
    log = read_logs([path])
    return analyse(log, Thresholds(), checkpoints_for(log, interval, None))


def test_a_traceback_after_the_last_step_is_a_crash_event_and_the_verdict_is_act(tmp_path):
    # steps 1-40 are lines 1-40, the traceback starts at line 41; checkpoints every 25 steps: the newest at or
    # before step 40 is step 25
    report = _report(_log(tmp_path, _steps(1, 40) + TRACE), interval=25)
    (crash,) = [e for e in report.events if e.kind == "crash"]
    assert (crash.start_step, crash.peak_step, crash.end_step) == (40, 40, None)
    assert (crash.action, crash.rollback_to_step) == ("rollback", 25)
    assert "line 41, RuntimeError: NCCL error" in crash.why
    assert report.verdict == "act"
    assert report.summary["events_by_kind"]["crash"] == 1


def test_the_cli_json_and_text_verdicts_are_not_healthy(tmp_path, capsys):
    path = _log(tmp_path, _steps(1, 40) + TRACE)
    with pytest.raises(SystemExit) as done:
        main(["monitor", str(path), "--json"])
    assert done.value.code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["verdict"] == "act"
    assert [e["kind"] for e in out["events"]] == ["crash"]
    with pytest.raises(SystemExit):
        main(["monitor", str(path)])
    text = capsys.readouterr().out
    assert text.startswith("verdict: act: a person is needed now (1 rollback)")


def test_an_error_the_steps_go_on_after_is_a_note_not_an_event(tmp_path):
    report = _report(_log(tmp_path, _steps(1, 20) + TRACE + _steps(21, 40)))
    assert not report.events and report.verdict == "healthy"
    assert [
        w for w in report.summary["warnings"] if w.startswith("line 21: a Python traceback (RuntimeError")
    ]


def test_a_crashed_log_long_unwritten_is_a_crash_and_no_stall(tmp_path):
    path = _log(tmp_path, _steps(1, 40) + TRACE)
    os.utime(path, (1_000_000.0, 1_000_000.0))
    log = read_logs([path])
    report = analyse(log, Thresholds(), checkpoints_for(log, None, None))
    add_stall(report, log, [path], 600.0, 1_000_000.0 + 3600.0)  # an hour since the last write: over 601 s
    assert [e.kind for e in report.events] == ["crash"]


def test_of_several_logs_only_a_crash_at_the_runs_last_step_is_an_event(tmp_path):
    """first.log: steps 1-20 then a traceback (the job died at 20); second.log resumes: steps 11-40. The run went
    on, so no crash event; with a traceback after step 40 of second.log (its line 31: steps 11-40 are lines 1-30),
    one crash event at step 40."""
    first = tmp_path / "first.log"
    first.write_text("\n".join(_steps(1, 20) + TRACE) + "\n")
    second = tmp_path / "second.log"
    second.write_text("\n".join(_steps(11, 40)) + "\n")
    log = read_logs([first, second])
    report = analyse(log, Thresholds(), checkpoints_for(log, None, None))
    assert "crash" not in [e.kind for e in report.events]
    second.write_text("\n".join(_steps(11, 40) + TRACE) + "\n")
    log = read_logs([first, second])
    report = analyse(log, Thresholds(), checkpoints_for(log, None, None))
    (crash,) = [e for e in report.events if e.kind == "crash"]
    assert crash.start_step == 40 and f"({second} line 31, RuntimeError: NCCL error)" in crash.why
    os.utime(second, (1_000_000.0, 1_000_000.0))
    os.utime(first, (1_000_000.0, 1_000_000.0))
    add_stall(report, log, [first, second], 600.0, 1_000_000.0 + 3600.0)
    assert "stall" not in [e.kind for e in report.events]
