"""The terminal view of a plan: about one screen by default (summary, decisions, warnings); ``detail`` adds
every section's explanation table. Tables fit the console width (runplan.report.tables)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from runplan.plan import RunPlan
from runplan.report.format import numbers_kept_whole
from runplan.report.sections import Section, plan_sections, summary_lines

if TYPE_CHECKING:
    from rich.console import Console

#: The sections whose bullets are the decisions runplan made (shown by default); the rest is explanation.
DECISION_SECTIONS = ("Parallel layout", "Batch and schedule")

#: Left-justified columns of the sub-tables (the rest hold numbers).
LEFT_COLUMNS = ("", "part", "stage", "phase", "run", "metric", "why", "recompute", "what", "what it counts")


def render_terminal(plan: RunPlan, console: Console, *, detail: bool = False) -> None:
    """Print ``plan`` to a rich console: the summary, then the decisions and warnings, or every section; a number
    and its unit (``16.78 M``, ``17.7 GB``) are never folded apart (:func:`numbers_kept_whole`)."""
    with numbers_kept_whole():
        _render_plan(plan, console, detail=detail)


def _render_plan(plan: RunPlan, console: Console, *, detail: bool) -> None:
    from rich.panel import Panel

    title = plan.inputs.get("name") or "run plan"
    console.print(Panel("\n".join(summary_lines(plan)), title=f"runplan: {title}", expand=False))
    sections = plan_sections(plan)
    if detail:
        for section in sections:
            _render_section(section, console)
        return
    console.rule("[bold]Decisions")
    for section in sections:
        if section.title in DECISION_SECTIONS:
            console.print(f"[bold]{section.title}[/bold]")
            _bullets(section.bullets, console)
    warnings = sections[-1]
    console.rule(f"[bold]{warnings.title}")
    _bullets(warnings.bullets, console)
    console.print(
        "[dim]--detail: every number with its formula (allocation, architecture, layout, schedule, "
        "checkpointing, failures, monitoring, sweep, cost); -f markdown: the full report.[/dim]"
    )


def _render_section(section: Section, console: Console) -> None:
    from runplan.report.tables import fitted_table

    console.rule(f"[bold]{section.title}")
    if section.rows:
        console.print(
            fitted_table(
                console,
                ["what", "value", "why"],
                [list(r) for r in section.rows],
                box_style="SIMPLE",
                left=("what", "why"),
            )
        )
    for sub in section.tables:
        console.print(fitted_table(console, sub.headers, sub.rows, title=sub.title, left=LEFT_COLUMNS))
    _bullets(section.bullets, console)


def _bullets(bullets: list[str], console: Console) -> None:
    """Bullets with a hanging indent, so a wrapped line stays under its text."""
    from rich.table import Table
    from rich.text import Text

    if not bullets:
        return
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    for bullet in bullets:
        grid.add_row("  •", Text(bullet))
    console.print(grid)
