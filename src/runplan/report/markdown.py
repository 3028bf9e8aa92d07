"""The Markdown view: a design doc for a code-review page: inputs, derived numbers with their formulas, then
decisions and warnings (the shape of jax-ml/scaling-book's worked examples, DESIGN.md)."""

from __future__ import annotations

import math

import yaml

from runplan.escape import markdown_text
from runplan.plan import RunPlan
from runplan.report.sections import Table, plan_sections, summary_lines


def _escape(cell: str) -> str:
    return str(cell).replace("|", "\\|").replace("\n", " ")


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    lines = [
        "| " + " | ".join(_escape(h) for h in headers) + " |",
        "|" + "|".join("---" for _ in headers) + "|",
    ]
    lines += ["| " + " | ".join(_escape(c) for c in row) + " |" for row in rows]
    return lines


#: Significant digits of the floats in the Inputs section (a derived default such as a failure rate is a long
#: float; integers are shown whole).
INPUT_DIGITS = 4


class _InputsDumper(yaml.SafeDumper):
    """YAML with every finite float to INPUT_DIGITS significant digits, still a YAML float (``3.789``,
    ``2.0e+12``); ints, bools and text as ``yaml.safe_dump`` writes them."""


def _float_text(dumper: yaml.SafeDumper, value: float) -> yaml.ScalarNode:
    if not math.isfinite(value):
        return dumper.represent_float(value)
    text = f"{value:.{INPUT_DIGITS}g}"
    mantissa, e, exponent = text.partition("e")
    if "." not in mantissa:  # YAML 1.1 reads a float only with a dot: 3e+09 would be a string
        mantissa += ".0"
    return dumper.represent_scalar("tag:yaml.org,2002:float", mantissa + e + exponent)


_InputsDumper.add_representer(float, _float_text)


def render_markdown(plan: RunPlan, plots: dict[str, str] | None = None) -> str:
    """One Markdown document; ``plots`` maps a plot's title to its relative path (linked where it belongs)."""
    name = plan.inputs.get("name") or "run plan"
    out = [f"# Run plan: {markdown_text(str(name))}", ""]
    if plan.inputs.get("description"):
        out += [plan.inputs["description"], ""]
    out += ["## Summary", ""] + [f"- {line}" for line in summary_lines(plan)] + [""]
    out += [
        "## Inputs",
        "",
        f"The plan file as read (defaults filled in by `runplan plan`; numbers to {INPUT_DIGITS} significant "
        "digits):",
        "",
        "```yaml",
        yaml.dump(plan.inputs, Dumper=_InputsDumper, sort_keys=False, width=100).rstrip(),
        "```",
        "",
    ]
    out += ["## Derived numbers", "", "Each number with the formula or reason it comes from.", ""]
    plots = plots or {}
    placed = {"Parallel layout": "memory", "Batch and schedule": "schedule", "Allocation": "loss"}
    decisions = {"Parallel layout", "Batch and schedule"}
    later: list[str] = []
    for section in plan_sections(plan):
        if section.title == "Warnings":
            continue
        block = [f"### {section.title}", ""]
        if section.rows:
            block += _table(["what", "value", "why"], [list(r) for r in section.rows]) + [""]
        for sub in section.tables:
            block += [f"**{sub.title}**", ""] + _table(sub.headers, sub.rows) + [""]
        block += [f"- {b}" for b in section.bullets] + ([""] if section.bullets else [])
        key = placed.get(section.title)
        for title, path in plots.items():
            if key and key in title.lower():
                block += [f"![{title}]({path})", ""]
        (later if section.title in decisions else out).extend(block)
    out += ["## Decisions", "", "The layout and the schedule runplan chose, with the runners-up.", ""] + later
    out += ["## Warnings", ""] + ([f"- {w}" for w in plan.warnings] or ["- none"]) + [""]
    return "\n".join(out)


__all__ = ["Table", "render_markdown"]
