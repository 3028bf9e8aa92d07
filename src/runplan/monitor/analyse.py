"""Run every detector over one run's log and put the findings, the verdict and the plan comparison together.

``analyse(log, thresholds, checkpoints, plan)`` is pure: a :class:`MetricLog` in, a :class:`Report` out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from runplan.monitor import detect, detect_sdc, detect_speed
from runplan.monitor.events import Checkpoints, Event, verdict
from runplan.monitor.series import MetricLog
from runplan.monitor.thresholds import Thresholds
from runplan.monitor.words import counted

if TYPE_CHECKING:
    from runplan.ops.checkpoint import CheckpointPlan
    from runplan.plan import RunPlan


@dataclass
class Report:
    source: str
    format: str
    steps: list[int]
    metrics: dict[str, dict[str, Any]]
    events: list[Event]
    summary: dict[str, Any]
    verdict: str
    vs_plan: dict[str, Any] | None
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "format": self.format,
            "steps": self.steps,
            "metrics": self.metrics,
            "events": [event.to_json() for event in self.events],
            "summary": self.summary,
            "verdict": self.verdict,
            "vs_plan": self.vs_plan,
        }


def checkpoints_for(log: MetricLog, interval_steps: int | None, plan: RunPlan | None) -> Checkpoints:
    """Checkpoint steps from --checkpoint-interval, else the plan's interval and retention, else the log."""
    if interval_steps:
        return Checkpoints(
            interval_steps, log.saved_steps, source=f"--checkpoint-interval {interval_steps:,}"
        )
    if plan is not None:
        cp = plan.checkpointing
        return Checkpoints(
            interval_steps=cp.interval_steps,
            saved_steps=log.saved_steps,
            retention_generations=cp.retention_generations,
            rollback_every_steps=cp.rollback_every_steps,
            rollback_generations=cp.rollback_generations,
            milestone_steps=_resumable_milestones(cp),
            source=_plan_checkpoints(cp.interval_steps, cp.retention_generations, cp.rollback_every_steps),
        )
    if log.checkpoint_interval_steps:
        return Checkpoints(
            log.checkpoint_interval_steps,
            log.saved_steps,
            source=f"the log's save interval {log.checkpoint_interval_steps:,}",
        )
    if log.saved_steps:
        return Checkpoints(
            saved_steps=log.saved_steps,
            source=f"{counted(len(log.saved_steps), 'saved step')} listed in the log",
        )
    return Checkpoints(
        source="none known (the log lists no saved step; give --checkpoint-interval or --plan)"
    )


def _resumable_milestones(cp: CheckpointPlan) -> list[int]:
    """The plan's milestones a run can resume from: full checkpoints only. Weights-only milestones
    (operations.milestone_weights_only: ``milestone_bytes`` below the full ``total_bytes``) hold no optimizer
    state, so a rollback cannot restart from them (ops/checkpoint.py ``_milestones``)."""
    return list(cp.milestone_steps) if cp.milestone_bytes >= cp.total_bytes else []


def _plan_checkpoints(interval: int, generations: int, rollback_every: int) -> str:
    """Where the plan's checkpoints come from, in words: the rolling saves and the rollback points, or why the
    plan keeps none of the latter (its rolling generations reach back far enough for a rollback)."""
    if rollback_every:
        return f"the plan: every {interval:,} steps, rollback points every {rollback_every:,}"
    return (
        f"the plan: every {interval:,} steps, {generations} rolling generations kept; no separate rollback points "
        f"(the rolling generations reach {(generations - 1) * interval:,} steps back, far enough)"
    )


def _batch_change_steps(log: MetricLog, plan: RunPlan | None) -> tuple[int, ...]:
    """Steps at which the run's global batch changes: where the log's printed batch (Megatron's ``global batch
    size``, on every line) differs from the one before, else where the plan's batch stages start."""
    if log.has("global_batch"):
        steps, batch = log.points("global_batch")
        return tuple(int(step) for step in steps[1:][np.diff(batch) != 0])
    if plan is not None:
        return tuple(int(stage.start_step) for stage in plan.schedule.batch_stages[1:])
    return ()


def analyse(
    log: MetricLog, thresholds: Thresholds, checkpoints: Checkpoints, plan: RunPlan | None = None
) -> Report:
    ctx = detect.Context(log, thresholds, checkpoints, _batch_change_steps(log, plan))
    spikes = detect.loss_spike_events(ctx)
    events = [
        *detect.grad_norm_events(ctx),
        *spikes,
        *detect.nan_events(ctx),
        *detect.loss_scale_events(ctx),
        *detect_sdc.canary_events(ctx, spikes),
        *detect_sdc.replica_events(ctx),
        *detect_speed.throughput_events(ctx),
        *detect.restart_events(ctx),
        *detect.crash_events(ctx),
    ]
    _link_grad_norm(events)
    events.sort(key=lambda event: (event.start_step, event.kind))
    found = verdict(events)
    from runplan.monitor.vs_plan import compare

    return Report(
        source=log.source,
        format=log.format,
        steps=[int(log.steps[0]), int(log.steps[-1])],
        metrics=_metrics(log),
        events=events,
        summary=_summary(log, events, thresholds, checkpoints, found),
        verdict=found,
        vs_plan=compare(log, plan) if plan is not None else None,
        notes=list(log.notes),
    )


def _link_grad_norm(events: list[Event]) -> None:
    """Say how far a grad-norm alert led the loss spike it belongs to (the leading indicator)."""
    alerts = [e for e in events if e.kind == "grad_norm_alert"]
    for spike in (e for e in events if e.kind in ("loss_spike", "divergence")):
        for alert in alerts:
            if spike.start_step - 50 <= alert.start_step <= spike.peak_step:
                lead = spike.peak_step - alert.start_step
                when = f"came {lead:,} step{'s' if lead != 1 else ''} before" if lead else "came at"
                spike.why += f". The grad-norm alert at step {alert.start_step:,} {when} the loss peak"
                break


def _metrics(log: MetricLog) -> dict[str, dict[str, Any]]:
    out = {}
    for name, values in log.values.items():
        finite = np.isfinite(values)
        if not finite.any() and not log.nonfinite[name].any():
            continue
        logged = log.steps[finite | log.nonfinite[name]]
        out[name] = {
            "points": int(logged.size),
            "first_step": int(logged[0]),
            "last_step": int(logged[-1]),
            "nonfinite": int(log.nonfinite[name].sum()),
            "as_written": log.source_names.get(name, name),
        }
    return out


def _summary(
    log: MetricLog, events: list[Event], thresholds: Thresholds, checkpoints: Checkpoints, found: str
) -> dict[str, Any]:
    kinds: dict[str, int] = {}
    for event in events:
        kinds[event.kind] = kinds.get(event.kind, 0) + 1
    warnings = list(log.notes)
    missing = [m for m in ("loss", "grad_norm", "step_seconds", "canary_loss") if m not in log.values]
    if "canary_loss" in missing and "val_loss" in log.values:
        missing.remove("canary_loss")
        warnings.append("no canary logged: the validation loss stands in for it")
    if missing:
        warnings.append(f"not in the log: {', '.join(missing)} (their detectors did not run)")
    if log.steps.size < 50:
        warnings.append(
            f"only {counted(log.steps.size, 'logged step')}: baselines rest on few points, so ratios and levels "
            "are rough"
        )
    return {
        "events_by_kind": kinds,
        "logged_steps": int(log.steps.size),
        "interval_steps": log.interval_steps,
        "restarts": len(log.restarts),
        "gaps": [list(gap) for gap in log.gaps],
        "thresholds": thresholds.source,
        "checkpoints": checkpoints.source,
        "warnings": warnings,
    }
