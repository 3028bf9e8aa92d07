"""`runplan monitor LOG...`: read a run's metric log, find spikes, divergence, silent corruption and slow steps,
and say what to do. Parses flags, calls ``runplan.monitor``, renders. JSON keys: docs/monitor.md.
Nothing heavy is imported at module level.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from runplan.cli.common import handle_errors

if TYPE_CHECKING:
    from runplan.monitor.analyse import Report
    from runplan.monitor.series import MetricLog

# the readers' FORMATS, written out so that --help does not import them (tests/monitor/test_bad_logs.py)
FORMATS_HELP = "auto|megatron|torchtitan|nemo|hf|llmc|tensorboard|scalars-json|jsonl|csv|deepspeed"


def register(app: typer.Typer) -> None:
    app.command("monitor")(monitor)


@handle_errors
def monitor(
    logs: list[Path] = typer.Argument(..., metavar="LOG...", help="Metric log file(s) of one run, in order."),
    plan: Path | None = typer.Option(
        None, "--plan", help="Plan file: thresholds, checkpoints and predictions."
    ),
    fmt: str = typer.Option("auto", "--format", help=f"Log format: {FORMATS_HELP}."),
    checkpoint_interval: int | None = typer.Option(
        None, "--checkpoint-interval", min=1, help="Steps between checkpoints (for rollback targets)."
    ),
    json_out: bool = typer.Option(False, "--json", help="JSON on stdout (keys in docs/monitor.md)."),
    report: Path | None = typer.Option(None, "--report", help="Write a Markdown incident report here."),
    plot: Path | None = typer.Option(
        None, "--plot", help="Write a PNG of the metrics with the events marked."
    ),
    follow: bool = typer.Option(False, "--follow", help="Tail a growing log; print events as they appear."),
    poll_seconds: float = typer.Option(
        2.0, "--poll-seconds", min=0.01, max=86400, help="--follow: re-read every N s (at most a day)."
    ),
    max_seconds: float | None = typer.Option(
        None, "--max-seconds", min=0, help="--follow: stop after N s (default: until Ctrl-C, exit 130)."
    ),
    stall_seconds: float = typer.Option(
        600.0,
        "--stall-seconds",
        min=0,
        help="Say a stall when no step is logged for N s past the next one's due time (600: the engines' "
        "collective timeout; 0: never).",
    ),
) -> None:
    """Read a run's metric log; find loss spikes, divergence, NaN, loss-scale collapse, canary drift,
    replica disagreement, stragglers, restarts and a log no longer written; say what to do (verdict healthy,
    watch or act)."""
    from runplan.cli.common import check_output_path

    for target, flag in ((report, "--report"), (plot, "--plot")):
        if target is not None:
            check_output_path(target, flag)
    if max_seconds is not None and not follow:  # it would be ignored: say so rather than run once
        from runplan.errors import SpecError

        raise SpecError(
            "--max-seconds limits --follow, which was not given", where="--max-seconds", hint="add --follow"
        )
    setup = _setup(plan, checkpoint_interval)
    if follow:
        _follow(logs, fmt, setup, poll_seconds, max_seconds, stall_seconds)
        return
    log, result = _run(logs, fmt, setup, stall_seconds)
    _emit(result, log, json_out, report, plot)


def _setup(plan_path: Path | None, interval: int | None) -> tuple[Any, Any, int | None]:
    from runplan.monitor.thresholds import Thresholds, from_plan

    if plan_path is None:
        return Thresholds(), None, interval
    from runplan.cli.common import load_plan_file, plan_from_file, stored_plan, warn
    from runplan.errors import Infeasible

    stored = stored_plan(plan_path, "--plan")
    if stored is not None:
        return from_plan(stored.monitoring), stored, interval
    try:
        _, _, plan = plan_from_file(plan_path)
    except Infeasible as error:  # the run is under way whatever the planner says now: read the log anyway
        from runplan.cli.flags import paths_for_user

        _, spec = load_plan_file(plan_path)
        reason = paths_for_user(error.reason.split("; nearest misses")[0], "monitor")  # plan keys, not flags
        warn(
            f"--plan: {plan_path} is infeasible as runplan plans it now ({reason}); the log is read with its "
            "monitoring: thresholds, without its predictions and checkpoints"
        )
        return from_plan(spec.monitoring), None, interval
    return from_plan(plan.monitoring), plan, interval


def _run(
    logs: list[Path], fmt: str, setup: tuple[Any, Any, int | None], stall_seconds: float
) -> tuple[MetricLog, Report]:
    """Read and analyse the logs; a log not written for longer than its next step was due plus
    ``stall_seconds`` gets a ``stall`` event (runplan.monitor.stall: checked in the one-shot mode too)."""
    from runplan.monitor.analyse import analyse, checkpoints_for
    from runplan.monitor.readers import read_logs
    from runplan.monitor.stall import add_stall

    thresholds, plan, interval = setup
    log = read_logs(logs, fmt)
    report = analyse(log, thresholds, checkpoints_for(log, interval, plan), plan)
    add_stall(report, log, logs, stall_seconds, time.time())
    return log, report


def _emit(result: Report, log: MetricLog, json_out: bool, report: Path | None, plot: Path | None) -> None:
    from runplan.cli.common import print_json, write_output
    from runplan.monitor import render

    if report is not None:
        write_output(render.markdown(result), report, "--report")
    if plot is not None:
        render.plot(result, log, plot)
    if json_out:
        print_json(result.to_json())
    else:
        render.terminal(result)


def _follow(
    logs: list[Path],
    fmt: str,
    setup: tuple[Any, Any, int | None],
    poll: float,
    limit: float | None,
    stall_seconds: float,
) -> None:
    """Re-read the log every ``poll`` seconds and print each new or changed event once, as a line (a stall once
    per last step: it is keyed by the step it stalled after)."""
    from runplan.monitor.readers.crash import CRASH_NOTE
    from runplan.monitor.render import event_line
    from runplan.monitor.series import NoRecords

    seen: set[tuple[str, int, str]] = set()
    started = time.monotonic()
    waiting = False
    while True:
        try:
            _, result = _run(logs, fmt, setup, stall_seconds)
        except NoRecords:  # not written yet: wait for it (any other bad input ends the command)
            if not waiting:
                print(f"waiting for {logs[0]} to have records...", file=sys.stderr, flush=True)
                waiting = True
        else:
            for event in result.events:
                key = (event.kind, event.start_step, event.action)
                if event.kind == "crash":
                    continue  # said once by its note below, which names the line and the exception
                if key not in seen:
                    seen.add(key)
                    print(event_line(event), flush=True)
            for note in result.summary["warnings"]:  # the job died: said once, as the events are
                if note.startswith(CRASH_NOTE) and ("crash", 0, note) not in seen:
                    seen.add(("crash", 0, note))
                    print(f"note: {note}", flush=True)
        elapsed = time.monotonic() - started
        if limit is not None and elapsed >= limit:
            return
        time.sleep(
            poll if limit is None else min(poll, limit - elapsed)
        )  # --max-seconds ends a long poll too
