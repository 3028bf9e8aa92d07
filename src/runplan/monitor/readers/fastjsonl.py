"""JSONL at the speed issue 13 asks for (1,000,000 steps in ≤ 5 s on 2 cores).

Parsing a million lines one ``json.loads`` call each costs about 6 µs a line in call overhead alone, so the
file is cut at line ends into one chunk per usable core (processes forked, so the text is shared, not copied),
and each chunk is parsed as one JSON array (``[`` + lines joined by ``,`` + ``]``) by the C scanner. Columns
are built with one list comprehension per key, a missing key marked by a sentinel so "not logged" stays
distinct from a logged NaN. A chunk that is not valid as a whole (a blank or broken line) is parsed line by
line, and its bad lines are counted and said.
"""

from __future__ import annotations

import itertools
import os
from operator import itemgetter
from typing import Any

import numpy as np

from runplan.errors import SpecError
from runplan.fileio import JsonInputError, parse_json

#: Stands for "this row has no such key" inside float columns (no real metric takes this value).
MISSING = -9.87654321e305
#: Stands for "this row has the key, but its value is text, a list or an object": an error under a metric's key
#: (the reader names the line), nothing under a key it does not use (a run name, a date).
UNREADABLE = -9.87654321e304
#: Below this many characters the file is parsed in this process (forking costs more than it saves).
PARALLEL_CHARS = 20_000_000
_BODY = ""  # the text being parsed; a module global so forked workers share it without copying


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _bounds(body: str, parts: int) -> list[tuple[int, int]]:
    size = len(body)
    cuts = [0]
    for part in range(1, parts):
        at = body.find("\n", size * part // parts)
        if at < 0:
            break
        cuts.append(at + 1)
    cuts.append(size)
    return [(a, b) for a, b in itertools.pairwise(cuts) if b > a]


def _records(text: str) -> tuple[list[Any], int, int | None]:
    """(JSON objects, lines that were not objects, offset of the first bad line within the chunk)."""
    stripped = text.strip()
    if not stripped:
        return [], 0, None
    try:
        items = parse_json("[" + stripped.replace("\n", ",") + "]")
        bad = sum(1 for item in items if not isinstance(item, dict))
        return [item for item in items if isinstance(item, dict)] if bad else items, bad, None
    except JsonInputError:
        pass
    records, bad, first_bad = [], 0, None
    for number, line in enumerate(stripped.split("\n")):
        if not line.strip():
            continue
        try:
            item = parse_json(line)
        except JsonInputError:
            item = None
        if isinstance(item, dict):
            records.append(item)
        else:
            bad += 1
            first_bad = number if first_bad is None else first_bad
    return records, bad, first_bad


def _chunk(bounds: tuple[int, int]) -> tuple[dict[str, np.ndarray], int, int, int | None]:
    """Columns of one chunk: name -> float64 (``MISSING`` where the row lacks the key)."""
    start, end = bounds
    records, bad, first_bad = _records(_BODY[start:end])
    names = list(dict.fromkeys(key for record in records[:2000] for key in record))
    seen = set(names)
    for record in records:  # keys that first appear late (a canary every N steps, an eval line)
        if len(record) > len(seen) or not seen.issuperset(record):
            for key in record:
                if key not in seen:
                    seen.add(key)
                    names.append(key)
    columns = {}
    for name in names:
        try:  # a key on every line (the usual case): itemgetter runs in C
            raw = list(map(itemgetter(name), records))
        except KeyError:
            raw = [record.get(name, MISSING) for record in records]
        try:
            column = np.array(raw, dtype=np.float64)
        except (TypeError, ValueError):
            column = None
        if column is not None and column.ndim == 1:
            # numpy reads true/false as 1.0/0.0; JSON booleans are flags, not metric values (as text is not)
            for index in np.flatnonzero((column == 0.0) | (column == 1.0)):
                if isinstance(raw[index], bool):
                    column[index] = MISSING
        columns[name] = column if column is not None and column.ndim == 1 else _column_slowly(raw, name)
    return columns, len(records), bad, first_bad


def _column_slowly(raw: list[Any], name: str) -> np.ndarray:
    out = np.empty(len(raw))
    for index, value in enumerate(raw):
        if isinstance(value, bool):  # a flag, not a value (an absent key is MISSING already and stays so)
            out[index] = MISSING
            continue
        try:
            out[index] = np.nan if value is None else float(value)
        except (TypeError, ValueError):
            out[index] = UNREADABLE
    return out


def columns(body: str, where: str) -> tuple[dict[str, np.ndarray], int, int]:
    """name -> float64 column over every object line of ``body`` (``MISSING`` where absent), the row
    count and the number of lines that were not JSON objects."""
    global _BODY
    parts = min(_cores(), 8) if len(body) > PARALLEL_CHARS else 1
    _BODY = body
    try:
        results = _run(_bounds(body, parts))
    finally:
        _BODY = ""
    rows = sum(count for _, count, _, _ in results)
    bad = sum(b for _, _, b, _ in results)
    if bad > max(10, (rows + bad) // 100):
        raise SpecError(
            f"{where}: {bad:,} lines are not JSON objects",
            where="monitor.log",
            hint="a JSONL log holds one JSON object per line; check the file or --format",
        )
    names = list(dict.fromkeys(name for cols, _, _, _ in results for name in cols))
    merged = {
        name: np.concatenate([cols.get(name, np.full(count, MISSING)) for cols, count, _, _ in results])
        for name in names
    }
    return merged, rows, bad


def _run(bounds: list[tuple[int, int]]) -> list[tuple[dict[str, np.ndarray], int, int, int | None]]:
    if len(bounds) <= 1:
        return [_chunk(b) for b in bounds]
    import multiprocessing

    try:
        context = multiprocessing.get_context("fork")
        with context.Pool(len(bounds)) as pool:
            return pool.map(_chunk, bounds)
    except (OSError, ValueError):  # no fork on this platform, or no processes allowed: one process
        return [_chunk(b) for b in bounds]
