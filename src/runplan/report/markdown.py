"""The Markdown view: a design doc for a code-review page: inputs, derived numbers with their formulas, then
decisions and warnings (the shape of jax-ml/scaling-book's worked examples, DESIGN.md)."""

from __future__ import annotations

import math
import re
from urllib.parse import quote

import yaml

from runplan.escape import markdown_text
from runplan.plan import RunPlan
from runplan.report.sections import Table, plan_sections, summary_lines

#: Paired backtick runs: a code span (CommonMark §6.1), kept as written: `runplan calibrate` stays code.
_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.DOTALL)

#: Text the generated prose means literally but Markdown would read as syntax (CommonMark §6.2, GFM §6.5):
#: ``*`` opens emphasis even inside a word (``d*b*m*s`` renders d<em>b</em>m), ``_`` at a word's edge, ``~``
#: strikethrough, ``$`` math on GitHub, ``<`` before a letter a raw HTML tag, ``](`` a link, and a backslash
#: before punctuation an escape. ``_`` inside a word (``weights_bf16``) and ``<=`` are literal and left alone.
_MARKDOWN_SYNTAX = re.compile(r"\\(?=[!-/:-@\[-`{-~])|[*~$]|(?<!\w)_|_(?!\w)|<(?=[A-Za-z/!?])|\](?=[(\[])")


def _literal(text: str) -> str:
    """``text`` as it reads, outside its code spans: each character Markdown would take as syntax escaped."""
    out, last = [], 0
    for span in _CODE_SPAN.finditer(text):
        out += [_MARKDOWN_SYNTAX.sub(r"\\\g<0>", text[last : span.start()]), span.group(0)]
        last = span.end()
    return "".join([*out, _MARKDOWN_SYNTAX.sub(r"\\\g<0>", text[last:])])


def _escape(cell: str) -> str:
    """A GFM table cell: literal text, ``|`` escaped even inside a code span (GFM §4.10), one line."""
    return _literal(str(cell)).replace("|", "\\|").replace("\n", " ")


def _bullets(items: list[str]) -> list[str]:
    """One list item per string, literal and on one line (a line break would end the item)."""
    return [f"- {_literal(' '.join(item.split()))}" for item in items]


def _image(title: str, path: str) -> str:
    """A linked plot; the path percent-encoded, so a directory named ``my plots (v2)`` still links (a space or
    a parenthesis ends a CommonMark link destination, §6.3)."""
    return f"![{_literal(title)}]({quote(path, safe='/:')})"


def _quoted(text: str) -> list[str]:
    """The plan's description as a block quote of literal lines: whatever it holds (a ``` line, a ``# ``) ends
    with the quote (CommonMark §5.1) instead of swallowing the report after it."""
    return [f"> {_literal(line)}" if line.strip() else ">" for line in text.splitlines()]


def _fenced(text: str, info: str) -> list[str]:
    """A fenced code block one backtick longer than any run in ``text`` (CommonMark §4.5), so a ``` in a plan's
    name or description cannot close it early."""
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", text)), default=0))
    return [fence + info, text, fence]


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
        out += _quoted(str(plan.inputs["description"])) + [""]
    out += ["## Summary", ""] + _bullets(summary_lines(plan)) + [""]
    out += [
        "## Inputs",
        "",
        f"The plan file as read (defaults filled in by `runplan plan`; numbers to {INPUT_DIGITS} significant "
        "digits):",
        "",
        *_fenced(yaml.dump(plan.inputs, Dumper=_InputsDumper, sort_keys=False, width=100).rstrip(), "yaml"),
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
            block += [f"**{_literal(sub.title)}**", ""] + _table(sub.headers, sub.rows) + [""]
        block += _bullets(section.bullets) + ([""] if section.bullets else [])
        key = placed.get(section.title)
        for title, path in plots.items():
            if key and key in title.lower():
                block += [_image(title, path), ""]
        (later if section.title in decisions else out).extend(block)
    out += ["## Decisions", "", "The layout and the schedule runplan chose, with the runners-up.", ""] + later
    out += ["## Warnings", ""] + (_bullets(list(plan.warnings)) or ["- none"]) + [""]
    return "\n".join(out)


__all__ = ["Table", "render_markdown"]
