"""The terminal view of a plan: a short summary first, then each section as a table of (what, value, why)."""

from __future__ import annotations

from runplan.plan import RunPlan
from runplan.report.sections import plan_sections, summary_lines


def render_terminal(plan: RunPlan, console) -> None:
    """Print ``plan`` to a rich console."""
    from rich import box
    from rich.panel import Panel
    from rich.table import Table

    title = plan.inputs.get("name") or "run plan"
    console.print(Panel("\n".join(summary_lines(plan)), title=f"runplan: {title}", expand=False))
    for section in plan_sections(plan):
        console.rule(f"[bold]{section.title}")
        if section.rows:
            table = Table(box=box.SIMPLE, show_header=True, header_style="bold")
            table.add_column("what")
            table.add_column("value", justify="right")
            table.add_column("why", overflow="fold")
            for what, value, why in section.rows:
                table.add_row(what, value, why)
            console.print(table)
        for sub in section.tables:
            table = Table(title=sub.title, box=box.SIMPLE_HEAD, header_style="bold", title_justify="left")
            for header in sub.headers:
                table.add_column(
                    header,
                    justify="left"
                    if header in ("", "part", "stage", "phase", "run", "metric", "why", "recompute")
                    else "right",
                )
            for row in sub.rows:
                table.add_row(*row)
            console.print(table)
        for bullet in section.bullets:
            console.print(f"  • {bullet}", highlight=False)
