"""Vectorised trailing statistics over a metric's logged points (numpy cumulative sums, O(n)).

Every baseline is *trailing*: the point itself is not in it, so a spike cannot lift its own baseline. Points
flagged by a detector are masked out and the baseline recomputed (a few passes), so a spike several points
long is measured against the level before it, not against its own first points.

A window is given in steps and holds at most its count of logged points (the steps ÷ the logging interval, or
a detector's minimum count) *and* only points within its span in steps (that count × the interval) before the
point: on a regularly logged series the two bounds are the same points, and after a hole in the log the span
keeps the window from reaching back to stale data (a concatenation of BLOOM's excerpts from steps 31,214 and
42,780 otherwise measured 42,783 against steps 31,214-31,251).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def window_points(window_steps: int, interval_steps: int, least: int = 1) -> int:
    """A window given in steps, in logged points of a metric logged every ``interval_steps``."""
    return max(least, round(window_steps / max(1, interval_steps)))


@dataclass(frozen=True)
class Window:
    """A trailing window of at most ``points`` logged points, none more than ``span_steps`` steps before the
    point: ``first[i]`` is the first index point i's window may reach by steps."""

    points: int
    span_steps: int
    first: np.ndarray

    @classmethod
    def over(cls, steps: np.ndarray, points: int, interval_steps: int) -> Window:
        """The window of ``points`` points over ``steps``, spanning ``points`` × ``interval_steps`` steps (the
        steps ``points`` regularly logged points cover)."""
        span = points * max(1, interval_steps)
        return cls(points, span, np.searchsorted(steps, steps - span, side="left"))

    def low(self, offset: int = 0, points: int | None = None) -> np.ndarray:
        """Per point, the first index in its window: ``points`` (default: the window's) back, and no earlier
        than ``first`` + ``offset`` (a difference of k + 1 points counts when its oldest point is inside)."""
        index = np.arange(self.first.size)
        return np.maximum(index - (self.points if points is None else points), self.first + offset)

    def empty(self) -> np.ndarray:
        """Points whose window holds no logged point: the log's first, and the first after a hole longer than
        the span."""
        return self.first >= np.arange(self.first.size)

    def holes(self, steps: np.ndarray) -> np.ndarray:
        """Index i where steps[i] − steps[i − 1] is longer than the span (a hole in the log); False at 0."""
        return np.concatenate(([False], np.diff(steps) > self.span_steps))


def _lows(size: int, window: int | Window, offset: int = 0) -> np.ndarray:
    """The first index of each point's window: ``window`` points back (an int), or a :class:`Window`'s."""
    if isinstance(window, Window):
        return window.low(offset, window.points - offset)
    return np.maximum(0, np.arange(size) - window + offset)


def interval_of(steps: np.ndarray) -> int:
    """The usual spacing of a metric's logged points (median step difference)."""
    return max(1, int(np.median(np.diff(steps)))) if steps.size > 1 else 1


def trailing_mean(
    values: np.ndarray, use: np.ndarray, window: int | Window, low: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(mean, count) of the used points among the ``window`` points before each point (NaN when none); ``low``
    overrides the first index of each point's window."""
    total = np.concatenate(([0.0], np.cumsum(np.where(use, values, 0.0))))
    count = np.concatenate(([0.0], np.cumsum(use.astype(np.float64))))
    index = np.arange(values.size)
    if low is None:
        low = _lows(values.size, window)
    low = np.minimum(np.maximum(low, 0), index)
    n = count[index] - count[low]
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = (total[index] - total[low]) / n
    return np.where(n > 0, mean, np.nan), n.astype(np.int64)


def successive_sigma(values: np.ndarray, use: np.ndarray, window: int | Window) -> np.ndarray:
    """Noise σ from successive differences dᵢ = xᵢ − xᵢ₋₁ over the trailing window: σ² = var(d) / 2 (the
    mean square successive difference of von Neumann et al. 1941, taken about the mean difference so that a
    steady trend, which adds the same amount to every dᵢ, does not count as noise: a canary that falls as the
    model learns keeps a small σ). Only differences between two points of the window count: ``window`` points
    have ``window`` − 1 of them (the difference from the point before the window to its first point is not the
    window's noise; with a :class:`Window`, both points within its span). NaN with fewer than 3 differences."""
    diffs = np.diff(values, prepend=values[:1])
    pair = use & np.concatenate(([False], use[:-1]))
    if isinstance(window, Window):
        low = window.low(offset=1, points=max(1, window.points - 1))
    else:
        low = _lows(values.size, max(1, window - 1))
    mean_square, n = trailing_mean(diffs**2, pair, 0, low)
    mean, _ = trailing_mean(diffs, pair, 0, low)
    variance = np.maximum(mean_square - mean**2, 0.0) * n / np.maximum(n - 1, 1)
    return np.where(n >= 3, np.sqrt(variance / 2.0), np.nan)


def curvature_sigma(
    values: np.ndarray, use: np.ndarray, window: int | Window, steps: np.ndarray | None = None
) -> np.ndarray:
    """Noise σ from second differences eᵢ = xᵢ − 2xᵢ₋₁ + xᵢ₋₂ over the trailing window, σ² = mean(e²) / 6
    (white noise of σ gives var(e) = 6σ²): a trend and a slowly bending curve (a canary falling fast early in
    training) cancel out, where they would count as noise in the spread of the values or of first
    differences. NaN with fewer than 3 second differences. With a :class:`Window` (and the ``steps``), no
    second difference spans a hole longer than the window (a level change across a hole is not noise)."""
    second = np.zeros_like(values)
    second[2:] = values[2:] - 2 * values[1:-1] + values[:-2]
    triple = use.copy()
    triple[:2] = False
    triple[2:] &= use[1:-1] & use[:-2]
    if isinstance(window, Window) and steps is not None:
        hole = window.holes(steps)
        triple &= ~hole & ~np.concatenate(([False], hole[:-1]))
    mean_square, n = trailing_mean(second**2, triple, window)
    return np.where(n >= 3, np.sqrt(mean_square / 6.0), np.nan)


def masked_passes(
    values: np.ndarray,
    window: int | Window,
    flag_fn,
    passes: int = 3,
    use: np.ndarray | None = None,
    still=None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Flag points with ``flag_fn(values, mean, count, use) -> bool array``, masking flagged points out of the
    baseline and recomputing (``passes`` times); then, with ``still(values, baseline, first) -> bool array``,
    carry each run on against the baseline it started from for as long as ``still`` holds, so an event longer
    than the window is not absorbed into its own baseline. Returns (flags, baseline mean, baseline count).

    With a :class:`Window` neither the carried baseline nor a continued run crosses a hole in the log longer
    than the window: the first point after one has no baseline, as the log's first point has none."""
    base_use = np.ones(values.size, dtype=bool) if use is None else use
    empty = window.empty() if isinstance(window, Window) else None
    current = base_use.copy()
    flags = np.zeros(values.size, dtype=bool)
    mean = count = np.zeros(0)
    for _ in range(passes):
        mean, count = carried(*trailing_mean(values, current, window), empty)
        flags = flag_fn(values, mean, count, current)
        updated = base_use & ~flags
        if np.array_equal(updated, current):
            break
        current = updated
    if still is not None:
        flags, mean, count = _extend(values, flags, mean, count, still, empty)
    return flags, mean, count


def _extend(values, flags, mean, count, still, empty=None, chunk: int = 4096):
    """Each run of flags continued while ``still`` holds against the run's starting baseline (chunked so a
    short event costs little), and not past a point whose window is ``empty`` (after a hole in the log)."""
    flags, mean, count = flags.copy(), mean.copy(), count.copy()
    covered = -1
    for first, last in runs(flags):
        if first <= covered:
            continue
        base, points = mean[first], count[first]
        position = last + 1
        while position < values.size:
            stop_at = min(values.size, position + chunk)
            holds = still(values[position:stop_at], base, first)
            if empty is not None:
                holds = holds & ~empty[position:stop_at]
            misses = np.flatnonzero(~holds)
            end = position + int(misses[0]) if misses.size else stop_at
            flags[position:end], mean[position:end], count[position:end] = True, base, points
            if misses.size:
                break
            position = stop_at
        flags[first : last + 1] = True
        covered = max(covered, position if position < values.size else values.size)
    return flags, mean, count


def carried(
    mean: np.ndarray, count: np.ndarray, empty: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Where a window holds only flagged points (a long event), keep the last baseline that had points: an
    event longer than the window is still measured against the level before it, not against itself. Where a
    window is ``empty`` (no logged point: a hole in the log longer than the window), nothing is carried into
    or past it: the level before the hole is stale, not the level before an event."""
    valid = count > 0
    if valid.all() or not valid.any():
        return mean, count
    index = np.arange(mean.size)
    last = np.maximum.accumulate(np.where(valid, index, -1))
    source = np.maximum(last, 0)
    keep = last >= 0
    if empty is not None:
        keep &= last > np.maximum.accumulate(np.where(empty, index, -1))
    return np.where(keep, mean[source], np.nan), np.where(keep, count[source], 0)


def runs(mask: np.ndarray, bridge: int = 0) -> list[tuple[int, int]]:
    """(first, last) index of each run of True, joining runs separated by at most ``bridge`` False points."""
    index = np.flatnonzero(mask)
    if index.size == 0:
        return []
    breaks = np.flatnonzero(np.diff(index) > bridge + 1)
    starts = np.concatenate(([index[0]], index[breaks + 1]))
    ends = np.concatenate((index[breaks], [index[-1]]))
    return [(int(a), int(b)) for a, b in zip(starts, ends, strict=True)]


def first_confirmed(
    back: np.ndarray, start: int, points: int, holes: np.ndarray | None = None
) -> tuple[int | None, int]:
    """The first index ≥ ``start`` that opens ``points`` consecutive True values of ``back``; else None and
    how many True values the log ends with (a recovery that the log is too short to confirm). Points in a row
    do not straddle a hole (``holes[i]``: a hole in the log just before point i, :meth:`Window.holes`): two
    points back before a hole and one 11,000 steps later are not three in a row."""
    tail = back[start:]
    if tail.size == 0:
        return None, 0
    cut = np.zeros(tail.size, dtype=bool) if holes is None else holes[start:]
    if points <= 1:
        hit = np.flatnonzero(tail)
        return (start + int(hit[0]), 0) if hit.size else (None, 0)
    if tail.size >= points:
        ok = np.lib.stride_tricks.sliding_window_view(tail, points).all(axis=1)
        ok &= ~np.lib.stride_tricks.sliding_window_view(cut[1:], points - 1).any(axis=1)
        hit = np.flatnonzero(ok)
        if hit.size:
            return start + int(hit[0]), 0
    trailing = 0
    for at in range(tail.size - 1, max(-1, tail.size - points), -1):
        if not tail[at]:
            break
        trailing += 1
        if cut[at]:
            break
    return None, trailing
