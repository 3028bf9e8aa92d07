"""The detectors: each reads a :class:`MetricLog` and returns events with an action and the reason.

Rules (thresholds and their sources: :mod:`runplan.monitor.thresholds`):

- gradient norm: alert above ``grad_norm_factor`` × its trailing mean, pause above ``grad_norm_pause_factor`` ×;
  the gradient norm usually leads the loss by a few to tens of steps (BLOOM 31217 → loss peak 31219).
- loss spike: above its pre-spike mean by more than ``spike_fraction``; it is over when ``confirm_points``
  logged points in a row are back within ``spike_fraction`` of that mean. Over within ``spike_recovery_steps``:
  a recovered spike (watch; inspect its batches). Not over by then: a divergence (roll back ≥
  ``rollback_margin_steps`` before it and skip ``skip_batches_min``-``skip_batches_max`` batches, PaLM §5.1).
  Still open when the log ends: wait until ``start + spike_recovery_steps`` and say what to do then. The points
  in a row do not straddle a hole in the log longer than the pre-spike window, and a deadline that falls in
  such a hole, with the loss back after it, leaves the outcome unknown (watch; :func:`_unseen`).
- NaN/inf loss (or gradient norm without an fp16 loss scale): roll back when it persists.
- fp16 loss-scale collapse: roll back to before the fall (OPT §2.5).
- a crash report after the last logged step: the job died; resume from the newest checkpoint (:func:`crash_events`).

Do not lower the learning rate as a recovery from a spike: Adam's moment estimates were accumulated at the old
rate and step size, so a mid-run change of the rate breaks the match the optimizer relies on; PaLM §5.1
recovered by restarting earlier and skipping batches, without changing hyper-parameters.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from runplan.monitor.events import Checkpoints, Event
from runplan.monitor.readers.crash import CRASH_NOTE
from runplan.monitor.rolling import (
    Window,
    first_confirmed,
    interval_of,
    masked_passes,
    runs,
    successive_sigma,
    window_points,
)
from runplan.monitor.series import MetricLog
from runplan.monitor.thresholds import Thresholds
from runplan.monitor.words import counted, percent, steps_text


@dataclass
class Context:
    log: MetricLog
    thresholds: Thresholds
    checkpoints: Checkpoints
    #: steps at which the global batch changes (a batch ramp): the log's own printed batch, else the plan's batch
    #: stages; a step's time changes with its batch there, which is no slowdown (detect_speed)
    batch_change_steps: tuple[int, ...] = ()

    @property
    def last_step(self) -> int:
        return int(self.log.steps[-1])

    def rollback(self, before_step: int, trouble_step: int | None = None) -> tuple[int | None, str]:
        """(checkpoint step, sentence) for a rollback to a checkpoint at a step ≤ ``before_step``; before step 0
        (a spike within the rollback margin of the run's start, a nan at a 0-based log's step 0) only the run's
        start, its initial weights, is left. Where no checkpoint at a step ≤ ``before_step`` is kept at the log's
        end (the retention deleted it, or none was due yet), the newest one kept before ``trouble_step`` (a
        spike's start), if any."""
        if before_step < 0:
            return (
                None,
                "restart the run from its start (its initial weights: no earlier step to roll back to)",
            )
        found = self.checkpoints.newest_at_or_before(before_step, self.last_step)
        if found is not None:
            return found, f"roll back to the checkpoint at step {found:,} ({self.checkpoints.source})"
        if not self.checkpoints.known():
            return None, (
                f"roll back to the newest checkpoint at a step ≤ {before_step:,} (no checkpoint steps known: "
                "give --checkpoint-interval or --plan)"
            )
        written = replace(self.checkpoints, retention_generations=None, rollback_generations=None)
        due = written.newest_at_or_before(before_step, before_step) is not None  # by then, kept or not
        # none due a margin back, or the rotation deleted it: the newest still kept before the trouble
        if trouble_step is not None and (late := self._kept_before(trouble_step)) is not None:
            why = (
                f"those at a step ≤ {before_step:,} were deleted by step {self.last_step:,}"
                if due
                else f"none is due at a step ≤ {before_step:,}"
            )
            return late, (
                f"roll back to the checkpoint at step {late:,} ({self.checkpoints.source}), "
                f"{counted(trouble_step - late, 'step')} before it: {why}"
            )
        if not due:
            return None, (
                f"no checkpoint is due at a step ≤ {before_step:,} ({self.checkpoints.source}): the first comes "
                "later; restart the run from its start"
            )
        return None, (
            f"no checkpoint before step {(trouble_step or before_step + 1):,} is kept at step {self.last_step:,} "
            f"({self.checkpoints.source}): resume from an older copy if one was kept elsewhere, else restart the "
            "run from its start"
        )

    def _kept_before(self, trouble_step: int) -> int | None:
        """The newest checkpoint still kept at the log's end at a step before ``trouble_step``."""
        return self.checkpoints.newest_at_or_before(trouble_step - 1, self.last_step)

    def skip_range(self, restart_step: int, peak_step: int) -> list[int]:
        """Batches to skip after resuming at ``restart_step``: through the spike's peak, clamped to PaLM's
        200-500 (§5.1)."""
        t = self.thresholds
        count = min(t.skip_batches_max, max(t.skip_batches_min, peak_step - restart_step))
        return [restart_step + 1, restart_step + count]


def _baseline_note(points: int, first_step: int, log_first: int, window_steps: int) -> str:
    """The baseline's size, and a caution when the log's start cut the window short."""
    if first_step - log_first >= window_steps or points >= 20:
        return f"baseline of {points} logged points"
    return (
        f"baseline of only {points} logged point{'s' if points != 1 else ''} (the log starts at step "
        f"{log_first:,}, {counted(first_step - log_first, 'step')} earlier): treat the ratio as rough"
    )


def _times(ratio: float, factor: float) -> str:
    """``ratio`` as a whole number, or with the decimals that keep a ratio under ``factor`` from reading as it
    (99.67× is "99.7×" beside "watch", not "100×", the pause factor)."""
    decimals = 0
    while ratio < factor <= round(ratio, decimals) and decimals < 6:
        decimals += 1
    return f"{ratio:,.{decimals}f}"


def grad_norm_events(ctx: Context) -> list[Event]:
    log, t = ctx.log, ctx.thresholds
    if not log.has("grad_norm"):
        return []
    steps, values = log.points("grad_norm")
    interval = interval_of(steps)
    window = Window.over(steps, window_points(t.grad_norm_window_steps, interval), interval)
    holes = window.holes(steps)

    def flag(x: np.ndarray, mean: np.ndarray, count: np.ndarray, use: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore"):
            return (count > 0) & (x > t.grad_norm_factor * mean)

    def still(x: np.ndarray, base: float, first: int) -> np.ndarray:
        return x > t.grad_norm_factor * base

    flags, mean, count = masked_passes(values, window, flag, still=still)
    events = []
    for first, last in runs(flags, bridge=t.confirm_points - 1):
        base, points = float(mean[first]), int(count[first])
        peak = first + int(np.argmax(values[first : last + 1]))
        ratio = values[peak] / base
        pause = ratio >= t.grad_norm_pause_factor
        # over when confirm_points logged points in a row are back under the alert level, as for a loss spike:
        # fewer before the log ends (after a gap or not) do not confirm it
        done, trailing = first_confirmed(~flags, last + 1, t.confirm_points, holes)
        open_end = done is None
        why = (
            f"grad norm {values[peak]:.4g} at step {steps[peak]:,} is {_times(ratio, t.grad_norm_pause_factor)}× "
            f"its mean {base:.3g} "
            f"({_baseline_note(points, int(steps[first]), int(log.steps[0]), t.grad_norm_window_steps)}); alert at "
            f"{t.grad_norm_factor:g}×"
            + (
                f", pause at {t.grad_norm_pause_factor:g}×: pause and inspect the data of "
                f"{steps_text(int(steps[first]), int(steps[peak]))}"
                if pause
                else ": watch the loss over the next steps"
            )
            + _grad_norm_end(steps, done, trailing, interval, t.confirm_points)
        )
        events.append(
            Event(
                kind="grad_norm_alert",
                start_step=int(steps[first]),
                peak_step=int(steps[peak]),
                end_step=None if done is None else int(steps[done]),
                metric="grad_norm",
                value=float(values[peak]),
                baseline=base,
                baseline_points=points,
                recovered=None if open_end else True,
                action="pause" if pause else "watch",
                skip_steps=[int(steps[first]), int(steps[peak])],
                why=why,
            )
        )
    return events


def _grad_norm_end(steps: np.ndarray, done: int | None, trailing: int, interval: int, confirm: int) -> str:
    """How a grad-norm alert ended: back under the alert level from a step, or not confirmed by the log's end."""
    if done is not None:
        return f". Back under it from step {int(steps[done]):,}{_gap_before(steps, done, interval)}"
    if not trailing:
        return ". Still above it when the log ends"
    gap = _gap_before(steps, steps.size - trailing, interval)
    return (
        f". Back under it at the last {counted(trailing, 'logged point')}{gap}, fewer than the {confirm} that "
        "confirm a recovery"
    )


def loss_spike_events(ctx: Context) -> list[Event]:
    log, t = ctx.log, ctx.thresholds
    if not log.has("loss"):
        return []
    steps, values = log.points("loss")
    interval = interval_of(steps)
    window = Window.over(steps, window_points(t.pre_spike_window_steps, interval, least=2), interval)

    def flag(x: np.ndarray, mean: np.ndarray, count: np.ndarray, use: np.ndarray) -> np.ndarray:
        sigma = successive_sigma(x, use, window)
        noise = np.where(np.isfinite(sigma), sigma, 0.0)
        with np.errstate(invalid="ignore"):
            return (count > 0) & (x > mean * (1 + t.spike_fraction)) & (x > mean + t.spike_sigma * noise)

    flags, mean, count = masked_passes(values, window, flag)
    holes = window.holes(steps)
    events: list[Event] = []
    index = np.flatnonzero(flags)
    at = 0
    while at < index.size:
        first = int(index[at])
        base, points = float(mean[first]), int(count[first])
        event, resume = _one_spike(ctx, steps, values, first, base, points, interval, holes)
        events.append(event)
        at = int(np.searchsorted(index, resume))
    return events


def _one_spike(
    ctx: Context,
    steps: np.ndarray,
    values: np.ndarray,
    first: int,
    base: float,
    points: int,
    interval: int,
    holes: np.ndarray,
) -> tuple[Event, int]:
    """The spike that starts at point ``first``: where it peaks, whether and when it is over, what to do.
    ``holes[i]``: the log has a hole longer than the pre-spike window just before point i."""
    t = ctx.thresholds
    back = values <= base * (1 + t.spike_fraction)
    done, trailing = first_confirmed(back, first + 1, t.confirm_points, holes)
    last = (done - 1) if done is not None else values.size - 1
    peak = first + int(np.argmax(values[first : last + 1]))
    start_step, peak_step = int(steps[first]), int(steps[peak])
    deadline = start_step + t.spike_recovery_steps
    end_step = int(steps[done]) if done is not None else None
    within = end_step is not None and end_step - start_step <= t.spike_recovery_steps
    hole = None if within else _hole_over(steps, holes, first, deadline)
    checkpoint, rollback_text = ctx.rollback(start_step - t.rollback_margin_steps, start_step)
    target = max(start_step - t.rollback_margin_steps, 0)  # in the run's first steps: from its start, step 0
    head = _spike_head(ctx, float(values[peak]), peak_step, start_step, base, points)
    gap = _gap_before(steps, done if done is not None else values.size - trailing, interval)
    event = Event(
        kind="loss_spike",
        start_step=start_step,
        peak_step=peak_step,
        end_step=end_step,
        metric="loss",
        value=float(values[peak]),
        baseline=base,
        baseline_points=points,
        recovered=within,
        action="watch",
        why=head,
    )
    if within and end_step is not None:
        event.skip_steps = [start_step, peak_step]
        event.why += (
            f"; back within {percent(t.spike_fraction)} by step {end_step:,} ({counted(end_step - start_step, 'step')}, "
            f"under {t.spike_recovery_steps}): recovered by itself{gap}. If the canary stayed flat it was the "
            f"data: inspect the batches of {steps_text(start_step, peak_step)}"
        )
    elif hole is not None and (end_step is not None or trailing):
        _unseen(ctx, event, steps, back, hole, (checkpoint, rollback_text), target)
    elif end_step is not None or ctx.last_step >= deadline:
        restart = checkpoint if checkpoint is not None else target
        event.kind, event.action, event.recovered = "divergence", "rollback", end_step is not None
        event.rollback_to_step = checkpoint
        event.skip_steps = ctx.skip_range(restart, peak_step)
        late = f" (back only at step {end_step:,})" if end_step is not None else ""
        event.why += (
            f"; not back within {percent(t.spike_fraction)} by step {deadline:,} ({t.spike_recovery_steps} steps)"
            f"{late}: a divergence. {rollback_text.capitalize()}"
            f"{f', ≥ {t.rollback_margin_steps} steps before it' if rollback_text.startswith('roll back') and (checkpoint or 0) <= start_step - t.rollback_margin_steps else ''}"
            f", and skip the batches of {steps_text(*event.skip_steps)} (PaLM §5.1); "
            "do not lower the learning rate instead"
        )
    else:
        restart = checkpoint if checkpoint is not None else target
        event.action, event.recovered, event.wait_until_step = "wait_until", None, deadline
        event.rollback_to_step = checkpoint
        event.skip_steps = ctx.skip_range(restart, peak_step)
        seen = (
            f"; back within {percent(t.spike_fraction)} at the last {trailing} logged point"
            f"{'s' if trailing != 1 else ''}{gap}, fewer than the {t.confirm_points} that confirm a recovery"
            if trailing
            else "; still above it when the log ends"
        )
        event.why += (
            f"{seen}. Wait until step {deadline:,}: if the loss is not back within "
            f"{percent(t.spike_fraction)} of {base:.4g} by then, {rollback_text} and skip the batches of "
            f"{steps_text(*event.skip_steps)} (PaLM §5.1)"
        )
    return event, (done if done is not None else values.size)


def _spike_head(ctx: Context, peak: float, peak_step: int, start_step: int, base: float, points: int) -> str:
    """The first clause of a spike's ``why``: how high above which baseline."""
    t = ctx.thresholds
    base_text = _baseline_note(points, start_step, int(ctx.log.steps[0]), t.pre_spike_window_steps)
    return (
        f"loss {peak:.4g} at step {peak_step:,} is {peak / base - 1:.1%} above its pre-spike mean {base:.4g} "
        f"(threshold {percent(t.spike_fraction)}; {base_text})"
    )


def _hole_over(steps: np.ndarray, holes: np.ndarray, first: int, deadline: int) -> int | None:
    """The point just after a hole in the log that holds ``deadline`` (after the spike's start), if any."""
    after = int(np.searchsorted(steps, deadline, side="right"))
    if first < after < steps.size and holes[after]:
        return after
    return None


def _unseen(
    ctx: Context,
    event: Event,
    steps: np.ndarray,
    back: np.ndarray,
    hole: int,
    rollback: tuple[int | None, str],
    target: int,
) -> None:
    """A spike whose recovery deadline falls in a hole of the log, with the loss back after the hole: the log
    cannot show whether it was over in time (neither a recovery by itself nor a divergence can be said), so
    watch, and say what the full log decides."""
    t = ctx.thresholds
    checkpoint, rollback_text = rollback
    before = 0
    while hole - before - 1 > 0 and back[hole - before - 1] and steps[hole - before - 1] > event.start_step:
        before += 1
    event.action, event.recovered, event.rollback_to_step = "watch", None, checkpoint
    event.skip_steps = ctx.skip_range(checkpoint if checkpoint is not None else target, event.peak_step)
    deadline = event.start_step + t.spike_recovery_steps
    then = (
        f"back within {percent(t.spike_fraction)} at the last {counted(before, 'logged point')} before it"
        if before
        else f"not back within {percent(t.spike_fraction)} before it"
    )
    after = (
        f"back within it from step {event.end_step:,}"
        if event.end_step is not None
        else f"back within it at the last {counted(int(steps.size - hole), 'logged point')}"
    )
    event.why += (
        f"; the log has no steps {steps[hole - 1] + 1:,}-{steps[hole] - 1:,}, which hold the deadline "
        f"{deadline:,} ({t.spike_recovery_steps} steps): {then}, {after}, so the log cannot show whether it "
        f"was over in time. If the full log shows it was not back by step {deadline:,}, {rollback_text} and "
        f"skip the batches of {steps_text(*event.skip_steps)} (PaLM §5.1); else inspect the batches of "
        f"{steps_text(event.start_step, event.peak_step)}"
    )


def _gap_before(steps: np.ndarray, point: int, interval: int) -> str:
    """A note when the log has a hole just before ``point`` (the recovery happened where nothing was logged)."""
    if point <= 0 or point >= steps.size:
        return ""
    if steps[point] - steps[point - 1] > max(3 * interval, interval + 10):
        return f" (steps {steps[point - 1] + 1:,}-{steps[point] - 1:,} are not in the log)"
    return ""


def nan_events(ctx: Context) -> list[Event]:
    """Runs of nan/inf written in the loss (or in the grad norm when there is no fp16 loss scale), and of the
    steps Megatron counts as skipped for a nan/inf loss (:func:`_nan_iterations`), by their count."""
    log, t = ctx.log, ctx.thresholds
    events: list[Event] = []
    metrics = ["loss"] + ([] if "loss_scale" in log.values else ["grad_norm"])
    skipped_nan = _nan_iterations(log)
    for metric in metrics:
        written = log.nonfinite.get(metric, np.zeros(log.steps.size, dtype=bool))
        bad = written | (skipped_nan > 0) if metric == "loss" else written
        if not bad.any():
            continue
        for first, last in runs(bad, bridge=1):
            if any(e.start_step <= int(log.steps[first]) <= (e.end_step or ctx.last_step) for e in events):
                continue  # the loss was nan at the same steps: one event
            span = slice(first, last + 1)
            # a point Megatron counted skipped nan steps at stands for that count; a written nan for one point
            count = int(np.where(skipped_nan[span] > 0, skipped_nan[span], bad[span]).sum())
            open_end = last == bad.size - 1
            # a sparse log (every ≥ 3 steps) writes one value for several steps: one nan stands for several
            sparse = log.interval_steps >= t.confirm_points and bool(written[span].any())
            persistent = open_end or count >= t.confirm_points or sparse
            start = int(log.steps[first])
            checkpoint, text = ctx.rollback(start - 1)
            events.append(
                Event(
                    kind="nan",
                    start_step=start,
                    peak_step=start,
                    end_step=None if open_end else int(log.steps[last]),
                    metric=metric,
                    value=None,
                    baseline=None,
                    baseline_points=0,
                    recovered=None if open_end else not persistent,
                    action="rollback" if persistent else "watch",
                    rollback_to_step=checkpoint if persistent else None,
                    skip_steps=[start, int(log.steps[last])],
                    why=(
                        f"{metric} is nan/inf at {count} logged step{'s' if count != 1 else ''} from step "
                        f"{start:,}"
                        + (
                            " (Megatron's number of nan iterations: steps skipped for a nan/inf loss, left out "
                            "of the loss it prints)"
                            if metric == "loss" and (skipped_nan[span] > 0).any()
                            else ""
                        )
                        + (
                            f"{' to the end of the log' if open_end else ''}: the weights may be corrupt; "
                            f"{text} and inspect the batches of {steps_text(start, int(log.steps[last]))}"
                            if persistent
                            else ": the engine skipped the update; watch for more"
                        )
                    ),
                )
            )
    return events


def _nan_iterations(log: MetricLog) -> np.ndarray:
    """Megatron's ``number of nan iterations`` per logged point (0 where not logged). ``training_log``
    (megatron/training/training.py @ d98e8a64) adds a step's loss to the interval's average only when its update
    was not skipped; a skipped step whose loss was nan/inf is counted here instead, and an interval of skipped steps
    prints no loss at all: the loss it prints never shows that nan."""
    counts = log.values.get("nan_iterations")
    if counts is None:
        return np.zeros(log.steps.size)
    return np.where(np.isfinite(counts), counts, 0.0)


def loss_scale_events(ctx: Context) -> list[Event]:
    """Falls of the fp16 dynamic loss scale to its floor or 2¹⁰ below its running maximum (thresholds.py).

    A dynamic scaler only lowers the scale on overflow: Megatron's ``DynamicGradScaler``
    (``megatron/core/optimizer/grad_scaler.py``, ``backoff_factor=0.5``) and apex halve it per overflow. A
    collapse is therefore a fall below the running maximum; a scale that never fell had no overflows, however
    low it sits. bf16 runs have no scaler and Megatron logs ``get_loss_scale()`` = a constant 1.0 for them
    (``megatron/core/optimizer/optimizer.py``, ``_scale_one``); a static fp16 scale is constant too.
    """
    log, t = ctx.log, ctx.thresholds
    if not log.has("loss_scale"):
        return []
    steps, scale = log.points("loss_scale")
    running = np.maximum.accumulate(scale)
    # the floor alone would fire on bf16's constant 1.0: require an actual fall below the maximum seen
    fell = scale < running
    collapsed = fell & ((scale <= t.loss_scale_floor) | (scale <= running / t.loss_scale_drop_factor))
    events = []
    for first, last in runs(collapsed, bridge=0):
        at_max = np.flatnonzero(scale[: first + 1] >= running[first])
        fall = int(at_max[-1]) + 1 if at_max.size else first
        start = int(steps[min(fall, first)])
        open_end = last == scale.size - 1
        checkpoint, text = ctx.rollback(start - 1)
        events.append(
            Event(
                kind="loss_scale_collapse",
                start_step=start,
                peak_step=int(steps[first + int(np.argmin(scale[first : last + 1]))]),
                end_step=None if open_end else int(steps[last]),
                metric="loss_scale",
                value=float(scale[first : last + 1].min()),
                baseline=float(running[first]),
                baseline_points=first + 1,
                recovered=None if open_end else True,
                action="rollback",
                rollback_to_step=checkpoint,
                skip_steps=[start, int(steps[last])],
                why=(
                    f"fp16 loss scale fell from {running[first]:,.0f} to {scale[first : last + 1].min():.3g} "
                    f"(from step {start:,}): overflows on almost every step, which preceded OPT's divergences "
                    f"(OPT §2.5); {text}"
                ),
            )
        )
    return events


def restart_events(ctx: Context) -> list[Event]:
    events = []
    for restart in ctx.log.restarts:
        first, last, count = restart.resumed_step, restart.last_redone, restart.redone
        if count:
            redid = f"redid {counted(count, 'step')} ({steps_text(first, last)}; the later values are used)"
        else:
            redid = "has not redone a step yet"
        if restart.last_step > last:
            redid += f"; {steps_text(max(last, first - 1) + 1, restart.last_step)} are not reached again yet"
        events.append(
            Event(
                kind="restart",
                start_step=first,
                peak_step=max(first, last),
                end_step=max(first, last),
                metric="step",
                value=float(count),
                baseline=None,
                baseline_points=0,
                recovered=True,
                action="none",
                why=(
                    f"the log goes back from step {restart.last_step:,} to {restart.resumed_step:,}: the job "
                    f"restarted from a checkpoint and {redid}"
                ),
            )
        )
    return events


def crash_events(ctx: Context) -> list[Event]:
    """A crash report after the log's last step (the reader's note, :mod:`runplan.monitor.readers.crash`) as a
    ``crash`` event at that step, open (the log cannot show the job resumed). Action ``rollback`` to the newest
    checkpoint at or before that step, by analogy with ``nan``: there the run cannot go on from the weights it has,
    here not from the process it had; either way the way on is to resume from a checkpoint (the steps after it
    are lost) and a person is needed now (verdict ``act``). Not ``watch`` as ``stall`` is: a log that stopped
    without a word may be a long checkpoint save or evaluation, a crash report is certain. No batches are
    skipped (``skip_steps`` null): nothing says the data caused it. An error the steps go on after is no event
    (the job survived it): the reader's note says it."""
    last = ctx.last_step
    head = f"{CRASH_NOTE} after its last logged step {last:,}: "
    # a log of several files prefixes each file's notes with its name: the crash is the one at the last step
    note = next((note for note in ctx.log.notes if head in note), None)
    if note is None:
        return []
    source, rest = note.split(head, 1)  # source: "FILE: " where several logs were given, else ""
    what = source.rstrip(": ") + (" " if source else "") + rest.split(": the job stopped there", 1)[0]
    checkpoint, text = ctx.rollback(last)
    return [
        Event(
            kind="crash",
            start_step=last,
            peak_step=last,
            end_step=None,
            metric="step",
            value=None,
            baseline=None,
            baseline_points=0,
            recovered=None,
            action="rollback",
            rollback_to_step=checkpoint,
            why=f"the job crashed after step {last:,} ({what}): fix the cause and resume: {text}",
        )
    ]
