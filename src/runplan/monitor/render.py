"""Views of a monitor report: terminal timeline (verdict first), Markdown incident report, PNG plot, one line
per event (for ``--follow``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from runplan.monitor.events import Event
from runplan.monitor.words import counted, steps_text

if TYPE_CHECKING:
    from runplan.monitor.analyse import Report
    from runplan.monitor.series import MetricLog

_VERDICT_TEXT = {
    "healthy": "healthy: nothing needs doing",
    "watch": "watch: something to keep an eye on, nothing to do yet",
    "act": "act: a person is needed now",
}


#: Below this many columns for the "why" column, events are printed as blocks of name-value lines: a sentence
#: of 200-400 characters folded into a 12-column cell takes 30 lines (the BLOOM throughput log at 80 columns).
WHY_MIN_CHARS = 40
EVENT_HEADERS = ("start", "peak", "end", "event", "action", "rollback to", "why")


def _step(value: int | None) -> str:
    return "open" if value is None else f"{value:,}"


def _every(interval: int) -> str:
    return "every step" if interval == 1 else f"every {interval:,} steps"


def event_line(event: Event) -> str:
    """One line: where, what, the action and why (``--follow`` prints these as they appear)."""
    where = f"step {event.start_step:,}" + (
        f"-{event.end_step:,}" if event.end_step not in (None, event.start_step) else ""
    )
    action = event.action + (f" {event.wait_until_step:,}" if event.wait_until_step else "")
    return f"{where}: {event.kind} → {action}: {event.why}"


def headline(report: Report) -> str:
    acted = [e for e in report.events if e.action != "none"]
    counts: dict[str, int] = {}
    for event in acted:
        counts[event.action] = counts.get(event.action, 0) + 1
    listed = ", ".join(f"{n} {a.replace('_', ' ')}" for a, n in sorted(counts.items()))
    return f"verdict: {_VERDICT_TEXT[report.verdict]}" + (f" ({listed})" if listed else "")


def terminal(report: Report) -> None:
    from runplan.cli.common import console
    from runplan.report.tables import fitted_table

    out = console()
    style = {"healthy": "green", "watch": "yellow", "act": "bold red"}[report.verdict]
    out.print(f"[{style}]{headline(report)}[/{style}]")
    first, last = report.steps
    out.print(
        f"{report.source} ({report.format}): {steps_text(first, last)}, "
        f"{report.summary['logged_steps']:,} logged, {_every(report.summary['interval_steps'])}; "
        f"metrics: {', '.join(report.metrics)}; thresholds: {report.summary['thresholds']}"
    )
    shown = [e for e in report.events if e.action != "none" or e.kind == "restart"]
    quiet = [e for e in report.events if e not in shown]
    if shown:
        rows = [event_cells(e) for e in shown]
        if why_width(EVENT_HEADERS, rows, out.width) >= WHY_MIN_CHARS:
            # the shared table rule: names and numbers whole, prose folds, rows stacked when even that cannot fit
            out.print(fitted_table(out, EVENT_HEADERS, rows, left=("event", "action", "why")))
        else:
            from rich.text import Text

            for row in rows:
                head, *rest = event_block(EVENT_HEADERS, row, out.width)
                out.print(Text(head, style="bold"))
                for line in rest:
                    out.print(Text(line))
    if quiet:
        kinds = sorted({e.kind.replace("_", " ") for e in quiet})
        out.print(
            f"{counted(len(quiet), 'event')} needing nothing ({', '.join(kinds)}); --json or --report lists them"
        )
    if report.vs_plan:
        out.print(vs_plan_text(report.vs_plan))
        for warning in report.vs_plan.get("warnings", []):
            out.print(f"warning: {warning}")
    from runplan.cli.common import echo_wrapped

    for warning in report.summary["warnings"]:  # folded under its "note:", so it reads as one note
        echo_wrapped(f"note: {warning}", err=True)


def event_cells(event: Event) -> list[str]:
    """An event as the cells of a row under :data:`EVENT_HEADERS`."""
    return [
        f"{event.start_step:,}",
        f"{event.peak_step:,}",
        _step(event.end_step),
        event.kind,
        event.action + (f" {event.wait_until_step:,}" if event.wait_until_step else ""),
        "" if event.rollback_to_step is None else f"{event.rollback_to_step:,}",
        event.why,
    ]


def why_width(headers: Sequence[str], rows: Sequence[Sequence[str]], width: int) -> int:
    """Columns left for the last (``why``) column of a table of ``rows`` at ``width``: each other column as
    wide as its widest cell or header, one space of padding each side, a separator between columns and one at
    each edge (the layout of :func:`runplan.report.tables.fitted_table`)."""
    others = [max(len(header), *(len(row[i]) for row in rows)) + 2 for i, header in enumerate(headers[:-1])]
    return width - sum(others) - 2 - (len(headers) + 1)


def event_block(headers: Sequence[str], row: Sequence[str], width: int) -> list[str]:
    """An event row as name-value lines for a narrow terminal: ``start N``, then the other short cells packed
    into lines, then the last cell (the why) folded with its continuation lines under its first word."""
    from runplan.report.format import wrap_lines
    from runplan.report.tables import pack

    pairs = [f"{h} {c}" for h, c in zip(headers[1:-1], row[1:-1], strict=True) if c]
    lines = [f"{headers[0]} {row[0]}"] + [f"  {line}" for line in pack(pairs, width - 2, separator="   ")]
    hang = " " * (len(headers[-1]) + 3)
    return lines + wrap_lines(f"  {headers[-1]} {row[-1]}", width, indent=hang).splitlines()


def vs_plan_text(vs: dict[str, Any]) -> str:
    """The comparison with the plan: one line of speed, then a line each for peak memory and for the engine's own
    MFU (or Megatron's TFLOP/s per GPU) against the plan's, where the log has them (their notes)."""
    extra = "".join(
        f"\n{vs['notes'][key]}"
        for key in ("peak_memory", "logged_mfu", "logged_tflops_per_gpu")
        if key in vs.get("notes", {})
    )
    if vs["step_seconds"] is None:
        return "vs plan: " + vs["notes"].get("step_seconds", "nothing to compare") + extra
    eta_days = vs["eta_seconds"] / 86400
    from runplan.report.format import fmt_percent  # a goodput short of 1 never reads 100.0%

    goodput = "n/a" if vs["goodput"] is None else fmt_percent(vs["goodput"])
    own = "" if vs.get("logged_mfu") is None else f"; the log's own {vs['logged_mfu']:.1%}"
    return (
        f"vs plan: step {vs['step_seconds']:.4g} s (planned {vs['planned_step_seconds']:.4g} s, "
        f"{vs['speed_ratio']:.2f}× the planned speed), {vs['tokens_per_second']:,.0f} tokens/s, MFU "
        f"{vs['mfu']:.1%} (planned {vs['planned_mfu']:.1%}{own}); {vs['remaining_steps']:,} steps left, ETA "
        f"{eta_days:.1f} days; goodput so far {goodput} (planned {fmt_percent(vs['planned_goodput'])})"
        + extra
    )


def _step_cell(first: int, last: int) -> str:
    """A table cell's step range: "1,290" for one step, else "1,290-1,300"."""
    return f"{first:,}" if first == last else f"{first:,}-{last:,}"


def markdown(report: Report) -> str:
    first, last = report.steps
    metrics = ", ".join(f"{k} ({v['as_written']}, {v['points']:,} points)" for k, v in report.metrics.items())
    lines = [
        f"# Incident report: {report.source}",
        "",
        f"**{headline(report)}**",
        "",
        f"- log: `{report.source}` ({report.format}), {steps_text(first, last)}, "
        f"{counted(report.summary['logged_steps'], 'step')} logged, {_every(report.summary['interval_steps'])}",
        f"- thresholds: {report.summary['thresholds']}; checkpoints: {report.summary['checkpoints']}",
        f"- metrics: {metrics}",
        "",
        "## Events",
        "",
    ]
    if report.events:
        lines += [
            "| start | peak | end | event | action | rollback to | skip steps | why |",
            "|---:|---:|---:|---|---|---:|---|---|",
        ]
        for e in report.events:
            action = e.action + (f" {e.wait_until_step:,}" if e.wait_until_step else "")
            skip = "" if not e.skip_steps else _step_cell(*e.skip_steps)
            rollback = "" if e.rollback_to_step is None else f"{e.rollback_to_step:,}"
            why = e.why.replace("|", "\\|")
            lines.append(
                f"| {e.start_step:,} | {e.peak_step:,} | {_step(e.end_step)} | {e.kind} | {action} | "
                f"{rollback} | {skip} | {why} |"
            )
    else:
        lines.append("None.")
    if report.vs_plan:
        speed, *more = vs_plan_text(
            report.vs_plan
        ).splitlines()  # memory and the log's own MFU: a bullet each
        lines += ["", "## Against the plan", "", speed] + (
            [""] + [f"- {line}" for line in more] if more else []
        )
        if report.vs_plan.get("warnings"):
            lines += [""] + [f"- warning: {w}" for w in report.vs_plan["warnings"]]
    if report.summary["warnings"]:
        lines += ["", "## Notes", ""] + [f"- {w}" for w in report.summary["warnings"]]
    return "\n".join(lines) + "\n"


_PANELS = (
    ("loss", "loss"),
    ("grad_norm", "grad norm"),
    ("canary_loss", "canary loss"),
    ("step_seconds", "step time (s)"),
)
_COLOURS = {"none": "0.7", "watch": "tab:orange", "wait_until": "tab:orange"}


def plot(report: Report, log: MetricLog, path: Any) -> None:
    from runplan.report.plots import pyplot

    plt = pyplot("monitor.plot")

    panels = [(n, label) for n, label in _PANELS if log.has(n)]
    if not log.has("canary_loss") and log.has("val_loss"):
        panels.insert(min(2, len(panels)), ("val_loss", "validation loss (canary stand-in)"))
    figure, axes = plt.subplots(max(1, len(panels)), 1, sharex=True, figsize=(10, 2.2 * max(1, len(panels))))
    axes = axes if hasattr(axes, "__len__") else [axes]
    for axis, (name, label) in zip(axes, panels, strict=False):
        steps, values = log.points(name)
        axis.plot(steps, values, linewidth=0.7)
        axis.set_ylabel(label)
        if name == "grad_norm":
            axis.set_yscale("log")
        for event in report.events:
            axis.axvline(
                event.start_step, color=_COLOURS.get(event.action, "tab:red"), linewidth=0.8, alpha=0.8
            )
    axes[0].set_title(f"{report.source}: {headline(report)}", fontsize=9)
    axes[-1].set_xlabel("step")
    figure.tight_layout()
    from runplan.fileio import save_figure

    try:
        save_figure(figure, path, where="monitor.plot", dpi=110)
    finally:
        plt.close(figure)
