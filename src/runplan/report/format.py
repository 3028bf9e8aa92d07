"""Human formatting of plan numbers, chosen by the unit a field name carries (DESIGN.md: names carry units)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from types import ModuleType

from runplan.units import format_bytes as fmt_bytes


def fmt_ratio(value: float) -> str:
    """A ratio such as tokens per parameter: ``18.9``; below 10 three significant digits (``0.149``, not ``0.1``,
    33% off); below 0.1 two (``3.3e-08``), not ``0.0``; from 1e5 three (``1.62e+08``), not ``162253078.0``."""
    if value >= 1e5:
        return f"{value:.3g}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.3g}" if value >= 0.1 else f"{value:.2g}"


def fmt_change(value: float) -> str:
    """A relative change: ``+12.5%``; from +1000% a factor (``1.23e+14×``), which a percentage hides."""
    if abs(value) >= 10.0:
        return f"{1.0 + value:.3g}×"
    return f"{value:+.1%}"


def fmt_count(value: float, *, scale_of: float | None = None, extra_digits: int = 0) -> str:
    """``70553706496`` → ``70.55 B``; below a million, thousands separators (``491,679``, ``28.3``); from 1e15
    powers of ten (``1.356e+15``).

    ``scale_of`` and ``extra_digits`` as in :func:`runplan.units.format_bytes` (one scale for two values)."""
    ref, extra = abs(value if scale_of is None else scale_of), extra_digits
    # the suffix of the value as printed: a 1T budget that came back through C = 6·N·D as 999,999,999,999.9999
    # is "1 T", not "1000 B"
    shown = float(f"{ref:.{4 + extra}g}")
    if shown >= 1e15:  # past trillions a count reads best in powers of ten (a step count of 1e21 tokens)
        return f"{value:.{3 + extra}e}"
    if ref >= 1e6:
        for threshold, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M")):
            if shown >= threshold:
                return f"{value / threshold:.{4 + extra}g} {suffix}"
    if float(value).is_integer() or ref >= 1000:
        return f"{value:,.{extra}f}"
    return f"{value:.{4 + extra}g}"


def fmt_duration(value: float, *, scale_of: float | None = None, extra_digits: int = 0) -> str:
    """Compact, for tables: ``26.65 s``, ``2.7 min``, ``5.2 h``, ``29.5 days`` (notes use ops._notes.fmt_seconds,
    which also shows the exact seconds). ``scale_of`` and ``extra_digits`` as in :func:`fmt_count`."""
    ref, extra = abs(value if scale_of is None else scale_of), extra_digits
    if ref < 120:
        return f"{value:.{4 + extra}g} s"
    if ref < 7200:
        return f"{value / 60:.{3 + extra}g} min"
    if ref < 3 * 86400:
        return f"{value / 3600:.{3 + extra}g} h"
    if ref >= 999.5 * 86400:  # whole days with separators, as fmt_days: not 1.77e+03
        return f"{value / 86400:,.{extra}f} days"
    return f"{value / 86400:.{3 + extra}g} days"


def fmt_row_duration(value: float) -> str:
    """A duration in a plan report's row, in the unit its reason names: ops._notes.fmt_seconds writes
    ``5,767 s (1.60 h)`` from 3,600 s and ``(2.06 d)`` from 2 days, so the value reads ``1.6 h`` (was ``96.1 min``)
    and ``2.06 days`` (was ``49.5 h``); otherwise as :func:`fmt_duration`."""
    if 3600 <= abs(value) < 7200:
        return f"{value / 3600:.3g} h"
    if 2 * 86400 <= abs(value) < 3 * 86400:
        return f"{value / 86400:.3g} days"
    return fmt_duration(value)


def fmt_percent(number: float) -> str:
    """A fraction as a percentage: ``99.5%``; below 1% two significant digits (``0.064%``, not ``0.1%``); just short
    of 1, truncated to two decimals (``99.95%``), never rounded up to ``100.0%``: a 1-node, 1-day run's goodput of
    0.9995 printed as 100.0% while the JSON said 0.9995 (docs/operations.md §3: a goodput is W / elapsed < 1
    whenever a save blocks or a failure can strike)."""
    if abs(number) < 0.01 and number != 0:
        return f"{100 * number:.2g}%"
    text = f"{number:.1%}"
    if number < 1 and text == "100.0%":
        return f"{math.floor(number * 1e4) / 100:.2f}%"
    return text


def fmt_mwh(number: float) -> str:
    """Energy in MWh to one decimal (330.3), or two significant digits below 1 MWh (0.013, not 0.0)."""
    return f"{number:,.1f}" if abs(number) >= 1 or number == 0 else f"{number:.2g}"


def fmt_days(value: float) -> str:
    """Days to three significant digits (``38.6``, ``4.05``); from 1000 whole with separators (``1,774``), not
    ``1.77e+03``, as the summary and the warnings print them."""
    return f"{value:,.0f}" if abs(value) >= 999.5 else f"{value:.3g}"


def fmt_value(name: str, value: object) -> str:
    """Format ``value`` by what ``name`` says it is (``*_bytes``, ``*_seconds``, ``*_fraction``, ``mfu`` ...)."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        return value
    if isinstance(value, list | tuple):
        return ", ".join(fmt_value(name, v) for v in value)
    if not isinstance(value, int | float):
        return str(value)
    number = float(value)
    if not math.isfinite(number):
        return "n/a"
    lower = name.lower()
    if lower.endswith("bytes_per_param"):
        return f"{number:.4g} B/param"
    if "bytes" in lower:  # total_bytes, bytes_per_shard, written_bytes_per_rank, ...
        return fmt_bytes(number)
    if lower.endswith("_seconds") or lower == "seconds":
        return fmt_row_duration(number)
    if lower.endswith("per_1000_node_days"):
        return f"{number:.3g}"
    if lower.endswith("_days") or lower == "days":
        return f"{fmt_days(number)} days"
    if lower.endswith(("fraction", "goodput", "mfu", "hfu", "saving", "overhead")) or lower in ("mfu", "hfu"):
        return fmt_percent(number)
    if "flops" in lower and not lower.endswith("per_token"):
        return f"{number:.3g}"
    if lower.endswith("lr") or "_lr_" in lower or lower == "peak_lr" or lower.startswith("lr_"):
        return f"{number:.3g}"
    if lower.endswith(("usd", "cost")):
        return f"{number:,.0f}"
    if lower.endswith("_mwh"):
        return f"{fmt_mwh(number)} MWh"
    if lower in ("loss", "target_loss") or lower.endswith("_loss") or "loss_" in lower:
        return f"{number:.4f}"
    if lower.endswith(("_per_param", "_factor", "_sigma")):
        return f"{number:.4g}"
    return fmt_count(number)


def label(name: str) -> str:
    """``save_blocking_seconds`` → ``save blocking (s)``-free plain words: ``save blocking``."""
    words = name.replace("_", " ")
    for unit in (" seconds", " bytes", " usd", " mwh"):
        if words.endswith(unit):
            words = words[: -len(unit)]
    return words


def cell_width(text: str) -> int:
    """Terminal cells ``text`` takes: a CJK or other East Asian wide character two, a combining mark none
    (rich.cells.cell_len, Unicode East Asian Width). The one measure lines are folded (:func:`wrap_lines`) and
    values cut (runplan.resolved) by."""
    from rich.cells import cell_len

    return cell_len(text)


#: The symbols and SI suffixes these formatters write after a number (fmt_count's ``16.78 M``, fmt_bytes' ``80 GB``
#: and ``50 GB/s``, fmt_duration's ``2.7 min``, ``398.3 MWh``, ``1.5e+19 FLOPs``, a percentage-point change's
#: ``-1.07 pp``, resolved._fixed's ``0.1234 σ``)
_UNIT_SYMBOLS = r"[kKMBTP]|[kKMGTP]i?B|s|ms|min|h|days?|[kMG]?Wh|[kM]?W|FLOPs?|FLOP/s|pp|σ"
#: What runplan counts after a number, singular or plural: the nouns of runplan.resolved._UNITS (``819,200 tokens``,
#: ``8 GPUs/node``, ``91,187 GPU-hours``, ``2.2457 nats/token``, ``4.689 interruptions``, ``1 interruption/day``,
#: ``3,072 sequences``, ``7 sizes``) and the words `plan --detail` writes after a number on every example at
#: COLUMNS=400 (``2,829 saves``, ``406 B parameters``, ``240 points``, ``1e9 bytes``, ``r = 3.79 per 1,000
#: node-days``); a currency by its ISO 4217 code (``182,375 USD``, ``2 USD/h``; ops.cost writes the plan's own)
_COUNTED_NOUNS = (
    r"tokens?|GPUs?|steps?|sequences?|interruptions?|params?|parameters?|nats?|nodes?|micro-batch(?:es)?"
    r"|batch(?:es)?|layers?|heads?|experts?|groups?|checkpoints?|evaluations?|segments?|layouts?|runs?|sizes?"
    r"|shards?|decades?|saves?|milestones?|points?|failures?|generations?|bytes?|[A-Z]{3}"
)
#: The space between a number and its unit (:data:`_UNIT_SYMBOLS`, :data:`_COUNTED_NOUNS`; ``active params``),
#: each a whole word: no place to fold a line, which would leave ``16.78`` at a line's end and ``M`` alone at the
#: next one's start, or ``4.689`` and ``interruptions``. So is the space between a number's SI suffix and what it
#: counts (``12.58 M tokens``, ``406 B parameters``, ``12.88 active params``). Days written ``d``
#: (ops._notes.fmt_seconds' ``(4.12 d)``, ops.reliability's ``419 / (54 d × 2,048 nodes)``) are a unit too, where
#: ``d`` is a whole word not followed by ``·`` or ``=`` (the layout letter of ``d·b·m`` or ``d = 64`` is no day)
_NUMBER_UNIT_SPACE = re.compile(
    rf"(?<=\d) (?=(?:{_UNIT_SYMBOLS}|{_COUNTED_NOUNS}|active(?= params?(?!\w)))(?!\w)|d(?![\w·]| ?=))"
    rf"|(?:(?<=\d [kKMBTP])|(?<=\d active)) (?=(?:{_COUNTED_NOUNS})(?!\w))"
)


def unit_spaces_masked(text: str, mask: str = "_") -> str:
    """``text`` with each space between a number and its unit (:data:`_NUMBER_UNIT_SPACE`) replaced by ``mask``:
    one character and one cell for another, so the line breaks found in the masked text are break points of
    ``text`` that never part a number from its unit (rich folds by them while :func:`numbers_kept_whole` is open,
    :func:`wrap_lines` always; JSON, YAML and Markdown are never folded, and keep every space as it is)."""
    return _NUMBER_UNIT_SPACE.sub(mask, text)


#: What rich.text.Text.wrap folds its lines by: ``rich.text.divide_line``, ``rich._wrap``'s, imported into rich.text
#: by name (rich 15)
_DIVIDE_LINE = "divide_line"


class _WholeNumberDivider:
    """rich's ``divide_line`` (``rich._wrap``: the offsets where rich.text.Text.wrap folds a line) run on the line
    with its number-unit spaces masked, so no fold parts ``16.78`` from ``M``."""

    def __init__(self, divide: Callable[..., Iterable[int]]) -> None:
        self.divide = divide

    def __call__(self, text: str, width: int, fold: bool = True) -> list[int]:
        return list(self.divide(unit_spaces_masked(text), width, fold=fold))


def keep_numbers_whole(text_module: ModuleType) -> Callable[[], None]:
    """Make ``text_module`` (``rich.text``, imported) fold text with its number-unit spaces masked, and return the
    undo. A no-op, and a no-op undo, where that rich has no ``divide_line`` (another rich version: folded as it
    folds) or where it already keeps numbers whole (an open :func:`numbers_kept_whole` inside another)."""
    divide = getattr(text_module, _DIVIDE_LINE, None)
    if divide is None or isinstance(divide, _WholeNumberDivider):
        return lambda: None
    setattr(text_module, _DIVIDE_LINE, _WholeNumberDivider(divide))  # another module's, put back by the undo

    def undo() -> None:
        setattr(text_module, _DIVIDE_LINE, divide)

    return undo


@contextmanager
def numbers_kept_whole() -> Iterator[None]:
    """While it is open, rich folds each line of a table cell, bullet or panel between the words of its text with
    the spaces between a number and its unit masked (:func:`unit_spaces_masked`): ``16.78 M tokens`` folds before
    ``16.78`` or after ``M``, never between them. A no-break space (U+00A0) in the text would not do it: rich
    folds at any whitespace, U+00A0 included (rich 15, ``rich._wrap.re_word`` is ``\\s*\\S+\\s*``; Textualize/rich
    issue 4196). The printed characters are unchanged: only where lines fold. Imports rich; a command's run keeps
    numbers whole from where it makes its console (runplan.cli.common.console) to its end.

    Where the column or line holds the pair: rich gives a folding column what the other columns leave
    (rich.table.Table._calculate_column_widths; its measured minimum is not kept), and a pair wider than that is
    folded inside. report.tables.fitted_table counts each pair as one word and stacks a table whose prose column
    could not hold its widest; a grid made elsewhere must leave its folding column that wide itself."""
    import rich.text

    undo = keep_numbers_whole(rich.text)
    try:
        yield
    finally:
        undo()


def wrap_lines(text: str, width: int, *, indent: str | None = None) -> str:
    """Each line of ``text`` folded at ``width`` columns between words (a long path or value stays whole); a
    continuation line is indented by ``indent``, by default the line's own indent plus two spaces, so a folded
    list item still reads as one item. A number and its unit (``2e23 FLOPs``, ``1.1 s``) are never folded apart:
    the line is folded with those spaces masked (:func:`unit_spaces_masked`) and they are put back after."""
    import textwrap

    folded = []
    for line in text.splitlines():
        lead = line[: len(line) - len(line.lstrip())]
        hang = lead + "  " if indent is None else indent
        mask = _WRAP_MASK if _WRAP_MASK not in line else " "  # a line holding the mask folds as it is
        masked = unit_spaces_masked(line, mask)
        if not line.strip():
            folded.append(line)
        elif cell_width(line) != len(line):  # wide characters (CJK): fold by screen cells, not characters
            folded.append(_fill_cells(masked, width, lead, hang, mask))
        else:
            lines = textwrap.fill(
                masked, width, subsequent_indent=hang, break_long_words=False, break_on_hyphens=False
            )
            folded.append(lines.replace(mask, " "))
    return "\n".join(folded)


#: What :func:`wrap_lines` writes for a number-unit space while it folds: one character, never whitespace to
#: textwrap (which breaks at ``\t\n\v\f\r`` and space only) nor to str.split, and never in runplan's text
_WRAP_MASK = "\x00"


def _fill_cells(line: str, width: int, lead: str, hang: str, mask: str = " ") -> str:
    """``line`` folded between words at ``width`` terminal cells (a CJK character takes two: rich.cells), a word
    wider than the line kept whole, as textwrap.fill does by characters; ``mask`` in ``line`` is a space that
    does not part two words (:func:`wrap_lines`)."""
    rows: list[str] = []
    row, words = lead, 0  # the row being filled and how many words it holds
    for word in (word.replace(mask, " ") for word in line.split()):
        if words and cell_width(f"{row} {word}") > width:
            rows.append(row)
            row, words = hang + word, 1
        else:
            row, words = (f"{row} {word}" if words else row + word), words + 1
    rows.append(row)
    return "\n".join(rows)


def infeasible_lines(reason: str, suggestions: list[str]) -> str:
    """An infeasible answer as a few short lines: the reason, each nearest miss, each way to make it feasible
    (one 700-character line could not be read at 80 columns)."""
    head, _, misses = reason.partition("; nearest misses: ")
    lines = [" ".join(head.split())]
    if misses:
        lines += ["  nearest misses:", *(f"    {m.strip()}" for m in misses.split("; ") if m.strip())]
    if suggestions:
        lines += ["  to make it feasible:", *(f"    - {' '.join(s.split())}" for s in suggestions)]
    return "\n".join(lines)
