"""A run's metrics as aligned arrays, one row per logged step, and how a reader's rows become that.

Readers hand over rows in the order the log holds them (:class:`Rows`); :func:`assemble` sorts them by step,
keeps the later value where a step was logged twice (a restart from a checkpoint repeats steps: the values
after the restart are the ones the model went on from; what the abandoned attempt logged past the steps the
run has reached again is left out), records the restarts, turns rows in which every
metric is "nan" into "not logged" (Megatron's TensorBoard export writes "nan" where nothing was logged), and
says each of these things in ``notes``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from runplan.errors import SpecError
from runplan.monitor.words import counted, steps_text

#: A backward jump of the step counter is a restart when there are few of them; more than this many (and more
#: than 1% of the rows) means the rows are not in step order at all (shuffled or concatenated out of order).
MAX_RESTARTS = 20


class NoRecords(SpecError):
    """A log with nothing to read yet (``--follow`` waits on it; otherwise it is bad input)."""


@dataclass(frozen=True)
class Restart:
    """The log went back from ``last_step`` to ``resumed_step``: a restart from a checkpoint. The run did steps
    ``resumed_step``-``redone_to`` again (``redone_to`` ≤ ``last_step``: the later attempts may not have reached
    as far as the abandoned one; None: as far, ``last_step``)."""

    last_step: int
    resumed_step: int
    redone_to: int | None = None

    @property
    def last_redone(self) -> int:
        return self.last_step if self.redone_to is None else self.redone_to

    @property
    def redone(self) -> int:
        """Steps done again (at least 0: a later attempt that never reached its resume step redid none)."""
        return max(0, self.last_redone - self.resumed_step + 1)


def restarts_at(steps: np.ndarray, back: np.ndarray) -> list[Restart]:
    """The restarts at the indices ``back`` of backward jumps of ``steps`` (in file order): each redid the steps
    from where it resumed up to the abandoned attempt's last one or as far as the later rows reach, if less."""
    if back.size == 0:
        return []
    reach_after = np.maximum.accumulate(steps[::-1])[::-1]  # the furthest step at or after each row
    return [
        Restart(int(steps[i]), int(steps[i + 1]), min(int(steps[i]), int(reach_after[i + 1]))) for i in back
    ]


@dataclass
class Rows:
    """What a reader found, in file order: steps and, per canonical metric, values aligned with them."""

    steps: np.ndarray  # int64
    values: dict[str, np.ndarray]  # float64, NaN where the row has no value (see ``present``)
    present: dict[str, np.ndarray]  # bool: the row carries this metric (a written "nan" is present)
    notes: list[str] = field(default_factory=list)
    saved_steps: list[int] = field(default_factory=list)
    total_steps: int | None = None
    checkpoint_interval_steps: int | None = None
    ignored_names: list[str] = field(default_factory=list)
    source_names: dict[str, str] = field(default_factory=dict)  # canonical -> name as written
    restarts: list[Restart] | None = None  # given by readers whose rows are not in file order (TensorBoard)
    # step time of each row an abandoned attempt logged and the run did again or never reached (NaN: not logged)
    abandoned_seconds: np.ndarray = field(default_factory=lambda: np.empty(0))


@dataclass
class MetricLog:
    """Metrics of one run, sorted by step, one row per step that has any value."""

    source: str
    format: str
    steps: np.ndarray  # int64, strictly increasing
    values: dict[str, np.ndarray]  # float64, NaN where not logged or not finite
    nonfinite: dict[str, np.ndarray]  # bool: the log wrote nan/inf here
    notes: list[str]
    saved_steps: list[int]
    restarts: list[Restart]
    repeated_steps: int
    total_steps: int | None
    checkpoint_interval_steps: int | None
    interval_steps: int
    gaps: list[tuple[int, int]]
    source_names: dict[str, str]
    #: step time of each row an abandoned attempt logged that is not in ``steps`` (NaN where it logged none): the
    #: time a restart cost, for the goodput
    abandoned_seconds: np.ndarray = field(default_factory=lambda: np.empty(0))

    def has(self, name: str) -> bool:
        return name in self.values and bool(np.isfinite(self.values[name]).any())

    def points(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(steps, values) of the finite values of one metric."""
        values = self.values[name]
        finite = np.isfinite(values)
        return self.steps[finite], values[finite]


#: Largest step counter accepted: a trillion optimizer steps (the longest published runs take about 10^6); a
#: larger value is a corrupt line, and above 2^63 it would not fit the int64 step arrays at all.
MAX_STEP = 10**12


def whole_steps(values: Sequence[float] | np.ndarray, where: str, noun: str = "entry") -> np.ndarray:
    """int64 steps from the numbers a reader found; a step that is not a whole number in [0, MAX_STEP] is a
    one-line SpecError naming its ``noun`` (row, object) by position, not an overflow or a silent wrap-around."""
    if isinstance(values, np.ndarray):
        numbers = values.astype(float)
    else:  # Python ints of any size: those past the bound become inf before numpy sees them
        numbers = np.array([float(v) if abs(v) <= MAX_STEP else math.inf for v in values], dtype=float)
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(numbers) | (numbers < 0) | (numbers > MAX_STEP) | (numbers != np.floor(numbers))
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        value = values[first]
        shown = f"{value:g}" if isinstance(value, float) else str(value)[:40]
        raise SpecError(
            f"{where}: {noun} {first + 1} has step {shown}, not a whole number from 0 to {MAX_STEP:,}",
            where="monitor.log",
            hint="fix or delete that line: its step counter is corrupt",
        )
    return numbers.astype(np.int64)


def rows_from_lists(steps: list[int], records: list[dict[str, float]], where: str = "the log") -> Rows:
    """:class:`Rows` from per-row dicts of canonical name -> value (the text readers' output)."""
    names = sorted({name for record in records for name in record})
    values, present = {}, {}
    for name in names:  # a column at a time: numpy converts None (not logged in that row) to nan
        column = [record.get(name) for record in records]
        present[name] = np.array([value is not None for value in column], dtype=bool)
        values[name] = np.array(column, dtype=np.float64)
    return Rows(steps=whole_steps(steps, where, "logged step"), values=values, present=present)


def assemble(rows: Rows, source: str, fmt: str) -> MetricLog:
    """Sort, de-duplicate and annotate a reader's rows (see the module docstring)."""
    notes = list(rows.notes)
    steps = rows.steps
    if steps.size == 0 or not rows.values:
        raise NoRecords(f"'{source}': no metric records found", where="monitor.log", hint=_FORMAT_HINT)
    restarts, order = _restarts(steps, notes)
    if rows.restarts is not None:
        restarts = rows.restarts
    elif restarts:  # rows in file order: an abandoned attempt's rows past its restart point are not the run's
        rows, steps = _without_abandoned(rows, notes)
        order = np.arange(steps.size)
    if steps.size > 1 and bool(np.all(np.diff(steps) > 0)):  # already one row per step, in order (usual)
        nonfinite = _nonfinite(rows)
        return _finish(rows, source, fmt, notes, restarts, steps, dict(rows.values), nonfinite, 0)
    unique, inverse = np.unique(steps, return_inverse=True)
    repeated = _steps_logged_twice(rows, inverse, unique.size)
    values, nonfinite = {}, {}
    for name in rows.values:
        values[name], nonfinite[name] = _last_per_step(
            rows.values[name], rows.present[name], inverse, unique.size, order
        )
    return _finish(rows, source, fmt, notes, restarts, unique, values, nonfinite, repeated)


def _steps_logged_twice(rows: Rows, inverse: np.ndarray, size: int) -> int:
    """Steps with a metric written in more than one row. Rows of one step with different metrics are one record
    in parts, not a step logged twice: Megatron's ``validation loss at iteration N`` and torchtitan's
    ``validate step: N`` follow the training line of step N; counting them would say "logged more than once"
    and charge a step's time to the goodput (``vs_plan._goodput``) for each evaluation."""
    twice = np.zeros(size, dtype=bool)
    for present in rows.present.values():
        twice |= np.bincount(inverse[present], minlength=size) > 1
    return int(np.count_nonzero(twice))


def _nonfinite(rows: Rows) -> dict[str, np.ndarray]:
    out = {}
    for name, values in rows.values.items():
        bad = rows.present[name] & ~np.isfinite(values)
        rows.values[name] = np.where(bad, np.nan, values)
        out[name] = bad
    return out


def _finish(
    rows: Rows,
    source: str,
    fmt: str,
    notes: list[str],
    restarts: list[Restart],
    unique: np.ndarray,
    values: dict[str, np.ndarray],
    nonfinite: dict[str, np.ndarray],
    repeated: int,
) -> MetricLog:
    unique, values, nonfinite = _drop_unlogged(unique, values, nonfinite, notes)
    if unique.size == 0:
        raise SpecError(
            f"'{source}': every value is nan or missing", where="monitor.log", hint="check the log"
        )
    interval, gaps = _interval_and_gaps(unique, values, nonfinite, notes)
    if repeated:
        notes.append(f"{repeated:,} steps were logged more than once; the later values are used")
    if rows.ignored_names:
        shown = ", ".join(sorted(rows.ignored_names)[:8])
        more = len(rows.ignored_names) - 8
        notes.append(f"not used: {shown}" + (f" and {more} more" if more > 0 else ""))
    return MetricLog(
        source=source,
        format=fmt,
        steps=unique,
        values=values,
        nonfinite=nonfinite,
        notes=notes,
        saved_steps=sorted(set(rows.saved_steps)),
        restarts=restarts,
        repeated_steps=repeated,
        total_steps=rows.total_steps,
        checkpoint_interval_steps=rows.checkpoint_interval_steps,
        interval_steps=interval,
        gaps=gaps,
        source_names=dict(rows.source_names),
        abandoned_seconds=rows.abandoned_seconds,
    )


_FORMAT_HINT = "check the file, or name its format with --format"


def _restarts(steps: np.ndarray, notes: list[str]) -> tuple[list[Restart], np.ndarray]:
    """Backward jumps of the step counter: restarts when few, else the rows are out of order (sorted)."""
    back = np.flatnonzero(np.diff(steps) < 0)
    order = np.arange(steps.size)
    if back.size == 0:
        return [], order
    if back.size > MAX_RESTARTS and back.size > 0.01 * steps.size:
        notes.append(
            f"the steps are not in order ({back.size:,} places where the step goes back); sorted by step, "
            "and where a step occurs twice the later row is used"
        )
        return [], order
    return restarts_at(steps, back), order


def _without_abandoned(rows: Rows, notes: list[str]) -> tuple[Rows, np.ndarray]:
    """``rows`` less the rows an attempt logged at or past the step the next attempt resumed from: the run went
    on from the checkpoint, so those steps are either logged again (the later values) or never reached. Kept,
    a spike of the abandoned attempt past the new end read as still open."""
    steps = rows.steps
    keep = np.ones(steps.size, dtype=bool)
    for i in np.flatnonzero(np.diff(steps) < 0):
        keep[: i + 1] &= steps[: i + 1] < steps[i + 1]
    beyond = rows.steps[~keep]
    beyond = beyond[beyond > steps[keep].max()] if keep.any() else beyond
    if beyond.size:
        notes.append(
            f"{counted(int(beyond.size), 'row')} an abandoned attempt logged past where the run has reached "
            f"({steps_text(int(beyond.min()), int(beyond.max()))}) left out: the run went on from a checkpoint before them"
        )
    kept = replace(
        rows,
        abandoned_seconds=np.concatenate((rows.abandoned_seconds, _abandoned_seconds(rows, keep))),
        steps=steps[keep],
        values={name: v[keep] for name, v in rows.values.items()},
        present={name: p[keep] for name, p in rows.present.items()},
    )
    return kept, kept.steps


def _abandoned_seconds(rows: Rows, keep: np.ndarray) -> np.ndarray:
    """Step time of each step the abandoned rows stand for (NaN: none logged). Rows next to each other at one
    step are one record in parts (DeepSpeed's learning-rate line and its loss line, a Megatron validation line
    after its iteration): one step, charged once to the goodput, at the time a part logged."""
    index = np.flatnonzero(~keep)
    seconds = rows.values.get("step_seconds")
    times = seconds[index] if seconds is not None else np.full(index.size, np.nan)
    if index.size == 0:
        return times
    steps = rows.steps[index]
    starts = np.r_[True, (steps[1:] != steps[:-1]) | (index[1:] != index[:-1] + 1)]
    group = np.cumsum(starts) - 1
    timed = np.isfinite(times)
    group_timed = np.zeros(int(group[-1]) + 1, dtype=bool)
    np.logical_or.at(group_timed, group, timed)
    return times[timed | (starts & ~group_timed[group])]


def _last_per_step(
    values: np.ndarray, present: np.ndarray, inverse: np.ndarray, size: int, order: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per unique step, the value of the last row that carries the metric; and whether it was nan/inf."""
    rows = order[present[order]]
    slots = inverse[rows]
    # the last occurrence in file order: unique on the reversed sequence keeps the first, i.e. the last
    reversed_slots = slots[::-1]
    _, first = np.unique(reversed_slots, return_index=True)
    chosen = rows[::-1][first]
    out = np.full(size, np.nan)
    bad = np.zeros(size, dtype=bool)
    picked = values[chosen]
    finite = np.isfinite(picked)
    out[reversed_slots[first][finite]] = picked[finite]
    bad[reversed_slots[first][~finite]] = True
    return out, bad


def _drop_unlogged(
    steps: np.ndarray, values: dict[str, np.ndarray], nonfinite: dict[str, np.ndarray], notes: list[str]
) -> tuple[np.ndarray, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Rows where every metric the log has is nan/inf: nothing was logged there (said, then dropped)."""
    names = list(values)
    finite_any = np.zeros(steps.size, dtype=bool)
    bad_all = np.ones(steps.size, dtype=bool)
    for name in names:
        finite_any |= np.isfinite(values[name])
        bad_all &= nonfinite[name]
    if len(names) > 1 and bad_all.any():
        for start, end in _runs(steps, bad_all)[:5]:
            notes.append(f"{steps_text(start, end)}: every metric is nan (nothing was logged there)")
    elif len(names) == 1:
        bad_all[:] = False  # one metric: a nan is a value, left for the NaN detector
    keep = finite_any | (~bad_all & np.logical_or.reduce([nonfinite[n] for n in names]))
    return (
        steps[keep],
        {name: values[name][keep] for name in names},
        {name: nonfinite[name][keep] & ~bad_all[keep] for name in names},
    )


def _runs(steps: np.ndarray, mask: np.ndarray) -> list[tuple[int, int]]:
    """(first step, last step) of each run of consecutive True rows."""
    edges = np.diff(np.concatenate(([0], mask.astype(np.int8), [0])))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1) - 1
    return [(int(steps[a]), int(steps[b])) for a, b in zip(starts, ends, strict=True)]


def _interval_and_gaps(
    steps: np.ndarray, values: dict[str, np.ndarray], nonfinite: dict[str, np.ndarray], notes: list[str]
) -> tuple[int, list[tuple[int, int]]]:
    """The usual logging interval (median step difference of the loss, else of any row) and the gaps. A loss
    logged as nan or inf was logged: it is a finding for the NaN detector, not a hole in the log."""
    has_loss = np.isfinite(values["loss"]) | nonfinite["loss"] if "loss" in values else None
    logged = steps[has_loss] if has_loss is not None and has_loss.sum() > 1 else steps
    if logged.size < 2:
        return 1, []
    diffs = np.diff(logged)
    interval = max(1, int(np.median(diffs)))
    if interval > 1:
        notes.append(f"logged every {interval} steps: every event step is known to within {interval} steps")
    big = np.flatnonzero(diffs > max(3 * interval, interval + 10))
    gaps = [(int(logged[i]) + 1, int(logged[i + 1]) - 1) for i in big]
    for start, end in gaps[:5]:
        notes.append(f"nothing logged for steps {start:,}-{end:,}")
    if len(gaps) > 5:
        notes.append(f"and {len(gaps) - 5} more gaps in the log")
    return interval, gaps
