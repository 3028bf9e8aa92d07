"""A text log that ends in a crash. Engines print their metric lines and everything else to the same stream, so a
job that died leaves its error after its last metric line: CPython's traceback header ``Traceback (most recent
call last):`` (``traceback.print_exception``), followed by the exception's ``Name: message`` line, or the C++
runtime's ``terminate called after throwing an instance of '...'`` (libstdc++'s verbose terminate handler), which
is how PyTorch's NCCL watchdog ends a job whose collective timed out (``ProcessGroupNCCL.cpp``: "Watchdog caught
collective operation timeout", then the exception rethrown on its thread). A metric reader skips those lines; read
alone, the steps before them look like a run still going. One such error after the last logged step is said as a
crash (the job stopped there); a traceback the logged steps go on after is said too (a caught error, or the job
restarted in the same file)."""

from __future__ import annotations

import re
from collections.abc import Callable

#: The lines that start a crash report, in the order they are looked for
CRASH_MARKERS = ("Traceback (most recent call last):", "terminate called after throwing an instance of")
#: A traceback's last line, the exception: ``RuntimeError: ...``, ``torch.distributed.DistBackendError: ...``,
#: after a launcher prefix such as ``[default3]:`` or ``[rank3]:``
_EXCEPTION = re.compile(
    r"^(?:\[[^\]]*\]:\s*)?((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Interrupt)(?::.*)?)$"
)
#: Lines after a traceback's header looked at for its exception line (a deep stack has ~2 lines per frame)
_TRACE_LINES = 400
#: How the note on a crash after the last logged step starts (``runplan monitor --follow`` prints it once)
CRASH_NOTE = "the log ends in a crash"
_SHOWN_CHARS = 120


def crash_notes(body: str, lines: list[str], is_record: Callable[[str], bool], last_step: int) -> list[str]:
    """The note on a crash report in ``lines`` (a text log's lines; ``is_record`` tells its metric lines;
    ``last_step`` is the step of its last one), or none. Cheap where there is none: one substring search of the
    whole text per marker."""
    if not any(marker in body for marker in CRASH_MARKERS):
        return []
    last_record = next((k for k in range(len(lines) - 1, -1, -1) if is_record(lines[k])), -1)
    after = _first_marker(lines, last_record + 1)
    if after is not None:
        return [
            f"{CRASH_NOTE} after its last logged step {last_step:,}: line {after + 1:,}, "
            f"{_what(lines, after)}: the job stopped there (the events here are up to step {last_step:,}); fix "
            "the cause and resume from the newest checkpoint"
        ]
    first = _first_marker(lines, 0)
    if first is None:
        return []
    return [
        f"line {first + 1:,}: {_kind(lines[first])} ({_what(lines, first)}); the logged steps go on after it "
        "(an error the job survived, or a restart in the same file)"
    ]


def _first_marker(lines: list[str], start: int) -> int | None:
    """The index of the first line from ``start`` that starts a crash report."""
    return next(
        (k for k in range(start, len(lines)) if any(marker in lines[k] for marker in CRASH_MARKERS)), None
    )


def _kind(line: str) -> str:
    return "a Python traceback" if CRASH_MARKERS[0] in line else "a C++ terminate"


def _what(lines: list[str], at: int) -> str:
    """The exception a crash report at line index ``at`` names, else its own first line, shortened."""
    text = lines[at]
    if CRASH_MARKERS[0] in text:
        found = (_EXCEPTION.match(line.strip()) for line in lines[at + 1 : at + 1 + _TRACE_LINES])
        text = next((match.group(1) for match in found if match), text)
    text = " ".join(text.split())
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 1] + "…"
