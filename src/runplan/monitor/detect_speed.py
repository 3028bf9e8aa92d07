"""Throughput: a sustained slowdown (a straggler: one slow GPU or node holds every step back) against a
one-off slow step (a checkpoint save, an evaluation, a hiccup).

A log that starts at the run's start raises no throughput event before its baseline holds
``MIN_BASELINE_POINTS`` logged points: its first steps are start-up (compilation, warm-up, caches filling), which
fades over several logged points, so a baseline of 2-5 of them is not the run's speed. An excerpt that starts
mid-run (BLOOM's, 5 lines) has nothing before its first line to wait for: its events rest on the points it has,
and say how few.

A point is slow when its step time is more than ``slow_fraction`` above the trailing mean of
``throughput_window_steps`` steps and more than ``slow_sigma`` noise σ (successive differences) above it. One
slow point alone is a one-off; two or more in a row are a drop. BLOOM-176B lost 5% (105.2 → 111.1 s per
iteration) to one slow GPU and found it by excluding nodes (tr11 chronicles).
"""

from __future__ import annotations

import numpy as np

from runplan.monitor.detect import Context
from runplan.monitor.events import Event
from runplan.monitor.rolling import Window, interval_of, masked_passes, runs, successive_sigma, window_points
from runplan.monitor.words import counted

#: Logged points a throughput baseline needs at a run's start (the window is at least this many points too).
MIN_BASELINE_POINTS = 10


def step_time_series(ctx: Context) -> tuple[np.ndarray, np.ndarray, str] | None:
    """(steps, seconds per step or a proportional stand-in, metric name) from what the log has."""
    log = ctx.log
    if log.has("step_seconds"):
        steps, values = log.points("step_seconds")
        return steps, values, "step_seconds"
    # whole-job tokens or sequences per second (DeepSpeed's samples/s): the inverse is proportional to the step time
    for name in ("tokens_per_second", "tokens_per_second_per_gpu", "samples_per_second"):
        if log.has(name):
            steps, values = log.points(name)
            keep = values > 0
            return steps[keep], 1.0 / values[keep], name
    return None


def throughput_events(ctx: Context) -> list[Event]:
    found = step_time_series(ctx)
    if found is None:
        return []
    steps, seconds, metric = found
    if steps.size < 3:
        return []
    t = ctx.thresholds
    interval = interval_of(steps)
    # the window holds only points within its span in steps: after a hole in the log it starts afresh
    window = Window.over(
        steps, window_points(t.throughput_window_steps, interval, least=MIN_BASELINE_POINTS), interval
    )
    use = np.ones(seconds.size, dtype=bool)
    # an excerpt starting mid-run: any point may be flagged on the baseline it has (said per event)
    flaggable = np.ones(seconds.size, dtype=bool)
    if steps[0] <= max(10, 2 * interval):
        use[0] = False  # the run's first logged step includes start-up (compilation, warm-up): not a baseline
        # and the next few still fade from it: nothing is flagged before 10 points have followed it (once: a
        # point masked later, a one-off slow step or a restart, does not silence the next window)
        flaggable[: MIN_BASELINE_POINTS + 1] = False
    for change in ctx.batch_change_steps:
        # a batch change (a ramp stage ends) changes the step time with the batch: the baseline starts afresh
        # there and, as at the run's start, holds MIN_BASELINE_POINTS points before anything is flagged
        k = int(np.searchsorted(steps, change, side="left"))
        if 0 < k < steps.size:
            window.first[k:] = np.maximum(window.first[k:], k)
            flaggable[k : k + MIN_BASELINE_POINTS + 1] = False
    for restart in ctx.log.restarts:
        use[
            np.searchsorted(steps, restart.resumed_step) : np.searchsorted(steps, restart.resumed_step) + 1
        ] = False

    def flag(x: np.ndarray, mean: np.ndarray, count: np.ndarray, current: np.ndarray) -> np.ndarray:
        sigma = successive_sigma(x, current, window)  # from unflagged points: a drop does not hide itself
        noise = np.where(np.isfinite(sigma), sigma, 0.0)
        with np.errstate(invalid="ignore"):
            return (
                (count >= 1)
                & flaggable
                & (x > mean * (1 + t.slow_fraction))
                & (x > mean + t.slow_sigma * noise)
                & use
            )

    noise_at_start = successive_sigma(seconds, use, window)

    def still(x: np.ndarray, base: float, first: int) -> np.ndarray:
        noise = noise_at_start[first] if np.isfinite(noise_at_start[first]) else 0.0
        return (x > base * (1 + t.slow_fraction)) & (x > base + t.slow_sigma * noise)

    flags, mean, count = masked_passes(seconds, window, flag, use=use, still=still)
    events = []
    for first, last in runs(flags, bridge=0):
        events.append(_slow(ctx, steps, seconds, metric, first, last, float(mean[first]), int(count[first])))
    return events


def _slow(
    ctx: Context,
    steps: np.ndarray,
    seconds: np.ndarray,
    metric: str,
    first: int,
    last: int,
    base: float,
    points: int,
) -> Event:
    t = ctx.thresholds
    span = seconds[first : last + 1]
    start, end = int(steps[first]), int(steps[last])
    open_end = last == seconds.size - 1
    peak = first + int(np.argmax(span))
    if last == first and not open_end:
        reason = _one_off_reason(ctx, start)
        return Event(
            kind="slow_step",
            start_step=start,
            peak_step=start,
            end_step=start,
            metric=metric,
            value=_shown(metric, float(span[0])),
            baseline=_shown(metric, base),
            baseline_points=points,
            recovered=True,
            action="none",
            why=f"step {start:,} took {span[0] / base:.2f}× the usual time, once: {reason}",
        )
    level = float(np.mean(span))
    drop = 1.0 - base / level
    sustained = last - first + 1 >= t.confirm_points
    action = "quarantine" if open_end and sustained else "watch"
    tail = (
        "still slow at the end of the log: find and exclude the slow GPU or node (BLOOM found one slow GPU "
        "by excluding nodes)"
        if action == "quarantine"
        else "still slow at the last logged steps: if it lasts, find the slow GPU or node"
        if open_end
        else f"back to normal after step {end:,}"
    )
    return Event(
        kind="throughput_drop",
        start_step=start,
        peak_step=int(steps[peak]),
        end_step=None if open_end else end,
        metric=metric,
        value=_shown(metric, level),
        baseline=_shown(metric, base),
        baseline_points=points,
        recovered=None if open_end else True,
        action=action,  # type: ignore[arg-type]
        why=(
            f"throughput down {drop:.1%} from step {start:,} ({_levels(metric, base, level)} over "
            f"{counted(last - first + 1, 'logged step')}, baseline of {counted(points, 'point')}): {tail}"
        ),
    )


#: How a rate the detector inverted is named where its levels are said, in the log's own unit
_RATE_WORDS = {
    "tokens_per_second": "tokens/s",
    "tokens_per_second_per_gpu": "tokens/s per GPU",
    "samples_per_second": "samples/s",
}


def _levels(metric: str, base: float, level: float) -> str:
    """The baseline and slow levels as the log writes them: step times in s, a rate (tokens/s, samples/s) as that
    rate (the detector works on its inverse, a stand-in for the step time), with the step time's rise."""
    rise = f"step time +{level / base - 1:.1%}"
    if metric == "step_seconds":
        return f"{rise}: {base:.4g} → {level:.4g} s per step"
    return f"{_RATE_WORDS.get(metric, metric)} {_rate(1 / base)} → {_rate(1 / level)}, {rise}"


def _rate(value: float) -> str:
    """A rate with thousands separators (572,416 tokens/s, not 5.724e+05), 4 significant digits below 1,000."""
    return f"{value:,.0f}" if value >= 999.5 else f"{value:.4g}"


def _shown(metric: str, seconds_like: float) -> float:
    """Event values in the metric's own unit (a tokens/s series was inverted to a time)."""
    return seconds_like if metric == "step_seconds" else 1.0 / seconds_like


def _one_off_reason(ctx: Context, step: int) -> str:
    interval = ctx.checkpoints.interval_steps
    near = ctx.log.interval_steps
    if any(abs(step - saved) <= near for saved in ctx.checkpoints.saved_steps):
        return "a checkpoint save (the log lists one there)"
    if interval and min(step % interval, interval - step % interval) <= near:
        return f"at a multiple of the checkpoint interval {interval:,}: a checkpoint save"
    return "a checkpoint save, an evaluation or a hiccup; nothing to do unless it recurs"
