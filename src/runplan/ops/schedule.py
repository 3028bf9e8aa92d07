"""Batch and learning-rate schedule: global batch from a law, a batch ramp, peak LR, WSD phases.

Sources (docs/operations.md §1):

* **Batch and LR laws**: DeepSeek LLM (Bi et al. 2024, arXiv 2401.02954, §3.1, Eq. 1):
  B_opt = 0.2920·C^0.3271 tokens and η_opt = 0.3118·C^−0.1250, fitted by small-scale grid searches with
  C = M·D (M = 72·L·h² + 12·L·h·s non-embedding FLOPs per token, about 6·N_non-emb per token). Their data,
  their tokenizer, AdamW with their β and weight decay; at other budgets the law is an extrapolation.
* **Critical batch**: above it, more tokens per step stop buying fewer steps (McCandlish et al. 2018, arXiv
  1812.06162, §2). Zhang et al. 2024 (arXiv 2410.21676) find that the critical batch grows mainly with the
  data seen, so it is small early in training. That is the reason for the **batch ramp**: a smaller batch for
  the first ~1-2% of tokens, as GPT-3 (Brown et al. 2020, App. B: ramped over the first 4-12B tokens) and
  Llama 3 (arXiv 2407.21783, §3.4.1: 4M tokens, 8M after 252M tokens, 16M after 2.87T) did.
* **WSD** (warmup, stable, decay): Hägele et al. 2024 (arXiv 2405.18392, §3) and MiniCPM (arXiv 2404.06395,
  §4): linear warmup, constant LR, then a cooldown over the last 10-20% of steps; the (1 − sqrt) shape beats
  linear. Default warmup 1% of the tokens: DeepSeek LLM 7B warmed up for 2,000 steps of 9.4M tokens out of 2T
  (about 0.9%).

Leaves out: LR scaling with the batch during the ramp (we keep the LR schedule in tokens independent of the
batch), weight decay, Adam β2, and any dependence of the laws on data quality (DeepSeek §3.3).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field, model_validator

from runplan.errors import SpecError
from runplan.ops._notes import INPUT_CONFIG, Explained, fmt
from runplan.scaling.hyperparams import deepseek_batch_tokens, deepseek_peak_lr
from runplan.units import Fraction, PositiveCount, PositiveNumber

if TYPE_CHECKING:
    import numpy as np

CooldownShape = Literal["1-sqrt", "linear", "cosine"]

DEFAULT_WARMUP_FRACTION = 0.01


# ---- inputs -------------------------------------------------------------------------------------------


class RampStage(BaseModel):
    """One stage of the batch ramp: a smaller global batch for a first slice of the tokens."""

    model_config = INPUT_CONFIG

    batch_fraction: float = Field(
        gt=0, le=1, description="Global batch of this stage as a fraction of the main batch (0.5 = half)."
    )
    token_fraction: Fraction = Field(description="Length of this stage as a fraction of the training tokens.")


class ScheduleSpec(BaseModel):
    """Plan-file section `schedule:`: batch, learning rate and the WSD phases."""

    model_config = INPUT_CONFIG

    global_batch_tokens: PositiveNumber | None = Field(
        None,
        description="Main global batch in tokens; unset = DeepSeek LLM law B = 0.2920·C^0.3271, capped by "
        "the "
        "critical batch. Rounded so that it divides into dp × micro_batch × seq_len.",
    )
    peak_lr: PositiveNumber | None = Field(
        None, description="Peak learning rate; unset = DeepSeek LLM law η = 0.3118·C^−0.125."
    )
    warmup_tokens: PositiveNumber | None = Field(
        None, description="Linear warmup length in tokens (set this or warmup_fraction, not both)."
    )
    warmup_fraction: Fraction | None = Field(
        None, description="Linear warmup length as a fraction of the training tokens; default 0.01."
    )
    cooldown_fraction: float = Field(
        0.2,
        gt=0,
        lt=1,
        description="Cooldown (decay) length as a fraction of the training tokens (WSD: 0.1-0.2).",
    )
    cooldown_shape: CooldownShape = Field(
        "1-sqrt", description="Cooldown shape: '1-sqrt' (Hägele et al. 2024, best), 'linear' or 'cosine'."
    )
    final_lr_fraction: Fraction = Field(
        0.0, description="LR at the end of the cooldown as a fraction of the peak."
    )
    batch_ramp: list[RampStage] = Field(
        default_factory=lambda: [RampStage(batch_fraction=0.5, token_fraction=0.015)],
        min_length=1,
        description="Batch-ramp stages before the main batch, in order (default: half the batch for the "
        "first "
        "1.5% of tokens). Use batch_fraction 1 to switch the ramp off.",
    )

    @model_validator(mode="after")
    def _check(self) -> ScheduleSpec:
        if self.warmup_tokens is not None and self.warmup_fraction is not None:
            raise ValueError("set warmup_tokens or warmup_fraction, not both")
        fractions = [stage.batch_fraction for stage in self.batch_ramp]
        if fractions != sorted(fractions):
            raise ValueError("batch_ramp stages must not shrink the batch: order them by batch_fraction")
        if sum(stage.token_fraction for stage in self.batch_ramp) >= 0.5:
            raise ValueError("batch_ramp stages must cover less than half of the training tokens")
        return self


class ScheduleRequest(BaseModel):
    """What the schedule stage needs from the rest of the plan (allocation and layout)."""

    model_config = INPUT_CONFIG

    training_tokens: PositiveNumber = Field(description="Training tokens D of the run.")
    compute_flops: PositiveNumber = Field(
        description="Training compute C the laws take (DeepSeek: C = M·D, M non-embedding FLOPs per token)."
    )
    seq_len: PositiveCount = Field(description="Tokens per sequence s.")
    dp: PositiveCount = Field(description="Data-parallel degree d of the layout.")
    micro_batch: PositiveCount = Field(
        description="Sequences per micro-batch b on each data-parallel replica."
    )
    microbatch_multiple: PositiveCount = Field(
        1,
        description="Each stage's micro-batches per replica must be a multiple of this: the pipeline depth p "
        "with an interleaved schedule (Megatron's interleaved 1F1B runs micro-batches in groups of p), else 1.",
    )
    critical_batch_tokens: PositiveNumber | None = Field(
        None, description="Critical batch in tokens; the law's batch is capped at it (None: no cap)."
    )
    spec: ScheduleSpec = Field(default_factory=ScheduleSpec, description="The plan file's schedule section.")


# ---- outputs ------------------------------------------------------------------------------------------


class BatchStage(Explained):
    """A span of steps at one global batch size (a ramp stage or the main stage)."""

    name: str
    start_step: int
    end_step: int
    steps: int
    start_tokens: float
    end_tokens: float
    tokens: float
    global_batch_sequences: int
    global_batch_tokens: float
    microbatches_per_replica: int


class LrPhase(Explained):
    """One WSD phase: warmup, stable or cooldown, with its step and token span."""

    name: Literal["warmup", "stable", "cooldown"]
    shape: str
    start_step: int
    end_step: int
    steps: int
    start_tokens: float
    end_tokens: float
    tokens: float
    lr_start: float
    lr_end: float


class Schedule(Explained):
    """The schedule section of a run plan."""

    batch_law: str
    compute_flops: float
    law_batch_tokens: float
    critical_batch_tokens: float | None
    target_batch_tokens: float
    batch_divisor_sequences: int
    global_batch_sequences: int
    global_batch_tokens: float
    microbatches_per_replica: int
    peak_lr: float
    peak_lr_source: str
    final_lr: float
    warmup_steps: int
    cooldown_steps: int
    cooldown_shape: CooldownShape
    total_steps: int
    training_tokens: float
    scheduled_tokens: float
    batch_stages: list[BatchStage]
    lr_phases: list[LrPhase]
    warnings: list[str]


# ---- the stage ----------------------------------------------------------------------------------------


def plan_schedule(request: ScheduleRequest) -> Schedule:
    """Build the batch ramp and the WSD learning-rate phases for one run (pure; see the module docstring).

    Rounding: the global batch in sequences is a multiple of u = dp·micro_batch, so each replica runs a whole
    number of micro-batches (m = sequences / u). The main batch is rounded to the nearest multiple of u, or
    down when it was capped by the critical batch; each ramp stage's batch is rounded down to a multiple of
    u·k (at least u·k), k = ``microbatch_multiple``, so an interleaved pipeline keeps whole groups of p. Stage lengths are rounded to whole steps, so the scheduled tokens are within one main step
    of the training tokens. LR phase boundaries are the step boundaries nearest to their token targets.
    """
    import numpy as np  # lazy: `runplan --help` must not load numpy

    spec = request.spec
    seq_len = request.seq_len
    unit = request.dp * request.micro_batch
    tokens_target = request.training_tokens
    notes: dict[str, str] = {}
    warnings: list[str] = []

    c = request.compute_flops
    law_batch = deepseek_batch_tokens(c)
    notes["compute_flops"] = f"C = {fmt(c)} FLOPs (training compute the laws take)"
    notes["law_batch_tokens"] = (
        f"B_opt = 0.2920·C^0.3271 = 0.2920·({fmt(c)})^0.3271 = {fmt(law_batch)} tokens (DeepSeek LLM §3.1)"
    )
    crit = request.critical_batch_tokens
    if crit is not None:
        notes["critical_batch_tokens"] = (
            f"critical batch {fmt(crit)} tokens (from the parallel stage's batch law)"
        )

    capped = False
    if spec.global_batch_tokens is not None:
        target = spec.global_batch_tokens
        notes["target_batch_tokens"] = (
            f"{fmt(target)} tokens set in the plan file (schedule.global_batch_tokens)"
        )
    elif crit is not None and crit < law_batch:
        target, capped = crit, True
        notes["target_batch_tokens"] = (
            f"min(B_opt {fmt(law_batch)}, critical {fmt(crit)}) = {fmt(crit)} tokens: capped by the "
            "critical batch"
        )
    else:
        target = law_batch
        notes["target_batch_tokens"] = (
            f"B_opt = {fmt(law_batch)} tokens (below the critical batch or no cap given)"
        )

    notes["batch_divisor_sequences"] = (
        f"u = dp × micro_batch = {request.dp} × {request.micro_batch} = {unit} sequences: the batch must be "
        "a "
        "multiple of u"
    )
    exact_units = target / seq_len / unit
    units = max(1, math.floor(exact_units) if capped else round(exact_units))
    main_seqs = units * unit
    main_tokens = float(main_seqs * seq_len)
    how = "down" if capped else "to the nearest multiple"
    notes["global_batch_sequences"] = (
        f"{fmt(target)} / {seq_len} = {target / seq_len:,.1f} sequences, rounded {how} of u={unit} → "
        f"{main_seqs:,}"
    )
    notes["global_batch_tokens"] = f"{main_seqs:,} sequences × {seq_len} tokens = {fmt(main_tokens)} tokens"
    notes["microbatches_per_replica"] = (
        f"m = {main_seqs:,} / u {unit} = {units} micro-batches per replica per step"
    )
    if units == 1 and exact_units < 0.5:
        warnings.append(
            f"the batch from the law ({fmt(target)} tokens) is below one micro-batch on every replica "
            f"({fmt(unit * seq_len)} tokens); the plan uses {fmt(main_tokens)}: lower dp or micro_batch"
        )
    if crit is not None and main_tokens > crit:
        warnings.append(
            f"global batch {fmt(main_tokens)} tokens is above the critical batch {fmt(crit)} tokens: extra "
            "tokens "
            "per step buy few fewer steps (McCandlish et al. 2018)"
        )

    # --- batch stages: ramp stages then the main stage, each a whole number of steps ---------------------
    stages: list[BatchStage] = []
    step = 0
    done_tokens = 0.0
    ramp_unit = unit * request.microbatch_multiple
    for index, ramp in enumerate(spec.batch_ramp):
        seqs = min(
            main_seqs, max(ramp_unit, math.floor(ramp.batch_fraction * main_seqs / ramp_unit) * ramp_unit)
        )
        batch_tokens = float(seqs * seq_len)
        wanted = ramp.token_fraction * tokens_target
        steps = max(1, round(wanted / batch_tokens)) if wanted > 0 else 0
        if steps == 0:
            continue
        if seqs == main_seqs and ramp.batch_fraction < 1:
            warnings.append(
                f"ramp stage {index + 1} cannot shrink the batch: {main_seqs} sequences is {units} "
                "multiple(s) of "
                f"u={unit}"
                + (
                    f" (in groups of p = {request.microbatch_multiple} micro-batches, interleaved)"
                    if request.microbatch_multiple > 1
                    else ""
                )
                + "; lower micro_batch or raise the batch to make a ramp possible"
            )
        tokens = steps * batch_tokens
        stages.append(
            BatchStage(
                name=f"ramp {index + 1}",
                start_step=step,
                end_step=step + steps,
                steps=steps,
                start_tokens=done_tokens,
                end_tokens=done_tokens + tokens,
                tokens=tokens,
                global_batch_sequences=seqs,
                global_batch_tokens=batch_tokens,
                microbatches_per_replica=seqs // unit,
                notes=_stage_notes(
                    step,
                    steps,
                    done_tokens,
                    tokens,
                    seqs,
                    seq_len,
                    unit,
                    reason=f"{ramp.batch_fraction:g} × {main_seqs:,} sequences rounded down to a multiple of "
                    f"u={unit} → {seqs:,}; {ramp.token_fraction:g} × D = {fmt(wanted)} tokens → {steps:,} "
                    "steps "
                    "(critical batch is small early: Zhang et al. 2024, McCandlish et al. 2018)",
                ),
            )
        )
        step += steps
        done_tokens += tokens
    remaining = tokens_target - done_tokens
    main_steps = max(1, round(remaining / main_tokens))
    tokens = main_steps * main_tokens
    stages.append(
        BatchStage(
            name="main",
            start_step=step,
            end_step=step + main_steps,
            steps=main_steps,
            start_tokens=done_tokens,
            end_tokens=done_tokens + tokens,
            tokens=tokens,
            global_batch_sequences=main_seqs,
            global_batch_tokens=main_tokens,
            microbatches_per_replica=units,
            notes=_stage_notes(
                step,
                main_steps,
                done_tokens,
                tokens,
                main_seqs,
                seq_len,
                unit,
                reason=f"round(remaining {fmt(remaining)} tokens / {fmt(main_tokens)} per step) = "
                f"{main_steps:,} steps",
            ),
        )
    )
    total_steps = step + main_steps
    scheduled = done_tokens + tokens
    notes["total_steps"] = " + ".join(f"{s.steps:,}" for s in stages) + f" = {total_steps:,} steps"
    notes["training_tokens"] = f"D = {fmt(tokens_target)} tokens (allocation)"
    notes["scheduled_tokens"] = (
        f"Σ steps × batch = {fmt(scheduled)} tokens ({(scheduled / tokens_target - 1) * 100:+.3f}% of D: "
        "whole steps)"
    )

    # --- LR ---------------------------------------------------------------------------------------------
    if spec.peak_lr is not None:
        peak, source = spec.peak_lr, "plan file (schedule.peak_lr)"
        notes["peak_lr"] = f"{peak:.3g} set in the plan file"
    else:
        peak, source = deepseek_peak_lr(c), "DeepSeek LLM law η = 0.3118·C^−0.125"
        notes["peak_lr"] = f"η_opt = 0.3118·({fmt(c)})^−0.125 = {peak:.3g} (DeepSeek LLM §3.1)"
    final = spec.final_lr_fraction * peak
    notes["final_lr"] = f"{spec.final_lr_fraction:g} × peak = {final:.3g}"

    if spec.warmup_tokens is not None:
        warm_target, warm_reason = (
            spec.warmup_tokens,
            f"{fmt(spec.warmup_tokens)} tokens set in the plan file",
        )
    else:
        fraction = spec.warmup_fraction if spec.warmup_fraction is not None else DEFAULT_WARMUP_FRACTION
        warm_target = fraction * scheduled
        warm_reason = f"{fraction:g} × {fmt(scheduled)} tokens = {fmt(warm_target)} tokens"
    cool_target = spec.cooldown_fraction * scheduled
    warm_end = max(1, _nearest_boundary(stages, warm_target))
    cool_start = _nearest_boundary(stages, scheduled - cool_target)
    cool_start = min(cool_start, total_steps - 1)
    if warm_end > cool_start:
        raise SpecError(
            f"warmup ({fmt(warm_target)} tokens) and cooldown ({spec.cooldown_fraction:g} of "
            f"{fmt(scheduled)} tokens) overlap",
            where="schedule.warmup_tokens",
            hint="shorten the warmup or the cooldown_fraction",
        )
    notes["warmup_steps"] = f"{warm_reason} → nearest step boundary: {warm_end:,} steps"
    notes["cooldown_steps"] = (
        f"{spec.cooldown_fraction:g} × {fmt(scheduled)} tokens = {fmt(cool_target)} tokens → "
        f"{total_steps - cool_start:,} steps"
    )
    phases = []
    for name, shape, start, end, lr0, lr1 in (
        ("warmup", "linear", 0, warm_end, 0.0, peak),
        ("stable", "constant", warm_end, cool_start, peak, peak),
        ("cooldown", spec.cooldown_shape, cool_start, total_steps, peak, final),
    ):
        t0, t1 = (float(x) for x in tokens_at_step(stages, np.array([start, end])))
        phases.append(
            LrPhase(
                name=name,
                shape=shape,
                start_step=start,
                end_step=end,
                steps=end - start,
                start_tokens=t0,
                end_tokens=t1,
                tokens=t1 - t0,
                lr_start=lr0,
                lr_end=lr1,
                notes={
                    "start_step": f"{name} starts after {start:,} steps",
                    "end_step": f"{name} ends after {end:,} steps",
                    "steps": f"{end:,} − {start:,} = {end - start:,} steps",
                    "start_tokens": f"tokens after {start:,} steps = {fmt(t0)}",
                    "end_tokens": f"tokens after {end:,} steps = {fmt(t1)}",
                    "tokens": f"{fmt(t1)} − {fmt(t0)} = {fmt(t1 - t0)} tokens ({(t1 - t0) / scheduled:.1%} "
                    "of the run)",
                    "lr_start": f"{lr0:.3g} at the start of {name}",
                    "lr_end": f"{lr1:.3g} at the end of {name} ({shape})",
                },
            )
        )
    if len(stages) > 1:
        ramp_text = ", ".join(f"{fmt(s.global_batch_tokens)} for {s.steps:,} steps" for s in stages[:-1])
        notes["global_batch_tokens"] += f"; ramp stages before it: {ramp_text}"

    return Schedule(
        batch_law="DeepSeek LLM (Bi et al. 2024, §3.1): B_opt = 0.2920·C^0.3271, η_opt = 0.3118·C^−0.125",
        compute_flops=c,
        law_batch_tokens=law_batch,
        critical_batch_tokens=crit,
        target_batch_tokens=target,
        batch_divisor_sequences=unit,
        global_batch_sequences=main_seqs,
        global_batch_tokens=main_tokens,
        microbatches_per_replica=units,
        peak_lr=peak,
        peak_lr_source=source,
        final_lr=final,
        warmup_steps=warm_end,
        cooldown_steps=total_steps - cool_start,
        cooldown_shape=spec.cooldown_shape,
        total_steps=total_steps,
        training_tokens=tokens_target,
        scheduled_tokens=scheduled,
        batch_stages=stages,
        lr_phases=phases,
        warnings=warnings,
        notes=notes,
    )


def _stage_notes(
    start: int, steps: int, t0: float, tokens: float, seqs: int, seq_len: int, unit: int, *, reason: str
) -> dict[str, str]:
    return {
        "start_step": f"starts after {start:,} steps",
        "end_step": f"{start:,} + {steps:,} = {start + steps:,}",
        "steps": reason,
        "start_tokens": f"{fmt(t0)} tokens trained before this stage",
        "end_tokens": f"{fmt(t0)} + {fmt(tokens)} = {fmt(t0 + tokens)} tokens",
        "tokens": f"{steps:,} steps × {fmt(seqs * seq_len)} tokens = {fmt(tokens)} tokens",
        "global_batch_sequences": f"{seqs:,} sequences = {seqs // unit} × u ({unit})",
        "global_batch_tokens": f"{seqs:,} × {seq_len} = {fmt(seqs * seq_len)} tokens",
        "microbatches_per_replica": f"{seqs:,} / {unit} = {seqs // unit} micro-batches per replica",
    }


def _boundary_tokens(stages: list[BatchStage]) -> np.ndarray:
    """Tokens trained after k steps, for k = 0 … total steps (vectorized over the steps)."""
    import numpy as np  # lazy: `runplan --help` must not load numpy

    total = stages[-1].end_step
    steps = np.arange(total + 1)
    return tokens_at_step(stages, steps)


def _nearest_boundary(stages: list[BatchStage], target: float) -> int:
    """The step k in 0..S whose boundary B(k) (tokens after k steps) is nearest ``target``, first on ties.

    Same answer as ``argmin |_boundary_tokens(stages) − target|`` without materialising every step (a run of
    1e8 steps would need a 1e8-element array): B is increasing, so a bisection finds the first k with
    B(k) ≥ target and the answer is k or k − 1.
    """
    import numpy as np  # lazy: `runplan --help` must not load numpy

    total = stages[-1].end_step

    def at(k: int) -> float:
        return float(tokens_at_step(stages, np.array([k]))[0])

    if at(total) < target:
        return total
    lo, hi = 0, total
    while lo < hi:
        mid = (lo + hi) // 2
        if at(mid) >= target:
            hi = mid
        else:
            lo = mid + 1
    if lo > 0 and abs(at(lo - 1) - target) <= abs(at(lo) - target):
        return lo - 1
    return lo


def tokens_at_step(stages: list[BatchStage], steps: np.ndarray) -> np.ndarray:
    """Tokens trained after ``steps`` steps (array in, array out), following the batch stages."""
    import numpy as np  # lazy: `runplan --help` must not load numpy

    steps = np.asarray(steps, dtype=float)
    starts = np.array([s.start_step for s in stages], dtype=float)
    t0 = np.array([s.start_tokens for s in stages])
    batch = np.array([s.global_batch_tokens for s in stages])
    index = np.clip(np.searchsorted(starts, steps, side="right") - 1, 0, len(stages) - 1)
    return t0[index] + (steps - starts[index]) * batch[index]


def batch_tokens_at_step(schedule: Schedule, steps: np.ndarray) -> np.ndarray:
    """Global batch in tokens used by step ``steps`` (0-based), for plots of the batch ramp."""
    import numpy as np  # lazy: `runplan --help` must not load numpy

    steps = np.asarray(steps, dtype=float)
    ends = np.array([s.end_step for s in schedule.batch_stages], dtype=float)
    batch = np.array([s.global_batch_tokens for s in schedule.batch_stages])
    index = np.clip(np.searchsorted(ends, steps, side="right"), 0, len(ends) - 1)
    return batch[index]


def lr_at_step(schedule: Schedule, steps: np.ndarray) -> np.ndarray:
    """Learning rate at step ``steps`` (0-based, array in and out): linear warmup, constant, cooldown.

    Cooldown progress x = (step − start)/(steps in cooldown) ∈ [0, 1]; LR = final + (peak − final)·f(x) with
    f = 1 − sqrt(x) (Hägele et al. 2024, §3), 1 − x, or (1 + cos πx)/2.
    """
    import numpy as np  # lazy: `runplan --help` must not load numpy

    steps = np.asarray(steps, dtype=float)
    peak, final = schedule.peak_lr, schedule.final_lr
    warm = schedule.warmup_steps
    cool_start = schedule.total_steps - schedule.cooldown_steps
    x = np.clip((steps - cool_start) / max(schedule.cooldown_steps, 1), 0.0, 1.0)
    shape = {
        "1-sqrt": lambda v: 1 - np.sqrt(v),
        "linear": lambda v: 1 - v,
        "cosine": lambda v: 0.5 * (1 + np.cos(np.pi * v)),
    }[schedule.cooldown_shape]
    lr = np.where(steps < warm, peak * steps / warm, peak)
    return np.where(steps >= cool_start, final + (peak - final) * shape(x), lr)
