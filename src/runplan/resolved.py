"""The resolved plan (``runplan plan --format yaml``) and its drift check (``runplan check``).

A resolved plan file is the user's plan file plus a ``resolved:`` section holding every derived number. Since it
is still a valid plan file, ``runplan check`` can recompute it and report every derived number that moved beyond
a relative tolerance, as a diff: a team's CI then notices when an input, a catalog entry or runplan itself
changes the plan.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import os
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeGuard

import yaml

from runplan.plan import RunPlan
from runplan.report.format import cell_width, fmt_count, fmt_duration
from runplan.units import format_bytes

SCHEMA_COMMENT = (
    "# yaml-language-server: $schema=docs/plan.schema.json\n"  # its path in the runplan repository
)
#: Keys whose values are timings or prose, not derived numbers: never diffed (``source``: a catalog entry's
#: citation, which a runplan release may reword without moving a number).
VOLATILE_KEYS = frozenset({"search_seconds", "notes", "why", "inputs", "source"})


def resolved_section(plan: RunPlan) -> dict[str, Any]:
    """Every derived number of ``plan`` (its JSON form), with the inputs they came from (``inputs``: the plan
    file's keys, defaults filled) moved last: `runplan check` compares them apart (:func:`input_changes`)."""
    data = plan.model_dump(mode="json")
    data["inputs"] = data.pop("inputs")
    return data


def input_changes(resolved: dict[str, Any], plan: RunPlan) -> list[Change] | None:
    """The inputs (defaults filled) that differ between a resolved section and the plan recomputed now, compared
    exactly: so that `runplan check` says whether drift follows an edit of the file (or a default that changed),
    or came with runplan, a catalog or the calibration alone. None where the section records no inputs
    (written before it did)."""
    recorded = resolved.get("inputs")
    if not isinstance(recorded, dict):
        return None
    return diff_changes(recorded, plan.inputs, rtol=1e-12)  # (RunPlan.inputs is already the JSON form)


#: Keys that time runplan itself, not the run: a fresh measurement on every plan, so a section that differs from
#: the recomputed one only there is current (``check --update`` leaves the file as it is).
TIMING_KEYS = frozenset({"search_seconds"})


def _without_timings(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_timings(v) for k, v in value.items() if k not in TIMING_KEYS}
    if isinstance(value, list):
        return [_without_timings(v) for v in value]
    return value


def is_current(recorded: dict[str, Any], plan: RunPlan) -> bool:
    """True when a resolved section already holds ``plan``'s section exactly (numbers, prose and the inputs it
    records), but for the timings in TIMING_KEYS: rewriting it would change only those."""
    fresh = json.loads(json.dumps(resolved_section(plan)))  # the JSON types a YAML reader gives back
    return bool(_without_timings(recorded) == _without_timings(fresh))


def resolved_document(
    raw_inputs: dict[str, Any], plan: RunPlan, original: str = "", moved: tuple[Path, Path] | None = None
) -> str:
    """YAML text: the plan file's own keys as written, then ``resolved:``; first the editor's schema line of the
    plan file's text ``original`` (:func:`schema_line`; ``moved``: the plan's folder and the output's)."""
    document = {k: v for k, v in raw_inputs.items() if k != "resolved"}
    document["resolved"] = resolved_section(plan)
    head = schema_line(original, moved)
    return head + yaml.safe_dump(document, sort_keys=False, width=120, allow_unicode=True)


_SCHEMA_LINE = re.compile(r"^#\s*yaml-language-server:.*$", re.MULTILINE)
_SCHEMA_PATH = re.compile(r"(\$schema=)(\S+)")


def schema_line(original: str, moved: tuple[Path, Path] | None = None) -> str:
    """The plan file's own ``# yaml-language-server: $schema=...`` comment line (its path is relative to that
    file: ``../docs/plan.schema.json`` in examples/), else :data:`SCHEMA_COMMENT`. ``moved`` (the plan file's
    folder, the output's folder): a relative schema path is rewritten to name the same file from the output's
    folder, as an editor reads it (a URL or an absolute path stays)."""
    found = _SCHEMA_LINE.search(original)
    if not found:
        return SCHEMA_COMMENT
    line = found.group(0).rstrip("\r")
    if moved is not None:
        line = _SCHEMA_PATH.sub(lambda m: m.group(1) + _relocated(m.group(2), *moved), line)
    return line + "\n"


def _relocated(path: str, from_dir: Path, to_dir: Path) -> str:
    if "://" in path or "\\" in path or Path(path).is_absolute():  # a URL, a Windows path: as written
        return path
    try:
        return Path(os.path.relpath((from_dir / path).resolve(), to_dir.resolve())).as_posix()
    except ValueError:  # Windows: two drives
        return str((from_dir / path).resolve())


#: The numbers a reader looks at first, in this order: days and cost, then the run's size and loss.
# the layout itself (the summary's second line): a change there is a change of plan, shown without a percentage
LAYOUT_AXIS_PATHS = tuple(
    f"layout.best.{axis}"
    for axis in ("tp", "pp", "dp", "cp", "ep", "zero", "micro_batch", "vpp", "recompute")
)
HEADLINE_PATHS = (
    "cost.main.wall_clock_days",
    "cost.main.cost",
    "cost.total_cost",
    "cost.main.billed_gpu_hours",  # (the cost line's GPU-hours: cost = billed GPU-hours × price)
    "cost.main.gpus",
    "cost.main.goodput",
    "allocation.params",
    "model.total_params",  # the model trained (the summary's count): the law's N above differs by up to 7.5%
    "allocation.tokens",
    "allocation.loss",
    "layout.best.mfu",
    "layout.best.step_seconds",
    *LAYOUT_AXIS_PATHS,
    "layout.best.memory_bytes.total",
    "schedule.total_steps",
    "schedule.global_batch_tokens",
)


@dataclass(frozen=True)
class Change:
    """One derived value that moved: ``old``/``new`` are None where the key is new/gone (``kind``)."""

    path: str
    kind: str  # "changed", "new", "gone" or "length" (a list's item count)
    old: Any
    new: Any
    relative_change: float | None = None
    #: a "length" change: the items past the shorter list's end (added when the list grew, else removed)
    extra: tuple[Any, ...] = ()
    #: (old side, new side): that side's plan is a mixture of experts, whose law N (:data:`_ACTIVE_UNITS`) counts
    #: active parameters only; set by :func:`diff_changes`, read by :meth:`readable` (the JSON record is raw)
    moe: tuple[bool, bool] = (False, False)

    @property
    def section(self) -> str:
        """The top-level key of the resolved plan (allocation, layout, cost, ...)."""
        return self.path.split(".", 1)[0].split("[", 1)[0]

    @property
    def headline(self) -> bool:
        return self.path in HEADLINE_PATHS

    def text(self) -> str:
        """``path: old → new (+x%)``."""
        if self.kind == "new":
            return f"{self.path}: (new) → {_short(self.new)}"
        if self.kind == "gone":
            return f"{self.path}: {_short(self.old)} → (gone)"
        if self.kind == "length":
            return f"{self.path}: {self.old} items → {self.new} items"
        # a layout degree is a choice, not a quantity: TP 4 → 8 is not "+100%"
        shown = self.relative_change is not None and self.path not in LAYOUT_AXIS_PATHS
        change = f" ({self.relative_change:+.2%})" if shown else ""
        return f"{self.path}: {_short(self.old)} → {_short(self.new)}{change}"

    def readable(self, old_currency: str = "", new_currency: str = "") -> str:
        """``path: old → new (+x%)`` for a reader (``runplan diff``): both numbers in one format, in the unit the
        plan's report gives that quantity (:func:`unit_of`: GB, durations, days, money in the plan's currency,
        a loss in nats/token, a count with what it counts: 12.6 M tokens, 512 GPUs, 1 GPU; a MoE side's law N in
        active params, :data:`_ACTIVE_UNITS`); a cost in two different currencies has no percentage. :meth:`text`
        keeps raw numbers."""
        fmt = unit_of(self.path)
        fmts = [_ACTIVE_UNITS.get(self.path, fmt) if moe else fmt for moe in self.moe]  # each side its own
        if self.kind == "new":
            return f"{self.path}: (new) → {_shown(fmts[1:], [self.new], new_currency)[0]}"
        if self.kind == "gone":
            return f"{self.path}: {_shown(fmts, [self.old], old_currency)[0]} → (gone)"
        if self.kind == "length":  # which items came or went, not just how many
            verb, start = ("added", self.old) if self.new > self.old else ("removed", self.new)
            named = [
                f"[{start + i}] {_short(item)}" for i, item in enumerate(self.extra[:_MOST_LISTED_ITEMS])
            ]
            more = len(self.extra) - len(named)  # the JSON record keeps them all
            items = "; ".join(named) + (f"; ... {more:,} more" if more > 0 else "")
            return f"{self.path}: {_items(self.old)} → {_items(self.new)}" + (
                f" ({verb} {items})" if items else ""
            )
        old, new = _shown(fmts, [self.old, self.new], old_currency, new_currency)
        shown = self.relative_change is not None and self.path not in LAYOUT_AXIS_PATHS
        shown = shown and (fmt not in _MONEY or old_currency == new_currency)  # 1,000 USD → 900 EUR: no %
        change = f" ({self.relative_change:+.2%})" if shown else ""
        if fmt is _percent and _finite(self.old) and _finite(self.new):
            # points first: MFU 53.5% → 52.6% is −0.96 points, and "−1.80%" alone read as points; from 0% only
            # the points mean anything
            relative = "" if self.relative_change is None else f", {self.relative_change:+.2%} relative"
            change = f" ({_points(self.old, self.new)} pp{relative})"
        return f"{self.path}: {old} → {new}{change}"

    def record(self) -> dict[str, Any]:
        """The JSON form: path, section, kind, old, new, relative_change (None unless both are numbers); a
        "length" change adds ``added`` or ``removed``, the items past the shorter list's end."""
        record = {
            "path": self.path,
            "section": self.section,
            "kind": self.kind,
            "old": _json_value(self.old),
            "new": _json_value(self.new),
            "relative_change": self.relative_change,
        }
        if self.kind == "length":
            record["added" if self.new > self.old else "removed"] = _json_value(self.extra)
        return record


def _points(old: float, new: float) -> str:
    """The change of a fraction in percentage points, signed: two decimals, or two digits under 0.005."""
    points = 100 * (float(new) - float(old))
    return f"{points:+.2f}" if abs(points) >= 0.005 else f"{points:+.2g}"


def _finite(value: Any) -> bool:
    return _is_number(value) and math.isfinite(value)


#: Most added or removed list items a "length" change names in words (the JSON record lists every one)
_MOST_LISTED_ITEMS = 5


def _items(count: int) -> str:
    return f"{count} item" if count == 1 else f"{count} items"


#: derived keys a newer runplan adds beside numbers an older file already holds (each layout's per-stage memory
#: totals, whose larger is its ``memory_bytes.total``): new in the file, not a change of the plan
ADDED_DERIVED_KEYS = frozenset({"memory_total_bytes_by_stage"})
#: the same, by path: each batch stage's step time (the layout re-timed at the stage's micro-batches, which an
#: older file's training time already summed), and the GPU the layouts were timed on (the plan's own input)
ADDED_DERIVED_PATHS = re.compile(r"schedule\.batch_stages\[\d+\]\.step_seconds|layout\.gpu")


#: derived keys renamed since a resolved section may have been written, new path → old path: the old file's value
#: is compared under the new name (77efb0d: checkpointing's interval became ``main_interval_seconds`` beside
#: reliability's mean τ, ``reliability.interval_seconds``, which keeps its name)
RENAMED_DERIVED_PATHS = {"checkpointing.main_interval_seconds": "checkpointing.interval_seconds"}


#: more milestones than any plan keeps (one per 10% of the tokens by default): past it an older file's count is
#: not expanded into a list (a hand-edited ``milestones: 1000000000`` would take gigabytes)
_MOST_IMPLIED_MILESTONES = 100_000


def _implied_milestone_steps(section: dict[str, Any]) -> list[int] | None:
    """The milestone steps a checkpointing section written before ``milestone_steps`` (77efb0d) meant: the
    multiples of ``milestone_every_steps``, ``milestones`` of them (that runplan's rule, ⌊steps / spacing⌋ at
    every multiple; ``CheckpointPlan`` reads an old plan so). None where the section lacks either number, or
    holds one that runplan never wrote: a spacing under 1 step (it was max(interval, ...) steps, the interval >= 1)
    or a negative count (⌊steps / spacing⌋ >= 0); a hand-edited ``milestones: -5`` or ``milestone_every_steps: 0``
    implies nothing, and the key is new."""
    every, count = section.get("milestone_every_steps"), section.get("milestones")
    if not (_is_count(every) and _is_count(count)) or every < 1 or count < 0:
        return None
    if count > _MOST_IMPLIED_MILESTONES:  # a hand-edited count, not one runplan wrote: the key is new
        return None
    from runplan.ops.checkpoint import multiples

    return multiples(every, count)


def _is_count(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


#: derived keys a newer runplan adds whose value an older file's numbers imply, path → the value from the old
#: mapping: compared with it (unchanged when equal, a change from it when not) instead of reported new
IMPLIED_DERIVED_PATHS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "checkpointing.milestone_steps": _implied_milestone_steps
}


def _as_renamed(path: str, old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """``old`` with each key :data:`RENAMED_DERIVED_PATHS` renamed since under its new name, where ``new`` holds
    only the new name and ``old`` only the old one."""
    renamed = old
    for key in new.keys() - old.keys():
        was = RENAMED_DERIVED_PATHS.get(f"{path}.{key}" if path else key, "").rsplit(".", 1)[-1]
        if was and was in old and was not in new:
            renamed = {**renamed, key: renamed[was]}
            del renamed[was]
    return renamed


def _new_key(path: str, old: dict[str, Any], value: Any, out: list[Change]) -> None:
    """A key of the recomputed section that the resolved mapping ``old`` lacks: compared with the value ``old``
    implies (:data:`IMPLIED_DERIVED_PATHS`), else new unless :func:`_unchanged_when_new`."""
    implied = IMPLIED_DERIVED_PATHS.get(path)
    was = None if implied is None else implied(old)
    if was is not None:
        if was != value:  # one change, old list → new list: item by item would bury the count's change
            out.append(Change(path, "changed", was, value))
    elif not _unchanged_when_new(path, value):
        out.append(Change(path, "new", None, value))


def _unchanged_when_new(path: str, value: Any) -> bool:
    """A key a newer runplan writes that changes nothing for a file resolved before it: null (a field a dense
    model leaves unset), a model-shape field at its default (``sliding_window: 0``, ``post_norms: false``:
    the shape every older runplan assumed), or one of :data:`ADDED_DERIVED_KEYS`."""
    if value is None or path.rsplit(".", 1)[-1] in ADDED_DERIVED_KEYS or ADDED_DERIVED_PATHS.fullmatch(path):
        return True
    field = path.removeprefix("model.shape.")
    if field == path or "." in field:
        return False
    from runplan.model import ModelShape

    info = ModelShape.model_fields.get(field)
    return info is not None and not info.is_required() and info.default == value


def _walk(path: str, old: Any, new: Any, rtol: float, out: list[Change]) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        old = _as_renamed(path, old, new)
        for key in old.keys() | new.keys():
            if key in VOLATILE_KEYS:
                continue
            sub = f"{path}.{key}" if path else str(key)
            if key not in new:
                out.append(Change(sub, "gone", old[key], None))
            elif key not in old:
                _new_key(sub, old, new[key], out)
            else:
                _walk(sub, old[key], new[key], rtol, out)
        return
    if isinstance(old, list) and isinstance(new, list):
        if _texts(old) and _texts(new) and sorted(old) != sorted(new):
            _walk_texts(path, old, new, out)
            return
        if len(old) != len(new):
            longer = new if len(new) > len(old) else old
            extra = tuple(longer[min(len(old), len(new)) :])
            out.append(Change(path, "length", len(old), len(new), extra=extra))
        for index, (a, b) in enumerate(zip(old, new, strict=False)):
            _walk(f"{path}[{index}]", a, b, rtol, out)
        return
    if _is_number(old) and _is_number(new):
        a, b = float(old), float(new)
        if not math.isclose(a, b, rel_tol=rtol, abs_tol=1e-12):  # (a nan is never close: always a change)
            relative = (b - a) / abs(a) if a and math.isfinite(a) and math.isfinite(b) else None
            out.append(Change(path, "changed", old, new, relative))
        return
    if old != new:
        out.append(Change(path, "changed", old, new))


def _texts(values: list[Any]) -> bool:
    return all(isinstance(value, str) for value in values)


def _walk_texts(path: str, old: list[str], new: list[str], out: list[Change]) -> None:
    """Two lists of strings (warnings, recompute modules) that hold different items: each item gone from the
    old list and each new one, at its own index. Compared item by item, one warning fewer at the top showed as
    every later warning "changed" into the next one."""
    gone, came = Counter(old) - Counter(new), Counter(new) - Counter(old)
    for index, item in enumerate(old):
        if gone[item] > 0:
            gone[item] -= 1
            out.append(Change(f"{path}[{index}]", "gone", item, None))
    for index, item in enumerate(new):
        if came[item] > 0:
            came[item] -= 1
            out.append(Change(f"{path}[{index}]", "new", None, item))


def _json_value(value: Any) -> Any:
    """A resolved value for JSON: a hand-written .nan or .inf as the string YAML spells it (JSON has none), in a
    mapping or list too (a whole section gone from a hand-edited file)."""
    if isinstance(value, float) and not math.isfinite(value):
        return ".nan" if math.isnan(value) else (".inf" if value > 0 else "-.inf")
    if isinstance(value, dict):
        return {key: _json_value(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_json_value(item) for item in value]
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _short(value: Any, width: int = 60) -> str:
    """``value`` in at most ``width`` terminal cells (report/format.cell_width: a CJK character takes two), spelt
    as in the plan file: ``true``, ``null``, a mapping or list as JSON (``{"batch_fraction": 0.5}``, not Python's
    ``{'batch_fraction': 0.5}``), a string quoted; a mapping or list too long is cut after a whole item
    (:func:`_short_items`), never inside a number."""
    if _is_number(value):
        return f"{value:.6g}"
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, dict | list | tuple):
        return _short_items(value, width)
    return _cut(repr(value), width)


def _cut(text: str, width: int) -> str:
    """``text`` whole if it fits ``width`` cells, else its longest head of at most ``width`` − 3 cells and
    '...': cut between characters, so a wide character is never halved (the line is then a cell shorter); below 3
    cells the dots alone, as many as fit."""
    if cell_width(text) <= width:
        return text
    dots = "..."[: max(width, 0)]
    head = ""
    for char in text:
        if cell_width(head + char) > width - len(dots):
            break
        head += char
    return head + dots


def _short_items(value: dict[Any, Any] | list[Any] | tuple[Any, ...], width: int) -> str:
    """A mapping or list as JSON in at most ``width`` cells: whole, else its leading items and how many more
    (``[924, 1848, 2772, ... 9 more]``: a number cut short would read as another item); the first item shortened
    itself where even it does not fit, and a mapping's first key too where it alone takes the room."""
    dumps = functools.partial(json.dumps, ensure_ascii=False, default=str)
    text = dumps(value)
    if cell_width(text) <= width:
        return text
    opening, closing = "{}" if isinstance(value, dict) else "[]"
    pairs = list(itertools.islice(value.items() if isinstance(value, dict) else enumerate(value), width))
    keyed = isinstance(value, dict)
    items = [f"{dumps(str(k))}: {dumps(v)}" if keyed else dumps(v) for k, v in pairs]
    best, head = "", opening
    for shown, item in enumerate(items[:-1] if len(items) == len(value) else items, start=1):
        head += (", " if shown > 1 else "") + item
        text = f"{head}, ... {len(value) - shown} more{closing}"
        if cell_width(text) > width:
            break
        best = text
    if best:
        return best
    rest = f", ... {len(value) - 1} more{closing}" if len(value) > 1 else closing
    key, first = pairs[0]
    # a key too long is cut inside its quotes ('"a_long_k...": 1'), leaving the value at least 10 cells
    budget = max(width - cell_width(opening + rest) - 13, 5)  # 13: '": ' and 10 cells of value
    key = _cut(dumps(str(key))[:-1], budget) + '": ' if keyed else ""
    room = max(width - cell_width(opening + key + rest), 10)
    text = _short(first, room) if isinstance(first, dict | list | tuple) else dumps(first)
    return f"{opening}{key}{_cut(text, room)}{rest}"


# ---- units for a reader (runplan diff): a key's name carries its unit, as in report/format.fmt_value ----
#: A formatter: (value, extra digits, the larger magnitude of the pair, currency) -> text. The larger
#: magnitude picks one scale for both sides (0.95 M → 1.21 M, not 948,236 → 1.21 M).
_Fmt = Callable[[float, int, float, str], str]


def _count(value: float, extra: int, ref: float, currency: str = "") -> str:
    """fmt_count's style (``70.55 B``, ``21.76 M``, ``491,679``); past P plain (2.1e+19, not 2.1e+04 P)."""
    if abs(ref) >= 1e18:
        return f"{value:.{3 + extra}g}"
    return fmt_count(value, scale_of=ref, extra_digits=extra)


def _duration(value: float, extra: int, ref: float, currency: str = "") -> str:
    """fmt_duration's text, its unit singular where it prints one (1 day beside 5 days: both in days)."""
    return _with_unit(*fmt_duration(value, scale_of=ref, extra_digits=extra).rsplit(" ", 1))


def _percent(value: float, extra: int, ref: float, currency: str = "") -> str:
    if 0 < abs(ref) < 0.01:  # 0.3% of 1% would print as 0.0%
        return f"{100 * value:.{2 + extra}g}%"
    return f"{value:.{1 + extra}%}"


def _money(value: float, extra: int, ref: float, currency: str = "") -> str:
    return f"{value:,.{extra}f} {currency}".rstrip()


def _price(value: float, extra: int, ref: float, currency: str = "") -> str:
    return f"{value:.{4 + extra}g} {currency + '/' if currency else 'per '}GPU-hour"


def _fixed(digits: int, unit: str = "", general: bool = False) -> _Fmt:
    """``value`` with ``digits`` decimals (or significant digits when ``general``), then ``unit``."""

    def fmt(value: float, extra: int, ref: float, currency: str = "") -> str:
        number = f"{value:.{digits + extra}g}" if general else f"{value:,.{digits + extra}f}"
        return _with_unit(number, unit)

    return fmt


#: a unit's counted part, up to a "/" or " per " (``GPUs`` in ``GPUs/node``, ``active params``, ``tokens`` in
#: ``tokens/s per GPU``), and the rest
_COUNTED_PART = re.compile(r"^(.*?)((?:/| per ).*)?$")


def _singular(unit: str) -> str:
    """``unit`` for a count of one: the last word of its counted part singular (``GPUs/node`` → ``GPU/node``,
    ``tokens/s per GPU`` → ``token/s per GPU``, ``failures per 1,000 node-days`` → ``failure per ...``, ``active
    params`` → ``active param``, ``micro-batches`` → ``micro-batch``), by English's regular plural: -ches, -shes,
    -sses and -xes drop ``es``, other words ending in s drop the ``s``. A unit symbol (s, B, W, MWh, σ, FLOP/s:
    two characters or fewer, or no final s) is kept."""
    found = _COUNTED_PART.match(unit)
    if found is None:
        return unit
    counted, rest = found.group(1), found.group(2) or ""
    words = counted.split(" ")
    noun = words[-1]
    if len(noun) <= 2 or not noun.endswith("s"):
        return unit
    cut = 2 if noun.endswith(("ches", "shes", "sses", "xes")) else 1
    return " ".join([*words[:-1], noun[:-cut]]) + rest


def _with_unit(number: str, unit: str) -> str:
    """``number unit``; the unit singular (:func:`_singular`) where the number as printed reads one (``1``,
    ``1.0000``: what the reader sees, so 1.0004 days printed ``1`` is ``1 day`` too), else as given (plural)."""
    try:
        one = float(number.replace(",", "")) == 1
    except ValueError:  # a count with its scale (1 M tokens): a million of them
        one = False
    return f"{number} {_singular(unit) if one else unit}".rstrip()


def _bytes(value: float, extra: int, ref: float, currency: str = "") -> str:
    return format_bytes(value, scale_of=ref, extra_digits=extra)


def _bandwidth(value: float, extra: int, ref: float, currency: str = "") -> str:
    return _bytes(value, extra, ref) + "/s"


def _gpu_hours(value: float, extra: int, ref: float, currency: str = "") -> str:
    return _with_unit(_count(value if extra else round(value), extra, ref), "GPU-hours")


def _counted(noun: str) -> _Fmt:
    """A count in :func:`_count`'s style, then what it counts (plural): ``12.58 M tokens``, ``512 GPUs``; singular
    where the count prints as 1 (:func:`_with_unit`: ``1 GPU``, ``1 GPU/node``)."""

    def fmt(value: float, extra: int, ref: float, currency: str = "") -> str:
        return _with_unit(_count(value, extra, ref), noun)

    return fmt


#: a loss, a law's irreducible loss E and a loss difference: nats per token (cross-entropy in natural log, the
#: unit of Hoffmann et al. 2022's L(N, D) and of every loss runplan reads; docs/scaling.md)
_NATS = _fixed(4, "nats/token")


_MONEY: tuple[_Fmt, ...] = (_money, _price)
#: The unit of a number by the end of its key, first match: (suffixes, formatter); a count names what it counts
#: (tokens, params, steps, GPUs, ...); a number no suffix matches (a parallel degree, a learning rate, a ratio, a
#: vector width: tests/test_diff_prints_every_number_with_its_unit.py names them) is printed as a bare count
_UNITS: tuple[tuple[tuple[str, ...], _Fmt], ...] = (
    (("bytes_per_param",), _fixed(4, "B/param", general=True)),
    (("tokens_per_param",), _fixed(4, "tokens/param", general=True)),
    (("bytes_per_s",), _bandwidth),
    (("bytes", "bytes_per_gpu", "bytes_per_node", "bytes_per_rank", "bytes_per_shard"), _bytes),
    (("seconds",), _duration),
    (("per_1000_node_days",), _fixed(3, "failures per 1,000 node-days", general=True)),
    (("days", "days_to_train"), _fixed(3, "days", general=True)),
    (("gpu_hours",), _gpu_hours),
    (("price_per_gpu_hour",), _price),
    # sweep.cost_usd is GPU-hours × the plan's price too: in the plan's currency despite its name
    (("cost", "_usd"), _money),
    (("mwh",), _fixed(1, "MWh")),
    (("watts",), _fixed(0, "W")),
    (("fraction", "goodput", "mfu", "hfu", "saving", "overhead", "tolerance"), _percent),
    (("bf16_flops", "fp8_flops"), _fixed(3, "FLOP/s", general=True)),  # a GPU's peak (hardware.GpuSpec)
    (("flops_per_token",), _counted("FLOPs/token")),
    (("flops", "flops_same_loss", "budgets"), _fixed(3, "FLOPs", general=True)),
    (("peak_lr", "final_lr", "lr_start", "lr_end"), _fixed(3, general=True)),
    (("loss", "loss_penalty"), _NATS),
    (("_sigma",), _fixed(4, "σ", general=True)),
    (("_per_param", "_factor"), _fixed(4, general=True)),
    (("tokens_per_second_per_gpu",), _counted("tokens/s per GPU")),
    (("tokens_per_second",), _counted("tokens/s")),
    # lengths in tokens: a sequence, a window, the positions a model was trained to, the vocabulary's entries
    (
        (
            "tokens",
            "tokens_min",
            "tokens_max",
            "seq_len",
            "vocab_size",
            "sliding_window",
            "max_position_embeddings",
            "learned_positions",
        ),
        _counted("tokens"),
    ),
    (("params",), _counted("params")),
    (("steps", "_step"), _counted("steps")),
    (("gpus_per_node",), _counted("GPUs/node")),
    (("gpus", "world_size"), _counted("GPUs")),
    (("nodes",), _counted("nodes")),
    (("sequences", "micro_batch", "examples"), _counted("sequences")),
    (("microbatches", "microbatches_per_replica"), _counted("micro-batches")),
    (("layers", "layers_per_stage", "global_every"), _counted("layers")),
    (("heads",), _counted("heads")),
    (("experts", "top_k"), _counted("experts")),
    (("router_groups", "router_group_topk"), _counted("groups")),
    (("checkpoints_per_run", "milestones", "generations"), _counted("checkpoints")),
    (("evaluations",), _counted("evaluations")),
    (("interruptions_per_day",), _counted("interruptions/day")),
    (("interruptions",), _counted("interruptions")),
    (("segments",), _counted("segments")),
    (("candidates", "feasible"), _counted("layouts")),
    (("training_runs", "runs_saved"), _counted("runs")),
    (("sizes", "sizes_per_budget"), _counted("sizes")),
    (("shards",), _counted("shards")),
    (("batches_max", "batches_min"), _counted("batches")),
    (("decades",), _fixed(3, "decades", general=True)),
)
#: Keys a suffix cannot tell (one letter): the law's irreducible loss E (Hoffmann et al. 2022 Eq. 2)
_UNIT_OF_KEY: dict[str, _Fmt] = {"E": _NATS}
#: The law's N and what is counted per it, where a mixture-of-experts plan counts active parameters only: it is
#: allocated on the compute it spends, C = 6·N_active·D, under the law rewritten in active parameters (Krajewski et
#: al. 2024; plan._law_params, ParametricLaw.for_moe), as its report's "law params" row says (809c090)
_ACTIVE_UNITS: dict[str, _Fmt] = {
    "allocation.params": _counted("active params"),
    "allocation.compute_optimal_params": _counted("active params"),
    "model.law_params": _counted("active params"),
    "allocation.tokens_per_param": _fixed(4, "tokens/active param", general=True),
}


def _is_moe(section: dict[str, Any]) -> bool:
    """A resolved section of a mixture-of-experts plan: experts in its model shape (ModelShape.is_moe), or a
    MoE total beside the allocation's N (allocation.moe_total_params) where the shape is absent."""
    model, allocation = section.get("model"), section.get("allocation")
    shape = model.get("shape") if isinstance(model, dict) else None
    if isinstance(shape, dict) and _is_number(shape.get("n_experts")):
        return bool(shape["n_experts"] > 0)
    return isinstance(allocation, dict) and _is_number(allocation.get("moe_total_params"))


def unit_of(path: str) -> _Fmt:
    """The formatter of the number at ``path``: by its key's suffix, or by its mapping's for the terms of one
    (``layout.best.memory_bytes.total`` is bytes, ``time_seconds.overhead`` seconds, and so is each entry of a
    ``..._bytes_by_stage`` mapping: ``memory_total_bytes_by_stage.first``)."""
    keys = re.sub(r"\[\d+\]", "", path).split(".")
    mapping = re.sub(r"_by_[a-z]+$", "", keys[-2]) if len(keys) > 1 else ""
    name = mapping if mapping.endswith(("_bytes", "_seconds")) else keys[-1]
    if name in _UNIT_OF_KEY:
        return _UNIT_OF_KEY[name]
    for suffixes, fmt in _UNITS:
        if name.lower().endswith(suffixes):
            return fmt
    return _count


def _shown(fmts: list[_Fmt], values: list[Any], *currencies: str) -> list[str]:
    """``values`` (one side, or old and new) each in its formatter of ``fmts`` (one per value: a MoE side's law N
    in active parameters), in one scale and with the fewest digits that tell the two apart; what is not a finite
    number as :func:`_short` writes it."""
    numbers = [float(v) for v in values if _is_number(v) and math.isfinite(v)]
    ref = max((abs(v) for v in numbers), default=0.0)
    texts: list[str] = []
    for extra in range(7):
        texts = [
            fmts[i](float(v), extra, ref, currencies[i] if i < len(currencies) else "")
            if _is_number(v) and math.isfinite(v)
            else _short(v)
            for i, v in enumerate(values)
        ]
        if len(set(texts)) == len(texts) or len(numbers) < 2:
            break
    return texts


def in_two_currencies(changes: list[Change], old_currency: str, new_currency: str) -> list[Change]:
    """``changes`` with no relative change for money (a cost, a price) when the two plans price in different
    currencies: 1,000 USD → 900 EUR is not −10% (:meth:`Change.readable` prints none either)."""
    if old_currency == new_currency:
        return changes
    return [
        replace(change, relative_change=None) if unit_of(change.path) in _MONEY else change
        for change in changes
    ]


def diff_changes(old: dict[str, Any], new: dict[str, Any], rtol: float = 1e-4) -> list[Change]:
    """Every derived value that moved beyond ``rtol``: the headline numbers first (days and cost leading, in
    HEADLINE_PATHS order), then the rest by section and path."""
    out: list[Change] = []
    _walk("", old, new, rtol, out)
    moe = (_is_moe(old), _is_moe(new))
    out = [replace(c, moe=moe) if c.path in _ACTIVE_UNITS and any(moe) else c for c in out]
    rank = {path: index for index, path in enumerate(HEADLINE_PATHS)}
    return sorted(out, key=lambda c: (rank.get(c.path, len(rank)), c.path))


def diff_resolved(old: dict[str, Any], new: dict[str, Any], rtol: float = 1e-4) -> list[str]:
    """Lines ``path: old → new (+x%)`` for every derived value that moved beyond ``rtol`` (diff_changes order)."""
    return [change.text() for change in diff_changes(old, new, rtol)]


#: A top-level ``resolved`` key, bare or quoted, with a comment or a flow value after it (``resolved:  # note``)
_RESOLVED_KEY = re.compile(r"""^(?:resolved|"resolved"|'resolved')\s*:(?:\s|$)""")


def updated_text(original: str, plan: RunPlan) -> str:
    """The plan file's own text with its ``resolved:`` section replaced by ``plan``'s numbers.

    The user's keys and comments are kept as written: the top-level ``resolved:`` block is cut (up to the next
    top-level key, keeping a column-0 comment there: it belongs to that key) and a fresh one appended at the
    end, as ``runplan plan -f yaml`` writes it. Only where the cut would change another key (a block the line
    rules misread) is the file written out again from its parsed keys, without its comments.
    """
    lines = original.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if _RESOLVED_KEY.match(line)]
    if not starts and "resolved" in original:  # (a first --update has none: nothing to parse)
        data = yaml.safe_load(original) or {}
        if "resolved" in data:  # written some way the match misses: the file is written again from its keys
            return resolved_document(data, plan, original)
    kept = _without_resolved_block(lines, starts[-1]) if starts else lines
    newline = "\r\n" if "\r\n" in original else "\n"  # the file's own line ending, kept in the new block
    head = "".join(kept).rstrip("\r\n") + newline
    body = yaml.safe_dump(
        {"resolved": resolved_section(plan)}, sort_keys=False, width=120, allow_unicode=True
    )
    text = head + body.replace("\n", newline)
    if starts and _keys_but_resolved(text) != _keys_but_resolved(original):
        return resolved_document(yaml.safe_load(original), plan, original)
    return text


def _without_resolved_block(lines: list[str], start: int) -> list[str]:
    """``lines`` without the ``resolved:`` block that begins at ``start`` (its indented lines, up to the next
    top-level key or the end); a column-0 comment inside the span is kept, as the next key's."""
    end = next(
        (
            i
            for i in range(start + 1, len(lines))
            if lines[i].strip() and not lines[i].startswith((" ", "\t", "#", "-"))
        ),
        len(lines),
    )
    comments = [line for line in lines[start + 1 : end] if line.startswith("#")]
    return lines[:start] + comments + lines[end:]


def _keys_but_resolved(text: str) -> Any:
    """The parsed document without ``resolved`` (what an --update must leave as it was)."""
    data = yaml.safe_load(text)
    return {k: v for k, v in data.items() if k != "resolved"} if isinstance(data, dict) else data
