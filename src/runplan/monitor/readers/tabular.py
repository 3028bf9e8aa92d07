"""Readers of structured logs: JSONL, CSV (incl. a W&B panel export), JSON scalars by tag, HF trainer state.

- JSONL: one JSON object per line (``{"step": 10, "loss": 2.3, ...}``); names map through the aliases.
- CSV: a header row, then one row per step. A W&B panel export names columns ``<run> - <metric>`` with
  ``<run> - <metric>__MIN``/``__MAX`` companions: the run prefix is dropped and the companions are left out.
- JSON scalars by tag (Megatron's export of its TensorBoard scalars, e.g. the release runs' golden values):
  ``{"<tag>": {"start_step": 1, "end_step": N, "step_interval": 5, "values": {"<step>": value | "nan"}}}``.
- Hugging Face ``trainer_state.json``: ``log_history`` holds one object per logging step (``loss``,
  ``grad_norm``, ``learning_rate``, ``step``) and per evaluation (``eval_loss``); ``save_steps`` and
  ``max_steps`` give the checkpoint interval and the run's length.

A value under a metric's name that is not a number (text, a list, an object) is bad input in all of these, as a
CSV cell is: one line naming the row, line or tag and step. These files are written by a program from numbers,
so such a value is corruption or a wrong column, and analysing around it would hide it. (A JSONL line that is
not JSON at all, as a crash mid-write leaves, is left out and counted in a note, up to 1% of the lines.)
"""

from __future__ import annotations

import csv
import io
import math
import re
from typing import Any

import numpy as np

from runplan.errors import SpecError
from runplan.monitor.aliases import canonical
from runplan.monitor.series import Rows, whole_steps
from runplan.monitor.words import counted

_WANDB_COLUMN = re.compile(r"^(?P<run>.+?) - (?P<metric>.+)$")


def _map_names(names: list[str]) -> tuple[dict[str, tuple[str, float]], list[str], str | None]:
    """Column name -> (canonical, factor) for the columns used, the ignored ones, and the step column."""
    used: dict[str, tuple[str, float]] = {}
    ignored: list[str] = []
    step: str | None = None
    for name in names:
        found = canonical(name)
        if found is None:
            ignored.append(name)
        elif found[0] == "step":
            step = step or name
        elif found[0] not in {c for c, _ in used.values()}:
            used[name] = found
        else:
            ignored.append(name)
    return used, ignored, step


def _value(raw: Any) -> float:
    if raw is None or raw == "":
        return math.nan
    if isinstance(raw, int | float):
        return float(raw)
    return float(str(raw).strip().replace(",", ""))


def _columns(
    rows_in: list[dict[str, Any]], used: dict[str, tuple[str, float]], where: str
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    values: dict[str, np.ndarray] = {}
    present: dict[str, np.ndarray] = {}
    for name, (target, factor) in used.items():
        column = np.full(len(rows_in), np.nan)
        has = np.zeros(len(rows_in), dtype=bool)
        for index, row in enumerate(rows_in):
            raw = row.get(name)
            if raw is None or raw == "" or isinstance(raw, bool):  # a JSON flag is not a metric value
                continue
            try:
                column[index] = _value(raw) * factor
            except (TypeError, ValueError):
                raise SpecError(
                    f"{where} row {index + 1}: '{name}' is {str(raw)[:40]!r}, not a number",
                    where="monitor.log",
                    hint="fix or delete that row",
                ) from None
            has[index] = True
        values[target], present[target] = column, has
    return values, present


def _steps(rows_in: list[dict[str, Any]], step: str | None, notes: list[str], where: str) -> np.ndarray:
    if step is None:
        notes.append(f"{where} has no step column: row order is used as the step")
        return np.arange(1, len(rows_in) + 1, dtype=np.int64)
    out = np.empty(len(rows_in), dtype=float)
    for index, row in enumerate(rows_in):
        try:
            out[index] = float(row[step])
        except (KeyError, TypeError, ValueError):
            raise SpecError(
                f"{where} row {index + 1}: step '{step}' is {str(row.get(step))[:40]!r}",
                where="monitor.log",
                hint="every row needs a whole step number",
            ) from None
    return whole_steps(out, where, "row")


def _mapped_rows(
    steps: Any, values: Any, present: Any, used: dict[str, Any], ignored: Any, notes: list[str] | None = None
) -> Rows:
    """Rows whose columns came through the alias map ``used`` (source name -> (metric, factor))."""
    return Rows(
        steps=steps,
        values=values,
        present=present,
        notes=list(notes or []),
        ignored_names=ignored,
        source_names={target: name for name, (target, _) in used.items()},
    )


def rows_from_dicts(rows_in: list[dict[str, Any]], where: str, notes: list[str] | None = None) -> Rows:
    names = list(dict.fromkeys(name for row in rows_in for name in row))
    used, ignored, step = _map_names(names)
    notes = list(notes or [])
    steps = _steps(rows_in, step, notes, where)
    values, present = _columns(rows_in, used, where)
    return _mapped_rows(steps, values, present, used, ignored, notes)


def read_jsonl(body: str, where: str) -> Rows:
    """One JSON object per line (see :mod:`runplan.monitor.readers.fastjsonl` for how it stays fast)."""
    from runplan.monitor.readers.fastjsonl import MISSING, UNREADABLE, columns

    raw, count, bad = columns(body, where)
    if count == 0:
        raise SpecError(
            f"{where}: no JSON object lines", where="monitor.log", hint="check the file or --format"
        )
    used, ignored, step = _map_names(list(raw))
    notes = _bad_line_notes(body, bad)
    if step is None:
        notes.append(f"{where} has no step key: line order is used as the step")
        steps = np.arange(1, count + 1, dtype=np.int64)
    else:
        column = raw[step]
        bad_rows = np.flatnonzero((column == MISSING) | (column == UNREADABLE) | ~np.isfinite(column))
        if bad_rows.size:
            line, _ = _object_line(body, int(bad_rows[0]), bad)
            raise SpecError(
                f"{where} line {line:,}: no whole number under '{step}'",
                where="monitor.log",
                hint="every line needs its step",
            )
        steps = whole_steps(column, where, "object")
    values, present = {}, {}
    for name, (target, factor) in used.items():
        unreadable = np.flatnonzero(raw[name] == UNREADABLE)
        if unreadable.size:  # as a CSV cell that is not a number: refused, naming the line and the key
            line, record = _object_line(body, int(unreadable[0]), bad)
            more = unreadable.size - 1
            raise SpecError(
                f"{where} line {line:,}: '{name}' is {_shown(record.get(name))}, not a number",
                where="monitor.log",
                hint="fix or delete that line"
                + (f"; {counted(more, 'more line')} {'is' if more == 1 else 'are'} like it" if more else ""),
            )
        has = raw[name] != MISSING
        values[target] = np.where(has, raw[name], np.nan) * factor
        present[target] = has
    return _mapped_rows(steps, values, present, used, ignored, notes)


def _bad_line_notes(body: str, bad: int) -> list[str]:
    """What the ``bad`` lines that are not JSON objects were, in the words a text or CSV log uses: a last line
    without its newline that does not parse is a record still being written (the engines end every line with one:
    ``print``, ``json.dump`` then ``\\n``); a line that opens an object and never closes it (``{"step": 151,
    "lo``) is a record cut mid-file (a crash mid-write, the restart appending after it), as Megatron's text log
    says of a record without its closing ``|``; the rest (a stray print, a line cut at its start) are counted.
    The lines are looked at only when some are bad, a live log's cut last line with one parse (``bad`` 1)."""
    from runplan.fileio import JsonInputError, parse_json

    if not bad:
        return []
    notes, left = [], bad
    start = body.rfind("\n") + 1
    if not body.endswith("\n") and body[start:].strip():
        try:
            whole = isinstance(parse_json(body[start:]), dict)
        except JsonInputError:
            whole = False
        if not whole:
            last = body.count("\n") + 1
            notes.append(f"the last line (line {last:,}) is cut short (still being written?); left out")
            body, left = body[:start], left - 1
    cut = [n for n, line in enumerate(body.split("\n"), 1) if _opens_and_never_closes(line)] if left else []
    if len(cut) == 1:
        notes.append(f"line {cut[0]:,} is cut short; left out")
    elif cut:
        notes.append(f"{counted(len(cut), 'line')} are cut short and left out (the first: line {cut[0]:,})")
    left -= len(cut)
    if left:
        which = "is not a JSON object was" if left == 1 else "are not JSON objects were"
        notes.append(f"{counted(left, 'line')} that {which} left out")
    return notes


def _opens_and_never_closes(line: str) -> bool:
    """A JSON object record cut short: it opens with ``{`` and does not end with the ``}`` a whole one ends with
    (a cut just after a nested object's ``}`` is not told, and is counted with the lines that are no object)."""
    stripped = line.strip()
    return stripped.startswith("{") and not stripped.endswith("}")


def _object_line(body: str, index: int, bad_lines: int) -> tuple[int, dict[str, Any]]:
    """(line number from 1, object) of the ``index``-th JSON object line (from 0), to name it in an error.
    Blank lines never count; lines that are not JSON objects are parsed and skipped only when the reader found
    some (``bad_lines``), so a clean file costs no parsing (this runs on the error path only)."""
    from runplan.fileio import JsonInputError, parse_json

    seen = -1
    for number, line in enumerate(body.split("\n"), start=1):  # split as fastjsonl splits
        if not line.strip():
            continue
        if bad_lines:
            try:
                if not isinstance(parse_json(line), dict):
                    continue
            except JsonInputError:
                continue
        seen += 1
        if seen == index:
            return number, parse_json(line)
    return index + 1, {}  # not reached: every object came from a line


def read_csv(text: str, where: str) -> Rows:
    reader = csv.reader(io.StringIO(text))
    try:
        header = next(reader)
    except StopIteration:
        raise SpecError(
            f"{where} is empty", where="monitor.log", hint="give a CSV with a header row"
        ) from None
    header, notes = _wandb_header(header, where)
    fast = _fast_numeric(text, header)
    if fast is not None:
        return fast
    records = [dict(zip(header, row, strict=False)) for row in reader if row]
    return rows_from_dicts(records, where, notes)


#: DeepSpeed's monitor CSV (``deepspeed/monitor/csv_monitor.py``, commit edaa7221): one file per event, named
#: after its tag (``Train/Samples/train_loss`` -> ``Train_Samples_train_loss.csv``), header ``step,<last part of
#: the tag>``; the engine writes every ``Train/Samples/*`` event at ``self.global_samples``
#: (``deepspeed/runtime/engine.py``, ``pipe/engine.py``), the samples seen, not the step
_DEEPSPEED_CSV = re.compile(r"^Train_Samples_(?P<leaf>\w+)\.csv$")


def deepspeed_samples_to_steps(rows: Rows, name: str, header: str, where: str) -> Rows:
    """A DeepSpeed monitor CSV's ``step`` column is samples: each step adds the global batch
    (``global_samples += train_batch_size()`` in ``_take_model_step``), so after step k it holds k × batch;
    steps are the samples ÷ their greatest common divisor (the batch, when it is constant), said in a note."""
    match = _DEEPSPEED_CSV.match(name)
    if match is None or header.strip().replace("\r", "") != f"step,{match['leaf']}" or rows.steps.size == 0:
        return rows
    batch = int(np.gcd.reduce(np.abs(rows.steps)))
    if batch <= 1:
        return rows
    rows.steps = rows.steps // batch
    rows.notes.append(
        f"{where} is DeepSpeed's monitor CSV: its step column counts samples; steps = samples ÷ {batch:,} "
        "(their greatest common divisor, the global batch if it was constant)"
    )
    return rows


def _wandb_header(header: list[str], where: str) -> tuple[list[str], list[str]]:
    """A W&B panel export: drop the run prefix and the __MIN/__MAX companions (one run per file)."""
    runs = {m["run"] for name in header if (m := _WANDB_COLUMN.match(name))}
    if not runs:
        return header, []
    if len(runs) > 1:
        raise SpecError(
            f"{where} holds {len(runs)} runs ({', '.join(sorted(runs)[:3])}...)",
            where="monitor.log",
            hint="export one run per file",
        )
    out = []
    for name in header:
        match = _WANDB_COLUMN.match(name)
        metric = match["metric"] if match else name
        out.append("" if metric.endswith(("__MIN", "__MAX")) else metric)
    return out, [f"W&B export of run '{runs.pop()}'"]


def _fast_numeric(text: str, header: list[str]) -> Rows | None:
    """Every cell a number or empty (the usual case): numpy's C parser reads the whole body at once; an empty
    cell is "not logged", kept apart from a written nan by a sentinel. None: use the row-by-row reader."""
    from runplan.monitor.readers.fastjsonl import MISSING

    body = text.split("\n", 1)[1].replace("\r", "") if "\n" in text else ""
    if not body.strip() or '"' in body:
        return None
    fill = f",{MISSING!r},"
    body = body.replace(",,", fill).replace(",,", fill)
    body = body.replace(",\n", f",{MISSING!r}\n").replace("\n,", f"\n{MISSING!r},")
    if body.startswith(","):
        body = f"{MISSING!r}" + body
    if body.endswith(","):
        body += f"{MISSING!r}"
    try:
        table = np.loadtxt(io.StringIO(body), delimiter=",", dtype=np.float64, ndmin=2)
    except ValueError:
        return None
    if table.shape[1] != len(header):
        return None
    used, ignored, step = _map_names([name for name in header if name])
    if step is None:
        return None
    index = {name: i for i, name in enumerate(header)}
    steps = table[:, index[step]]
    if (steps == MISSING).any() or not np.isfinite(steps).all():
        return None  # the row-by-row reader names the bad row
    values, present = {}, {}
    for name, (target, factor) in used.items():
        column = table[:, index[name]]
        present[target] = column != MISSING
        values[target] = np.where(present[target], column, np.nan) * factor
    try:
        whole = whole_steps(steps, "", "row")
    except SpecError:
        return None  # the row-by-row reader names the bad row
    return _mapped_rows(whole, values, present, used, ignored)


def read_scalars_json(data: dict[str, Any], where: str) -> Rows:
    """Megatron's export: tag -> {"values": {step: value}}; tags aligned on the union of their steps."""
    series: dict[str, tuple[str, float, dict[str, Any]]] = {}
    ignored: list[str] = []
    for tag, body in data.items():
        found = canonical(tag)
        if not isinstance(body, dict) or not isinstance(body.get("values"), dict):
            raise SpecError(
                f"{where}: tag '{tag}' has no 'values' map of step -> value",
                where="monitor.log",
                hint='expected {"<tag>": {"values": {"<step>": value}}}',
            )
        if found is None or found[0] == "step" or found[0] in {c for c, _, _ in series.values()}:
            ignored.append(tag)
            continue
        series[tag] = (found[0], found[1], body["values"])
    keys = [_step_key(tag, step, where) for tag, (_, _, values) in series.items() for step in values]
    whole_steps(keys, where, "step key")  # in file order, so the position named is the key's
    all_steps = sorted(set(keys))
    steps = np.asarray(all_steps, dtype=np.int64)
    position = {step: i for i, step in enumerate(all_steps)}
    values, present = {}, {}
    for tag, (target, factor, raw) in series.items():
        column = np.full(steps.size, np.nan)
        has = np.zeros(steps.size, dtype=bool)
        for step, value in raw.items():
            if isinstance(value, bool):  # a JSON flag is not a metric value (as in JSONL)
                continue
            slot = position[int(step)]
            column[slot] = _scalar(tag, step, value, where) * factor
            has[slot] = True
        values[target], present[target] = column, has & ~_placeholders(steps, column, has)
    return Rows(
        steps=steps,
        values=values,
        present=present,
        ignored_names=ignored,
        source_names={target: tag for tag, (target, _, _) in series.items()},
    )


def _placeholders(steps: np.ndarray, column: np.ndarray, has: np.ndarray) -> np.ndarray:
    """The "nan" entries of one tag that are Megatron's "nothing logged here", not values: the export writes
    every tag at every step of its ``step_interval`` grid, so a tag logged more sparsely (``iteration-time``
    every 100 steps where timers are logged at interval 100) has "nan" at every grid step in between. A nan
    off the tag's own grid is such a placeholder: that grid is the spacing of its finite values, when it is
    sparser than the export's and every finite value after the first lies on it (a regular logging
    interval; nans scattered through a tag's values leave none). A nan on that grid, or in a tag logged at
    every grid step (the loss), is a value written as nan and stays one."""
    none = np.zeros(steps.size, dtype=bool)
    finite = has & np.isfinite(column)
    tag_steps, finite_steps = steps[has], steps[finite]
    if finite_steps.size < _REGULAR_POINTS:
        return none
    own = int(np.median(np.diff(finite_steps)))
    if own <= int(np.median(np.diff(tag_steps))):
        return none
    phases = np.unique(finite_steps[1:] % own)
    if phases.size != 1:
        return none
    return has & ~np.isfinite(column) & (steps % own != phases[0])


#: Finite values a tag needs before its own logging interval is trusted to tell placeholders from values.
_REGULAR_POINTS = 4


def _step_key(tag: str, key: str, where: str) -> int:
    try:
        return int(key)
    except ValueError:
        raise SpecError(
            f"{where}: tag '{tag}' has step key {key[:40]!r}, not a whole number",
            where="monitor.log",
            hint="fix or delete that entry of its 'values' map",
        ) from None


def _scalar(tag: str, step: str, value: Any, where: str) -> float:
    """One value of a tag's ``values`` map; anything but a number, null or a numeric string (Megatron writes
    "nan") is one line naming the tag and the step, as a CSV cell names its row."""
    try:
        return _value(value)
    except (TypeError, ValueError):
        raise SpecError(
            f"{where}: tag '{tag}' step {step}: the value is {_shown(value)}, not a number",
            where="monitor.log",
            hint="fix or delete that value",
        ) from None


def _shown(value: Any) -> str:
    """A bad value as the file has it, cut to 40 characters (a list or object as JSON, not Python)."""
    import json

    text = value if isinstance(value, str) else json.dumps(value)
    return repr(text[:40]) if isinstance(value, str) else text[:40]


def read_hf_state(data: dict[str, Any], where: str) -> Rows:
    history = data.get("log_history")
    if not isinstance(history, list):
        raise SpecError(
            f"{where}: no 'log_history' list", where="monitor.log", hint="give trainer_state.json"
        )
    entries = [entry for entry in history if isinstance(entry, dict) and "train_runtime" not in entry]
    rows = rows_from_dicts(entries, where)
    for key, attribute in (("save_steps", "checkpoint_interval_steps"), ("max_steps", "total_steps")):
        value = data.get(key)
        if isinstance(value, int) and value > 0:
            setattr(rows, attribute, value)
    return rows
