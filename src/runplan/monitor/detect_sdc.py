"""Silent data corruption: a canary that drifts while the training loss looks healthy, and one data-parallel
replica whose gradient norm disagrees with the others.

A canary (a fixed held-out batch evaluated forward-only at a fixed cadence) is comparable across steps; when it
rises beyond mean + ``canary_sigma`` σ of its trailing window for ``canary_points_in_a_row`` evaluations while
the training loss shows no spike, the model is getting worse on data it did not train on: look for corrupted
computation (Gemini Team 2023 §3; Llama 3 Table 5). Find when it began (a change-point estimate), roll back
to before that, take the suspect hosts out (compare per-replica gradient norms), then resume. A rise that is
back within the band in fewer than twice ``canary_points_in_a_row`` evaluations is reported as a transient
(action none): corruption that reached the weights does not undo itself.
"""

from __future__ import annotations

import numpy as np

from runplan.monitor.detect import Context
from runplan.monitor.events import Event
from runplan.monitor.rolling import Window, curvature_sigma, interval_of, masked_passes, runs, window_points

#: Fewest evaluations the canary's noise σ is estimated from.
SIGMA_POINTS = 50


def trailing_count(size: int, window: int | Window) -> np.ndarray:
    """Points in a full trailing window at each index (before any masking; a :class:`Window` holds only the
    points within its span in steps)."""
    if isinstance(window, Window):
        return np.arange(size) - window.low()
    return np.minimum(np.arange(size), window)


def change_point(steps: np.ndarray, values: np.ndarray) -> int:
    """Step where a series changes course: segmented least squares (Quandt 1958; Hinkley 1970) over every
    split τ of y = a + b·t + q·t² + c·[t ≥ τ] + d·(t − τ)₊, picking the τ with the smallest residual sum of
    squares. The quadratic carries the canary's own bending fall; c a jump, d a drift that starts as a ramp."""
    t = (steps - steps[0]).astype(np.float64)
    t /= max(float(t[-1]), 1.0)  # conditioning
    best, best_sse = int(steps[0]), np.inf
    for k in range(3, steps.size - 1):
        tau = t[k]
        design = np.column_stack(
            (np.ones_like(t), t, t**2, (t >= tau).astype(np.float64), np.maximum(t - tau, 0.0))
        )
        coef, *_ = np.linalg.lstsq(design, values, rcond=None)
        sse = float(np.sum((design @ coef - values) ** 2))
        if sse < best_sse:
            best, best_sse = int(steps[k]), sse
    return best


def canary_events(ctx: Context, loss_spikes: list[Event]) -> list[Event]:
    log, t = ctx.log, ctx.thresholds
    metric = "canary_loss" if log.has("canary_loss") else "val_loss" if log.has("val_loss") else None
    if metric is None:
        return []
    steps, values = log.points(metric)
    interval = interval_of(steps)
    window = Window.over(steps, window_points(t.canary_window_steps, interval, least=5), interval)
    sigma_window = Window.over(steps, max(window.points, SIGMA_POINTS), interval)
    # σ of the canary's own noise, from second differences over ≥ 50 evaluations (a 5-point σ is too
    # rough to test against); the test is on x − mean, whose σ is σ·√(1 + 1/n) for a mean of n points
    # (from unflagged points only, so a drift does not widen its own σ)
    noise = curvature_sigma(values, np.ones(values.size, dtype=bool), sigma_window, steps)

    def spread(count: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return noise * np.sqrt(1.0 + 1.0 / np.maximum(count, 1))

    def flag(x: np.ndarray, mean: np.ndarray, count: np.ndarray, use: np.ndarray) -> np.ndarray:
        noise[:] = curvature_sigma(x, use, sigma_window, steps)
        with np.errstate(invalid="ignore"):
            return (count >= 3) & (x > mean + t.canary_sigma * spread(count))

    def still(x: np.ndarray, base: float, first: int) -> np.ndarray:
        return x > base + t.canary_sigma * float(spread(count_at_start[first : first + 1])[0])

    count_at_start = trailing_count(values.size, window)
    flags, mean, count = masked_passes(values, window, flag, still=still)
    events = []
    for first, last in runs(flags, bridge=0):
        if last - first + 1 < t.canary_points_in_a_row:
            continue
        events.append(_drift(ctx, metric, steps, values, first, last, mean, count, noise, loss_spikes))
    return events


def _drift(
    ctx: Context,
    metric: str,
    steps: np.ndarray,
    values: np.ndarray,
    first: int,
    last: int,
    mean: np.ndarray,
    count: np.ndarray,
    sigma: np.ndarray,
    loss_spikes: list[Event],
) -> Event:
    t = ctx.thresholds
    lookback = max(0, first - 3 * max(int(count[first]), 5))
    onset = change_point(steps[lookback : last + 1], values[lookback : last + 1])
    onset = min(onset, int(steps[first]))
    end_step = int(steps[last])
    open_end = last == values.size - 1
    with_loss = [e for e in loss_spikes if e.start_step <= end_step and (e.end_step or end_step) >= onset]
    checkpoint, text = ctx.rollback(onset - 1)
    stand_in = " (the validation loss stands in for a canary)" if metric == "val_loss" else ""
    head = (
        f"{metric}{stand_in} {values[last]:.4g} at step {end_step:,} is above mean {mean[first]:.4g} + "
        f"{t.canary_sigma:g}σ (noise σ {sigma[first]:.2g} from second differences) for {last - first + 1} "
        f"evaluations in a row; the drift began near step {onset:,} (change-point estimate)"
    )
    transient = not open_end and last - first + 1 < 2 * t.canary_points_in_a_row
    if transient:
        why = head + (
            f"; back within {t.canary_sigma:g}σ after {last - first + 1} evaluations: a transient, not a drift "
            "(corruption that reached the weights does not undo itself)"
        )
        action = "none"
    elif with_loss:
        why = head + f"; the training loss spiked too (step {with_loss[0].start_step:,}): see that event"
        action = "watch"
    else:
        why = head + (
            f" while the training loss looks healthy: silent data corruption is likely. {text}, take the "
            "suspect hosts out (compare per-replica gradient norms; run the vendor's diagnostics), then resume"
        )
        action = "quarantine"
    return Event(
        kind="canary_drift",
        start_step=onset,
        peak_step=int(steps[first + int(np.argmax(values[first : last + 1]))]),
        end_step=None if open_end else end_step,
        metric=metric,
        value=float(values[first : last + 1].max()),
        baseline=float(mean[first]),
        baseline_points=int(count[first]),
        recovered=None if open_end else True,
        action=action,  # type: ignore[arg-type]
        rollback_to_step=checkpoint if action == "quarantine" else None,
        skip_steps=[onset, end_step],
        why=why,
    )


def replica_events(ctx: Context) -> list[Event]:
    from runplan.monitor.aliases import replica_names

    log, t = ctx.log, ctx.thresholds
    names = replica_names(list(log.values))
    if len(names) < 3:  # a median of two cannot say which one is off
        return []
    table = np.column_stack([log.values[name] for name in names])
    rows = np.isfinite(table).all(axis=1)
    steps, table = log.steps[rows], table[rows]
    median = np.median(table, axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        off = np.abs(table / median - 1.0) > t.replica_fraction
    events = []
    for column, name in enumerate(names):
        for first, last in runs(off[:, column], bridge=0):
            if last - first + 1 < t.confirm_points:
                continue
            start = int(steps[first])
            checkpoint, text = ctx.rollback(start - 1)
            peak = first + int(
                np.argmax(np.abs(table[first : last + 1, column] / median[first : last + 1, 0]))
            )
            open_end = last == steps.size - 1
            events.append(
                Event(
                    kind="replica_disagreement",
                    start_step=start,
                    peak_step=int(steps[peak]),
                    end_step=None if open_end else int(steps[last]),
                    metric=name,
                    value=float(table[peak, column]),
                    baseline=float(median[peak, 0]),
                    baseline_points=len(names) - 1,
                    recovered=None if open_end else True,
                    action="quarantine",
                    rollback_to_step=checkpoint,
                    skip_steps=[start, int(steps[last])],
                    why=(
                        f"replica {name.rsplit('_', 1)[1]}'s grad norm is more than {t.replica_fraction:.0%} "
                        f"from the median of {len(names)} replicas for {last - first + 1} logged steps from "
                        f"step {start:,}: its host may compute wrong results; take it out, {text}"
                    ),
                )
            )
    return events
