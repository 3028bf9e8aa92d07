"""Monitoring: per-step metrics, the canary batch, alert thresholds, the spike rule and the rollback recipe.

Sources (docs/operations.md §4): the planning thresholds (grad norm above 5× its 1,000-step rolling mean;
canary loss outside 2σ of its 500-step rolling mean; a spike that has not come back within 5% of the pre-spike
loss in 200 steps is a divergence) are runplan planning defaults with no published source: starting points to
tune on a run's own logs, each printed as an input, not as a derived number. The rollback comes from PaLM
(Chowdhery et al. 2022, arXiv 2204.02311, §5.1: "restart from a checkpoint roughly 100 steps before the spike
started, and skip roughly 200-500 data batches"). A canary is a
fixed held-out batch (512-2,048 examples) evaluated forward-only at a fixed cadence, so its loss is comparable
across steps, unlike the training loss of ever-new batches.

Canary cost: a forward pass is about 1/3 of a training step's FLOPs (2N of 6N per token, Kaplan et al.
2020 §2.1), so one evaluation of c tokens costs about step_seconds · c / tokens_per_step / 3. Leaves out that
a small forward-only batch runs below training efficiency (pipeline bubbles, small GEMMs): the real cost can
be 2-3×.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, Field, model_validator

from runplan.ops._notes import INPUT_CONFIG, Explained, Reasoned, fmt, fmt_seconds
from runplan.units import Fraction, PositiveCount, PositiveNumber


class MonitoringSpec(BaseModel):
    """Plan-file section `monitoring:`: canary, alert thresholds and the rollback rule."""

    # each field's description is the docstring under it (one line a field, the value beside its name)
    model_config = ConfigDict(**INPUT_CONFIG, use_attribute_docstrings=True)

    canary_examples: PositiveCount = 1024
    """Sequences in the fixed canary batch (512-2,048)."""
    canary_every_steps: PositiveCount = 100
    """Evaluate the canary every this many steps; raised when it would cost over the budget."""
    max_canary_overhead_fraction: Fraction = 0.01
    """Most of the training time the canary may take (0.01 = 1%; 0 = no cap: the cadence is kept as given)."""
    grad_norm_factor: PositiveNumber = Field(5.0, gt=1)
    """Alert when the unclipped gradient norm exceeds this many times its rolling mean (above 1: at or below 1,
    half of all steps would alert)."""
    grad_norm_window_steps: PositiveCount = 1000
    """Steps in the gradient-norm rolling mean."""
    canary_sigma: PositiveNumber = 2.0
    """Alert when canary loss leaves mean ± this many σ."""
    canary_window_steps: PositiveCount = 500
    """Steps in the canary loss rolling mean and σ."""
    spike_recovery_fraction: Fraction = 0.05
    """A spike is over when loss is back within this fraction of its pre-spike value."""
    spike_recovery_steps: PositiveCount = 200
    """Steps a spike may take to recover before it counts as a divergence (roll back)."""
    rollback_margin_steps: PositiveCount = 100
    """Roll back to a checkpoint at least this many steps before the spike (PaLM: ~100)."""
    skip_batches_min: PositiveCount = 200
    """Fewest batches skipped after a rollback (PaLM: 200)."""
    skip_batches_max: PositiveCount = 500
    """Most batches skipped after a rollback (PaLM: 500)."""

    @model_validator(mode="after")
    def _skip_range_in_order(self) -> MonitoringSpec:
        if self.skip_batches_min > self.skip_batches_max:
            raise ValueError(
                f"skip_batches_min ({self.skip_batches_min}) is above skip_batches_max ({self.skip_batches_max}); "
                "swap them (PaLM skipped 200 to 500 batches)"
            )
        return self


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
    run_tokens: PositiveNumber | None = Field(
        None,
        description="Tokens of the whole run, batch ramp included: what a rollback that restarts from step 0 "
        "redoes (None: total_steps × tokens_per_step).",
    )
    run_seconds: PositiveNumber | None = Field(
        None,
        description="Failure-free seconds of the whole run, W, batch ramp included (None: total_steps × "
        "step_seconds).",
    )
    moe: bool = Field(False, description="The model routes tokens to experts: log the router metrics too.")
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

#: A mixture-of-experts run also logs its router, per MoE layer (Megatron-LM ``--moe-per-layer-logging``). No
#: alert threshold is published for these: compare each with its own rolling history, as for the grad norm.
_MOE_METRICS = [
    (
        "moe_load_balancing_loss",
        "auxiliary balance loss (Switch Transformer, Fedus et al. 2022 §2.2, Eq. 4; DeepSeek-V3's sequence-wise "
        "one, arXiv 2412.19437 §2.1.2); Megatron-LM logs load_balancing_loss, seq_ and global_ variants "
        "(training.py @ d98e8a6); a rising value means routing is drifting out of balance",
    ),
    (
        "moe_expert_load_max_violation",
        "MaxVio = (max_i load_i − mean load) / mean load from the tokens each expert got this step (Wang et al. "
        "2024, arXiv 2408.15664, §4.1); growth means routing collapse onto a few experts, and the busiest "
        "expert-parallel rank sets the step time",
    ),
    (
        "moe_dropped_token_fraction",
        "tokens over an expert's capacity ⌈tokens / E × capacity factor⌉, skipped by that expert (Switch "
        "Transformer §2.2; Megatron-LM moe_utils.py); stays 0 for a dropless run (DeepSeek-V3 §2.1.2 drops none)",
    ),
    (
        "moe_router_z_loss",
        "mean squared log-sum-exp of the router logits (ST-MoE, Zoph et al. 2022, arXiv 2202.08906, §3.1): large "
        "router logits go with training instability; Megatron-LM logs it as z_loss",
    ),
]


def plan_monitoring(request: MonitoringRequest) -> Monitoring:
    """Concrete monitoring numbers for one run (see the module docstring for sources and what is left out)."""
    spec, step_s = request.spec, request.step_seconds
    examples = _canary_examples(request)
    tokens, seconds = _canary_evaluation(request, examples.value)
    every = _canary_every(spec, seconds.value, step_s)
    window, window_evals = _canary_window(spec.canary_window_steps, every.value)
    spacing, max_redo, required = _rollback_reach(request)
    lo, hi = spec.skip_batches_min, spec.skip_batches_max
    return Monitoring.build(
        per_step_metrics=[
            Metric(name=name, why=why) for name, why in _METRICS + (_MOE_METRICS if request.moe else [])
        ],
        canary_examples=examples,
        canary_tokens=tokens,
        canary_seconds=seconds,
        canary_every_steps=every,
        **_canary_overhead(request, seconds.value, every.value),
        **_alert_thresholds(request, window, window_evals),
        **_rollback_figures(request, max_redo, lo, hi),
        required_retention_generations=required,
        alerts=_alerts(request, window.value, window_evals.value, examples.value, every.value),
        rollback_procedure=_rollback_procedure(request, spacing, lo, hi),
        warnings=_warnings(request, required.value, examples.value, every.value),
    )


def _canary_examples(request: MonitoringRequest) -> Reasoned[int]:
    """The canary batch split evenly over the data-parallel replicas (at least one sequence each)."""
    dp, wanted = request.dp, request.spec.canary_examples
    examples = max(dp, round(wanted / dp) * dp)
    return Reasoned(examples, f"{wanted} rounded to a multiple of dp={dp} → {examples:,} sequences")


def _canary_evaluation(request: MonitoringRequest, examples: int) -> tuple[Reasoned[float], Reasoned[float]]:
    """Tokens of one canary evaluation and its time: a forward pass is ≈ 1/3 of a training step per token."""
    step_s, tps = request.step_seconds, request.tokens_per_step
    tokens = float(examples * request.seq_len)
    seconds = step_s * tokens / tps / 3.0
    return (
        Reasoned(tokens, f"{examples:,} × {request.seq_len} = {fmt(tokens)} tokens"),
        Reasoned(
            seconds,
            f"forward ≈ 1/3 of a step per token: {step_s:.4g} s × {fmt(tokens)}/{fmt(tps)} / 3 "
            f"= {seconds:.3g} s per evaluation",
        ),
    )


def _canary_every(spec: MonitoringSpec, canary_s: float, step_s: float) -> Reasoned[int]:
    """The planned cadence, raised (in hundreds of steps) when the canary would cost over its budget.

    Hand-derived: the overhead is canary_s / (every · step_s); the smallest every with overhead ≤ budget is
    canary_s / (budget · step_s), rounded up to a multiple of 100 steps (docs/operations.md §4).
    """
    every, budget = spec.canary_every_steps, spec.max_canary_overhead_fraction
    if budget > 0 and canary_s / (every * step_s) > budget:
        raised = int(100 * math.ceil(canary_s / (budget * step_s) / 100))
        return Reasoned(raised, f"raised from {every} to {raised} steps so the canary costs ≤ {budget:.0%}")
    return Reasoned(every, f"evaluate the canary batch every {every} steps (monitoring.canary_every_steps)")


def _canary_overhead(request: MonitoringRequest, canary_s: float, every: int) -> dict[str, Reasoned[float]]:
    """The canary's share of the training time and how many times it runs."""
    step_s, steps_total = request.step_seconds, request.total_steps
    overhead = canary_s / (every * step_s)
    evaluations = steps_total // every
    return dict(
        canary_overhead_fraction=Reasoned(
            overhead, f"{canary_s:.3g} s / ({every} × {step_s:.4g} s) = {overhead:.3%} of training time"
        ),
        canary_evaluations=Reasoned(
            evaluations, f"⌊{steps_total:,} / {every}⌋ = {evaluations:,} evaluations over the run"
        ),
    )


def _canary_window(window: int, every: int) -> tuple[Reasoned[int], Reasoned[int]]:
    """The canary's rolling window in steps and in evaluations, widened to at least 5 evaluations for a σ.

    At least 5 points is a planning choice (a standard deviation of fewer samples is too noisy to alert on).
    """
    if window // every < 5:
        why = f"widened to 5 evaluations × {every} steps = {5 * every} steps (σ needs a few points)"
        return Reasoned(5 * every, why), Reasoned(5, why)
    why = f"{window} steps / every {every} = {window // every} evaluations"
    return Reasoned(window, why), Reasoned(window // every, why)


def _alert_thresholds(
    request: MonitoringRequest, window: Reasoned[int], window_evals: Reasoned[int]
) -> dict[str, Reasoned[float]]:
    """The three alert rules' thresholds and windows, in this run's steps, tokens and seconds."""
    spec, tps, step_s = request.spec, request.tokens_per_step, request.step_seconds
    grad_window, detect = spec.grad_norm_window_steps, spec.spike_recovery_steps
    return dict(
        grad_norm_factor=Reasoned(
            spec.grad_norm_factor,
            f"alert at {spec.grad_norm_factor:g}× the rolling mean (monitoring.grad_norm_factor, a planning choice)",
        ),
        grad_norm_window_steps=Reasoned(
            grad_window,
            f"the gradient norm's rolling mean is over the last {grad_window:,} steps "
            "(monitoring.grad_norm_window_steps, a planning choice)",
        ),
        grad_norm_window_tokens=_in_tokens(grad_window, tps, grouped=True),
        canary_sigma=Reasoned(
            spec.canary_sigma,
            f"alert outside ± {spec.canary_sigma:g}σ (monitoring.canary_sigma, a planning choice)",
        ),
        canary_window_steps=window,
        canary_window_evaluations=window_evals,
        spike_recovery_fraction=Reasoned(
            spec.spike_recovery_fraction,
            f"back within {spec.spike_recovery_fraction:.0%} of the pre-spike loss",
        ),
        spike_recovery_steps=Reasoned(
            detect,
            f"{detect} steps to recover before declaring divergence (monitoring.spike_recovery_steps, "
            "a planning choice)",
        ),
        spike_recovery_tokens=_in_tokens(detect, tps, grouped=False),
        spike_recovery_seconds=_in_seconds(detect, step_s, grouped=False),
    )


def _rollback_reach(request: MonitoringRequest) -> tuple[int, Reasoned[int], Reasoned[int]]:
    """How far apart the checkpoints a rollback can land on are, the most work a rollback redoes, and the
    rolling generations that would reach back far enough.

    A rollback needs a checkpoint ≥ margin + detection steps before it is declared: the rolling generations
    reach that far when there are ⌈(margin + detection) / interval⌉ + 1 of them; otherwise the checkpoint
    plan's rollback points (when given) set the spacing. The newest such checkpoint is up to spacing − 1 steps
    older still (one lies in every spacing steps), so a rollback redoes at most margin + detection + spacing − 1.
    """
    spec, k = request.spec, request.checkpoint_interval_steps
    margin, detect = spec.rollback_margin_steps, spec.spike_recovery_steps
    required = math.ceil((margin + detect) / k) + 1
    rolling_reaches = request.retention_generations >= required
    every = request.rollback_checkpoint_every_steps
    spacing = k if rolling_reaches or every is None else every
    how = (
        f"interval {k:,}"
        if spacing == k
        else f"rollback-point spacing {spacing:,} (rolling generations too short)"
    )
    max_redo = margin + detect + spacing - 1
    why = f"margin {margin} + detection {detect} + {how} − 1 = {max_redo:,} steps"
    if max_redo > request.total_steps:
        # no rollback redoes more than the run: without a checkpoint that old it restarts from step 0
        max_redo = request.total_steps
        why += f", capped at the run's {max_redo:,} steps (no checkpoint that old: restart from step 0)"
    return (
        spacing,
        Reasoned(max_redo, why),
        Reasoned(
            required,
            f"⌈(margin {margin} + detection {detect}) / interval {k:,}⌉ + 1 = {required} generations",
        ),
    )


def _rollback_figures(
    request: MonitoringRequest, max_redo: Reasoned[int], lo: int, hi: int
) -> dict[str, Reasoned[float]]:
    """Work a rollback redoes (margin + detection, plus up to one checkpoint spacing) and the data it skips."""
    spec, tps = request.spec, request.tokens_per_step
    margin, detect = spec.rollback_margin_steps, spec.spike_recovery_steps
    min_redo = margin + detect
    return dict(
        rollback_margin_steps=Reasoned(
            margin, f"checkpoint at least {margin} steps before the spike (PaLM §5.1)"
        ),
        rollback_min_redo_steps=Reasoned(
            min_redo, f"margin {margin} + detection {detect} = {min_redo} steps"
        ),
        rollback_max_redo_steps=max_redo,
        **_max_redo_work(request, max_redo.value),
        skip_batches_min=Reasoned(lo, f"a rollback skips at least {lo} batches (PaLM §5.1 skipped 200-500)"),
        skip_batches_max=Reasoned(hi, f"a rollback skips at most {hi} batches (PaLM §5.1 skipped 200-500)"),
        skip_tokens_min=_in_tokens(lo, tps, grouped=False),
        skip_tokens_max=_in_tokens(hi, tps, grouped=False),
    )


def _max_redo_work(request: MonitoringRequest, max_redo: int) -> dict[str, Reasoned[float]]:
    """The most tokens and seconds a rollback redoes: max_redo steps at the main batch, or, where it restarts from
    step 0, the whole run as scheduled (a batch ramp's steps are smaller: steps × main batch would exceed D)."""
    tps, step_s = request.tokens_per_step, request.step_seconds
    if max_redo < request.total_steps or request.run_tokens is None or request.run_seconds is None:
        return dict(
            rollback_max_redo_tokens=_in_tokens(max_redo, tps, grouped=True),
            rollback_max_redo_seconds=_in_seconds(max_redo, step_s, grouped=True),
        )
    tokens, seconds = request.run_tokens, request.run_seconds
    return dict(
        rollback_max_redo_tokens=Reasoned(
            tokens, f"the whole run, restarted from step 0: {fmt(tokens)} tokens"
        ),
        rollback_max_redo_seconds=Reasoned(
            seconds, f"the whole run, restarted from step 0: W = {fmt_seconds(seconds)}"
        ),
    )


def _in_tokens(steps: int, tokens_per_step: float, *, grouped: bool) -> Reasoned[float]:
    """A span of steps (or skipped batches) in tokens; ``grouped`` prints the count with thousands commas."""
    tokens = steps * tokens_per_step
    return Reasoned(
        tokens, f"{steps:{',' if grouped else ''}} × {fmt(tokens_per_step)} = {fmt(tokens)} tokens"
    )


def _in_seconds(steps: int, step_seconds: float, *, grouped: bool) -> Reasoned[float]:
    """A span of steps in seconds of training; ``grouped`` prints the count with thousands commas."""
    seconds = steps * step_seconds
    return Reasoned(
        seconds, f"{steps:{',' if grouped else ''}} × {step_seconds:.4g} s = {fmt_seconds(seconds)}"
    )


def _alerts(
    request: MonitoringRequest, window: int, window_evals: int, examples: int, every: int
) -> list[str]:
    """The three alert rules in words, with this run's numbers."""
    spec, tps, step_s = request.spec, request.tokens_per_step, request.step_seconds
    grad_window, detect = spec.grad_norm_window_steps, spec.spike_recovery_steps
    return [
        f"grad norm > {spec.grad_norm_factor:g} × its mean over the last {grad_window:,} steps "
        f"({fmt(grad_window * tps)} tokens, {fmt_seconds(grad_window * step_s)})",
        f"canary loss outside mean ± {spec.canary_sigma:g}σ of its last {window:,} steps ({window_evals} "
        f"evaluations of {examples:,} sequences every {every} steps)",
        f"loss spike: loss not back within {spec.spike_recovery_fraction:.0%} of its pre-spike value after "
        f"{detect} steps ({fmt(detect * tps)} tokens, {fmt_seconds(detect * step_s)}) → divergence: roll "
        "back",
    ]


def _rollback_procedure(request: MonitoringRequest, spacing: int, lo: int, hi: int) -> list[str]:
    """The rollback recipe (PaLM §5.1) in this run's steps and tokens."""
    spec, tps = request.spec, request.tokens_per_step
    margin, detect = spec.rollback_margin_steps, spec.spike_recovery_steps
    max_redo = min(margin + detect + spacing - 1, request.total_steps)
    min_redo = min(margin + detect, max_redo)
    redo = _max_redo_work(request, max_redo)
    from_start = (
        "; if none is that old, restart from step 0 (the same seed re-creates the initial weights)"
        if margin + detect + spacing - 1 > request.total_steps
        else ""
    )
    return [
        f"let s be the step where the spike began; divergence is declared at s + {detect}",
        f"stop the job; pick the newest validated checkpoint at a step ≤ s − {margin} (one every "
        f"{spacing:,} steps that far back, so it is {margin} to {margin + spacing - 1:,} steps before the "
        f"spike{from_start})",
        f"resume from it and skip the next {lo}-{hi} batches of the data order "
        f"({fmt(lo * tps)} to {fmt(hi * tps)} tokens): the data seen just before and during the spike (PaLM §5.1)",
        f"work redone: {min_redo:,} to {max_redo:,} steps ({fmt(redo['rollback_max_redo_tokens'].value)} "
        f"tokens, up to {fmt_seconds(redo['rollback_max_redo_seconds'].value)}); if the spike recurs at the same "
        "step, skip more data; do not lower the learning rate mid-run as a recovery (Adam's moment estimates "
        "were built at the old rate; PaLM §5.1 restarted and skipped batches without changing hyper-parameters)",
    ]


def _warnings(request: MonitoringRequest, required: int, examples: int, every: int) -> list[str]:
    """Cautions: an unusual canary size (as run, after rounding to dp), a canary that never runs, rolling
    checkpoints that do not reach back far enough for a rollback."""
    spec, k, kept = request.spec, request.checkpoint_interval_steps, request.retention_generations
    reach = spec.rollback_margin_steps + spec.spike_recovery_steps
    warnings: list[str] = []
    if not 512 <= examples <= 2048:
        rounded = f" ({spec.canary_examples} rounded to a multiple of dp = {request.dp:,})" * (
            examples != spec.canary_examples
        )
        warnings.append(f"canary of {examples:,} examples{rounded} is outside the usual 512-2,048")
    if every > request.total_steps:
        warnings.append(
            f"the canary runs every {every:,} steps but the run has {request.total_steps:,}: it is never "
            "evaluated (lower monitoring.canary_every_steps or canary_examples, or raise "
            "max_canary_overhead_fraction)"
        )
    if kept < required and request.rollback_checkpoint_every_steps is None:
        warnings.append(
            f"rolling retention of {kept} × {k:,} steps reaches {(kept - 1) * k:,} steps back, but a rollback "
            f"needs a checkpoint ≥ {reach} steps before detection: keep ≥ {required} generations "
            f"(operations.retention_generations) or rollback checkpoints every ≥ {reach} steps"
        )
    return warnings
