"""Monitoring: per-step metrics, the canary batch, alert thresholds, the spike rule and the rollback recipe.

Sources (docs/operations.md §4): the design brief's thresholds (grad norm above 5× its 1,000-step rolling mean;
canary loss outside 2σ of its 500-step rolling mean; a spike that has not come back within 5% of the pre-spike
loss in 200 steps is a divergence) and PaLM (Chowdhery et al. 2022, arXiv 2204.02311, §5.1: "restart from a
checkpoint roughly 100 steps before the spike started, and skip roughly 200-500 data batches"). A canary is a
fixed held-out batch (512-2,048 examples) evaluated forward-only at a fixed cadence, so its loss is comparable
across steps, unlike the training loss of ever-new batches.

Canary cost: a forward pass is about 1/3 of a training step's FLOPs (2N of 6N per token, Kaplan et al.
2020 §2.1), so one evaluation of c tokens costs about step_seconds · c / tokens_per_step / 3. Leaves out that
a small forward-only batch runs below training efficiency (pipeline bubbles, small GEMMs): the real cost can
be 2-3×.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, Field

from runplan.ops._notes import INPUT_CONFIG, Explained, fmt, fmt_seconds
from runplan.units import Fraction, PositiveCount, PositiveNumber


class MonitoringSpec(BaseModel):
    """Plan-file section `monitoring:`: canary, alert thresholds and the rollback rule."""

    model_config = INPUT_CONFIG

    canary_examples: PositiveCount = Field(
        1024, description="Sequences in the fixed canary batch (512-2,048)."
    )
    canary_every_steps: PositiveCount = Field(
        100,
        description="Evaluate the canary every this many steps; raised when it would cost over the budget.",
    )
    max_canary_overhead_fraction: Fraction = Field(
        0.01, description="Most of the training time the canary may take (0.01 = 1%)."
    )
    grad_norm_factor: PositiveNumber = Field(
        5.0, description="Alert when the unclipped gradient norm exceeds this many times its rolling mean."
    )
    grad_norm_window_steps: PositiveCount = Field(
        1000, description="Steps in the gradient-norm rolling mean."
    )
    canary_sigma: PositiveNumber = Field(2.0, description="Alert when canary loss leaves mean ± this many σ.")
    canary_window_steps: PositiveCount = Field(
        500, description="Steps in the canary loss rolling mean and σ."
    )
    spike_recovery_fraction: Fraction = Field(
        0.05, description="A spike is over when loss is back within this fraction of its pre-spike value."
    )
    spike_recovery_steps: PositiveCount = Field(
        200, description="Steps a spike may take to recover before it counts as a divergence (roll back)."
    )
    rollback_margin_steps: PositiveCount = Field(
        100, description="Roll back to a checkpoint at least this many steps before the spike (PaLM: ~100)."
    )
    skip_batches_min: PositiveCount = Field(
        200, description="Fewest batches skipped after a rollback (PaLM: 200)."
    )
    skip_batches_max: PositiveCount = Field(
        500, description="Most batches skipped after a rollback (PaLM: 500)."
    )


class MonitoringRequest(BaseModel):
    """What the monitoring stage needs from the schedule, the layout and the checkpoint plan."""

    model_config = INPUT_CONFIG

    total_steps: PositiveCount = Field(description="Training steps of the run.")
    tokens_per_step: PositiveNumber = Field(description="Global batch in tokens (main stage).")
    step_seconds: PositiveNumber = Field(description="Time of one training step, seconds.")
    seq_len: PositiveCount = Field(description="Tokens per sequence.")
    checkpoint_interval_steps: PositiveCount = Field(description="Steps between checkpoints.")
    retention_generations: PositiveCount = Field(3, description="Rolling checkpoints kept.")
    rollback_checkpoint_every_steps: PositiveCount | None = Field(
        None,
        description="Spacing of the older checkpoints kept for rollbacks (the checkpoint plan's rollback "
        "points); None = only the rolling generations, spaced by the checkpoint interval.",
    )
    dp: PositiveCount = Field(1, description="Data-parallel replicas; the canary is split evenly over them.")
    spec: MonitoringSpec = Field(
        default_factory=MonitoringSpec, description="The plan file's monitoring section."
    )


class Metric(Explained):
    """One metric logged every step and why."""

    name: str
    why: str


class Monitoring(Explained):
    """The monitoring section of a run plan, in this run's steps, tokens and seconds."""

    per_step_metrics: list[Metric]
    canary_examples: int
    canary_tokens: float
    canary_seconds: float
    canary_every_steps: int
    canary_overhead_fraction: float
    canary_evaluations: int
    grad_norm_factor: float
    grad_norm_window_steps: int
    grad_norm_window_tokens: float
    canary_sigma: float
    canary_window_steps: int
    canary_window_evaluations: int
    spike_recovery_fraction: float
    spike_recovery_steps: int
    spike_recovery_tokens: float
    spike_recovery_seconds: float
    rollback_margin_steps: int
    rollback_min_redo_steps: int
    rollback_max_redo_steps: int
    rollback_max_redo_tokens: float
    rollback_max_redo_seconds: float
    skip_batches_min: int
    skip_batches_max: int
    skip_tokens_min: float
    skip_tokens_max: float
    required_retention_generations: int
    alerts: list[str]
    rollback_procedure: list[str]
    warnings: list[str]


_METRICS = [
    ("loss", "training loss; the spike rule watches it"),
    ("grad_norm_unclipped", "global gradient norm before clipping; alert at > factor × rolling mean"),
    ("grad_clip_fraction", "whether this step was clipped; a rising clip rate precedes many spikes"),
    ("learning_rate", "confirms the WSD schedule is the one planned (warmup, stable, cooldown)"),
    ("tokens_per_second", "throughput; a drop points at a straggler node or a slow data loader"),
    ("step_seconds", "step time; compare with the plan's estimate"),
    ("mfu", "model FLOPs utilisation; the plan's cost assumes it"),
    ("global_batch_tokens", "confirms the batch ramp stages"),
]


def plan_monitoring(request: MonitoringRequest) -> Monitoring:
    """Concrete monitoring numbers for one run (see the module docstring for sources and what is left out)."""
    spec = request.spec
    steps_total, tps, step_s = request.total_steps, request.tokens_per_step, request.step_seconds
    k = request.checkpoint_interval_steps
    warnings: list[str] = []

    examples = max(request.dp, round(spec.canary_examples / request.dp) * request.dp)
    canary_tokens = float(examples * request.seq_len)
    canary_s = step_s * canary_tokens / tps / 3.0
    every = spec.canary_every_steps
    budget = spec.max_canary_overhead_fraction
    every_reason = f"{every} steps (monitoring.canary_every_steps)"
    if budget > 0 and canary_s / (every * step_s) > budget:
        needed = canary_s / (budget * step_s)
        every = int(100 * math.ceil(needed / 100))
        every_reason = (
            f"raised from {spec.canary_every_steps} to {every} steps so the canary costs ≤ {budget:.0%}"
        )
    overhead = canary_s / (every * step_s)
    evaluations = steps_total // every
    if not 512 <= spec.canary_examples <= 2048:
        warnings.append(f"canary of {spec.canary_examples} examples is outside the usual 512-2,048")

    window = spec.canary_window_steps
    window_evals = window // every
    window_reason = f"{window} steps / every {every} = {window_evals} evaluations"
    if window_evals < 5:
        window = 5 * every
        window_evals = 5
        window_reason = f"widened to 5 evaluations × {every} steps = {window} steps (σ needs a few points)"

    margin, detect = spec.rollback_margin_steps, spec.spike_recovery_steps
    min_redo = margin + detect
    required = math.ceil((margin + detect) / k) + 1
    rolling_reaches = request.retention_generations >= required
    spacing = (
        k
        if rolling_reaches or request.rollback_checkpoint_every_steps is None
        else (request.rollback_checkpoint_every_steps)
    )
    spacing_reason = (
        f"interval {k:,}"
        if spacing == k
        else f"rollback-point spacing {spacing:,} (rolling generations too short)"
    )
    max_redo = margin + detect + spacing
    if not rolling_reaches and request.rollback_checkpoint_every_steps is None:
        warnings.append(
            f"rolling retention of {request.retention_generations} × {k:,} steps reaches "
            f"{(request.retention_generations - 1) * k:,} steps back, but a rollback needs a checkpoint "
            f"≥ {margin + detect} steps before detection: keep ≥ {required} generations "
            f"(operations.retention_generations) or rollback checkpoints every ≥ {margin + detect} steps"
        )
    lo, hi = spec.skip_batches_min, spec.skip_batches_max
    if lo > hi:
        lo, hi = hi, lo

    alerts = [
        f"grad norm > {spec.grad_norm_factor:g} × its mean over the last {spec.grad_norm_window_steps:,} "
        "steps "
        f"({fmt(spec.grad_norm_window_steps * tps)} tokens, "
        f"{fmt_seconds(spec.grad_norm_window_steps * step_s)})",
        f"canary loss outside mean ± {spec.canary_sigma:g}σ of its last {window:,} steps ({window_evals} "
        f"evaluations of {examples:,} sequences every {every} steps)",
        f"loss spike: loss not back within {spec.spike_recovery_fraction:.0%} of its pre-spike value after "
        f"{detect} steps ({fmt(detect * tps)} tokens, {fmt_seconds(detect * step_s)}) → divergence: roll "
        "back",
    ]
    procedure = [
        f"let s be the step where the spike began; divergence is declared at s + {detect}",
        f"stop the job; pick the newest validated checkpoint at a step ≤ s − {margin} (one every "
        f"{spacing:,} steps that far back, so it is {margin} to {margin + spacing - 1:,} steps before the "
        "spike)",
        f"resume from it and skip the next {lo}-{hi} batches of the data order "
        f"({fmt(lo * tps)}-{fmt(hi * tps)} "
        "tokens): the data seen just before and during the spike (PaLM §5.1)",
        f"work redone: {min_redo:,} to {max_redo:,} steps ({fmt(max_redo * tps)} tokens, up to "
        f"{fmt_seconds(max_redo * step_s)}); if the spike recurs at the same step, skip more data or lower "
        "the LR",
    ]
    metrics = [Metric(name=name, why=why) for name, why in _METRICS]
    notes = {
        "canary_examples": f"{spec.canary_examples} rounded to a multiple of dp={request.dp} → {examples:,} "
        "sequences",
        "canary_tokens": f"{examples:,} × {request.seq_len} = {fmt(canary_tokens)} tokens",
        "canary_seconds": (
            f"forward ≈ 1/3 of a step per token: {step_s:.4g} s × {fmt(canary_tokens)}/{fmt(tps)} / 3 "
            f"= {canary_s:.3g} s per evaluation"
        ),
        "canary_every_steps": every_reason,
        "canary_overhead_fraction": f"{canary_s:.3g} s / ({every} × {step_s:.4g} s) = {overhead:.3%} of "
        "training time",
        "canary_evaluations": f"⌊{steps_total:,} / {every}⌋ = {evaluations:,} evaluations over the run",
        "grad_norm_factor": f"alert at {spec.grad_norm_factor:g}× the rolling mean",
        "grad_norm_window_steps": f"{spec.grad_norm_window_steps:,} steps",
        "grad_norm_window_tokens": f"{spec.grad_norm_window_steps:,} × {fmt(tps)} = "
        f"{fmt(spec.grad_norm_window_steps * tps)} tokens",
        "canary_sigma": f"alert outside ± {spec.canary_sigma:g}σ",
        "canary_window_steps": window_reason,
        "canary_window_evaluations": window_reason,
        "spike_recovery_fraction": f"back within {spec.spike_recovery_fraction:.0%} of the pre-spike loss",
        "spike_recovery_steps": f"{detect} steps to recover before declaring divergence",
        "spike_recovery_tokens": f"{detect} × {fmt(tps)} = {fmt(detect * tps)} tokens",
        "spike_recovery_seconds": f"{detect} × {step_s:.4g} s = {fmt_seconds(detect * step_s)}",
        "rollback_margin_steps": f"checkpoint at least {margin} steps before the spike (PaLM §5.1)",
        "rollback_min_redo_steps": f"margin {margin} + detection {detect} = {min_redo} steps",
        "rollback_max_redo_steps": f"margin {margin} + detection {detect} + {spacing_reason} = {max_redo:,} "
        "steps",
        "rollback_max_redo_tokens": f"{max_redo:,} × {fmt(tps)} = {fmt(max_redo * tps)} tokens",
        "rollback_max_redo_seconds": f"{max_redo:,} × {step_s:.4g} s = {fmt_seconds(max_redo * step_s)}",
        "skip_batches_min": f"{lo} batches (PaLM skipped 200-500)",
        "skip_batches_max": f"{hi} batches",
        "skip_tokens_min": f"{lo} × {fmt(tps)} = {fmt(lo * tps)} tokens",
        "skip_tokens_max": f"{hi} × {fmt(tps)} = {fmt(hi * tps)} tokens",
        "required_retention_generations": (
            f"⌈(margin {margin} + detection {detect}) / interval {k:,}⌉ + 1 = {required} generations"
        ),
    }
    return Monitoring(
        per_step_metrics=metrics,
        canary_examples=examples,
        canary_tokens=canary_tokens,
        canary_seconds=canary_s,
        canary_every_steps=every,
        canary_overhead_fraction=overhead,
        canary_evaluations=evaluations,
        grad_norm_factor=spec.grad_norm_factor,
        grad_norm_window_steps=spec.grad_norm_window_steps,
        grad_norm_window_tokens=spec.grad_norm_window_steps * tps,
        canary_sigma=spec.canary_sigma,
        canary_window_steps=window,
        canary_window_evaluations=window_evals,
        spike_recovery_fraction=spec.spike_recovery_fraction,
        spike_recovery_steps=detect,
        spike_recovery_tokens=detect * tps,
        spike_recovery_seconds=detect * step_s,
        rollback_margin_steps=margin,
        rollback_min_redo_steps=min_redo,
        rollback_max_redo_steps=max_redo,
        rollback_max_redo_tokens=max_redo * tps,
        rollback_max_redo_seconds=max_redo * step_s,
        skip_batches_min=lo,
        skip_batches_max=hi,
        skip_tokens_min=lo * tps,
        skip_tokens_max=hi * tps,
        required_retention_generations=required,
        alerts=alerts,
        rollback_procedure=procedure,
        warnings=warnings,
        notes=notes,
    )
