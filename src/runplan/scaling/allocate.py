"""How many parameters and how many tokens for a compute budget: the four objectives of `runplan allocate`.

* ``compute_optimal``: minimise L(N, D) subject to 6·N·D = C (Hoffmann et al. 2022, Eq. 4 closed form).
* ``tokens_per_param``: a fixed ratio r = D/N: N = sqrt(C/(6r)), D = r·N (r = 20 gives C = 120·N²).
* ``fixed_params``: all compute into tokens, D = C/(6N); reports the loss penalty against the compute-optimal
  model and the compute that model would need to reach the same loss.
* ``inference_optimal``: Sardana, Portes, Doubov, Frankle 2024, "Beyond Chinchilla-Optimal" (arXiv 2401.00448),
  §2: minimise 6·N·D_tr + 2·N·D_inf subject to L(N, D_tr) = ℓ. No closed form for D_inf > 0; we solve in log N.
  Leaves out what the paper also leaves out in its simple form: inference at lower precision or batch effects,
  the KV-cache and attention FLOPs of serving (2·N per token counts the weights only), and data repetition.

All FLOP counts use C = 6·N·D with N in the law's own parameter count (``param_count``).
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from runplan.errors import Infeasible, SpecError
from runplan.hardware import GpuSpec
from runplan.scaling.budget import MAX_TRAINING_FLOPS, check_training_flops, hardware_cost
from runplan.scaling.laws import Interval, ParametricLaw, interval_of
from runplan.units import NonNegativeNumber, PositiveNumber

ObjectiveKind = Literal["compute_optimal", "tokens_per_param", "fixed_params", "inference_optimal"]

_KIND_FIELDS: dict[str, tuple[str, ...]] = {
    "compute_optimal": (),
    "tokens_per_param": ("tokens_per_param",),
    "fixed_params": ("params",),
    "inference_optimal": ("inference_tokens",),
}
_OPTIONAL_FIELDS: dict[str, tuple[str, ...]] = {"inference_optimal": ("target_loss",)}

#: Smallest run worth planning: a million parameters trained on a million tokens. Below that a "model" is
#: smaller than its own embedding table at any real vocabulary (32k × 32 = 1M), and a million tokens is a few
#: hundred sequences; the laws were fitted from ~7e7 parameters up (Hoffmann et al. 2022, Table A9).
MIN_PARAMS = 1e6
MIN_TOKENS = 1e6
#: Largest model size (``params``) runplan plans for: 1e15 parameters is about 1,000× the largest models
#: reported by 2025 (DeepSeek-V3 671B and Kimi K2 1.04T total parameters) and 2 PB of bf16 weights alone.
#: Anything above is a typo (an exponent off by a few), not a plan.
MAX_PARAMS = 1e15
#: Bounds on a fixed tokens-per-parameter ratio. Published runs span about 1 to 6e4 (TOKENS_PER_PARAM_RANGE
#: warns outside 1 to 1e5); a ratio below 1e-3 (a thousand parameters per training token) or above 1e7 (ten
#: million tokens per parameter) is outside anything a scaling law describes, so it is refused as a typo.
MIN_TOKENS_PER_PARAM = 1e-3
MAX_TOKENS_PER_PARAM = 1e7
#: Largest lifetime inference load: 1e21 tokens is a million years of 3e7 tokens a second, orders of
#: magnitude beyond any service's lifetime traffic; above it 2·N·D_inf is a typo, not a plan.
MAX_INFERENCE_TOKENS = 1e21
#: Largest loss, in nats per token, of a target or of a law's prediction for the run it plans: a uniform guess
#: over a 128,256-token vocabulary scores ln(128,256) ≈ 11.8, so any trained model is below it; a target above 20
#: is a typo, and a law predicting more is far from any fit (a hand-edited or inline law with a typo).
MAX_TARGET_LOSS = 20.0
#: Tokens per parameter of published pre-training runs span about 1 (early GPT-3-era models trained short)
#: to ~6e4 (Qwen3 0.6B: 36T tokens); outside that range an allocation is flagged.
TOKENS_PER_PARAM_RANGE = (1.0, 1e5)


class Objective(BaseModel):
    """What to optimise when splitting a compute budget into parameters and tokens (plan file ``objective:``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: ObjectiveKind = Field(
        "compute_optimal",
        description="compute_optimal (Hoffmann Eq. 4), tokens_per_param (fixed D/N), fixed_params (all compute "
        "into tokens), inference_optimal (Sardana et al. 2024: training + inference FLOPs).",
    )
    tokens_per_param: PositiveNumber | None = Field(
        None,
        json_schema_extra={"minimum": MIN_TOKENS_PER_PARAM, "maximum": MAX_TOKENS_PER_PARAM},
        description=f"kind tokens_per_param: the ratio D/N, e.g. 20; {MIN_TOKENS_PER_PARAM:g} to "
        f"{MAX_TOKENS_PER_PARAM:.0e} (published runs: about 1 to 6e4).",
    )
    params: PositiveNumber | None = Field(
        None,
        json_schema_extra={"minimum": MIN_PARAMS, "maximum": MAX_PARAMS},
        description=f"kind fixed_params: the model size N in the law's parameter count, e.g. 7B; "
        f"{MIN_PARAMS:.0e} to {MAX_PARAMS:.0e}.",
    )
    inference_tokens: NonNegativeNumber | None = Field(
        None,
        json_schema_extra={"maximum": MAX_INFERENCE_TOKENS},
        description="kind inference_optimal: tokens the model will generate/process over its lifetime "
        f"(at most {MAX_INFERENCE_TOKENS:.0e}).",
    )
    target_loss: PositiveNumber | None = Field(
        None,
        json_schema_extra={"maximum": MAX_TARGET_LOSS},
        description="kind inference_optimal: loss to reach in nats/token, at most 20 (default: the "
        "compute-optimal model's loss at the budget).",
    )

    @field_validator("params")
    @classmethod
    def _params_in_range(cls, value: float | None) -> float | None:
        if value is not None and value < MIN_PARAMS:
            raise ValueError(
                f"params {value:g} is below the smallest sensible model ({MIN_PARAMS:.0e} parameters); "
                "write the size with a suffix, e.g. 7B"
            )
        if value is not None and value > MAX_PARAMS:
            raise ValueError(
                f"params {value:.3g} is beyond any trainable model (limit {MAX_PARAMS:.0e}, about 1,000x the "
                "largest reported by 2025); check the exponent, e.g. 7e9 or 70B"
            )
        return value

    @field_validator("tokens_per_param")
    @classmethod
    def _ratio_in_range(cls, value: float | None) -> float | None:
        if value is not None and not MIN_TOKENS_PER_PARAM <= value <= MAX_TOKENS_PER_PARAM:
            raise ValueError(
                f"{value:.3g} tokens per parameter is outside {MIN_TOKENS_PER_PARAM:g} to "
                f"{MAX_TOKENS_PER_PARAM:.0e} (published runs: about 1 to 6e4; Chinchilla 20)"
            )
        return value

    @field_validator("inference_tokens")
    @classmethod
    def _inference_in_range(cls, value: float | None) -> float | None:
        if value is not None and value > MAX_INFERENCE_TOKENS:
            raise ValueError(
                f"{value:.3g} lifetime inference tokens is beyond any service's traffic (limit "
                f"{MAX_INFERENCE_TOKENS:.0e}); check the exponent, e.g. 2e13"
            )
        return value

    @field_validator("target_loss")
    @classmethod
    def _loss_in_range(cls, value: float | None) -> float | None:
        if value is not None and value > MAX_TARGET_LOSS:
            raise ValueError(
                f"a target loss of {value:.3g} nats/token is above a uniform guess over any real vocabulary "
                f"(ln 128,256 = 11.8; limit {MAX_TARGET_LOSS:g}); losses of trained models are about 1.5-3"
            )
        return value

    @model_validator(mode="after")
    def _fields_match_kind(self) -> Objective:
        needed = _KIND_FIELDS[self.kind]
        allowed = set(needed) | set(_OPTIONAL_FIELDS.get(self.kind, ()))
        for field in needed:
            if getattr(self, field) is None:
                raise ValueError(f"kind '{self.kind}' needs '{field}'")
        for field in ("tokens_per_param", "params", "inference_tokens", "target_loss"):
            if getattr(self, field) is not None and field not in allowed:
                raise ValueError(f"'{field}' does not apply to kind '{self.kind}'")
        return self


class AllocationIntervals(BaseModel):
    """The allocation repeated under each bootstrap resample of a fitted law: percentiles of N, D and loss."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    params: Interval = Field(description="N across the law's resamples.")
    tokens: Interval = Field(description="D across the law's resamples.")
    loss: Interval = Field(description="Predicted loss across the law's resamples (each at its own N, D).")
    resamples: int = Field(description="Resamples that gave a finite allocation.")
    percentiles: tuple[float, float] = Field(description="Percentiles of the intervals.")


class Allocation(BaseModel):
    """The allocation: N, D, predicted loss, FLOPs; keys documented in docs/scaling.md (stable JSON)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    objective: ObjectiveKind = Field(description="Objective kind.")
    law: str = Field(description="Name of the law used.")
    law_source: str | None = Field(None, description="Where the law comes from.")
    param_count: Literal["total", "non_embedding"] = Field(description="Which parameter count `params` is.")
    flops: float = Field(description="Training FLOPs of this allocation, 6·params·tokens.")
    params: float = Field(description="Parameters N (in the law's count).")
    tokens: float = Field(description="Training tokens D.")
    tokens_per_param: float = Field(description="D / N.")
    loss: float = Field(description="Predicted loss L(N, D) (nats/token on the law's data).")
    budget_flops: float | None = Field(
        None, description="The budget given (inference_optimal: sets the target)."
    )
    # against the compute-optimal model at the same budget (tokens_per_param, fixed_params)
    compute_optimal_params: float | None = Field(None, description="N of the compute-optimal model.")
    compute_optimal_tokens: float | None = Field(None, description="D of the compute-optimal model.")
    compute_optimal_loss: float | None = Field(None, description="Loss of the compute-optimal model.")
    loss_penalty: float | None = Field(None, description="loss − compute_optimal_loss at the same FLOPs.")
    compute_optimal_flops_same_loss: float | None = Field(
        None, description="FLOPs the compute-optimal model needs to reach `loss`."
    )
    compute_overhead: float | None = Field(
        None, description="flops / compute_optimal_flops_same_loss − 1: extra compute this choice spends."
    )
    # inference-optimal
    inference_tokens: float | None = Field(None, description="Lifetime inference tokens D_inf.")
    target_loss: float | None = Field(None, description="Loss the inference-optimal model is held to.")
    training_flops: float | None = Field(None, description="6·N·D_tr.")
    inference_flops: float | None = Field(None, description="2·N·D_inf.")
    total_flops: float | None = Field(None, description="training_flops + inference_flops.")
    compute_optimal_total_flops: float | None = Field(
        None, description="Training + inference FLOPs of the compute-optimal model at the same loss."
    )
    total_flops_saving: float | None = Field(
        None, description="1 − total_flops / compute_optimal_total_flops."
    )
    # hardware (with --gpu)
    gpu: str | None = Field(None, description="GPU the cost is computed on.")
    gpus: int | None = Field(None, description="GPUs the run uses.")
    mfu: float | None = Field(None, description="Model FLOPs utilisation assumed.")
    gpu_hours: float | None = Field(None, description="flops / (peak × MFU) / 3600.")
    days: float | None = Field(None, description="Wall-clock days on `gpus` GPUs.")
    cost_usd: float | None = Field(None, description="gpu_hours × price per GPU-hour.")
    warnings: list[str] = Field(
        default_factory=list,
        description="Cautions: extrapolation beyond the fit, budget overrun, unusual D/N.",
    )
    intervals: AllocationIntervals | None = Field(
        None, description="Bootstrap percentiles of params, tokens and loss when the law carries resamples."
    )
    moe_total_params: float | None = Field(
        None,
        description="Mixture of experts: every expert's parameters in the law's count; `params` and `flops` "
        "then count the active parameters (C = 6·N_active·D).",
    )
    law_tokens: float | None = Field(
        None,
        description="A plan's GPU-time budget filled by tokens: the law's D for `params` at the compute that sized "
        "the model; `tokens` is what the run trains on, what the budget's days buy at the chosen layout's speed.",
    )


def _against_optimum(law: ParametricLaw, flops: float, loss: float) -> dict[str, float | None]:
    n_opt, d_opt = law.compute_optimal(flops)
    loss_opt = law.loss(n_opt, d_opt)
    same = law.flops_for_loss(loss)
    usable = math.isfinite(same) and same > 0.0  # 0 when the loss is above any the law reaches at C > 0
    return {
        "compute_optimal_params": n_opt,
        "compute_optimal_tokens": d_opt,
        "compute_optimal_loss": loss_opt,
        "loss_penalty": loss - loss_opt,
        "compute_optimal_flops_same_loss": same if usable else None,
        "compute_overhead": flops / same - 1.0 if usable else None,
    }


def inference_optimal_params(law: ParametricLaw, target_loss: float, inference_tokens: float) -> float:
    """N minimising 6·N·D_tr(N) + 2·N·D_inf with D_tr(N) the tokens that reach ``target_loss`` (Sardana §2).

    The cost is infinite at N_min (where A/N^α = ℓ − E, so D_tr → ∞) and grows linearly for large N, so it has
    an interior minimum: a vectorized scan over log N brackets it, Brent's bounded method refines it.
    """
    from scipy.optimize import minimize_scalar

    n_min = law.min_params_for_loss(target_loss)
    if n_min <= 0.0:  # underflow: the loss is so high that any model reaches it with almost no data
        raise Infeasible(
            f"target loss {target_loss:g} is reached by a model of any size",
            suggestions=["ask for a lower target loss"],
        )
    if not math.isfinite(n_min):
        raise Infeasible(
            f"target loss {target_loss:g} is at or below the law's irreducible loss E = {law.E:g}",
            suggestions=[f"ask for a loss above {law.E:g}"],
        )

    def total(log_n: np.ndarray) -> np.ndarray:
        n = np.exp(log_n)
        return 6.0 * n * law.tokens_for_loss(n, target_loss) + 2.0 * n * inference_tokens

    lo = math.log(n_min)
    grid = lo + np.geomspace(1e-9, 40.0, 4001)  # log N from just above N_min up to e^40 × N_min
    values = total(grid)
    best = int(np.argmin(values))
    left, right = grid[max(best - 1, 0)], grid[min(best + 1, grid.size - 1)]
    result = minimize_scalar(
        lambda x: float(total(np.array(x))), bounds=(left, right), method="bounded", options={"xatol": 1e-12}
    )
    return float(math.exp(result.x if result.fun <= values[best] else grid[best]))


def allocate(flops: float | None, objective: Objective, law: ParametricLaw) -> Allocation:
    """Split ``flops`` (training FLOPs, C = 6·N·D) into N and D under ``objective`` and ``law``.

    ``flops`` may be None only for ``inference_optimal`` with a ``target_loss``. A law whose coefficients
    overflow or underflow the closed forms (an inline or hand-edited law far from any fit) is a SpecError
    naming ``law``, not a crash.
    """
    try:
        with np.errstate(all="ignore"):  # non-finite results are caught below, not warned about
            result = _allocate(flops, objective, law)
    except (OverflowError, ZeroDivisionError):
        raise unusable_law(law, flops) from None
    if not all(math.isfinite(x) and x > 0 for x in (result.params, result.tokens, result.loss)):
        raise unusable_law(law, flops)
    if result.loss > MAX_TARGET_LOSS:
        error = unusable_law(law, flops)
        raise SpecError(
            f"law '{law.name}' predicts a loss of {result.loss:.3g} nats per token for N {result.params:.3g}, "
            f"D {result.tokens:.3g}, above {MAX_TARGET_LOSS:g} (a uniform guess over a 128k vocabulary scores "
            "11.8)",
            where="law",
            hint=error.hint,
        )
    if law.is_moe_law:  # not rewritten for a MoE architecture (ParametricLaw.for_moe): read as a dense law
        result = result.model_copy(update={"warnings": [moe_law_without_moe_model(law), *result.warnings]})
    if law.resamples:
        result = result.model_copy(update={"intervals": allocation_intervals(result, flops, objective, law)})
    return result


def moe_law_without_moe_model(law: ParametricLaw) -> str:
    """Why a mixture-of-experts law allocated without a MoE model misleads: its N counts every expert, yet
    C = 6·N·D then takes all of N as active, and its granularity term g/G^γ is dropped (no G to take)."""
    return (
        f"law '{law.name}' was fitted on {law.moe_origin}, "
        "and the model here is dense: it is read as a dense law, every parameter active in C = 6·N·D and the "
        "granularity term left out; for a MoE run fix a MoE model (model: deepseek-v3, or a shape with "
        "n_experts) to allocate on active compute, else name a dense law"
    )


def allocation_intervals(
    point: Allocation, flops: float | None, objective: Objective, law: ParametricLaw
) -> AllocationIntervals | None:
    """The same objective under each bootstrap resample of ``law`` (a nonparametric bootstrap, as Hoffmann et
    al. 2022 App. D.2 and Besiroglu et al. 2024 report): percentiles of N, D and the loss at each resample's own
    allocation. Resamples whose allocation is infeasible or not finite are left out and counted."""
    rows = []
    for sample in law.resampled_laws():
        try:
            with np.errstate(all="ignore"):
                n, d, _ = _split(flops, objective, sample)
            loss = float(sample.loss(n, d))
        except (Infeasible, SpecError, OverflowError, ZeroDivisionError, ValueError):
            continue
        if all(math.isfinite(x) and x > 0 for x in (n, d, loss)):
            rows.append((n, d, loss))
    if len(rows) < 2:
        return None
    values = np.array(rows)
    percentiles = law.percentiles or (10.0, 90.0)
    return AllocationIntervals(
        params=interval_of(point.params, values[:, 0], percentiles),
        tokens=interval_of(point.tokens, values[:, 1], percentiles),
        loss=interval_of(point.loss, values[:, 2], percentiles),
        resamples=len(rows),
        percentiles=percentiles,
    )


def checked_compute_optimal(law: ParametricLaw, flops: float) -> tuple[float, float]:
    """``law.compute_optimal(flops)``, or :func:`unusable_law` when the closed form is not finite and positive."""
    try:
        with np.errstate(all="ignore"):
            n_opt, d_opt = law.compute_optimal(flops)
    except (OverflowError, ZeroDivisionError):
        raise unusable_law(law, flops) from None
    if not all(math.isfinite(x) and x > 0 for x in (n_opt, d_opt)):
        raise unusable_law(law, flops)
    return n_opt, d_opt


def unusable_law(law: ParametricLaw, flops: float | None) -> SpecError:
    """The SpecError for a law whose coefficients overflow or underflow the closed forms."""
    at = f" at {flops:.3g} FLOPs" if flops is not None else ""
    return SpecError(
        f"law '{law.name}' (E {law.E:.3g}, A {law.A:.3g}, B {law.B:.3g}, alpha {law.alpha:.3g}, beta "
        f"{law.beta:.3g}) gives no finite allocation{at}",
        where="law",
        hint="fitted laws have A and B of tens to thousands and alpha, beta of 0.2 to 0.5, as in Hoffmann "
        "et al. 2022, Eq. 10",
    )


def _allocate(flops: float | None, objective: Objective, law: ParametricLaw) -> Allocation:
    if flops is not None:
        check_training_flops(flops, where="budget.flops")
    kind = objective.kind
    common = {
        "objective": kind,
        "law": law.name,
        "law_source": law.source,
        "param_count": law.param_count,
        "budget_flops": flops,
    }
    if flops is None and not (kind == "inference_optimal" and objective.target_loss is not None):
        raise SpecError(
            "no compute budget", where="budget", hint="give --flops, or --gpus and --days (and --gpu)"
        )
    n, d, extra = _split(flops, objective, law)
    _check_sensible(law, objective, flops, n, d)
    _check_trainable(law, objective, n, d)
    return Allocation(
        **common,
        flops=6.0 * n * d,
        params=n,
        tokens=d,
        tokens_per_param=d / n,
        loss=law.loss(n, d),
        warnings=warnings_at(law, flops, n, d),
        **extra,
    )


def _rounded_up(need: float, have: float | None) -> str:
    """``need`` rounded up (never below it) to the fewest significant digits, from 2, that tell it apart from
    the budget ``have`` as printed: 4.818e16 against 4.817e16 reads "4.818e+16", not "4.8e+16" (issue 17)."""
    for digits in range(2, 17):
        scale = 10.0 ** (math.floor(math.log10(need)) - digits + 1)
        text = f"{math.ceil(need / scale) * scale:.{digits}g}"
        if have is None or text != f"{have:.{digits}g}":
            return text
    return f"{need:.17g}"


def _given(value: float | None, name: str) -> float:
    """A field the Objective validator guarantees for this kind (or the budget checked above)."""
    if value is None:  # unreachable after Objective._fields_match_kind and the budget check in _allocate
        raise ValueError(f"'{name}' is required here")
    return value


def _split(
    flops: float | None, objective: Objective, law: ParametricLaw
) -> tuple[float, float, dict[str, float | None]]:
    """(N, D, objective-specific fields) for ``objective`` at budget ``flops`` (see the module docstring)."""
    kind = objective.kind
    if kind == "inference_optimal":
        return _inference_optimal(flops, objective, law)
    budget = _given(flops, "flops")
    if kind == "compute_optimal":
        n, d = law.compute_optimal(budget)
        return n, d, {}
    if kind == "tokens_per_param":
        r = _given(objective.tokens_per_param, "tokens_per_param")
        n = math.sqrt(budget / (6.0 * r))  # C = 6·N·(r·N)
        d = r * n
    else:
        n = _given(objective.params, "params")
        d = budget / (6.0 * n)
    _check_sensible(law, objective, budget, n, d)
    return n, d, _against_optimum(law, budget, law.loss(n, d))


def _inference_optimal(
    flops: float | None, objective: Objective, law: ParametricLaw
) -> tuple[float, float, dict[str, float | None]]:
    """Sardana et al. 2024 §2: the N that minimises training + inference FLOPs at the target loss."""
    target = objective.target_loss
    if target is None:
        target = law.compute_optimal_loss(_given(flops, "flops"))
    d_inf = _given(objective.inference_tokens, "inference_tokens")
    n = inference_optimal_params(law, target, d_inf)
    d = law.tokens_for_loss(n, target)
    c_star = law.flops_for_loss(target)
    n_star, _ = law.compute_optimal(c_star)
    training, inference = 6.0 * n * d, 2.0 * n * d_inf
    reference_total = c_star + 2.0 * n_star * d_inf
    return (
        n,
        d,
        {
            "inference_tokens": d_inf,
            "target_loss": target,
            "training_flops": training,
            "inference_flops": inference,
            "total_flops": training + inference,
            "compute_optimal_params": n_star,
            "compute_optimal_tokens": c_star / (6.0 * n_star),
            "compute_optimal_loss": target,
            "compute_optimal_total_flops": reference_total,
            "total_flops_saving": 1.0 - (training + inference) / reference_total,
        },
    )


#: Training FLOPs above the budget by more than this fraction are a warning (rounding in 6·N·D stays below).
OVERRUN_TOLERANCE = 1e-6


def warnings_at(law: ParametricLaw, flops: float | None, n: float, d: float) -> list[str]:
    """Extrapolation beyond the law's fitted range, an unusual D/N, and training FLOPs above the budget: an
    allocation's warnings, also restated for a run whose D was set after it (plan._trained_on)."""
    out = [note] if (note := law.extrapolation_note(n, d)) else []
    low, high = TOKENS_PER_PARAM_RANGE
    if not low <= d / n <= high:
        out.append(
            f"{d / n:.3g} tokens per parameter is outside the range of published runs, {low:g} to {high:.0e} "
            "(Chinchilla 20, Llama 3 8B ~1,900): the law was not fitted there, so treat the loss as a guess"
        )
    training = 6.0 * n * d
    if flops is not None and training > flops * (1.0 + OVERRUN_TOLERANCE):
        out.append(
            f"budget overrun: training takes 6·N·D = {training:.3g} FLOPs, {training / flops:.3g}× the budget of "
            f"{flops:.3g} FLOPs (the target loss, not the budget, sets N and D); ask for a higher target "
            "loss or raise the budget"
        )
    return out


def _check_sensible(
    law: ParametricLaw, objective: Objective, flops: float | None, n: float, d: float
) -> None:
    """Infeasible when the budget cannot train even the smallest sensible run (MIN_PARAMS, MIN_TOKENS).

    The suggested budget is the smallest C at which this objective gives N ≥ MIN_PARAMS and D ≥ MIN_TOKENS:
    compute-optimal N = G·(C/6)^a and D = G⁻¹·(C/6)^b (Hoffmann Eq. 4) invert to C = 6·(N/G)^(1/a) and
    C = 6·(D·G)^(1/b); a fixed ratio r gives C = 6·r·N² and C = 6·D²/r; a fixed N gives C = 6·N·D.
    """
    if n >= MIN_PARAMS and d >= MIN_TOKENS:
        return
    kind = objective.kind
    if kind == "compute_optimal":
        need = max(6.0 * (MIN_PARAMS / law.G) ** (1.0 / law.a), 6.0 * (MIN_TOKENS * law.G) ** (1.0 / law.b))
    elif kind == "tokens_per_param":
        r = _given(objective.tokens_per_param, "tokens_per_param")
        need = max(6.0 * r * MIN_PARAMS**2, 6.0 * MIN_TOKENS**2 / r)
    elif kind == "fixed_params":
        need = 6.0 * n * MIN_TOKENS
    else:
        need = None
    budget = f"a budget of {flops:.3g} FLOPs" if flops is not None else "the target loss"
    suggestions = (
        [f"raise the budget to at least {_rounded_up(need, flops)} FLOPs"]
        if need is not None and (flops is None or need > flops) and need <= MAX_TRAINING_FLOPS
        else []
    )
    if (
        need is not None and need > MAX_TRAINING_FLOPS
    ):  # no budget runplan plans for is enough: the law is off
        suggestions.append(
            f"check the law: it needs {need:.2g} FLOPs for that run, past any budget ({MAX_TRAINING_FLOPS:.0e}); "
            f"its exponents a = {law.a:.3g}, b = {law.b:.3g} (Chinchilla's are near 0.5)"
        )
    if kind == "fixed_params":
        suggestions.append("train a smaller model")
    if kind == "inference_optimal":
        suggestions.append("ask for a lower target loss")
    raise Infeasible(
        f"{budget} gives N = {n:.3g} parameters and D = {d:.3g} tokens ({kind}): below the smallest sensible "
        f"run ({MIN_PARAMS:.0e} parameters on {MIN_TOKENS:.0e} tokens)",
        suggestions=suggestions,
    )


def _check_trainable(law: ParametricLaw, objective: Objective, n: float, d: float) -> None:
    """Infeasible when the run trains past MAX_TRAINING_FLOPS, the bound every budget is checked against: only
    an inference-optimal target loss can ask for that (a target near E: 1.82 under besiroglu2024 needed 3.7e33
    FLOPs and was planned, exit 0). The suggestion is the compute-optimal loss at that bound: the inference-optimal
    run for a target loss trains at least the compute-optimal FLOPs for it (Sardana et al. 2024 §2)."""
    training = 6.0 * n * d
    if training <= MAX_TRAINING_FLOPS:
        return
    floor = law.compute_optimal_loss(MAX_TRAINING_FLOPS)
    target = (
        f"target loss {objective.target_loss:.4g}" if objective.target_loss is not None else "loss target"
    )
    raise Infeasible(
        f"the {target} needs N = {n:.3g} parameters on D = {d:.3g} tokens, {training:.3g} training FLOPs: past "
        f"any trainable run ({MAX_TRAINING_FLOPS:.0e} FLOPs, a million H100s for 80 years)",
        suggestions=[
            f"ask for a target loss above {math.ceil(floor * 1e4) / 1e4:.4f}, what compute-optimal training reaches "
            f"at {MAX_TRAINING_FLOPS:.0e} FLOPs under {law.name} (irreducible loss E = {law.E:.4g})"
        ],
    )


def with_hardware(
    allocation: Allocation,
    gpu: GpuSpec,
    mfu: float,
    *,
    gpus: int | None = None,
    price_per_gpu_hour: float | None = None,
) -> Allocation:
    """The allocation plus GPU-hours, days on ``gpus`` and cost of its training FLOPs (:mod:`budget`)."""
    cost = hardware_cost(allocation.flops, gpu, mfu, gpus=gpus, price_per_gpu_hour=price_per_gpu_hour)
    return allocation.model_copy(
        update={
            "gpu": cost.gpu,
            "gpus": gpus,
            "mfu": mfu,
            "gpu_hours": cost.gpu_hours,
            "days": cost.days,
            "cost_usd": cost.cost_usd,
        }
    )


__all__ = [
    "MAX_INFERENCE_TOKENS",
    "MAX_PARAMS",
    "MAX_TARGET_LOSS",
    "MAX_TOKENS_PER_PARAM",
    "MIN_PARAMS",
    "MIN_TOKENS",
    "MIN_TOKENS_PER_PARAM",
    "Allocation",
    "AllocationIntervals",
    "Objective",
    "allocate",
    "allocation_intervals",
    "checked_compute_optimal",
    "inference_optimal_params",
    "unusable_law",
    "with_hardware",
]
