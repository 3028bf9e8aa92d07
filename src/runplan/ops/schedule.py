"""Batch and learning-rate schedule: global batch from a law, a batch ramp, peak LR, WSD phases.

Sources (docs/operations.md §1):

* **Batch and LR laws**: DeepSeek LLM (Bi et al. 2024, arXiv 2401.02954, §3.1, Eq. 1):
  B_opt = 0.2920·C^0.3271 tokens and η_opt = 0.3118·C^−0.1250, fitted by small-scale grid searches with
  C = M·D (M = 72·L·h² + 12·L·h·s non-embedding FLOPs per token, about 6·N_non-emb per token). Their data,
  their tokenizer, AdamW with their β and weight decay; at other budgets the law is an extrapolation.
* **Critical batch**: above it, more tokens per step stop buying fewer steps (McCandlish et al. 2018, arXiv
  1812.06162, §2). Zhang et al. 2024 (arXiv 2410.21676) find that the critical batch grows mainly with the
  data seen, so it is small early in training. That is the reason for the **batch ramp**: a smaller batch for
  the first ~1-2% of tokens, as GPT-3 did (Brown et al. 2020, App. B: ramped over the first 4-12B of 300B
  tokens, 1.3-4%). Llama 3 (arXiv 2407.21783, §3.4.1: 4M tokens, 8M after 252M tokens, 16M after 2.87T) also
  ramped, but kept half its final batch for 2.87T of 15.6T tokens (~18%), far longer than this default.
* **WSD** (warmup, stable, decay): Hägele et al. 2024 (arXiv 2405.18392, §3) and MiniCPM (arXiv 2404.06395,
  §4): linear warmup, constant LR, then a cooldown over the last 10-20% of steps; the (1 − sqrt) shape beats
  linear. Default warmup 1% of the tokens: DeepSeek LLM 7B warmed up for 2,000 steps of 9.4M tokens out of 2T
  (about 0.9%).

Leaves out: LR scaling with the batch during the ramp (we keep the LR schedule in tokens independent of the
batch), weight decay, Adam β2, and any dependence of the laws on data quality (DeepSeek §3.3).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Literal, NoReturn

from pydantic import BaseModel, Field, field_validator, model_validator

from runplan.errors import SpecError
from runplan.ops._notes import INPUT_CONFIG, Explained, Reasoned, fmt
from runplan.scaling.hyperparams import (
    DEEPSEEK_LARGEST_USE_FLOPS,
    HyperparamLaw,
    deepseek_batch_tokens,
    deepseek_peak_lr,
)
from runplan.units import Fraction, PositiveCount, PositiveNumber

if TYPE_CHECKING:
    import numpy as np

CooldownShape = Literal["1-sqrt", "linear", "cosine"]

#: Linear warmup over 1% of the training tokens. Source: DeepSeek LLM 7B (arXiv 2401.02954, hyper-parameters and
#: Table 2): 2,000 warmup steps × (2,304 × 4,096 ≈ 9.4M tokens) = 18.9B of 2T tokens ≈ 0.94%. For scale, Llama 3
#: 405B warmed up for 8,000 steps (arXiv 2407.21783 §3.4.1): 63 steps of 4M then ~7,940 of 8M ≈ 64B tokens, ~0.4%.
DEFAULT_WARMUP_FRACTION = 0.01


# ---- inputs -------------------------------------------------------------------------------------------


class RampStage(BaseModel):
    """One stage of the batch ramp: a smaller global batch for a first slice of the tokens."""

    model_config = INPUT_CONFIG

    batch_fraction: float = Field(
        gt=0, le=1, description="Global batch of this stage as a fraction of the main batch (0.5 = half)."
    )
    token_fraction: Fraction = Field(description="Length of this stage as a fraction of the training tokens.")


#: Largest peak LR accepted: 1.0 (an Adam step changes each weight by about the LR; published LLM peaks are
#: 1e-4 to 1e-2, DeepSeek LLM §3.1 Fig. 3).
MAX_PEAK_LR = 1.0


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
    hyperparams: str | None = Field(
        None,
        description="Your batch/LR law, the file `runplan fit --hyperparams -o` writes (path relative to the plan "
        "file): unset global_batch_tokens and peak_lr come from its B_opt = k_B·C^e_B and η_opt = k_η·C^e_η "
        "instead of DeepSeek LLM's, at the same C = M·D (non-embedding FLOPs per token incl. attention × D: "
        "write your sweep's flops column that way).",
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
    # default ramp (half the batch for 1.5% of the tokens): a planning choice inside GPT-3's 1.3-4% ramp
    # (Brown et al. 2020, App. B); see the module docstring for Llama 3's much longer half-batch stage
    batch_ramp: list[RampStage] = Field(
        default_factory=lambda: [RampStage(batch_fraction=0.5, token_fraction=0.015)],
        min_length=1,
        description="Batch-ramp stages before the main batch, in order (default: half the batch for the "
        "first "
        "1.5% of tokens). Use batch_fraction 1 to switch the ramp off.",
    )

    @field_validator("batch_ramp", mode="before")
    @classmethod
    def _empty_ramp_says_how_to_switch_it_off(cls, value: object) -> object:
        """An empty list is how one writes "no ramp", but a ramp is switched off by a stage at the full batch
        (docs/operations.md §1, Rounding): say that, not pydantic's "at least 1 item"."""
        if isinstance(value, list) and not value:
            raise ValueError(
                "an empty list is not a ramp setting; to switch the batch ramp off write "
                "[{batch_fraction: 1, token_fraction: 0.015}] (one stage at the full batch)"
            )
        return value

    @field_validator("peak_lr")
    @classmethod
    def _trainable_lr(cls, value: float | None) -> float | None:
        """At most MAX_PEAK_LR: AdamW's update is about lr per step in every weight, so a peak LR of 1 already
        moves each weight by its own size (issue 17: 1e300 was accepted)."""
        if value is not None and value > MAX_PEAK_LR:
            raise ValueError(
                f"a peak learning rate of {value:.3g} is above {MAX_PEAK_LR:g}: an Adam step moves each weight by "
                "about the LR, so nothing trains (e.g. 3e-4; DeepSeek LLM's law gives 1e-4 to 1e-2)"
            )
        return value

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
    fits_without_interleaving: bool = Field(
        False,
        description="Whether the chosen layout, interleaved, passes every rule at v = 1 and its main batch (the "
        "plan checks it by the layout model): a ramp held up by the groups of p may then offer parallel.vpp: 1.",
    )
    micro_batch_one_pins: str = Field(
        "",
        description="The pins (dp, microbatches m·b, vpp, pp when interleaved) that hold the chosen layout at b = 1 "
        "and the same batch, where the plan checked it passes every rule by the layout model; '' where that check "
        "failed or was not made: a ramp held up by b then offers no parallel.micro_batch: 1.",
    )
    checked_main_batches: dict[int, str] = Field(
        default_factory=dict,
        description="Main batches (sequences) the plan checked the chosen layout re-plans clean at (every rule "
        "passes, no batch warning), each with the pins that hold it: a ramp remedy offers a larger main batch "
        "(ramp_main_batch) only from these.",
    )
    spec: ScheduleSpec = Field(default_factory=ScheduleSpec, description="The plan file's schedule section.")
    hyperparam_law: HyperparamLaw | None = Field(
        None, description="The law of spec.hyperparams, loaded (None: DeepSeek LLM's)."
    )
    batch_source: str = Field(
        "set in the plan file (schedule.global_batch_tokens)",
        description="Where spec.global_batch_tokens came from, for its reason (the plan passes its layout's).",
    )


# ---- outputs ------------------------------------------------------------------------------------------


class StepSpan(Explained):
    """The steps and tokens a batch stage or an LR phase covers: from ``start`` to ``end`` (exclusive)."""

    start_step: int
    end_step: int
    steps: int
    start_tokens: float
    end_tokens: float
    tokens: float


class _StageName(Explained):
    name: str


class _PhaseName(Explained):
    name: Literal["warmup", "stable", "cooldown"]
    shape: str


# The span base comes first so that it comes after the name in the fields: pydantic orders fields from the
# farthest base of the MRO, and the JSON lists the name (and shape) before the span.
class BatchStage(StepSpan, _StageName):
    """A span of steps at one global batch size (a ramp stage or the main stage)."""

    global_batch_sequences: int
    global_batch_tokens: float
    microbatches_per_replica: int
    step_seconds: float | None = Field(
        None,
        description="The chosen layout's step time at this stage's micro-batch count, seconds (set by the plan "
        "once the layout is chosen; a ramp stage keeps the pipeline bubble and the per-step fixed costs).",
    )


class LrPhase(StepSpan, _PhaseName):
    """One WSD phase: warmup, stable or cooldown, with its step and token span."""

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
    u·k (at least u·k), k = ``microbatch_multiple``, so an interleaved pipeline keeps whole groups of p. Stage
    lengths are rounded to whole steps, so the scheduled tokens are within one main step of the training
    tokens. LR phase boundaries are the step boundaries nearest to their token targets.
    """
    spec, c, crit = request.spec, request.compute_flops, request.critical_batch_tokens
    law = request.hyperparam_law
    law_batch = deepseek_batch_tokens(c) if law is None else law.batch_tokens(c)
    target, capped = _target_batch(spec, law_batch, crit, request.batch_source)
    unit = request.dp * request.micro_batch
    main_seqs, units, batch_warnings = _main_batch(request, target.value, capped)
    stages, ramp_warnings = _batch_stages(request, main_seqs.value)
    peak, source = _peak_lr(spec, c, law)
    final = spec.final_lr_fraction * peak.value
    warmup, cooldown = _warmup_and_cooldown(spec, stages)
    return Schedule.build(
        batch_law="DeepSeek LLM (Bi et al. 2024, §3.1): B_opt = 0.2920·C^0.3271, η_opt = 0.3118·C^−0.125"
        if law is None
        else f"{law.name} ({law.source}): {law.batch_formula}, {law.lr_formula}",
        compute_flops=Reasoned(c, f"C = {fmt(c)} FLOPs (training compute the laws take)"),
        law_batch_tokens=Reasoned(law_batch, _law_batch_reason(c, law_batch, law)),
        critical_batch_tokens=None
        if crit is None
        else Reasoned(crit, f"critical batch {fmt(crit)} tokens (from the parallel stage's batch law)"),
        target_batch_tokens=target,
        batch_divisor_sequences=Reasoned(
            unit,
            f"u = dp × micro_batch = {request.dp} × {request.micro_batch} = {unit} sequences: the batch must "
            "be a multiple of u",
        ),
        global_batch_sequences=main_seqs,
        global_batch_tokens=_main_batch_tokens(stages, request.seq_len),
        microbatches_per_replica=units,
        **_run_length(stages, request.training_tokens),
        peak_lr=peak,
        peak_lr_source=source,
        final_lr=Reasoned(final, f"{spec.final_lr_fraction:g} × peak = {final:.3g}"),
        warmup_steps=warmup,
        cooldown_steps=cooldown,
        cooldown_shape=spec.cooldown_shape,
        batch_stages=stages,
        lr_phases=_lr_phases(stages, spec, peak.value, final, warmup.value, cooldown.value),
        warnings=[*batch_warnings, *ramp_warnings, *_lr_extrapolation(spec, c, peak.value, law)],
    )


def _target_batch(
    spec: ScheduleSpec, law_batch: float, crit: float | None, source: str
) -> tuple[Reasoned[float], bool]:
    """The batch the plan aims for: the plan file's, else the law's capped at the critical batch.

    Also says whether the cap applied (then the batch is rounded down, never above the critical batch).
    """
    if spec.global_batch_tokens is not None:
        target = spec.global_batch_tokens
        why = f"{fmt(target)} tokens {source}"
        return Reasoned(target, why), False
    if crit is not None and crit < law_batch:
        why = (
            f"min(B_opt {fmt(law_batch)}, critical {fmt(crit)}) = {fmt(crit)} tokens: capped by the critical "
            "batch"
        )
        return Reasoned(crit, why), True
    return Reasoned(
        law_batch, f"B_opt = {fmt(law_batch)} tokens (below the critical batch or no cap given)"
    ), False


def _main_batch(
    request: ScheduleRequest, target: float, capped: bool
) -> tuple[Reasoned[int], Reasoned[int], list[str]]:
    """The main global batch in sequences (a whole number m of micro-batches per replica), m, and cautions."""
    seq_len, crit = request.seq_len, request.critical_batch_tokens
    unit = request.dp * request.micro_batch
    exact_units = target / seq_len / unit
    units = max(1, math.floor(exact_units) if capped else round(exact_units))
    main_seqs = units * unit
    main_tokens = float(main_seqs * seq_len)
    how = "down" if capped else "to the nearest multiple"
    warnings: list[str] = []
    if units == 1 and exact_units < 0.5:
        warnings.append(
            f"the batch from the law ({fmt(target)} tokens) is below one micro-batch on every replica "
            f"({fmt(unit * seq_len)} tokens); the plan uses {fmt(main_tokens)}: lower dp or micro_batch"
        )
    if crit is not None and main_tokens > crit:
        warnings.append(
            f"global batch {fmt(main_tokens)} tokens is above the critical batch {fmt(crit)} tokens: extra "
            "tokens per step buy few fewer steps (McCandlish et al. 2018)"
        )
    return (
        Reasoned(
            main_seqs,
            f"{fmt(target)} / {seq_len} = {target / seq_len:,.1f} sequences, rounded {how} of u={unit} → "
            f"{main_seqs:,}",
        ),
        Reasoned(units, f"m = {main_seqs:,} / u {unit} = {units} micro-batches per replica per step"),
        warnings,
    )


def _main_batch_tokens(stages: list[BatchStage], seq_len: int) -> Reasoned[float]:
    main = stages[-1]
    why = f"{main.global_batch_sequences:,} sequences × {seq_len} tokens = {fmt(main.global_batch_tokens)} tokens"
    if len(stages) > 1:
        ramp_text = ", ".join(f"{fmt(s.global_batch_tokens)} for {s.steps:,} steps" for s in stages[:-1])
        why += f"; ramp stages before it: {ramp_text}"
    return Reasoned(main.global_batch_tokens, why)


def _batch_stages(request: ScheduleRequest, main_seqs: int) -> tuple[list[BatchStage], list[str]]:
    """Ramp stages then the main stage, each a whole number of steps; cautions for ramps that cannot shrink."""
    seq_len, unit = request.seq_len, request.dp * request.micro_batch
    stages: list[BatchStage] = []
    warnings: list[str] = []
    step, done_tokens = 0, 0.0
    for index, ramp in enumerate(request.spec.batch_ramp):
        stage = _ramp_stage(request, index, ramp, main_seqs, step, done_tokens)
        if stage is None:
            continue
        if stage.global_batch_sequences == main_seqs:
            # a stage at the main batch is no ramp (batch_fraction 1 switches it off): its tokens go to the
            # main stage, so the plan does not count "steps in the batch ramp" that run the main batch
            if ramp.batch_fraction < 1:
                warnings.append(_no_ramp_warning(request, index, main_seqs))
            continue
        if stage.global_batch_sequences > ramp.batch_fraction * main_seqs:
            warnings.append(_raised_ramp_warning(request, index, ramp.batch_fraction, main_seqs, stage))
        if stages and stages[-1].global_batch_sequences == stage.global_batch_sequences:
            stage = _merged(stages.pop(), stage, index, unit)
        stages.append(stage)
        step, done_tokens = stage.end_step, stage.end_tokens
    main_tokens = float(main_seqs * seq_len)
    remaining = request.training_tokens - done_tokens
    main_steps = max(1, round(remaining / main_tokens))
    why = f"round(remaining {fmt(remaining)} tokens / {fmt(main_tokens)} per step) = {main_steps:,} steps"
    stages.append(
        _batch_stage("main", step, done_tokens, Reasoned(main_steps, why), main_seqs, seq_len, unit)
    )
    return stages, warnings


def _ramp_stage(
    request: ScheduleRequest, index: int, ramp: RampStage, main_seqs: int, step: int, done_tokens: float
) -> BatchStage | None:
    """One ramp stage: a fraction of the main batch (rounded down to whole groups) for a fraction of D."""
    seq_len, unit, group = request.seq_len, request.dp * request.micro_batch, request.microbatch_multiple
    ramp_unit = unit * group
    whole = math.floor(ramp.batch_fraction * main_seqs / ramp_unit) * ramp_unit
    seqs = min(main_seqs, max(ramp_unit, whole))
    batch_tokens = float(seqs * seq_len)
    wanted = ramp.token_fraction * request.training_tokens
    steps = max(1, round(wanted / batch_tokens)) if wanted > 0 else 0
    if steps == 0:
        return None
    # the rounding as applied: whole groups of p micro-batches with an interleaved pipeline, and at least one
    multiple = (
        f"u={unit}" if group == 1 else f"u·p = {unit}·{group} = {ramp_unit:,} (interleaved: groups of p)"
    )
    least = f", at least one group of {ramp_unit:,}" if whole < ramp_unit else ""
    why = (
        f"{ramp.batch_fraction:g} × {main_seqs:,} sequences rounded down to a multiple of {multiple}{least} → "
        f"{seqs:,}; {ramp.token_fraction:g} × D = {fmt(wanted)} tokens → {steps:,} steps (critical batch is "
        "small early: Zhang et al. 2024, McCandlish et al. 2018)"
    )
    return _batch_stage(f"ramp {index + 1}", step, done_tokens, Reasoned(steps, why), seqs, seq_len, unit)


def _merged(first: BatchStage, then: BatchStage, index: int, unit: int) -> BatchStage:
    """Two consecutive ramp stages that round to the same batch, as one stage (``ramp 2-3``): the same steps, one
    row instead of several (2,000 listed fractions of one batch made 2,000 stages, each re-timed)."""
    name = f"{first.name.split('-')[0]}-{index + 1}"
    steps = first.steps + then.steps
    why = (
        f"{first.steps:,} + {then.steps:,} = {steps:,} steps: consecutive ramp stages at the same batch "
        f"({then.global_batch_sequences:,} sequences) merged"
    )
    seq_len = round(then.global_batch_tokens / then.global_batch_sequences)
    return _batch_stage(
        name,
        first.start_step,
        first.start_tokens,
        Reasoned(steps, why),
        then.global_batch_sequences,
        seq_len,
        unit,
    )


def _raised_ramp_warning(
    request: ScheduleRequest, index: int, fraction: float, main_seqs: int, stage: BatchStage
) -> str:
    """A ramp stage the divisibility rule made larger than asked: the smallest batch of whole micro-batch groups
    (u, or u·p interleaved: Megatron's interleaved schedule runs micro-batches in groups of p) is above it."""
    unit, group = request.dp * request.micro_batch, request.microbatch_multiple
    seqs = stage.global_batch_sequences
    groups = f"u·p = {unit}·{group}" if group > 1 else f"u = {unit}"
    return (
        f"ramp stage {index + 1} runs {seqs:,} sequences, {seqs / main_seqs:.3g} of the main batch, not the "
        f"{fraction:g} asked ({fraction * main_seqs:,.0f} sequences): the smallest batch of whole groups of "
        f"{groups} sequences; " + _ramp_remedies(request, fraction, main_seqs)
    )


def _no_ramp_warning(request: ScheduleRequest, index: int, main_seqs: int) -> str:
    unit = request.dp * request.micro_batch
    groups = (
        f" (in groups of p = {request.microbatch_multiple} micro-batches, interleaved)"
        if request.microbatch_multiple > 1
        else ""
    )
    fraction = request.spec.batch_ramp[index].batch_fraction
    return (
        f"ramp stage {index + 1} cannot shrink the batch: {main_seqs} sequences is {main_seqs // unit} "
        f"multiple(s) of u={unit}{groups}, so its tokens run at the main batch; "
        + _ramp_remedies(request, fraction, main_seqs)
    )


def _ramp_remedies(request: ScheduleRequest, fraction: float, main_seqs: int) -> str:
    """What lets a ramp stage of ``fraction`` run as asked on this layout (its stages are whole groups of
    G = u·g sequences, u = d·b, g = p interleaved else 1), each with its value and only where it applies: a
    batch_fraction of one group, G/M rounded up at 4 decimals, where one group is below the main batch M (the
    least ramp this layout runs); micro_batch 1 where b > 1 and the fraction then holds a group of G/b, with the
    pins that hold the layout at b = 1 and m·b micro-batches where the plan checked it passes every rule
    (request.micro_batch_one_pins; not offered where that check failed or was not made); no
    interleaving (groups of u) where the plan checked the layout passes every rule at v = 1 and the fraction holds
    a group of u; a main batch of whole groups that the fraction holds one group of, M' = k·G with the least k
    where fraction·k·G >= G (ramp_main_batch), only where the plan checked this layout re-plans clean at it
    (request.checked_main_batches, with the pins that hold it: set alone, the layout search takes up to +10% of
    a batch and M' is most often above the critical batch). Fewer stages never help an interleaved ramp: G = d·b·p is the GPUs over t·c, times b."""
    unit, g, seq_len = request.dp * request.micro_batch, request.microbatch_multiple, request.seq_len
    group, asked = unit * g, fraction * main_seqs
    out = []
    if group < main_seqs:
        least = math.ceil(group / main_seqs * 1e4) / 1e4
        out.append(f"batch_fraction: {least:g} (one group, the least ramp stage this layout runs)")
    pins_b1 = request.micro_batch_one_pins
    if request.micro_batch > 1 and asked >= group // request.micro_batch and pins_b1:
        smaller = group // request.micro_batch
        runs = math.floor(asked / smaller) * smaller
        # pinned alone, the search re-picks m within +10% of the batch (8B on 256 H100: m 31, not 15·2 = 30)
        out.append(
            f"parallel.micro_batch: 1 with parallel: {{{pins_b1}}} (groups of {smaller:,} sequences: the stage "
            f"runs {runs:,})"
        )
    if g > 1 and request.fits_without_interleaving and asked >= unit:
        runs = math.floor(asked / unit) * unit
        # the layout checked at v = 1 keeps d, b and m: pinned, or the search re-picks m within +10% of the batch
        pins = f"dp: {request.dp}, micro_batch: {request.micro_batch}, microbatches: {main_seqs // unit}"
        out.append(
            f"parallel.vpp: 1 with parallel: {{{pins}}} (groups of u = {unit:,} sequences: the stage runs {runs:,})"
        )
    larger = ramp_main_batch(fraction, group)
    held = request.checked_main_batches.get(larger)
    if held is not None:
        out.append(
            f"a main batch of {larger:,} sequences (schedule.global_batch_tokens: {larger * seq_len} with {held}), "
            f"whose {fraction:g} holds one group"
        )
    if not out:
        return (
            f"this layout runs no stage below the main batch (one group of {group:,} is all of it): set "
            f"batch_fraction: 1 to plan without the ramp, or pin a layout with fewer sequences per group"
        )
    return ("on this layout, any one of: " if len(out) > 1 else "on this layout: ") + "; ".join(out)


def ramp_main_batch(fraction: float, group: int) -> int:
    """The least main batch of whole groups of ``group`` sequences whose ``fraction`` holds one group:
    M' = k·G with the least k where fraction·k·G >= G (k = ceil(1/fraction), one more where float rounding
    leaves fraction·k just under 1)."""
    k = max(1, math.ceil(1 / fraction - 1e-9))
    k += fraction * k * group < group
    return k * group


def _batch_stage(
    name: str, start: int, t0: float, steps: Reasoned[int], seqs: int, seq_len: int, unit: int
) -> BatchStage:
    """A span of ``steps`` steps at ``seqs`` sequences per step, starting after ``start`` steps and ``t0`` tokens."""
    n = steps.value
    tokens = n * float(seqs * seq_len)
    return BatchStage.build(
        name=name,
        start_step=Reasoned(start, f"starts after {start:,} steps"),
        end_step=Reasoned(start + n, f"{start:,} + {n:,} = {start + n:,}"),
        steps=steps,
        start_tokens=Reasoned(t0, f"{fmt(t0)} tokens trained before this stage"),
        end_tokens=Reasoned(t0 + tokens, f"{fmt(t0)} + {fmt(tokens)} = {fmt(t0 + tokens)} tokens"),
        tokens=Reasoned(tokens, f"{n:,} steps × {fmt(seqs * seq_len)} tokens = {fmt(tokens)} tokens"),
        global_batch_sequences=Reasoned(seqs, f"{seqs:,} sequences = {seqs // unit} × u ({unit})"),
        global_batch_tokens=Reasoned(
            float(seqs * seq_len), f"{seqs:,} × {seq_len} = {fmt(seqs * seq_len)} tokens"
        ),
        microbatches_per_replica=Reasoned(
            seqs // unit, f"{seqs:,} / {unit} = {seqs // unit} micro-batches per replica"
        ),
    )


def _run_length(stages: list[BatchStage], training_tokens: float) -> dict[str, Reasoned[float]]:
    """Steps and tokens of the whole schedule (whole steps, so within one main step of D)."""
    total_steps, scheduled = stages[-1].end_step, stages[-1].end_tokens
    return dict(
        total_steps=Reasoned(
            total_steps, " + ".join(f"{s.steps:,}" for s in stages) + f" = {total_steps:,} steps"
        ),
        training_tokens=Reasoned(training_tokens, f"D = {fmt(training_tokens)} tokens (allocation)"),
        scheduled_tokens=Reasoned(
            scheduled,
            f"Σ steps × batch = {fmt(scheduled)} tokens ({(scheduled / training_tokens - 1) * 100:+.3f}% of D: "
            "whole steps)",
        ),
    )


def _law_batch_reason(c: float, law_batch: float, law: HyperparamLaw | None) -> str:
    """How B_opt(C) was computed: DeepSeek LLM's law, or the plan's own (schedule.hyperparams)."""
    if law is None:
        return (
            f"B_opt = 0.2920·C^0.3271 = 0.2920·({fmt(c)})^0.3271 = {fmt(law_batch)} tokens, C = M·D with M the "
            "non-embedding FLOPs per token incl. attention, not 6·N·D (DeepSeek LLM §3.1)"
        )
    return (
        f"B_opt = {law.batch_coef:.4g}·({fmt(c)})^{law.batch_exp:.4g} = {fmt(law_batch)} tokens, your law "
        f"{law.name} (schedule.hyperparams, fitted on C = {fmt(law.flops_min)} to {fmt(law.flops_max)}), C = M·D "
        "as DeepSeek LLM §3.1 defines it"
    )


def _peak_lr(spec: ScheduleSpec, c: float, law: HyperparamLaw | None = None) -> tuple[Reasoned[float], str]:
    """The plan file's peak LR, else η_opt(C) of the plan's law (schedule.hyperparams) or DeepSeek LLM's; and
    where it came from."""
    if spec.peak_lr is not None:
        return Reasoned(
            spec.peak_lr, f"{spec.peak_lr:.3g} set in the plan file"
        ), "plan file (schedule.peak_lr)"
    if law is not None:
        peak = law.peak_lr(c)
        why = f"η_opt = {law.lr_coef:.4g}·({fmt(c)})^{law.lr_exp:.4g} = {peak:.3g}, your law {law.name}, C as for B_opt"
        return Reasoned(peak, why), f"{law.name} (schedule.hyperparams)"
    peak = deepseek_peak_lr(c)
    why = f"η_opt = 0.3118·({fmt(c)})^−0.125 = {peak:.3g}, C = M·D as for B_opt (DeepSeek LLM §3.1)"
    return Reasoned(peak, why), "DeepSeek LLM law η = 0.3118·C^−0.125"


def _lr_extrapolation(
    spec: ScheduleSpec, c: float, peak: float, law: HyperparamLaw | None = None
) -> list[str]:
    """A caution when the law sets the peak LR beyond twice the compute its numbers were ever used at (within a
    factor 2 of a published use is not called an extrapolation).

    DeepSeek's own largest use is 67B at C ≈ 9.9e23 (``DEEPSEEK_LARGEST_USE_FLOPS``). For scale, Llama 3 405B
    (C ≈ 3.8e25) trained at a peak LR of 8e-5 (arXiv 2407.21783, §3.4.1), where the law gives about 2e-4.
    """
    if law is not None:  # your own law: how far beyond the budgets it was fitted on
        if spec.peak_lr is not None or c <= 2 * law.flops_max:
            return []
        return [
            f"peak LR {peak:.2e} extrapolates your law {law.name} to C = {fmt(c)} FLOPs, {c / law.flops_max:.0f}× "
            f"the largest budget it was fitted on ({fmt(law.flops_max)}): set schedule.peak_lr to choose"
        ]
    if spec.peak_lr is not None or c <= 2 * DEEPSEEK_LARGEST_USE_FLOPS:
        return []
    return [
        f"peak LR {peak:.2e} extrapolates DeepSeek LLM's law to C = {fmt(c)} FLOPs, "
        f"{c / DEEPSEEK_LARGEST_USE_FLOPS:.0f}× its largest published use (DeepSeek 67B, C ≈ 9.9e23, peak LR "
        "3.2e-4); Llama 3 405B trained at 8e-5 (arXiv 2407.21783 §3.4.1): set schedule.peak_lr to choose"
    ]


def _warmup_and_cooldown(spec: ScheduleSpec, stages: list[BatchStage]) -> tuple[Reasoned[int], Reasoned[int]]:
    """Warmup and cooldown lengths in steps: their token targets moved to the nearest step boundary."""
    total_steps, scheduled = stages[-1].end_step, stages[-1].end_tokens
    if spec.warmup_tokens is not None:
        warm_target = spec.warmup_tokens
        warm_reason = f"{fmt(spec.warmup_tokens)} tokens set in the plan file"
    else:
        fraction = spec.warmup_fraction if spec.warmup_fraction is not None else DEFAULT_WARMUP_FRACTION
        warm_target = fraction * scheduled
        warm_reason = f"{fraction:g} × {fmt(scheduled)} tokens = {fmt(warm_target)} tokens"
    cool_target = spec.cooldown_fraction * scheduled
    warm_end = max(1, _nearest_boundary(stages, warm_target))
    cool_start = min(_nearest_boundary(stages, scheduled - cool_target), total_steps - 1)
    if warm_end > cool_start:
        _overlap(spec, warm_target, scheduled, cool_target)
    return (
        Reasoned(warm_end, f"{warm_reason} → nearest step boundary: {warm_end:,} steps"),
        Reasoned(
            total_steps - cool_start,
            f"{spec.cooldown_fraction:g} × {fmt(scheduled)} tokens = {fmt(cool_target)} tokens → "
            f"{total_steps - cool_start:,} steps",
        ),
    )


def _overlap(spec: ScheduleSpec, warmup: float, scheduled: float, cooldown: float) -> NoReturn:
    """Bad input: the warmup runs into the cooldown (WSD phases follow each other, Hägele et al. 2024 §3), or past
    the whole run; the hint gives the longest warmup that fits, the tokens before the cooldown starts."""
    room = scheduled - cooldown
    what = (
        f"warmup ({fmt(warmup)} tokens) is longer than the run ({fmt(scheduled)} tokens)"
        if warmup >= scheduled
        else f"warmup ({fmt(warmup)} tokens) and cooldown ({spec.cooldown_fraction:g} of {fmt(scheduled)} tokens) "
        "overlap"
    )
    key = _overlap_key(spec)
    hint = (
        f"shorten the warmup to at most {fmt(room)} tokens, {room / scheduled:.1%} of the run, where the "
        f"cooldown (the last {spec.cooldown_fraction:g}) starts"
    )
    if warmup >= scheduled:  # no cooldown makes a warmup past the last step fit
        raise SpecError(what, where=key, hint=hint)
    if key == "schedule.cooldown_fraction":  # the cooldown may start where the warmup ends: 1 − warmup/run,
        # rounded down to 3 decimals (the 1e-9 absorbs 1 − 0.01 = 0.98999…)
        largest = math.floor((1.0 - warmup / scheduled) * 1000 + 1e-9) / 1000
        hint = f"set cooldown_fraction to at most {largest:g} (the warmup ends there); or {hint}"
        raise SpecError(what, where=key, hint=hint)
    raise SpecError(what, where=key, hint=f"{hint}; or shorten the cooldown_fraction")


def _overlap_key(spec: ScheduleSpec) -> str:
    """The plan-file key to name when warmup and cooldown overlap: the warmup key the user set, else (the
    default 1% warmup) the cooldown fraction."""
    if spec.warmup_tokens is not None:
        return "schedule.warmup_tokens"
    if spec.warmup_fraction is not None:
        return "schedule.warmup_fraction"
    return "schedule.cooldown_fraction"


def _lr_phases(
    stages: list[BatchStage], spec: ScheduleSpec, peak: float, final: float, warm_end: int, cooldown: int
) -> list[LrPhase]:
    """Warmup (linear from 0), stable (constant peak) and cooldown (to the final LR), with their spans."""
    import numpy as np  # lazy: `runplan --help` must not load numpy

    total_steps, scheduled = stages[-1].end_step, stages[-1].end_tokens
    cool_start = total_steps - cooldown
    phases = []
    for name, shape, start, end, lr0, lr1 in (
        ("warmup", "linear", 0, warm_end, 0.0, peak),
        ("stable", "constant", warm_end, cool_start, peak, peak),
        ("cooldown", spec.cooldown_shape, cool_start, total_steps, peak, final),
    ):
        t0, t1 = (float(x) for x in tokens_at_step(stages, np.array([start, end])))
        phases.append(
            LrPhase.build(
                name=name,
                shape=shape,
                start_step=Reasoned(start, f"{name} starts after {start:,} steps"),
                end_step=Reasoned(end, f"{name} ends after {end:,} steps"),
                steps=Reasoned(end - start, f"{end:,} − {start:,} = {end - start:,} steps"),
                start_tokens=Reasoned(t0, f"tokens after {start:,} steps = {fmt(t0)}"),
                end_tokens=Reasoned(t1, f"tokens after {end:,} steps = {fmt(t1)}"),
                tokens=Reasoned(
                    t1 - t0,
                    f"{fmt(t1)} − {fmt(t0)} = {fmt(t1 - t0)} tokens ({(t1 - t0) / scheduled:.1%} of the run)",
                ),
                lr_start=Reasoned(lr0, f"{lr0:.3g} at the start of {name}"),
                lr_end=Reasoned(lr1, f"{lr1:.3g} at the end of {name} ({shape})"),
            )
        )
    return phases


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
