"""A text log whose last logged step is followed by a Python traceback (or C++'s "terminate called after throwing",
as PyTorch's NCCL watchdog ends a hung job) ended in a crash: the monitor says so, naming the line, the exception
and the last step logged, instead of reading only the steps before it and calling the run healthy. A traceback
that the log's steps go on after is said as such (the run did not stop there)."""

from __future__ import annotations

from runplan.monitor.analyse import analyse, checkpoints_for
from runplan.monitor.readers import read_logs
from runplan.monitor.thresholds import Thresholds

MEGATRON = (
    "[default0]: iteration {step:>6}/ 1000 | consumed samples: {s} | elapsed time per iteration (ms): 1000.0 | "
    "learning rate: 3.0E-04 | lm loss: 3.000000E+00 | grad norm: 0.300 |"
)
TRACE = [
    "[default3]:Traceback (most recent call last):",
    '[default3]:  File "pretrain_gpt.py", line 200, in <module>',
    "[default3]:    pretrain(train_valid_test_datasets_provider)",
    "[default3]:torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1269, unhandled system error",
]


def _warnings(tmp_path, lines):
    path = tmp_path / "run.log"
    path.write_text("\n".join(lines) + "\n")
    log = read_logs([path])
    return analyse(log, Thresholds(), checkpoints_for(log, None, None)).summary["warnings"]


def _steps(first, last):
    return [MEGATRON.format(step=s, s=8 * s) for s in range(first, last + 1)]


def test_a_traceback_after_the_last_step_is_a_crash_named_with_its_line_and_exception(tmp_path):
    # steps 1-40 are lines 1-40; the traceback starts at line 41
    warnings = _warnings(tmp_path, _steps(1, 40) + TRACE)
    (crash,) = [w for w in warnings if "crash" in w]
    assert crash.startswith("the log ends in a crash after its last logged step 40: line 41, ")
    assert "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1269" in crash
    assert "the job stopped there" in crash


def test_a_cpp_terminate_after_the_last_step_is_a_crash(tmp_path):
    lines = _steps(1, 20) + [
        "[E ProcessGroupNCCL.cpp:475] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, "
        "OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600123 milliseconds before timing out.",
        "terminate called after throwing an instance of 'c10::DistBackendError'",
    ]
    (crash,) = [w for w in _warnings(tmp_path, lines) if "crash" in w]
    assert crash.startswith("the log ends in a crash after its last logged step 20: line 22, ")
    assert "terminate called after throwing an instance of 'c10::DistBackendError'" in crash


def test_a_traceback_the_steps_go_on_after_is_not_a_crash(tmp_path):
    warnings = _warnings(tmp_path, _steps(1, 20) + TRACE + _steps(21, 40))
    assert not [w for w in warnings if "crash" in w]
    (trace,) = [w for w in warnings if "traceback" in w]
    assert trace.startswith("line 21: a Python traceback (torch.distributed.DistBackendError: NCCL error")
    assert "the logged steps go on after it" in trace


def test_a_log_without_a_traceback_says_nothing_of_one(tmp_path):
    assert not [w for w in _warnings(tmp_path, _steps(1, 40)) if "crash" in w or "traceback" in w]


def test_follow_prints_the_crash_once(tmp_path):
    """--follow prints events only; a job that died is said once too, however many polls see it."""
    import subprocess
    import sys

    path = tmp_path / "run.log"
    path.write_text("\n".join(_steps(1, 40) + TRACE) + "\n")
    result = subprocess.run(
        [sys.executable, "-m", "runplan", "monitor", str(path), "--follow"]
        + ["--poll-seconds", "0.1", "--max-seconds", "1.5"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    crash = [line for line in result.stdout.splitlines() if "crash" in line]
    assert len(crash) == 1 and crash[0].startswith(
        "note: the log ends in a crash after its last logged step 40"
    )


def test_a_traceback_between_coloured_torchtitan_lines_is_not_a_crash(tmp_path):
    """torchtitan colours its fields (ANSI escapes between ``step: N`` and ``loss:``): its lines are still
    recognised as the log's steps after the traceback."""
    titan = (
        "[rank0]:[titan] 2026-01-01 00:00:00,000 - root - INFO - \x1b[31mstep: {step:2d}  \x1b[32mloss:  3.0000  "
        "\x1b[38;2;180;60;0mgrad_norm:  0.3000  \x1b[34mtps: 1,118  \x1b[35mmfu: 48.61%\x1b[39m"
    )
    lines = (
        [titan.format(step=s) for s in range(1, 21)] + TRACE + [titan.format(step=s) for s in range(21, 41)]
    )
    warnings = _warnings(tmp_path, lines)
    assert not [w for w in warnings if "crash" in w]
    assert [w for w in warnings if w.startswith("line 21: a Python traceback")]
