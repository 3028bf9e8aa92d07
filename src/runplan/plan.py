"""Compose the stages into one run plan (DESIGN.md): spec → allocation → shape → batch → layout → schedule →
operations → sweep → cost, each a pure function of typed inputs, into one frozen ``RunPlan``.

Order and the choices between stages, each stated where a reviewer reads the plan:

1. **Compute.** ``budget.flops``; or GPU time converted with C = GPUs × peak × MFU × seconds (PaLM §4.1 MFU,
   ``budget.mfu``, default 0.4); or, for a fixed ``model:``, ``budget.tokens`` with C = 6·N·D.
2. **Allocation** (scaling stage). A fixed model turns the objective into ``fixed_params`` with N the model's
   parameter count in the law's convention (total for Hoffmann, as Chinchilla counted embeddings).
3. **Architecture.** The fixed model, or a generated shape for the allocated N (``architect.shape_for_params``).
4. **Global batch.** ``schedule.global_batch_tokens`` when given, else DeepSeek LLM's B_opt = 0.2920·C^0.3271
   (Bi et al. 2024, Eq. 1) with C = M·D, which is also the batch ceiling the layout search applies.
5. **Layout** (parallel stage): exhaustive search for that batch (±10%), best by predicted throughput.
6. **Schedule**: the layout's global batch, a ramp, peak LR, WSD phases, all divisible by dp × micro-batch.
7. **Operations**: checkpoint interval (Daly) from the job MTBF, goodput (exact renewal), monitoring.
8. **Proxy sweep** for the budget, and **cost** of both.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from runplan.defaults import DEFAULT_MFU
from runplan.errors import Infeasible, SpecError
from runplan.hardware import GpuSpec
from runplan.model import ModelShape
from runplan.ops import Cost, Monitoring, Operations, Reliability, Schedule
from runplan.ops.checkpoint import CheckpointPlan
from runplan.parallel.layout import CriticalBatch, LayoutEstimate, ParallelRequest, SearchResult
from runplan.parallel.stack import Stack
from runplan.report.format import fmt_count
from runplan.scaling.allocate import Allocation
from runplan.scaling.laws import ParametricLaw
from runplan.scaling.sweep import Sweep
from runplan.spec import ModelChoice, PlanSpec
from runplan.units import SECONDS_PER_DAY
from runplan.validation import spec_error_from_validation

_OUT = ConfigDict(extra="forbid", frozen=True)

MEMORY_CLIFF_FRACTION = 0.97  # a best layout above 97% of its memory limit is one allocator spike from OOM


class Architecture(BaseModel):
    """The concrete shape of the run, with its parameter and FLOP counts."""

    model_config = _OUT

    shape: ModelShape = Field(description="Every shape field of the model.")
    resolution: str = Field(description="How the shape was chosen (preset, size shorthand or generated).")
    total_params: int = Field(description="Every parameter.")
    embedding_params: int = Field(description="Token (+ position) embedding and an untied output head.")
    non_embedding_params: int = Field(description="total − embedding.")
    active_params: int = Field(description="Parameters a token uses (MoE: top-k experts).")
    law_params: float = Field(description="N in the law's parameter count (what the allocation used).")
    flops_per_token: float = Field(description="PaLM model FLOPs per token at the plan's sequence length.")
    notes: dict[str, str] = Field(description="One-line reason for each number.")


class LayoutChoice(BaseModel):
    """The chosen parallel layout and the runners-up."""

    model_config = _OUT

    best: LayoutEstimate = Field(description="Highest predicted throughput among feasible layouts.")
    runners_up: list[LayoutEstimate] = Field(description="Next best feasible layouts.")
    candidates: int = Field(description="Layouts the exhaustive search evaluated.")
    feasible: int = Field(description="Layouts that met every constraint.")
    target_global_batch_tokens: float = Field(description="Batch the search aimed at (±10%).")
    critical_batch: CriticalBatch = Field(description="Batch ceiling and the law it comes from.")
    search_seconds: float = Field(description="Wall time of the search.")
    calibration: str = Field(
        "",
        description="The calibration file behind every predicted time (`runplan calibrate`, or the shipped one), "
        "its held-out step error and the memory model's error on its measured runs that logged a peak.",
    )
    gpu: GpuSpec | None = Field(
        None,
        description="The GPU the layouts were searched and timed on, its family as planned (read from its name "
        "where the entry states none: runplan.catalog.with_family), so that an export of the plan knows it; "
        "absent in plans written before it.",
    )
    notes: dict[str, str] = Field(description="One-line reason for each number.")


class RunPlan(BaseModel):
    """The complete plan; JSON top-level keys are stable (docs/json.md)."""

    model_config = _OUT

    inputs: dict[str, Any] = Field(description="The plan file as read (resolved section excluded).")
    allocation: Allocation
    model: Architecture
    layout: LayoutChoice
    schedule: Schedule
    checkpointing: CheckpointPlan
    reliability: Reliability
    monitoring: Monitoring
    sweep: Sweep | None
    cost: Cost
    warnings: list[str]


def _resolve_gpu(spec: PlanSpec, catalog) -> GpuSpec:
    """The plan's GPU with its family known: an inline spec's as stated or read from its name, else a SpecError
    at ``cluster.gpu.family``; a catalog name's as :meth:`runplan.catalog.Catalog.gpu` gives it (one rule,
    ``runplan.catalog.with_family``, for every command)."""
    from runplan.catalog import with_family

    gpu = spec.cluster.gpu
    if isinstance(gpu, GpuSpec):
        return with_family(gpu, (gpu.name,), catalog, where="cluster.gpu.family")
    return catalog.gpu(gpu, where="cluster.gpu")


def plan_law(spec: PlanSpec, base_dir: Path) -> ParametricLaw:
    """The scaling law a plan names (``law:``; a law file relative to ``base_dir``), or the default law."""
    from runplan.scaling.laws import resolve_law

    law_spec = spec.law
    if law_spec is None or law_spec.file is None:
        return resolve_law(law_spec)
    if not Path(law_spec.file).is_absolute():
        law_spec = law_spec.model_copy(update={"file": str(base_dir / law_spec.file)})
    try:  # the file's own error after the plan key that named it, as `calibration:` and `schedule.hyperparams:`
        return resolve_law(law_spec)
    except SpecError as error:
        raise SpecError(error.one_line(), where="law.file") from None


def allocation_law(spec: PlanSpec, base_dir: Path, shape: ModelShape) -> ParametricLaw:
    """The law the plan's allocation applied to ``shape``: :func:`plan_law` for a dense model, the MoE law in
    active parameters for a MoE model (:func:`_law_for_shape`); L(N, D) of it passes through the plan's loss."""
    law, _ = _law_for_shape(spec, plan_law(spec, base_dir), shape)
    return law


def _flops(spec: PlanSpec, gpu: GpuSpec, n_gpus: int, law_params: float | None) -> float:
    """Training compute C of the budget: as given; GPUs × peak × MFU × seconds for a GPU-time budget (MFU as
    defined in PaLM, Chowdhery et al. 2022, §4.1); or C = 6·N·D for a token budget (Kaplan et al. 2020 §2.1:
    forward 2N plus backward 4N FLOPs per token, attention left out, as Hoffmann et al. 2022 count C)."""
    from runplan.scaling.budget import SECONDS_PER_HOUR, check_training_flops, flops_from_hardware

    budget = spec.budget
    if budget is None:
        raise SpecError(
            "a plan needs a budget",
            where="budget",
            hint="add e.g. 'budget: {flops: 2e23}' or, with a fixed model, 'budget: {tokens: 2T}'",
        )
    if budget.flops is not None:
        return check_training_flops(budget.flops, where="budget.flops")
    if budget.days is not None:
        return check_training_flops(
            flops_from_hardware(n_gpus, budget.days, gpu, budget.mfu), where="budget.days"
        )
    if budget.gpu_hours is not None:
        return check_training_flops(
            budget.gpu_hours * SECONDS_PER_HOUR * gpu.bf16_flops * budget.mfu, where="budget.gpu_hours"
        )
    if law_params is None or budget.tokens is None:  # Budget._exactly_one: tokens is the remaining form
        raise SpecError(
            "budget.tokens needs a fixed model",
            where="budget.tokens",
            hint="add 'model: <preset or size>' or give budget.flops instead",
        )
    tokens = budget.tokens
    assert tokens is not None  # Budget._exactly_one: flops, days and gpu_hours are unset, so tokens is set
    return check_training_flops(6.0 * law_params * tokens, where="budget.tokens")


@dataclass(frozen=True)
class ResolvedInputs:
    """Catalog entries and defaults filled in: what every stage reads besides the plan file."""

    catalog: Any
    gpu: GpuSpec
    n_gpus: int
    gpus_per_node: int
    law: Any
    seq_len: int
    base_dir: Path
    #: runplan.calibrate.calibration.Calibration of the plan's `calibration:` key; None = the shipped one
    calibration: Any = None
    #: runplan.scaling.hyperparams.HyperparamLaw of `schedule.hyperparams`; None = DeepSeek LLM's
    hyperparam_law: Any = None

    def efficiency(self) -> Any:
        """The calibrated time-model constants for this GPU (None: the search uses the shipped ones)."""
        return self.calibration.efficiency(self.gpu) if self.calibration is not None else None

    def calibration_label(self) -> str:
        """One line naming the calibration behind every predicted time."""
        from runplan.calibrate.calibration import shipped_calibration

        return (self.calibration or shipped_calibration()).label(self.gpu)


@dataclass(frozen=True)
class AllocationStage:
    allocation: Allocation
    shape: ModelShape
    resolution: str
    law_params: float
    flops: float
    law: Any  # the law the allocation used (a MoE model's law in active parameters)


@dataclass(frozen=True)
class LayoutStage:
    request: Any
    target_batch_tokens: float
    deepseek_compute_flops: float
    target_reason: str


def resolve_inputs(spec: PlanSpec, base_dir: str | Path = ".") -> ResolvedInputs:
    """Load the catalogs (shipped + the plan's), look up the GPU, check whole nodes, resolve the law."""
    from runplan.catalog import load_catalog
    from runplan.parallel.request_rules import check_whole_nodes

    base_dir = Path(base_dir)
    catalog = load_catalog([base_dir / path for path in spec.catalog], where="catalog")
    gpu = _resolve_gpu(spec, catalog)
    n_gpus = spec.cluster.gpus
    gpus_per_node = spec.cluster.gpus_per_node or gpu.gpus_per_node
    check_whole_nodes(n_gpus, gpus_per_node)
    calibration = None
    if spec.calibration is not None:
        from runplan.calibrate.calibration import load_calibration

        try:
            calibration = load_calibration(base_dir / spec.calibration)
            calibration = calibration.model_copy(update={"source": spec.calibration})  # as the plan names it
        except SpecError as error:
            raise SpecError(error.one_line(), where="calibration") from None
    return ResolvedInputs(
        catalog,
        gpu,
        n_gpus,
        gpus_per_node,
        plan_law(spec, base_dir),
        spec.training.seq_len,
        base_dir,
        calibration,
        _hyperparam_law(spec, base_dir),
    )


def _hyperparam_law(spec: PlanSpec, base_dir: Path) -> Any:
    """The batch/LR law file `schedule.hyperparams` names (relative to the plan file), else None (DeepSeek's)."""
    if spec.schedule.hyperparams is None:
        return None
    from runplan.scaling.hyperparams import load_hyperparam_law

    try:
        return load_hyperparam_law(base_dir / spec.schedule.hyperparams)
    except SpecError as error:
        raise SpecError(error.one_line(), where="schedule.hyperparams") from None


def allocation_stage(
    spec: PlanSpec, inputs: ResolvedInputs, flops: float | None = None, tokens: float | None = None
) -> AllocationStage:
    """Steps 1-3: compute, allocation, and the concrete shape; ``flops`` replaces the budget's conversion
    (a GPU-time budget sized to fill its wall clock, :func:`build_plan`), and ``tokens`` (with ``flops``)
    trains the shape sized at ``flops`` on that many tokens (:func:`_trained_on`)."""
    stage = (
        _fixed_model_stage(spec, inputs, flops)
        if spec.model is not None
        else _sized_stage(spec, inputs, flops)
    )
    return stage if tokens is None else _trained_on(spec, inputs, stage, tokens)


def filled_stage(spec: PlanSpec, inputs: ResolvedInputs, fill: Fill | None) -> AllocationStage:
    """Steps 1-3 as :func:`build_plan` runs them for a budget's :class:`Fill` (:func:`budget_fill`; None: the
    budget's own conversion), for `allocate` and `parallelize` on a plan file."""
    return (
        allocation_stage(spec, inputs)
        if fill is None
        else allocation_stage(spec, inputs, fill.flops, fill.tokens)
    )


def _trained_on(
    spec: PlanSpec, inputs: ResolvedInputs, stage: AllocationStage, tokens: float
) -> AllocationStage:
    """``stage`` with its model kept and D = ``tokens``, the allocation restated at C = 6·N·D.

    A fixed N (``fixed_params``, a fixed model) puts all compute into tokens, so D is the allocation at
    C = 6·N·D itself. A compute-optimal N keeps the law's N (the shape is the rung generated for it) and
    records the law's D beside the D trained (``law_tokens``)."""
    a, law = stage.allocation, stage.law
    if a.objective == "fixed_params":
        return allocation_stage(spec, inputs, 6.0 * a.params * tokens)
    from runplan.scaling.allocate import warnings_at
    from runplan.scaling.laws import Interval, interval_of

    flops = 6.0 * a.params * tokens
    loss = float(law.loss(a.params, tokens))
    # the warnings of the law's point (extrapolation, D/N range) restated at the D trained; others kept
    stale = set(warnings_at(law, a.budget_flops, a.params, a.tokens))
    warnings = [w for w in a.warnings if w not in stale] + warnings_at(law, flops, a.params, tokens)
    intervals = a.intervals
    if intervals is not None:  # D is the budget's, not the law's estimate; the loss spread is at that D
        samples = [float(sample.loss(a.params, tokens)) for sample in law.resampled_laws()]
        intervals = intervals.model_copy(
            update={
                "tokens": Interval(value=tokens),
                "loss": interval_of(loss, samples, intervals.percentiles),
            }
        )
    allocation = a.model_copy(
        update={
            "flops": flops,
            "budget_flops": flops,
            "tokens": tokens,
            "tokens_per_param": tokens / a.params,
            "loss": loss,
            "law_tokens": a.tokens,
            "warnings": warnings,
            "intervals": intervals,
        }
    )
    return AllocationStage(allocation, stage.shape, stage.resolution, stage.law_params, flops, law)


def _sized_stage(spec: PlanSpec, inputs: ResolvedInputs, flops: float | None) -> AllocationStage:
    """Steps 1-3 for a model the plan sizes: the allocation at ``flops`` and the shape generated for its N."""
    from runplan.architect import generated_size_range, shape_for_params
    from runplan.scaling.allocate import allocate
    from runplan.units import format_si

    law = inputs.law
    flops = _flops(spec, inputs.gpu, inputs.n_gpus, None) if flops is None else flops
    allocation = allocate(flops, spec.objective, law)
    try:
        shape = shape_for_params(
            allocation.params, vocab_size=spec.training.vocab_size, count=law.param_count
        )
    except SpecError as error:  # the allocation is fine; no shape of that size can be generated
        low, high = generated_size_range(law.param_count)
        raise Infeasible(
            f"the budget allocates N = {allocation.params:.3g} parameters, but {error.message}",
            suggestions=[
                # below the range, the architect's hint may say why (the embeddings alone are larger)
                *([error.hint] if error.hint and allocation.params < low else []),
                f"change the budget or objective so that N lands between {format_si(low)} and {format_si(high)}",
                "or fix the model with 'model: <preset or size>'",
            ],
        ) from None
    resolution = (
        f"generated for N = {allocation.params:.4g} ({law.param_count} count) by the architect "
        "rules (docs/catalog.md)"
    )
    law_params = float(shape.total_params if law.param_count == "total" else shape.non_embedding_params)
    return AllocationStage(allocation, shape, resolution, law_params, flops, law)


# objective.params beside model: is taken as the same size said twice within this (a preset's "7b" is 7.16 B
# with Llama 3's vocabulary); beyond it the two disagree and the plan would silently drop one
FIXED_PARAMS_AGREEMENT = 0.10


def _checkpoint_folder(name: str | None, base_dir: Path) -> bool:
    """Whether ``model: some/folder`` names a downloaded checkpoint folder next to the plan file (read as its
    config.json, as ``--model`` reads one), rather than a catalog name or a size."""
    return name is not None and ("/" in name or "\\" in name) and (base_dir / name).is_dir()


def local_config(name: str | None, base_dir: Path) -> bool:
    """Whether ``model: NAME`` is a local config.json (``model: config.json``) or checkpoint folder, read relative
    to the plan file's folder as ``model: {config: ...}`` is, not to the working directory."""
    return name is not None and (name.strip().lower().endswith(".json") or _checkpoint_folder(name, base_dir))


class TooFewTokens(Infeasible):
    """A fixed model whose budget trains it on fewer tokens than the smallest sensible run: the allocation's
    refusal, with the compute ``need`` = 6·N·MIN_TOKENS that trains it on MIN_TOKENS (scaling.allocate)."""

    def __init__(self, error: Infeasible, need: float) -> None:
        super().__init__(error.reason, suggestions=error.suggestions)
        self.need = need


def _fixed_model_stage(spec: PlanSpec, inputs: ResolvedInputs, flops: float | None = None) -> AllocationStage:
    """A fixed model: the objective becomes ``fixed_params``; a MoE model is allocated on active compute."""
    from runplan.architect import resolve_model
    from runplan.scaling.allocate import MAX_PARAMS, MIN_PARAMS, MIN_TOKENS, Objective, allocate

    choice = spec.model
    assert isinstance(choice, ModelChoice)  # PlanSpec._model_choice turns a string into a ModelChoice
    if "objective" in spec.model_fields_set and spec.objective.kind != "fixed_params":
        raise SpecError(
            f"objective '{spec.objective.kind}' chooses the model size, but model: fixes it",
            where="objective.kind",
            hint="remove objective (or model) from the plan",
        )
    if choice.shape is not None:
        shape, resolution = choice.shape, "explicit shape from the plan file"
    elif choice.config is not None or local_config(choice.name, inputs.base_dir):
        from runplan.hf_config import load_config_shape

        given = choice.config or choice.name or ""
        where = "model.config" if choice.config is not None else "model"
        shape = load_config_shape(inputs.base_dir / given, where=where)  # relative to the plan file
        resolution = f"{given} → {shape.name} (Hugging Face config.json)"
    else:
        shape, resolution = resolve_model(choice.name or "", inputs.catalog, where="model")
    law, moe_warnings = _law_for_shape(spec, inputs.law, shape)
    law_params = _law_params(shape, law.param_count)
    flops = _flops(spec, inputs.gpu, inputs.n_gpus, law_params) if flops is None else flops
    if law_params < MIN_PARAMS:
        raise SpecError(
            f"the model has {law_params:.3g} parameters ({law.param_count} count), below the smallest "
            f"sensible model ({MIN_PARAMS:.0e})",
            where="model",
            hint="pick a larger preset or size",
        )
    if law_params > MAX_PARAMS:
        raise SpecError(
            f"the model has {law_params:.3g} parameters ({law.param_count} count), beyond any trainable "
            f"model (limit {MAX_PARAMS:.0e})",
            where="model",
            hint="check the shape's vocab_size, d_model and n_layers",
        )
    asked = spec.objective.params if "objective" in spec.model_fields_set else None
    if asked is not None and abs(asked / law_params - 1.0) > FIXED_PARAMS_AGREEMENT:
        raise SpecError(
            f"{asked:.4g} parameters, but model: has {law_params:.4g} ({law.param_count} count): two sizes",
            where="objective.params",
            hint="remove objective (model: fixes the size), or change model:",
        )
    try:
        allocation = allocate(flops, Objective(kind="fixed_params", params=law_params), law)
    except (
        Infeasible
    ) as error:  # fewer than MIN_TOKENS (scaling.allocate._check_sensible): C = 6·N·MIN_TOKENS
        raise TooFewTokens(error, 6.0 * law_params * MIN_TOKENS) from None
    budget_tokens = spec.budget.tokens if spec.budget is not None else None
    if budget_tokens is not None and math.isclose(allocation.tokens, budget_tokens, rel_tol=1e-12):
        # D = C/(6N) of the budget's C = 6·N·D, in floating point: the budget's own tokens (8T, not
        # 7,999,999,999,999.999)
        allocation = allocation.model_copy(update={"tokens": float(budget_tokens)})
    if shape.is_moe:
        total = shape.total_params if law.param_count == "total" else shape.non_embedding_params
        allocation = allocation.model_copy(
            update={"warnings": [*moe_warnings, *allocation.warnings], "moe_total_params": float(total)}
        )
    return AllocationStage(allocation, shape, resolution, law_params, flops, law)


def _law_params(shape: ModelShape, param_count: str) -> float:
    """N in the law's count; for a MoE model the *active* count, so that C = 6·N·D is the compute spent."""
    if shape.is_moe:
        return float(shape.active_params if param_count == "total" else shape.active_non_embedding_params)
    return float(shape.total_params if param_count == "total" else shape.non_embedding_params)


def _law_for_shape(spec: PlanSpec, law: Any, shape: ModelShape) -> tuple[Any, list[str]]:
    """The law a fixed model is allocated under, in the parameters C = 6·N·D counts, and cautions.

    Dense models: the plan's law as is. MoE models: the MoE law (Krajewski et al. 2024) unless the plan names
    one, rewritten in active parameters (``ParametricLaw.for_moe``); a dense law named for a MoE model is applied
    to the active parameters with a warning.
    """
    if not shape.is_moe:
        return law, []
    from runplan.scaling import DEFAULT_MOE_LAW
    from runplan.scaling.laws import get_shipped_law

    warnings = []
    if spec.law is None:
        law = get_shipped_law(DEFAULT_MOE_LAW)
    elif not law.is_moe_law:
        warnings.append(
            f"law '{law.name}' was fitted on dense models; for this MoE model it is applied to the active "
            f"parameters, crediting nothing to the other experts (the MoE law {DEFAULT_MOE_LAW} counts them)"
        )
    if law.param_count == "total":
        total, active = float(shape.total_params), float(shape.active_params)
    else:
        total, active = float(shape.non_embedding_params), float(shape.active_non_embedding_params)
    granularity = shape.ffn_hidden / shape.expert_ffn_hidden
    moe_law = law.for_moe(total, active, granularity)
    if law.is_moe_law:
        warnings.append(
            f"MoE: allocated on active compute, C = 6·N_active·D with N_active = {active:.4g} of {total:.4g} "
            f"{law.param_count.replace('_', '-')} parameters; loss from {law.name} (Krajewski et al. 2024) at "
            f"granularity G = {granularity:.3g}, a law fitted on {law.moe_origin}"
        )
    return moe_law, warnings


def stage_step_seconds(request: Any, best: Any, schedule: Any) -> list[float]:
    """The chosen layout re-timed at each batch stage's micro-batch count (the ramp keeps its bubble)."""
    from runplan.parallel.search import evaluate_layout

    return [
        evaluate_layout(
            request, best.layout.model_copy(update={"microbatches": stage.microbatches_per_replica})
        ).step_seconds
        for stage in schedule.batch_stages
    ]


def layout_memory_under(
    spec: PlanSpec, plan: RunPlan, stack: Stack, base_dir: str | Path = ".", layout: Any = None
) -> float:
    """Peak bytes per GPU of ``plan``'s chosen layout (or ``layout``, a variant of it such as recompute full) with
    another ``stack`` (an engine that cannot run part of the plan's: Megatron without a module the plan
    recomputes), by the same memory model on a one-row grid."""
    from runplan.parallel.search import evaluate_layout

    inputs = resolve_inputs(spec, base_dir)
    request = layout_request(spec, inputs, plan.model.shape, plan.allocation.tokens).request
    chosen = plan.layout.best.layout if layout is None else layout
    estimate = evaluate_layout(request.model_copy(update={"stack": stack}), chosen)
    return float(estimate.memory_bytes.total)


def layout_request(spec: PlanSpec, inputs: ResolvedInputs, shape: ModelShape, tokens: float) -> LayoutStage:
    """Steps 4-5 input: the batch target (plan file, else DeepSeek's B_opt) and the layout search request."""
    from runplan.parallel.batch import critical_batch

    # B_opt at C = M·D (DeepSeek's law or the plan's schedule.hyperparams): target and ceiling
    crit = critical_batch(shape, inputs.seq_len, tokens, inputs.hyperparam_law)
    compute = crit.compute_flops
    low = spec.constraints.min_global_batch_tokens
    high = spec.constraints.max_global_batch_tokens
    if spec.schedule.global_batch_tokens:
        target, reason = spec.schedule.global_batch_tokens, "plan file schedule.global_batch_tokens"
        if (low is not None and target < low) or (high is not None and target > high):
            raise SpecError(
                f"{target:.4g} tokens is outside the batch range the constraints allow "
                f"[{low or 0:.4g}, {high or math.inf:.4g}]",
                where="schedule.global_batch_tokens",
                hint="change it or constraints.min/max_global_batch_tokens",
            )
    else:
        # at least one sequence, at most the whole run (tiny runs: the law's batch can exceed D)
        target = min(max(crit.tokens, float(inputs.seq_len)), max(tokens, float(inputs.seq_len)))
        reason = (
            f"DeepSeek B_opt = 0.2920·C^0.3271 at C = M·D = {compute:.3g} (Bi et al. 2024, Eq. 1)"
            if inputs.hyperparam_law is None
            else f"B_opt of your law {inputs.hyperparam_law.name} (schedule.hyperparams) at C = M·D = {compute:.3g}"
        )
        if low is not None and low > tokens:
            raise SpecError(
                f"the smallest batch {low:.4g} tokens is more than the {tokens:.4g} training tokens (the run would "
                "be less than one step)",
                where="constraints.min_global_batch_tokens",
                hint="lower it below the training tokens",
            )
        if low is not None and target < low:  # the user's floor wins over the law (a warning follows)
            target, reason = low, f"{reason}, raised to constraints.min_global_batch_tokens"
        elif high is not None and target > high:
            target, reason = high, f"{reason}, lowered to constraints.max_global_batch_tokens"
    request = ParallelRequest(
        model=shape,
        gpu=inputs.gpu,
        n_gpus=inputs.n_gpus,
        gpus_per_node=inputs.gpus_per_node,
        seq_len=inputs.seq_len,
        global_batch_tokens=target,
        training_tokens=tokens,
        constraints=spec.constraints,
        pins=spec.parallel,
        stack=spec.stack,
        efficiency=inputs.efficiency(),
        top=5,
    )
    return LayoutStage(request, target, compute, reason)


def _architecture(stage: AllocationStage, law: ParametricLaw, seq_len: int) -> Architecture:
    """Step 3: the shape's exact parameter counts and FLOPs per token, each with its reason."""
    shape, allocation = stage.shape, stage.allocation
    return Architecture(
        shape=shape,
        resolution=stage.resolution,
        total_params=shape.total_params,
        embedding_params=shape.embedding_params,
        non_embedding_params=shape.non_embedding_params,
        active_params=shape.active_params,
        law_params=stage.law_params,
        flops_per_token=shape.model_flops_per_token(seq_len),
        notes={
            "total_params": "embeddings + L × (attention + MLP/experts + norms) + final norm (model.py)"
            + (
                f"; the {shape.mtp_layers} multi-token-prediction module(s) add {shape.mtp_params:,} more, trained "
                "and checkpointed (DeepSeek-V3 §2.2: not in the published total)"
                if shape.mtp_layers
                else ""
            ),
            "embedding_params": f"V·h{' × 2 (untied head)' if not shape.tied_embeddings else ''} = "
            f"{shape.vocab_size:,} × {shape.d_model:,}",
            "non_embedding_params": "total − embedding (Kaplan et al. 2020 §2.1 convention)",
            "active_params": "routed experts counted top-k of E per MoE layer"
            if shape.is_moe
            else "dense: every parameter is active",
            "law_params": _law_params_note(shape, law.param_count, allocation.params),
            "flops_per_token": f"6 × {shape.matmul_params_per_token():,} matmul params + 6·L·s·a·(d_qk+d_v) "
            f"attention at s = {seq_len:,} (PaLM App. B, no causal discount){_window_note(shape, seq_len)}"
            f"{_mtp_note(shape)}",
        },
    )


def _law_params_note(shape: ModelShape, param_count: str, params: float) -> str:
    """What N the law takes (:func:`_law_params`): its own count, or for a MoE model the active part of it."""
    if not shape.is_moe:
        return f"the law counts {param_count} parameters (allocation N {params:.4g})"
    count = "active" if param_count == "total" else "active non-embedding"
    return (
        f"the law counts {count} parameters: a MoE model is allocated on the compute it spends, C = 6·N_active·D "
        f"(allocation N {params:.4g})"
    )


def _mtp_note(shape: ModelShape) -> str:
    """How multi-token-prediction modules enter the count (model.matmul_params_per_token), or nothing."""
    if not shape.mtp_layers:
        return ""
    return (
        f"; with {shape.mtp_layers} MTP module(s) (DeepSeek-V3 §2.2) L counts their blocks too, and the matmul "
        "params their active weights and their own pass through the V·h head"
    )


def _window_note(shape: ModelShape, seq_len: int) -> str:
    """How a sliding window enters the attention count (model.window_context), or nothing without one."""
    if not shape.sliding_window or shape.sliding_window >= seq_len:
        return ""
    w = shape.sliding_window
    k = shape.global_every
    suffix = "th" if 10 <= k % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(k % 10, "th")
    ordinal = f"{k}{suffix}"
    which = f"the layers but every {ordinal} (global) slide" if k else "every layer slides"
    count = "count" if k else "counts"
    return (
        f"; {which} a {w:,}-key window and {count} 2w − w²/s = {2 * w - w * w / seq_len:,.0f} for s "
        "(a query at position i sees min(i, w) keys)"
    )


def _layout_choice(planned: LayoutStage, result: SearchResult, calibration: str) -> LayoutChoice:
    """Steps 4-5: the best feasible layout and its runners-up."""
    return LayoutChoice(
        best=result.layouts[0],
        runners_up=list(result.layouts[1:]),
        candidates=result.candidates,
        feasible=result.feasible,
        target_global_batch_tokens=planned.target_batch_tokens,
        critical_batch=result.critical_batch,
        search_seconds=result.search_seconds,
        calibration=calibration,
        gpu=planned.request.gpu,
        notes={
            "candidates": "every TP×PP×DP×EP×CP×ZeRO×micro-batch×VPP×recompute combination (docs/parallel.md)",
            "feasible": "fits HBM × (1 − headroom), bubble ≤ max, batch within range, divisibility",
            "target_global_batch_tokens": planned.target_reason,
            "search_seconds": "vectorized numpy search wall time",
        },
    )


def _schedule(
    spec: PlanSpec,
    inputs: ResolvedInputs,
    planned: LayoutStage,
    best: LayoutEstimate,
    tokens: float,
    critical_tokens: float,
) -> Schedule:
    """Step 6: batch ramp, LR and WSD phases at the layout's batch."""
    from runplan.ops import ScheduleRequest, plan_schedule

    schedule_spec = spec.schedule.model_copy(update={"global_batch_tokens": float(best.global_batch_tokens)})
    seq_len = inputs.seq_len
    schedule = plan_schedule(
        ScheduleRequest(
            training_tokens=tokens,
            compute_flops=planned.deepseek_compute_flops,
            seq_len=seq_len,
            dp=best.dp,
            micro_batch=best.micro_batch,
            microbatch_multiple=best.pp if best.vpp > 1 else 1,
            critical_batch_tokens=None,
            fits_without_interleaving=_fits_without_interleaving(planned, best),
            checked_main_batches=_checked_main_batches(planned, best, critical_tokens, spec.schedule),
            micro_batch_one_pins=_micro_batch_one_pins(planned, best),
            spec=schedule_spec,
            hyperparam_law=inputs.hyperparam_law,
            batch_source=f"= d·b·m·s = {best.dp}·{best.micro_batch}·{best.microbatches}·{seq_len}, the chosen "
            f"layout's batch (the layout search aimed at {fmt_count(planned.target_batch_tokens)} tokens: {planned.target_reason})",
        )
    )
    return _timed_stages(schedule, stage_step_seconds(planned.request, best, schedule))


def _passes_as(planned: LayoutStage, best: LayoutEstimate, request: Any = None, **axes: Any) -> bool:
    """Whether the chosen layout with ``axes`` changed passes every rule (memory, bubble cap, batch range) by the
    same model (search.evaluate_layout), under ``request`` (default: the plan's): what the ramp warning's remedies
    are checked by before they are offered."""
    from runplan.parallel.layout import Layout
    from runplan.parallel.search import evaluate_layout

    layout = Layout.model_validate({**best.axes(), **axes})
    return not evaluate_layout(request or planned.request, layout).violations


def _holding_pins(best: LayoutEstimate, microbatches: int, *, with_micro_batch: bool) -> str:
    """The parallel pins that hold the chosen layout at ``microbatches`` (dp, micro_batch where it stays, vpp, and
    pp when interleaved, which sets the ramp's group u·p): pinned alone, the search re-picks m within +10% of the
    batch."""
    b = f"micro_batch: {best.micro_batch}, " if with_micro_batch else ""
    pp = f"pp: {best.pp}, " if best.vpp > 1 else ""
    return f"dp: {best.dp}, {b}microbatches: {microbatches}, {pp}vpp: {best.vpp}"


def _fits_without_interleaving(planned: LayoutStage, best: LayoutEstimate) -> bool:
    """Whether the chosen layout, interleaved, passes every rule at v = 1 and its main batch (:func:`_passes_as`):
    what lets a ramp warning offer parallel.vpp: 1."""
    return best.vpp > 1 and _passes_as(planned, best, vpp=1)


def _micro_batch_one_pins(planned: LayoutStage, best: LayoutEstimate) -> str:
    """The pins that hold the chosen layout at b = 1 with m·b micro-batches (the same batch d·b·m), where it passes
    every rule (:func:`_passes_as`); '' where it fails or b is 1 already: what lets a ramp warning offer
    parallel.micro_batch: 1. Pinned alone, the search re-picks m within +10% of the batch (8B on 256 H100 at
    s = 1,024: b 2, m 15 → b 1, m 31, not 30)."""
    microbatches = best.microbatches * best.micro_batch
    if best.micro_batch == 1 or not _passes_as(planned, best, micro_batch=1, microbatches=microbatches):
        return ""
    return _holding_pins(best, microbatches, with_micro_batch=False)


def _checked_main_batches(
    planned: LayoutStage, best: LayoutEstimate, critical_tokens: float, schedule: Any
) -> dict[int, str]:
    """The larger main batches a ramp warning may offer (ops.schedule.ramp_main_batch, one per ramp fraction),
    kept where the chosen layout re-plans clean at it, each with the pins that hold it (:func:`_holding_pins`):
    within the critical batch's slack (no `batch:` warning, _plan_warnings) and passing every rule at
    m' = M'/(d·b) (:func:`_passes_as`). Set alone, the search would take up to +10% (70B on 512 H100: 6,400
    sequences asked, 7,040 run, above the critical batch)."""
    from runplan.ops.schedule import ramp_main_batch

    unit = best.dp * best.micro_batch
    group = unit * (best.pp if best.vpp > 1 else 1)
    seq_len = planned.request.seq_len
    checked: dict[int, str] = {}
    for larger in sorted({ramp_main_batch(r.batch_fraction, group) for r in schedule.batch_ramp}):
        tokens = float(larger * seq_len)
        request = planned.request.model_copy(update={"global_batch_tokens": tokens})
        if tokens <= critical_tokens * CRITICAL_BATCH_SLACK and _passes_as(
            planned, best, request, microbatches=larger // unit
        ):
            checked[larger] = f"parallel: {{{_holding_pins(best, larger // unit, with_micro_batch=True)}}}"
    return checked


def _timed_stages(schedule: Schedule, seconds: list[float]) -> Schedule:
    """Each batch stage with the chosen layout's step time at its micro-batch count (stage_step_seconds), the
    number training time sums and `runplan monitor --plan` compares a ramp's logged steps with."""
    from runplan.ops._notes import fmt_seconds

    stages = [
        stage.model_copy(
            update={
                "step_seconds": t,
                "notes": {
                    **stage.notes,
                    "step_seconds": f"the chosen layout timed at {stage.microbatches_per_replica:,} micro-batches "
                    f"per replica: {fmt_seconds(t)}"
                    + (
                        ""
                        if stage is schedule.batch_stages[-1]
                        else " (a ramp keeps the bubble and fixed costs)"
                    ),
                },
            }
        )
        for stage, t in zip(schedule.batch_stages, seconds, strict=True)
    ]
    return schedule.model_copy(update={"batch_stages": stages})


def _operations(
    spec: PlanSpec,
    inputs: ResolvedInputs,
    stage: AllocationStage,
    planned: LayoutStage,
    best: LayoutEstimate,
    schedule: Schedule,
) -> Operations:
    """Step 7: checkpoints, reliability and monitoring for the chosen layout and schedule."""
    from runplan.ops import OperationsRequest, operate

    return operate(
        OperationsRequest(
            # the checkpoint saves the multi-token-prediction modules beside the main model (model.py)
            total_params=stage.shape.total_params + stage.shape.mtp_params,
            tp=best.tp,
            pp=best.pp,
            dp=best.dp,
            cp=best.cp,
            zero=best.zero,
            ep=best.ep,
            expert_params=stage.shape.routed_expert_params + stage.shape.mtp_routed_expert_params,
            # the fp32 parameters are the optimizer's master (FSDP mixed precision under ZeRO-3; autocast):
            # the checkpoint holds them and Adam's moments, no bf16 copy (ops.checkpoint.LayoutRequest)
            fp32_master_weights=(planned.request.stack.fsdp_mixed_precision and best.zero >= 3)
            or planned.request.stack.autocast_fp32_weights,
            optimizer_state_dtype=planned.request.stack.optimizer_state_dtype,
            fused_adam_master=_fused_adam_master(planned.request.stack, best.zero),
            gpus_per_node=inputs.gpus_per_node,
            seq_len=inputs.seq_len,
            step_seconds=best.step_seconds,
            # each stage's step time as the schedule records it (_timed_stages)
            stage_step_seconds=[s.step_seconds for s in schedule.batch_stages if s.step_seconds is not None]
            or None,
            schedule=schedule,
            operations=spec.operations,
            monitoring=spec.monitoring,
        )
    )


def _proxy_vocab_size(spec: PlanSpec, shape: ModelShape) -> int:
    """The proxies' vocabulary: training.vocab_size where the plan sets it, else a fixed model's own (the proxies
    train on its tokenizer: Mixtral's 32,000 or Gemma 2's 256,000 embeddings weigh very differently in a small
    proxy), else the default a generated shape takes."""
    if spec.model is not None and "vocab_size" not in spec.training.model_fields_set:
        return shape.vocab_size
    return spec.training.vocab_size


def _fused_adam_master(stack: Stack, zero: int) -> bool:
    """TransformerEngine's FusedAdam holds the master (Stack.fused_adam_master) where Megatron's distributed
    optimizer (ZeRO-1/2) runs: the checkpoint saves it with the moments upcast (ops.checkpoint, 12 B/param).
    Megatron FSDP (ZeRO-3) turns FusedAdam's own master off and saves the moments as held (core/optimizer/
    __init__.py, distrib_optimizer.py @ d98e8a64): 10 B/param."""
    return stack.fused_adam_master and zero in (1, 2)


def _sweep_and_cost(
    spec: PlanSpec, inputs: ResolvedInputs, stage: AllocationStage, operations: Operations
) -> tuple[Sweep | None, Cost, str | None]:
    """Step 8: the proxy isoFLOP sweep and what the run and the sweep cost; no sweep (None, and why) when the
    plan file sets ``sweep: false`` or the default sweep has no proxy shape for this budget."""
    from runplan.ops import CostRequest, estimate_cost

    gpu = inputs.gpu
    sweep, no_sweep = _designed_sweep(spec, inputs, stage)
    cost = estimate_cost(
        CostRequest(
            n_gpus=inputs.n_gpus,
            tdp_watts=gpu.tdp_watts,
            useful_seconds=operations.useful_seconds,
            elapsed_seconds=operations.reliability.expected_elapsed_seconds,
            sweep_gpu_hours=sweep.gpu_hours if sweep is not None else None,
            sweep_gpus=inputs.n_gpus,
            price_per_gpu_hour=spec.cluster.price_per_gpu_hour,
            price_is_default="price_per_gpu_hour" not in spec.cluster.model_fields_set,
            spec=spec.cost,
        )
    )
    return sweep, cost, no_sweep


#: Why a plan has no sweep when its file says so (``sweep: false``): shown with the plan's warnings, as the
#: default sweep's absence is.
NO_SWEEP_CHOSEN = "no proxy sweep designed or costed (the plan file sets sweep: false)"


def _designed_sweep(
    spec: PlanSpec, inputs: ResolvedInputs, stage: AllocationStage
) -> tuple[Sweep | None, str | None]:
    """The proxy sweep the plan's ``sweep:`` keys ask for, or None and why: the file sets ``sweep: false``, or
    the default sweep has no proxy shape for this budget."""
    from runplan.scaling.sweep import SweepRequest, design_sweep

    if spec.sweep.enabled is False:
        return None, NO_SWEEP_CHOSEN
    chosen = spec.sweep.request_fields()
    try:
        request = SweepRequest(
            flops=stage.allocation.budget_flops or stage.flops,
            law=stage.law,
            gpu=inputs.gpu,
            mfu=spec.budget.mfu if spec.budget is not None else DEFAULT_MFU,
            seq_len=inputs.seq_len,
            vocab_size=_proxy_vocab_size(spec, stage.shape),
            price_per_gpu_hour=spec.cluster.price_per_gpu_hour,
            **chosen,
        )
    except ValidationError as error:  # a bad sweep: key, pointed at its file:line by the caller
        raise spec_error_from_validation(error, SweepRequest, prefix=("sweep",)) from None
    try:
        return _in_plan_words(design_sweep(request)), None
    except Infeasible as error:
        # With the default sweep (no sweep: keys set) the plan goes on without one and says why, rather than fail
        # on a choice the user did not make (issue 17); keys the user set are theirs to change.
        if chosen:
            raise
        return None, (
            f"no proxy sweep at the default {request.fraction:.0%} of the budget: {error.reason} "
            "(set sweep.fraction or sweep.span_decades, or sweep: false)"
        )


def _in_plan_words(sweep: Sweep) -> Sweep:
    """The sweep with its suggestions naming the plan key (``sweep: {budgets: 3}``), not ``runplan sweep``'s flag."""
    from runplan.scaling.sweep import PLAN_BUDGETS, VOCAB_FLAG, VOCAB_PLAN_KEY, flag_notes

    budgets = len(sweep.budgets)
    plan_words = dict(
        zip(flag_notes(sweep.wsd, budgets), flag_notes(sweep.wsd, budgets, PLAN_BUDGETS), strict=True)
    )
    warnings = [plan_words.get(w, w).replace(VOCAB_FLAG, VOCAB_PLAN_KEY) for w in sweep.warnings]
    return sweep.model_copy(update={"warnings": warnings})


#: Wall-clock days beyond which a plan warns (a planning choice: a year, about three times BLOOM-176B's
#: pre-training, March-July 2022, bigscience-workshop tr11 chronicles, one of the longest published; a GPU
#: generation lasts about two years, so a run planned longer risks ending on hardware a generation old).
MAX_PLANNED_DAYS = 365.0


def _position_warnings(shape: ModelShape, seq_len: int) -> list[str]:
    """A learned position table shorter than the sequence (GPT-3's 2,048 rows at 4,096): positions past it have
    no embedding, so the run trains another model than the one counted (RoPE models have no table)."""
    rows = shape.learned_positions
    if not rows or seq_len <= rows:
        return []
    extra = (seq_len - rows) * shape.d_model
    return [
        f"model: {rows:,} learned positions, shorter than training.seq_len {seq_len:,}: the table must grow to "
        f"{seq_len:,} rows (+{extra:,} parameters, not counted here), or train at {rows:,}"
    ]


def _tp_overlap_warnings(request: ParallelRequest, best: LayoutEstimate) -> list[str]:
    """TP communication overlap assumed on an Ampere GPU: TransformerEngine's userbuffers overlap needs CUDA
    multicast (compute capability 9.0+) and otherwise stops at start-up unless UB_SKIPMC=1 selects its slower
    CUDA IPC path (TransformerEngine ``initialize_ub``; its comm_gemm_overlap example README), so the time the
    plan prints may not be reachable; the Megatron export leaves the flag out there."""
    from runplan.parallel.timing import tp_overlap_applies

    node = min(request.node_size, request.n_gpus)  # (timing.step_time: a one-node job is its own node)
    overlapped = best.tp > 1 and bool(tp_overlap_applies(best.sequence_parallel, best.tp, node))
    if not overlapped or not request.stack.tp_comm_overlap or request.gpu.family != "ampere":
        return []
    return [
        f"layout: the step time assumes TP communication overlap, which TransformerEngine runs on "
        f"{request.gpu.name} (Ampere, no CUDA multicast) only with UB_SKIPMC=1, a slower path; plan with "
        "stack.tp_comm_overlap: false for the time without it"
    ]


def _plan_warnings(
    best: LayoutEstimate,
    crit: CriticalBatch,
    allocation: Allocation,
    operations: Operations,
    schedule: Schedule,
    sweep: Sweep | None,
    no_sweep: str | None = None,
) -> list[str]:
    """Step 10: what a reviewer should look at, every stage's cautions prefixed with the stage."""
    warnings: list[str] = []
    if best.memory_bytes.total > MEMORY_CLIFF_FRACTION * best.memory_limit_bytes:
        warnings.append(
            f"memory: the best layout uses {best.memory_bytes.total / best.memory_limit_bytes:.0%} of "
            "its limit; an allocator spike or a longer sequence could OOM it"
        )
    if best.global_batch_tokens > crit.tokens * CRITICAL_BATCH_SLACK:
        warnings.append(
            f"batch: {best.global_batch_tokens:,} tokens is above the critical batch "
            f"{crit.tokens:,.0f} ({crit.law.split(':')[0]}); extra batch buys little"
        )
    days = operations.reliability.effective_days
    if days > MAX_PLANNED_DAYS:
        warnings.append(
            f"time: the run takes {days:,.0f} days of wall clock, far longer than published pre-training runs "
            "(BLOOM-176B trained about 4 months, March to July 2022); more GPUs, or fewer tokens"
        )
    warnings.extend(f"allocation: {w}" for w in allocation.warnings)
    warnings.extend(f"operations: {w}" for w in operations.warnings)
    warnings.extend(f"schedule: {w}" for w in schedule.warnings)
    # suggestions to sweep more budgets are not cautions: the sweep section shows them (Sweep.plan_warnings)
    sweep_notes = sweep.plan_warnings if sweep is not None else [no_sweep] if no_sweep else []
    warnings.extend(f"sweep: {w}" for w in sweep_notes)
    return warnings


#: A batch above the critical batch by more than this factor gets a `batch:` warning (_plan_warnings); a ramp
#: remedy's larger main batch is offered only within it (_checked_main_batches).
CRITICAL_BATCH_SLACK = 1.1
#: Fixed-point steps that size a GPU-time budget's compute to its wall clock, and the agreement that ends them.
FILL_MAX_STEPS = 5
#: The steps of a fill by C alone (tokens_per_param, inference_optimal), whose last size is the plan: on one shape
#: its days move as √C or slower, and an infeasible shape may lie next to the window (0.04 days on 64 H100s with
#: tp 8 at 20 tokens per parameter: 545.8 M overruns, the 14-head shape below it is infeasible; the fourth step
#: finds 489.2 M, which fits, and the sixth meets the 14-head shape again, which says why the days are not filled).
FILL_MAX_STEPS_BY_COMPUTE = 8
#: Geometric midpoints a fill step tries back toward the last feasible C when its own size is infeasible.
FILL_HALVINGS = 2
#: How far under the budget's days a fill may end: the plan fills the days "without going over" (README), so it
#: ends within [1 − FILL_RTOL, 1] of them (:func:`fills_the_days`); a plan over them says so (a `budget:` warning).
FILL_RTOL = 0.01
#: The token fill aims this far below the budget's days, so that a step that lands a little long (the batch
#: rounding and the ramp are not exactly linear in D) is not over the budget; it stops within twice this.
FILL_MARGIN = 0.002
#: The steps of the token fill (:func:`_fill_by_tokens`): where the days jump with D (the batch law at C = M·D
#: moves the layout), the steps bisect the bracket and need as many as the fill by C alone (Mixtral 8x7B, 0.05
#: days on 1,024 H100s: the eighth step planned D 0.2% under the jump, the fifth 2% under it).
FILL_MAX_STEPS_BY_TOKENS = FILL_MAX_STEPS_BY_COMPUTE
#: Objectives whose D a GPU-time budget may set once the model is sized: compute_optimal (N from the law, D
#: then fills the days) and fixed_params (all compute into tokens). tokens_per_param fixes D/N and
#: inference_optimal derives D from a target loss, so those keep the law's D and fill by compute alone.
TOKEN_FILL_OBJECTIVES = ("compute_optimal", "fixed_params")
#: The token fill trains at most this much short of the D the compute fill gave: enough to come down from a
#: rung above the law's N (architect's rungs are at most 7.5% off it) or from a size a pin keeps from shrinking,
#: not so far that a budget too small for the smallest shape trains it on a sliver of its tokens (0.001 days on
#: 64 H100: 27 M tokens for 34 M parameters); such a budget is infeasible (:class:`BudgetTooSmall`).
TOKEN_FILL_SHORTEST = 0.5


@dataclass(frozen=True)
class Fill:
    """How :func:`build_plan` spends a GPU-time budget: the compute that sizes the model and, where the
    objective lets D follow the budget (TOKEN_FILL_OBJECTIVES), the tokens that fill the days at that size."""

    flops: float
    tokens: float | None = None


def fills_the_days(days: float, target_days: float) -> bool:
    """Whether a plan of ``days`` fills a budget of ``target_days`` without going over: within FILL_RTOL under."""
    return target_days * (1.0 - FILL_RTOL) <= days <= target_days


def _sized_for(days: float, target_days: float, by_tokens: bool) -> bool:
    """Whether the fill in C may stop at a size taking ``days``: one whose tokens then fill the days
    (TOKEN_FILL_OBJECTIVES: :func:`_fill_by_tokens` ends within them) needs only be within FILL_RTOL either way;
    one filled by C alone is the plan, so it must fill the days without going over (:func:`fills_the_days`)."""
    if by_tokens:
        return abs(days / target_days - 1.0) <= FILL_RTOL
    return fills_the_days(days, target_days)


def budget_days(spec: PlanSpec, n_gpus: int) -> float | None:
    """The wall clock a GPU-time budget buys on the plan's cluster: budget.days, or gpu_hours / (gpus × 24)."""
    budget = spec.budget
    if budget is None:
        return None
    if budget.days is not None:
        return budget.days
    if budget.gpu_hours is not None:
        return budget.gpu_hours / (n_gpus * 24.0)
    return None


def build_plan(spec: PlanSpec, base_dir: str | Path = ".") -> RunPlan:
    """Run every stage for ``spec``; paths in the plan (catalogs, law files) are relative to ``base_dir``.

    A GPU-time budget (days, GPU-hours) is spent, not just converted: the budget's MFU only gives the first
    guess of C; the plan is then rebuilt with C scaled by budget days / predicted wall-clock days (the
    chosen layout's MFU and the goodput included), a fixed-point iteration of at most FILL_MAX_STEPS steps
    that stops when the two agree within FILL_RTOL. The generated shape is a rung up to 7.5% from the law's
    N (architect), so no C may fill the days; the model it settles on is then trained on the tokens that fill
    them (TOKEN_FILL_OBJECTIVES), never more than the budget's days. An objective that fixes D fills them by C
    alone (:func:`_next_flops`), within FILL_RTOL under them and never over (:func:`fills_the_days`). A plan
    that does not fill its days so says why in a ``budget:`` warning. ``allocation.mfu`` is :func:`budget_mfu`.
    """
    inputs = resolve_inputs(spec, base_dir)
    target_days = budget_days(spec, inputs.n_gpus)
    plan, _, stopped = _filled(spec, inputs, target_days)
    if target_days is None:
        return plan
    predicted = plan.cost.main.wall_clock_days
    warnings = list(plan.warnings)
    if not fills_the_days(predicted, target_days):
        why = stopped or unfilled_reason(plan.allocation.objective)
        verb = "fills" if predicted < target_days else "takes"
        warnings.append(
            f"budget: the plan {verb} {predicted:.3g} of the budget's {target_days:.3g} days: {why}"
        )
    elif stopped and (note := token_fill_note(plan.allocation, target_days)):
        warnings.append(f"budget: {stopped}, so the model the budget sized is {note}")
    allocation = plan.allocation.model_copy(
        update={"mfu": budget_mfu(plan.allocation, inputs, target_days), "days": target_days}
    )
    if predicted <= target_days:  # the days hold the run: no "raise the budget" (days_hold_it)
        warnings = [_days_hold_it(w, allocation, target_days) for w in warnings]
        allocation = days_hold_it(allocation, target_days)
    return plan.model_copy(update={"allocation": allocation, "warnings": warnings})


def unfilled_reason(objective: str) -> str:
    """Why no plan tried filled the budget's days: the predicted days jump where the chosen layout or the batch
    rounding changes. The fill resizes the model except for a fixed one (fixed_params), whose fill changes D
    alone: the layout's batch follows the batch law at C = M·D (Bi et al. 2024, §3.1), so it moves with D."""
    if objective == "fixed_params":
        return (
            "the chosen layout and the batch rounding change with D (the batch follows the batch law at C = M·D), "
            "so no D tried fills it within 1% without going over"
        )
    return (
        "the chosen layout and the batch rounding change with the model size, so no size tried fills it "
        "within 1% without going over"
    )


def days_hold_it(allocation: Allocation, days: float) -> Allocation:
    """``allocation`` of a GPU-time budget of ``days`` that hold its run, its "budget overrun" caution said as
    what it is there (:func:`_days_hold_it`): `plan` and `allocate FILE` alike."""
    return allocation.model_copy(
        update={"warnings": [_days_hold_it(w, allocation, days) for w in allocation.warnings]}
    )


#: The allocation's caution when training takes more FLOPs than the budget's C (scaling.allocate).
_OVERRUN = "budget overrun:"


def _days_hold_it(warning: str, allocation: Allocation, days: float) -> str:
    """``warning``, or where it is the allocation's "budget overrun" (training above the budget's C, which only
    sets an inference-optimal target loss) on a GPU-time budget whose days hold the run, what that C is: the
    plan's bound is the days, so "raise the budget" asked for nothing the run needs."""
    prefix = "allocation: " if warning.startswith("allocation: ") else ""
    if not warning.startswith(prefix + _OVERRUN) or not allocation.budget_flops:
        return warning
    return (
        f"{prefix}the target loss is the compute-optimal loss of C = {allocation.budget_flops:.3g} FLOPs; training "
        f"the smaller model to it takes 6·N·D = {allocation.flops:.3g} FLOPs "
        f"({allocation.flops / allocation.budget_flops:.3g}×), which the budget's {days:.3g} days hold (a GPU-time "
        "budget: the days, not C, bound the run)"
    )


def budget_mfu(allocation: Allocation, inputs: ResolvedInputs, days: float) -> float:
    """The MFU a GPU-time budget of ``days`` is converted at, the one `plan` and `allocate FILE` both print: the
    run's training FLOPs over the budget's GPU-seconds at peak, 6·N·D / (GPUs × bf16 peak × seconds), goodput
    included. MFU is model FLOPs per second over peak (PaLM, Chowdhery et al. 2022, §4.1, App. B), and the model
    FLOPs trained are ``allocation.flops`` (6·N·D), not the budget's C (``budget_flops``): inference_optimal
    trains more than its C, which only sets the target loss (1.68x on 30 days of 512 H100s serving 2e13 tokens)."""
    return allocation.flops / (inputs.n_gpus * inputs.gpu.bf16_flops * days * SECONDS_PER_DAY)


def budget_fill(spec: PlanSpec, inputs: ResolvedInputs) -> Fill | None:
    """How :func:`build_plan` spends a GPU-time budget, so that `allocate` and `parallelize` on a plan file size
    and train the same model as `plan` (:func:`filled_stage`); None for
    a FLOPs or token budget (nothing to fill), or when the plan as written is infeasible (its pins, say): then
    the budget's own conversion, so that `parallelize`'s flags can still lay other pins over the file's."""
    target_days = budget_days(spec, inputs.n_gpus)
    if target_days is None:
        return None
    try:
        return _filled(spec, inputs, target_days)[1]
    except BudgetTooSmall:
        raise
    except Infeasible:
        return None


class BudgetTooSmall(Infeasible):
    """A GPU-time budget shorter than the smallest plan the fill could build: no size fits the days."""

    about_plan_file = True  # the budget's days come from the plan file in every command that fills them


def _too_few_tokens(
    spec: PlanSpec, inputs: ResolvedInputs, target_days: float, refusal: TooFewTokens
) -> BudgetTooSmall:
    """A GPU-time budget too short to train a fixed model on the smallest sensible D, in its own key: the days
    (or GPU-hours) that hold the plan at D = MIN_TOKENS, and at least those at which the budget's own conversion
    (GPUs × peak × budget.mfu × seconds, _flops) gives that plan's C, so the fill's first step is not refused
    again; not the allocation's "raise the budget to at least C FLOPs" (a budget the user gave in time)."""
    from runplan.scaling.budget import flops_from_hardware

    plan, _ = _build_once(spec, inputs, refusal.need * (1.0 + 1e-9))
    budget = spec.budget
    assert budget is not None  # a GPU-time budget set target_days
    converted = flops_from_hardware(inputs.n_gpus, target_days, inputs.gpu, budget.mfu)
    return _budget_too_small(
        spec,
        plan,
        target_days,
        Infeasible(
            refusal.reason,
            suggestions=[x for x in refusal.suggestions if not x.startswith("raise the budget to at least")],
        ),
        smaller="fewer tokens are",
        least_days=target_days * refusal.need / converted,
    )


def _budget_too_small(
    spec: PlanSpec,
    plan: RunPlan,
    target_days: float,
    refusal: Infeasible,
    smaller: str = "a smaller size is",
    least_days: float = 0.0,
) -> BudgetTooSmall:
    """The refusal of a budget whose days even the smallest feasible size overruns (a smaller one was refused
    for ``refusal``): names the budget's field, what the smallest plan takes, and the budget that holds it."""
    from runplan.units import format_si

    days = plan.cost.main.wall_clock_days
    held = max(days, least_days)
    params = plan.model.total_params
    smallest = (
        f"{format_si(params, digits=4)} parameters on {format_si(plan.allocation.tokens, digits=3)} tokens"
    )
    budget = spec.budget
    assert budget is not None  # a GPU-time budget set target_days
    if budget.gpu_hours is not None:
        gpu_hours = budget.gpu_hours * held / target_days
        field, need = "budget.gpu_hours", f"raise budget.gpu_hours to at least {_rounded_up(gpu_hours):.3g}"
        given = f"{budget.gpu_hours:.4g} GPU-hours"
    else:
        field, need = "budget.days", f"raise budget.days to at least {_rounded_up(held):.3g}"
        given = f"{target_days:.4g} days"
    return BudgetTooSmall(
        f"{field}: {given} cannot hold the smallest plan: {smallest} take {days:.3g} days, and {smaller} "
        f"infeasible ({refusal.reason})",
        # the refusal's own "change the budget so that N lands ..." is what `need` says with a number
        suggestions=[need, *(s for s in refusal.suggestions if not s.startswith("change the budget"))],
    )


def token_fill_note(allocation: Allocation, days: float | None = None) -> str | None:
    """One line on a GPU-time budget filled by tokens: the D trained against the law's D for the model's N."""
    from runplan.units import format_si

    if allocation.law_tokens is None:
        return None
    change = allocation.tokens / allocation.law_tokens - 1.0
    longer = change >= 0.0
    days = allocation.days if days is None else days
    return (
        f"trained on {format_si(allocation.tokens, digits=4)} tokens, {abs(change):.1%} "
        f"{'beyond' if longer else 'short of'} the law's D for this size ({format_si(allocation.law_tokens, digits=4)}), "
        f"to {'use' if longer else 'end within'} the budget's {f'{days:.4g} days' if days else 'days'}"
    )


def _filled(
    spec: PlanSpec, inputs: ResolvedInputs, target_days: float | None
) -> tuple[RunPlan, Fill, str | None]:
    """The plan and its :class:`Fill`: at the budget's own conversion, or (``target_days``) the fullest
    fixed-point iterate in C that does not overrun the budget (the predicted days jump where the shape, the
    layout or the batch rounding changes with N, so the iteration may cycle), then its model trained on the
    tokens that fill the days (:func:`_fill_by_tokens`); and why the iteration in C stopped early, when an
    iterate was infeasible, or else why those tokens fall short of the days (:func:`_jump_reason`)."""
    try:
        plan, flops = _build_once(spec, inputs, None)
    except TooFewTokens as error:
        if target_days is None:
            raise
        raise _too_few_tokens(spec, inputs, target_days, error) from None
    except Infeasible as error:
        raise _naming_the_model(error, spec, inputs) from None
    if target_days is None:
        return plan, Fill(flops), None
    tried = [(plan, flops)]
    stopped: tuple[str, Infeasible] | None = None
    fills_by_tokens = plan.allocation.objective in TOKEN_FILL_OBJECTIVES
    for _ in range(FILL_MAX_STEPS if fills_by_tokens else FILL_MAX_STEPS_BY_COMPUTE):
        predicted = plan.cost.main.wall_clock_days
        if _sized_for(predicted, target_days, fills_by_tokens):
            break
        size = "larger" if target_days > predicted else "smaller"
        built, refusal = _toward(spec, inputs, flops, _next_flops(tried, target_days, fills_by_tokens))
        if refusal is not None:  # a size the pins or the memory rule out: keep the iterates that worked
            stopped = (size, refusal)
        if built is None:
            break
        plan, flops = built
        tried.append((plan, flops))
    # a size whose tokens fill the days next may take up to FILL_RTOL more; one filled by C alone, none
    within = [
        t
        for t in tried
        if t[0].cost.main.wall_clock_days <= target_days * (1.0 + (FILL_RTOL if fills_by_tokens else 0.0))
    ]
    if fills_by_tokens and within:  # tokens fill the days next: the largest size that fits them is the best
        plan, flops = max(within, key=lambda t: t[1])
    else:
        plan, flops = max(
            within or tried, key=lambda t: -abs(t[0].cost.main.wall_clock_days / target_days - 1)
        )
    if _sized_for(plan.cost.main.wall_clock_days, target_days, fills_by_tokens):
        stopped = None  # the size filled the days: an infeasible iterate stopped nothing
    tokens, jump = None, None  # jump: why the tokens that fill the days fall short of them
    if fills_by_tokens:
        plan, tokens, jump = _fill_by_tokens(spec, inputs, plan, flops, target_days)
    if stopped is None:
        return plan, Fill(flops, tokens), jump
    size, refusal = stopped
    if size == "smaller" and plan.cost.main.wall_clock_days > target_days * (1.0 + FILL_RTOL):
        raise _budget_too_small(spec, plan, target_days, refusal)
    return plan, Fill(flops, tokens), f"a {size} size is infeasible ({refusal.reason})"


def _next_flops(tried: list[tuple[RunPlan, float]], target_days: float, by_tokens: bool) -> float:
    """The C of the next fill step from the (plan, C) tried so far. Tokens fill the days next (``by_tokens``):
    C × target / predicted days of the last, the days scaling as C at a fixed speed. C alone fills them: the
    bisecting step :func:`_next_step` toward the window FILL_RTOL wide under the days."""
    if by_tokens:
        plan, flops = tried[-1]
        return flops * target_days / plan.cost.main.wall_clock_days
    return _next_step(tried, target_days, FILL_RTOL)


def _next_step(tried: list[tuple[RunPlan, float]], target_days: float, rtol: float) -> float:
    """The next value of the quantity a fill steps (C, or D in :func:`_fill_by_tokens`) from the (plan, value)
    tried so far, toward the window ``rtol`` wide under the days: aim at its middle (``rtol`` / 2 short, so a
    step's error is not an overrun) from the iterate nearest it, along the slope d log days / d log value between
    it and the last other iterate on its shape (1 without one; at least 0.1, a step at most 10x the proportional
    one): on one shape the days need not scale as C (at 20 tokens per parameter D follows the law's N, so days go
    as √C; an inference-optimal D follows its target loss: C 2.5% lower took 0.6% fewer days on a 22 B shape, and
    steps of C × target / predicted stopped 1% over 30 days). Between shapes the days jump, either way (on 64
    H100s an inference-optimal 2.27 B shape took 7.8 days where the larger 2.35 B took 7.4), and on one shape
    they jump with D where the batch law at C = M·D moves the layout (Mixtral 8x7B on 1,024 H100s: 0.0425 days at
    D = 1.530e10, 0.0528 at 1.535e10), so once an iterate short of the window has a smaller value than one over
    the days, a step outside the middle 80% (in log) of that bracket bisects it instead."""
    aim = target_days * (1.0 - rtol / 2)

    def days(t: tuple[RunPlan, float]) -> float:
        return t[0].cost.main.wall_clock_days

    ref = min(tried, key=lambda t: abs(math.log(days(t) / aim)))
    same = [t for t in tried if t is not ref and t[0].model.total_params == ref[0].model.total_params]
    slope = 1.0
    if same and same[-1][1] != ref[1] and days(same[-1]) != days(ref):
        secant = math.log(days(ref) / days(same[-1])) / math.log(ref[1] / same[-1][1])
        slope = max(secant, 0.1) if secant > 0.0 else 1.0  # days rise with C, as they should, or no secant
    goal = ref[1] * math.exp(math.log(aim / days(ref)) / slope)
    over = [c for t, c in tried if t.cost.main.wall_clock_days > target_days]
    short = [c for t, c in tried if t.cost.main.wall_clock_days < target_days * (1.0 - rtol)]
    if over and (low := max((c for c in short if c < min(over)), default=None)) is not None:
        ratio = min(over) / low
        if not low * ratio**0.1 <= goal <= low * ratio**0.9:
            goal = low * math.sqrt(ratio)
    elif any(abs(goal / c - 1.0) < 1e-9 for _, c in tried):  # tried already: step from the last instead
        goal = tried[-1][1] * aim / days(tried[-1])
    return goal


def _toward(
    spec: PlanSpec, inputs: ResolvedInputs, flops: float, goal: float
) -> tuple[tuple[RunPlan, float] | None, Infeasible | None]:
    """The plan at ``goal`` FLOPs or, where that size is infeasible (a pin, the memory), at up to FILL_HALVINGS
    geometric midpoints back toward the feasible ``flops``: a step that overshoots into infeasible sizes must not
    end the fill when sizes between were feasible (0.02 days on 64 H100 with pp 16 kept a 570 M model taking 5x
    the days, since the step's size had fewer layers than stages). Also the last refusal met (None: the goal
    itself was feasible), which says why the fill could not go all the way."""
    refusal = None
    for _ in range(FILL_HALVINGS + 1):
        try:
            return _build_once(spec, inputs, goal), refusal
        except Infeasible as error:
            refusal = error
            goal = math.sqrt(flops * goal)
    return None, refusal


def _fill_by_tokens(
    spec: PlanSpec, inputs: ResolvedInputs, plan: RunPlan, flops: float, target_days: float
) -> tuple[RunPlan, float | None, str | None]:
    """``plan``'s model (sized at ``flops``) trained on the D that fills the days, aim = the budget's days less
    FILL_MARGIN: steps of D × aim / predicted days, bisecting D where the days jump with it (the layout and the
    batch rounding follow the batch law at C = M·D) as the fill in C does (:func:`_next_step`, its window
    2 × FILL_MARGIN wide), at most FILL_MAX_STEPS_BY_TOKENS steps. The fullest plan within the budget's days and
    its D (None: ``plan`` as given, when no D tried was within them), and, where that plan falls short of them
    by more than FILL_RTOL, why: the least D tried past it and the days that D takes (:func:`_jump_reason`)."""
    aim = target_days * (1.0 - FILL_MARGIN)
    tried: list[tuple[RunPlan, float]] = [(plan, plan.allocation.tokens)]
    shortest = plan.allocation.tokens * (1.0 - TOKEN_FILL_SHORTEST)
    tokens = plan.allocation.tokens
    for _ in range(FILL_MAX_STEPS_BY_TOKENS):
        predicted = plan.cost.main.wall_clock_days
        if abs(predicted / aim - 1.0) <= FILL_MARGIN or tokens <= shortest:
            break
        tokens = max(_next_step(tried, target_days, 2.0 * FILL_MARGIN), shortest)
        try:
            plan = _build_once(spec, inputs, flops, tokens)[0]
        except (Infeasible, SpecError):  # a D the layout or a batch constraint rules out: keep what worked
            break
        tried.append((plan, tokens))
    within = [t for t in tried if t[0].cost.main.wall_clock_days <= target_days]
    best = max(within, key=lambda t: t[0].cost.main.wall_clock_days) if within else tried[0]
    why = _jump_reason(best, tried, target_days)
    return best[0], None if best is tried[0] else best[1], why


def _jump_reason(
    best: tuple[RunPlan, float], tried: list[tuple[RunPlan, float]], target_days: float
) -> str | None:
    """Why the token fill's ``best`` (plan, D) falls short of the days by more than FILL_RTOL (None where it fills
    them, or no larger D was tried): the least larger D tried, which overran them, and its days; the days jump
    between the two where the chosen layout or the batch rounding changes with D (:func:`unfilled_reason`)."""
    from runplan.units import format_si

    days = best[0].cost.main.wall_clock_days
    larger = [t for t in tried if t[1] > best[1] and t[0].cost.main.wall_clock_days > target_days]
    if fills_the_days(days, target_days) or days > target_days or not larger:
        return None
    plan, tokens = min(larger, key=lambda t: t[1])
    # enough digits that the two D differ as printed (127.7 B and 127.75 B, not 127.7 B twice: 0.04% apart)
    digits = 4
    while digits < 12 and format_si(best[1], digits=digits) == format_si(tokens, digits=digits):
        digits += 1
    return (
        f"it trains {format_si(best[1], digits=digits)} tokens; {format_si(tokens, digits=digits)} "
        f"({tokens / best[1] - 1.0:.2%} more) take {plan.cost.main.wall_clock_days:.3g} days: "
        + unfilled_reason("fixed_params")
    )


def _rounded_up(value: float, digits: int = 3) -> float:
    """``value`` rounded up to ``digits`` significant digits: a minimum printed that way is enough."""
    step = 10.0 ** (math.floor(math.log10(value)) - digits + 1)
    return math.ceil(value / step * (1.0 - 1e-12)) * step


def _echoed_inputs(spec: PlanSpec) -> dict[str, Any]:
    """The plan's inputs as resolved (defaults filled): a fixed model without an objective is allocated as
    ``fixed_params`` (:func:`_fixed_model_stage`), so that is the objective echoed, not the default
    compute_optimal it never used."""
    data = spec.model_dump(mode="json", exclude={"resolved"}, exclude_none=True)
    if spec.model is not None and "objective" not in spec.model_fields_set:
        data["objective"] = {"kind": "fixed_params"}
    return data


def plan_spec_of(plan: RunPlan) -> PlanSpec:
    """The plan file ``plan`` was built from, read back from its ``inputs`` (defaults filled): the inverse of
    :func:`_echoed_inputs`, for what needs the inputs of a stored plan again (export's Megatron memory check). The
    echo's ``objective: {kind: fixed_params}`` for a fixed model with no objective is the planner's reading of
    ``model:``, which a plan file must write with its params, so it is dropped to be read so again. A key renamed
    since the plan was stored is a SpecError at its path under the inputs."""
    inputs = dict(plan.inputs)
    if inputs.get("model") is not None and inputs.get("objective") == {"kind": "fixed_params"}:
        del inputs["objective"]
    try:
        return PlanSpec.model_validate(inputs)
    except ValidationError as error:
        raise spec_error_from_validation(error, PlanSpec) from None


def _naming_the_model(error: Infeasible, spec: PlanSpec, inputs: ResolvedInputs) -> Infeasible:
    """``error`` saying which generated model it is about: the plan sizes the model from the budget, so a pin
    that fails says '32 layers of a stage' of a shape the user never saw (a fixed ``model:`` is left as is)."""
    if spec.model is not None:
        return error
    shape = allocation_stage(spec, inputs).shape
    model = f"{shape.n_layers} layers × d_model {shape.d_model}, {shape.total_params / 1e9:.4g} B"
    # beside the verdict, before the nearest-miss layouts (report.format lists those one per line)
    verdict, misses, near = error.reason.partition("; nearest misses: ")
    return Infeasible(
        f"{verdict} (the model the budget sizes: {model}){misses}{near}",
        suggestions=[*error.suggestions, "or fix the model with 'model: <preset or size>' and pin for it"],
    )


def _build_once(
    spec: PlanSpec, inputs: ResolvedInputs, flops: float | None, tokens: float | None = None
) -> tuple[RunPlan, float]:
    """Every stage once, at ``flops`` (None: the budget's own conversion) and, given, ``tokens`` for the model
    sized at it; the plan and the FLOPs used."""
    from runplan.parallel.search import ensure_feasible, search

    stage = allocation_stage(spec, inputs, flops, tokens)  # 1-2: compute and allocation
    planned = layout_request(spec, inputs, stage.shape, stage.allocation.tokens)
    result = ensure_feasible(search(planned.request), planned.request)
    best = result.layouts[0]
    schedule = _schedule(spec, inputs, planned, best, stage.allocation.tokens, result.critical_batch.tokens)
    operations = _operations(spec, inputs, stage, planned, best, schedule)
    sweep, cost, no_sweep = _sweep_and_cost(spec, inputs, stage, operations)
    warnings = [
        *_plan_warnings(best, result.critical_batch, stage.allocation, operations, schedule, sweep, no_sweep),
        *_calibration_warnings(inputs, stage.shape),
        # a user catalog entry of this model whose shape misses its published count (catalog.published_count_warning)
        *(f"model: {w}" for w in inputs.catalog.warnings_for(stage.shape.name)),
        *_batch_warnings(planned, best),
        *_position_warnings(stage.shape, inputs.seq_len),
        *_tp_overlap_warnings(planned.request, best),
        # the search's own cautions (fp8, a pinned layout's broken constraints, torchtitan CP); its first line,
        # the critical batch, is the layout section's
        *(f"layout: {w}" for w in result.warnings[1:]),
    ]
    plan = RunPlan(
        inputs=_echoed_inputs(spec),
        allocation=stage.allocation,
        model=_architecture(stage, stage.law, inputs.seq_len),
        layout=_layout_choice(planned, result, inputs.calibration_label()),
        schedule=schedule,
        checkpointing=operations.checkpointing,
        reliability=operations.reliability,
        monitoring=operations.monitoring,
        sweep=sweep,
        cost=cost,
        warnings=warnings,
    )
    return plan, stage.flops


def _batch_warnings(planned: LayoutStage, best: LayoutEstimate) -> list[str]:
    """A batch the plan file set that the chosen layout does not run exactly (the search allows ±10%)."""
    target = planned.target_batch_tokens
    if not planned.target_reason.startswith("plan file") or best.global_batch_tokens == target:
        return []
    seq_len = best.global_batch_tokens // (best.dp * best.micro_batch * best.microbatches)
    sequences = target / seq_len
    if sequences != int(sequences):
        fix = (
            f"it is {sequences:.7g} sequences of {seq_len:,} tokens, so no layout runs it exactly; set "
            f"schedule.global_batch_tokens to {best.global_batch_tokens:,} (what this layout runs) to plan without this"
        )
    elif int(sequences) % best.dp:
        fix = f"its {int(sequences):,} sequences do not divide by this layout's DP {best.dp}"
    else:
        per_replica = int(sequences) // best.dp
        fix = f"pin parallel.micro_batch and parallel.microbatches to a product of {per_replica:,} to run it exactly"
    return [
        f"batch: the layout runs {best.global_batch_tokens:,} tokens per step, "
        f"{best.global_batch_tokens / target - 1:+.1%} from the {target:,.0f} set in schedule.global_batch_tokens "
        f"(the search accepts ±10%: d·b·m·s = {best.dp}·{best.micro_batch}·{best.microbatches}·{seq_len:,}); {fix}"
    ]


def _calibration_warnings(inputs: ResolvedInputs, shape: ModelShape) -> list[str]:
    """A calibration file without the plan's GPU family: its times fall back to the shipped constants; a MoE
    model on the shipped constants, fitted on dense runs only."""
    from runplan.calibrate.calibration import moe_cautions

    moe = [f"calibration: {w}" for w in moe_cautions(inputs.efficiency(), shape.is_moe)]
    if inputs.calibration is None or inputs.calibration.efficiency(inputs.gpu) is not None:
        return moe
    return [f"calibration: {inputs.calibration_label()}; calibrate runs on this GPU to use your own", *moe]
