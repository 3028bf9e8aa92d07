"""Design the proxy isoFLOP sweep to run before a big training run (`runplan sweep`).

For a main budget C, each proxy budget is C_p = fraction × C (default 1%), and lower budgets follow a decade
apart (``budgets`` of them) so that Hoffmann et al. 2022's Approach 2 can fit exponents. Per budget, ``sizes``
model sizes are log-spaced over ``span_decades`` around the law's compute-optimal N at that budget (Eq. 4);
sizes sit on one lattice in log10 N (step span/(sizes−1)) so budgets share sizes. Each run gets a concrete
shape (runplan.architect.shape_for_params, the nearest rung of its ladder: on a narrow span two sizes can share
one, and a budget then lists that model once), tokens D = C_p/(6·N) (N in the law's parameter count), its
FLOPs and, with a GPU, GPU-hours at the given MFU on the shape's model FLOPs (PaLM convention, attention included).

With a WSD schedule (Hägele et al. 2024, arXiv 2405.18392; MiniCPM, arXiv 2404.06395) one stable run per size
serves every budget: a cooldown branch over the last ``cooldown_fraction`` of each budget's tokens gives that
budget's final loss, so a size trained to tokens D_1 < … < D_m costs (1 − f)·D_m + f·Σ D_k tokens instead of
Σ D_k, and one training run from scratch instead of m. Leaves out: a cooldown branch's loss equals a
cosine-schedule run's only approximately (Hägele et al. report it matches or beats it).
"""

from __future__ import annotations

import csv
import io
import math
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from runplan.defaults import DEFAULT_MFU, DEFAULT_SEQ_LEN, DEFAULT_VOCAB_SIZE, MAX_SEQ_LEN, MAX_VOCAB_SIZE
from runplan.errors import Infeasible, SpecError
from runplan.hardware import GpuSpec
from runplan.model import ModelShape
from runplan.scaling.laws import ParametricLaw
from runplan.units import SECONDS_PER_HOUR, AnyTokenLength, format_si


class SweepRun(BaseModel):
    """One proxy run (with WSD: one cooldown branch of a stable trunk)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    run: str = Field(description="Run id, e.g. 'c2e+21-n4.1e+09'.")
    budget_flops: float = Field(description="The isoFLOP budget C_p this run belongs to.")
    params: float = Field(description="N in the law's parameter count.")
    total_params: int = Field(description="Total parameters of the shape.")
    non_embedding_params: int = Field(description="Non-embedding parameters of the shape.")
    n_layers: int = Field(description="Layers.")
    d_model: int = Field(description="Hidden size.")
    n_heads: int = Field(description="Query heads.")
    n_kv_heads: int = Field(description="KV heads.")
    ffn_hidden: int = Field(description="FFN inner size.")
    tokens: int = Field(description="Training tokens D = C_p/(6N), rounded.")
    flops: float = Field(description="6·N·D.")
    model_flops: float = Field(description="Shape-aware training FLOPs (PaLM model FLOPs per token × D).")
    predicted_loss: float = Field(description="The law's L(N, D), for orientation only.")
    gpu_hours: float | None = Field(
        None,
        description="model_flops / (peak × MFU) / 3600 (WSD: this branch's "
        "share: its cooldown, and the trunk for the longest).",
    )
    trunk: str | None = Field(None, description="WSD: the stable run this branch cools down from.")
    cooldown_start_tokens: int | None = Field(
        None, description="WSD: tokens at which the cooldown branch starts."
    )


class Sweep(BaseModel):
    """A proxy sweep: its runs, what it costs, and what WSD saves (JSON keys in docs/scaling.md)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @property
    def models_per_budget(self) -> list[int]:
        """Distinct proxy models each budget lists, largest budget first: fewer than ``sizes_per_budget`` where
        neighbouring sizes fell on one generated shape (``_distinct_models``)."""
        return [sum(r.budget_flops == c for r in self.runs) for c in self.budgets]

    main_flops: float = Field(description="Budget of the main run.")
    law: str = Field(description="Law used to centre the sizes.")
    param_count: str = Field(description="Which parameter count `params` is.")
    fraction: float = Field(description="Largest proxy budget / main budget.")
    budgets: list[float] = Field(description="Proxy budgets C_p, largest first.")
    sizes_per_budget: int = Field(
        description="Model sizes asked per budget; a budget lists fewer runs when neighbouring sizes fall on "
        "the same generated shape (each model once, and `warnings` says so)."
    )
    seq_len: int = Field(description="Sequence length for the shape-aware FLOPs.")
    runs: list[SweepRun] = Field(description="The runs (WSD: cooldown branches).")
    wsd: bool = Field(description="Whether runs share WSD trunks.")
    cooldown_fraction: float | None = Field(None, description="WSD cooldown share of each branch's tokens.")
    training_runs: int = Field(description="Trainings from scratch (WSD: trunks).")
    runs_saved: int = Field(0, description="Trainings from scratch WSD saves against independent runs.")
    total_flops: float = Field(description="Proxy FLOPs (6ND basis; WSD: trunks + cooldowns).")
    independent_flops: float = Field(description="Proxy FLOPs if every run were trained from scratch.")
    total_fraction: float = Field(description="total_flops / main_flops.")
    gpu: str | None = Field(None, description="GPU for the hours.")
    mfu: float | None = Field(None, description="MFU assumed.")
    gpu_hours: float | None = Field(None, description="Total proxy GPU-hours.")
    cost_usd: float | None = Field(None, description="gpu_hours × price per GPU-hour.")
    gpus: int | None = Field(None, description="GPUs the sweep runs on (the main run's), for its days.")
    days: float | None = Field(
        None, description="gpu_hours / gpus / 24: wall-clock days if the proxies keep every GPU busy."
    )
    warnings: list[str] = Field(default_factory=list, description="Cautions and remarks.")

    @property
    def plan_warnings(self) -> list[str]:
        """``warnings`` less the :func:`flag_notes` (suggestions, not cautions: the plan's sweep section shows them
        with the plan key)."""
        flags = flag_notes(self.wsd, len(self.budgets)) + flag_notes(
            self.wsd, len(self.budgets), PLAN_BUDGETS
        )
        return [w for w in self.warnings if w not in flags]

    def to_csv(self) -> str:
        """CSV for `runplan fit` (columns params, tokens, flops, loss; loss left empty to fill in).

        ``flops`` is the isoFLOP budget C_p (so runs group exactly); tokens are rounded, so 6·N·D differs
        from it by under a part per million.
        """
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        columns = [
            "run",
            "params",
            "tokens",
            "flops",
            "loss",
            "total_params",
            "non_embedding_params",
            "n_layers",
            "d_model",
            "n_heads",
            "n_kv_heads",
            "ffn_hidden",
            "predicted_loss",
            "gpu_hours",
            "trunk",
            "cooldown_start_tokens",
        ]
        writer.writerow(columns)
        for r in self.runs:
            writer.writerow(
                [
                    r.run,
                    f"{r.params:.0f}",
                    r.tokens,
                    f"{r.budget_flops:.6e}",
                    "",
                    r.total_params,
                    r.non_embedding_params,
                    r.n_layers,
                    r.d_model,
                    r.n_heads,
                    r.n_kv_heads,
                    r.ffn_hidden,
                    f"{r.predicted_loss:.4f}",
                    "" if r.gpu_hours is None else f"{r.gpu_hours:.1f}",
                    r.trunk or "",
                    "" if r.cooldown_start_tokens is None else r.cooldown_start_tokens,
                ]
            )
        return out.getvalue()


class SweepRequest(BaseModel):
    """What a proxy sweep is designed from: the main budget, the law, and the sweep's shape.

    Every bound is a field validator here and nowhere else; a bad value is a SpecError at ``sweep.<field>``
    (the CLI prints its flag).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    flops: float = Field(description="Training compute C of the main run, FLOPs.")
    law: ParametricLaw = Field(description="Law whose compute-optimal N centres each budget's sizes.")
    fraction: float = Field(0.01, description="Largest proxy budget as a fraction of C, in (0, 1).")
    sizes: int = Field(7, description="Model sizes per budget, 3 to 15 (a parabola needs 3).")
    budgets: int = Field(3, description="Proxy budgets, 1 to 6, a spacing apart.")
    gpu: GpuSpec | None = Field(None, description="GPU for the GPU-hours (None: no hours).")
    mfu: float = Field(DEFAULT_MFU, description="MFU for the GPU-hours, in [MIN_MFU, 1].")
    wsd: bool = Field(False, description="One WSD stable run per size, a cooldown branch per budget.")
    span_decades: float = Field(1.0, description="Decades of N around each budget's optimum, in (0, 3].")
    budget_spacing_decades: float = Field(1.0, gt=0, description="Decades between neighbouring budgets.")
    cooldown_fraction: float = Field(
        0.2, description="WSD cooldown share of each branch's tokens, in (0, 1)."
    )
    seq_len: AnyTokenLength = Field(
        DEFAULT_SEQ_LEN, description="Sequence length for the shape-aware FLOPs (8k = 8192)."
    )
    vocab_size: int = Field(DEFAULT_VOCAB_SIZE, description="Vocabulary of the proxy shapes.")
    price_per_gpu_hour: float | None = Field(None, description="USD per GPU-hour, for the cost.")
    gpus: int | None = Field(None, ge=1, description="GPUs the sweep runs on, for its wall-clock days.")

    @field_validator("flops")
    @classmethod
    def _flops(cls, value: float) -> float:
        from runplan.scaling.budget import check_training_flops

        try:
            return check_training_flops(value, where=None)
        except SpecError as error:
            raise ValueError(error.message + (f" ({error.hint})" if error.hint else "")) from None

    @field_validator("fraction")
    @classmethod
    def _fraction(cls, value: float) -> float:
        if not 0 < value < 1:
            raise ValueError(f"fraction must be in (0, 1), got {value:g} (e.g. 0.01)")
        return value

    @field_validator("sizes")
    @classmethod
    def _sizes(cls, value: int) -> int:
        if not 3 <= value <= 15:
            raise ValueError(
                f"need 3 to 15 sizes per budget, got {value} (a parabola needs 3; 5 to 7 is usual)"
            )
        return value

    @field_validator("budgets")
    @classmethod
    def _budgets(cls, value: int) -> int:
        if not 1 <= value <= 6:
            raise ValueError(f"need 1 to 6 budgets, got {value}")
        return value

    @field_validator("mfu")
    @classmethod
    def _mfu(cls, value: float) -> float:
        from runplan.scaling.budget import checked_mfu

        return checked_mfu(value)

    @field_validator("span_decades")
    @classmethod
    def _span(cls, value: float) -> float:
        if not 0 < value <= 3:
            raise ValueError(f"span must be in (0, 3] decades, got {value:g}")
        return value

    @field_validator("cooldown_fraction")
    @classmethod
    def _cooldown(cls, value: float) -> float:
        if not 0 < value < 1:
            raise ValueError(f"cooldown fraction must be in (0, 1), got {value:g}")
        return value

    @field_validator("seq_len")
    @classmethod
    def _seq_len(cls, value: int) -> int:
        if not 1 <= value <= MAX_SEQ_LEN:
            raise ValueError(
                f"must be a positive number of tokens up to {MAX_SEQ_LEN:.0e}, got {float(value):.4g} (e.g. 4096)"
            )
        return value

    @field_validator("vocab_size")
    @classmethod
    def _vocab_size(cls, value: int) -> int:
        if not 1 <= value <= MAX_VOCAB_SIZE:
            raise ValueError(
                f"must be positive and at most {MAX_VOCAB_SIZE:.0e}, got {float(value):.4g} (e.g. 128256)"
            )
        return value


class SweepSpec(BaseModel):
    """Plan-file section ``sweep:``: the shape of the proxy sweep a plan designs and costs, as ``runplan sweep``'s
    options; a key left out keeps that command's default. Bounds are :class:`SweepRequest`'s, checked when the
    plan builds its request (a bad value is a one-line error at ``sweep.<key>``). ``sweep: false`` (``enabled:
    false``) designs none: the plan then has no sweep and its cost no sweep line, e.g. for a stage of a run
    already trained (a long-context extension, Llama 3 §3.4.2), whose proxy sweep, if any, was the main run's."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool | None = Field(
        None,
        description="Set false to design and cost no proxy sweep (`sweep: false` says the same), e.g. for a "
        "stage of a run already trained, whose proxies were the main run's (default true).",
    )
    fraction: float | None = Field(
        None, description="Largest proxy budget as a fraction of C (default 0.01)."
    )
    sizes: int | None = Field(None, description="Model sizes per budget, 3 to 15 (default 7).")
    budgets: int | None = Field(
        None, description="Proxy budgets, 1 to 6 (default 3: Approach 2 fits the exponents a, b on them)."
    )
    wsd: bool | None = Field(
        None, description="One WSD stable run per size with a cooldown branch per budget."
    )
    span_decades: float | None = Field(
        None, description="Decades of N around each optimum, (0, 3] (default 1)."
    )
    budget_spacing_decades: float | None = Field(None, description="Decades between budgets (default 1).")
    cooldown_fraction: float | None = Field(
        None, description="WSD cooldown share of a branch, (0, 1) (default 0.2)."
    )

    @model_validator(mode="before")
    @classmethod
    def _bool_is_enabled(cls, value: Any) -> Any:
        """``sweep: false`` (or ``true``) is ``sweep: {enabled: false}``, as ``stack: <preset>`` is a mapping."""
        return {"enabled": value} if isinstance(value, bool) else value

    @model_validator(mode="after")
    def _no_sweep_takes_no_keys(self) -> SweepSpec:
        # a key beside enabled: false would change nothing: say so rather than ignore it (as cooldown_fraction
        # without wsd)
        chosen = self.request_fields()
        if self.enabled is False and chosen:
            key = next(iter(chosen))
            raise ValueError(
                f"enabled: false designs no proxy sweep, so {key} changes nothing; drop {key}, or enabled: false"
            )
        return self

    @model_validator(mode="after")
    def _cooldown_needs_wsd(self) -> SweepSpec:
        # only WSD branches have a cooldown: without wsd the key would change nothing (as `sweep --cooldown`)
        if self.cooldown_fraction is not None and not self.wsd:
            raise ValueError(
                "cooldown_fraction applies only with wsd: true (independent runs have no cooldown); "
                "add wsd: true or drop cooldown_fraction"
            )
        return self

    def request_fields(self) -> dict[str, Any]:
        """The keys the plan sets, as :class:`SweepRequest` fields (``enabled`` is not one)."""
        return self.model_dump(exclude_none=True, exclude={"enabled"})


def _built(target: float, request: SweepRequest) -> ModelShape | SpecError:
    """The generated shape of ``target`` parameters in the law's count, or why there is none."""
    from runplan.architect import shape_for_params

    try:
        return shape_for_params(target, vocab_size=request.vocab_size, count=request.law.param_count)
    except SpecError as error:
        return error


def _shapes(request: SweepRequest, pairs: list[tuple[float, float]]) -> dict[float, ModelShape]:
    """The generated shape of every target size, or Infeasible naming the first size without one."""
    shapes: dict[float, ModelShape] = {}
    for target in sorted({t for _, t in pairs}):
        found = _built(target, request)
        if isinstance(found, SpecError):
            _no_shape(target, found, request, pairs)
        else:
            shapes[target] = found
    return shapes


def _no_shape(
    target: float, found: SpecError, request: SweepRequest, pairs: list[tuple[float, float]]
) -> None:
    """Infeasible (exit 1): valid inputs with no answer, naming the budget that asks for ``target`` and what would
    make the design possible; fewer budgets when the larger budgets all have their shapes."""
    too_big = target > 1e9  # shape_for_params builds up to 1e12; a failure above 1e9 is at the top
    # when not even the main run's own compute-optimal N can be built, no fraction or span helps: the main
    # budget itself is too small for proxy runs
    main_optimum = request.law.compute_optimal(request.flops)[0]
    hopeless = not too_big and isinstance(_built(main_optimum, request), SpecError)
    budget = next(c for c, t in pairs if t == target)
    if hopeless:
        hint = (
            "a budget this small trains no proxy model: raise the main run's budget (budget.flops, e.g. 2e23)"
        )
    elif too_big:
        hint = "lower sweep.fraction or narrow sweep.span_decades"
    else:
        hint = "raise sweep.fraction, narrow sweep.span_decades, or use a smaller vocabulary (embeddings dominate small models)"
    suggestions = [hint]
    budgets = list(dict.fromkeys(c for c, _ in pairs))
    failing = [c for c, t in pairs if isinstance(_built(t, request), SpecError)] if not too_big else []
    fit = budgets.index(max(failing)) if failing else 0  # leading budgets whose every size builds
    if fit > 0:
        suggestions.insert(
            0, f"use fewer budgets, sweep.budgets={fit}: the {fit} largest have a shape for every size"
        )
    raise Infeasible(
        f"no proxy shape for {target:.3g} parameters (budget {budget:.3g} FLOPs): {found.message}",
        suggestions=suggestions,
    )


def _size_targets(request: SweepRequest) -> tuple[list[float], list[tuple[float, float]]]:
    """The proxy budgets, largest first, and each run's (budget, target N) on the shared log10-N lattice."""
    from runplan.scaling.allocate import checked_compute_optimal

    r = request
    step = r.span_decades / (r.sizes - 1)  # decades between neighbouring sizes
    budget_list = [r.fraction * r.flops / 10 ** (k * r.budget_spacing_decades) for k in range(r.budgets)]
    pairs: list[tuple[float, float]] = []  # (budget, target N on the shared lattice)
    for c_p in budget_list:
        n_opt, _ = checked_compute_optimal(r.law, c_p)  # SpecError for a law that over/underflows
        centre = round(math.log10(n_opt) / step)
        half = (r.sizes - 1) / 2
        for j in range(r.sizes):
            pairs.append((c_p, 10 ** (step * (centre - half + j))))
    return budget_list, pairs


def _law_n(shape: ModelShape, law: ParametricLaw) -> float:
    """N of ``shape`` in the law's parameter count."""
    return float(shape.total_params if law.param_count == "total" else shape.non_embedding_params)


def _model_key(shape: ModelShape) -> tuple[int, ...]:
    """What makes two generated proxies the same model (the architect builds one shape per rung)."""
    return (
        shape.n_layers,
        shape.d_model,
        shape.n_heads,
        shape.n_kv_heads,
        shape.ffn_hidden,
        shape.total_params,
    )


def _labels(values: set[float]) -> dict[float, str]:
    """Each value printed with the fewest significant digits, from 2, that tell every value apart (run and trunk
    ids: 3.362e9 and 3.368e9 are both proxies of a narrow sweep, and both read 3.4e+09 at 2 digits)."""
    for digits in range(2, 18):
        labels = {v: f"{v:.{digits}g}" for v in values}
        if len(set(labels.values())) == len(labels):
            return labels
    return {v: repr(v) for v in values}


def _distinct_models(
    request: SweepRequest, pairs: list[tuple[float, float]], shapes: dict[float, ModelShape]
) -> tuple[list[tuple[float, float]], list[str]]:
    """Each budget's targets with one target per generated model, and cautions.

    The architect builds the rung nearest each lattice target (up to architect.TOLERANCE away), so on a narrow
    span neighbouring targets share a model: the copies are dropped (they cost a full run each and add no point
    to the isoFLOP curve). Fewer than 3 models in a budget is infeasible: Approach 2's parabola needs 3 sizes (Hoffmann et al.
    2022 §3.2). Sizes that do not straddle the law's compute-optimal N at the budget (Eq. 4) are named: `runplan
    fit` drops a budget whose fitted minimum lies outside its sizes, which is likely when the law's is.
    """
    from runplan.architect import TOLERANCE
    from runplan.scaling.allocate import checked_compute_optimal

    kept: list[tuple[float, float]] = []
    notes: list[str] = []
    for c_p in dict.fromkeys(c for c, _ in pairs):
        seen: dict[tuple[int, ...], float] = {}
        for _, target in (p for p in pairs if p[0] == c_p):
            seen.setdefault(_model_key(shapes[target]), target)
        kept += [(c_p, target) for target in seen.values()]
        sizes = sorted(_law_n(shapes[t], request.law) for t in seen.values())
        wider = f"widen sweep.span_decades (now {request.span_decades:g})"
        if len(sizes) < 3:
            raise Infeasible(
                f"budget {c_p:.3g} FLOPs: the {request.sizes} sizes over {request.span_decades:g} decades give "
                f"{len(sizes)} distinct proxy model(s) ({', '.join(format_si(n) for n in sizes)}), and a "
                "parabola needs 3",
                suggestions=[f"{wider}: generated shapes sit up to {TOLERANCE:.1%} from each target size"],
            )
        if len(sizes) < request.sizes:
            notes.append(
                f"budget {c_p:.3g} FLOPs: {len(sizes)} distinct proxy models for the {request.sizes} sizes asked "
                f"(neighbouring sizes fell on the same generated shape; each is listed once); {wider} for more"
            )
        n_opt, _ = checked_compute_optimal(request.law, c_p)
        if not sizes[0] < n_opt < sizes[-1]:
            notes.append(
                f"budget {c_p:.3g} FLOPs: the proxy sizes {format_si(sizes[0])}..{format_si(sizes[-1])} do not "
                f"straddle the law's compute-optimal N = {n_opt:.3g}, so `runplan fit` will likely drop this "
                f"budget (its fitted minimum outside the sampled sizes); {wider}"
            )
    return kept, notes


def _run(c_p: float, shape: ModelShape, request: SweepRequest, peak: float | None, run_id: str) -> SweepRun:
    """One independent proxy run of ``shape`` at budget ``c_p``: D = C_p/(6N), rounded."""
    law = request.law
    n = _law_n(shape, law)
    tokens = max(1, round(c_p / (6.0 * n)))
    model_flops = shape.model_flops_per_token(request.seq_len) * tokens
    return SweepRun(
        run=run_id,
        budget_flops=c_p,
        params=float(n),
        total_params=shape.total_params,
        non_embedding_params=shape.non_embedding_params,
        n_layers=shape.n_layers,
        d_model=shape.d_model,
        n_heads=shape.n_heads,
        n_kv_heads=shape.n_kv_heads,
        ffn_hidden=shape.ffn_hidden,
        tokens=tokens,
        flops=6.0 * n * tokens,
        model_flops=model_flops,
        predicted_loss=law.loss(n, tokens),
        gpu_hours=model_flops / peak / SECONDS_PER_HOUR if peak else None,
    )


def _share_trunks(
    runs: list[SweepRun],
    by_size: dict[Any, list[int]],
    f: float,
    peak: float | None,
    labels: dict[float, str],
) -> tuple[float, float]:
    """WSD: turn ``runs`` (in place) into cooldown branches of one stable trunk per size.

    Returns (6ND FLOPs, model FLOPs) of trunks plus branches: per size, (1 − f)·D_max + f·Σ D_k tokens.
    """
    total = total_model = 0.0
    for indices in by_size.values():
        longest = max(indices, key=lambda i: runs[i].tokens)
        trunk_id = f"trunk-n{labels[runs[longest].params]}"
        stable_tokens = (1 - f) * runs[longest].tokens
        per_token_model = runs[longest].model_flops / runs[longest].tokens
        for i in indices:
            r = runs[i]
            own_tokens = f * r.tokens + (stable_tokens if i == longest else 0.0)
            total += 6.0 * r.params * own_tokens
            total_model += per_token_model * own_tokens
            runs[i] = r.model_copy(
                update={
                    "trunk": trunk_id,
                    "cooldown_start_tokens": round((1 - f) * r.tokens),
                    "gpu_hours": per_token_model * own_tokens / peak / SECONDS_PER_HOUR if peak else None,
                }
            )
    return total, total_model


#: How a plan file asks for more proxy budgets (the plan's wording of :func:`flag_notes`).
PLAN_BUDGETS = "sweep: {budgets: 3} in the plan file"


#: The GPU-hours column's header when runs share WSD trunks: each run's hours are what it adds, not a full training.
WSD_HOURS_HEADER = "GPU-h*"


def wsd_hours_note(cooldown_fraction: float | None, header: str = WSD_HOURS_HEADER) -> str:
    """What the GPU-hours column counts when runs share WSD trunks (each trunk is counted once, in one run)."""
    share = (
        f"the last {cooldown_fraction:.0%} of its tokens" if cooldown_fraction is not None else "its cooldown"
    )
    return (
        f"{header}: what each run adds with WSD, not a whole training: its cooldown branch ({share}); the "
        "longest run of each size also carries the stable trunk the size's shorter runs branch from, so the "
        "column adds up to the total"
    )


def flag_notes(wsd: bool, budgets: int, setting: str = "--budgets 3") -> list[str]:
    """Notes that suggest more budgets, naming how to set them (``runplan sweep``'s flag, or a plan's
    ``sweep.budgets`` key: the plan shows them in its sweep section, not among its warnings,
    :attr:`Sweep.plan_warnings`)."""
    notes: list[str] = []
    if wsd and budgets == 1:
        notes.append(
            f"with one budget every size has one run, so WSD saves nothing; {setting} lets each "
            "stable run serve three budgets through cooldown branches"
        )
    if budgets == 1:
        notes.append(
            f"one budget gives the compute-optimal size at that budget only; {setting} lets "
            "Approach 2 fit the exponents a and b"
        )
    return notes


def dense_proxies_note(n_experts: int, top_k: int) -> str:
    """For a MoE plan: its proxies are dense (runplan.architect builds no MoE layouts), so a law fitted on them
    is a dense law, which a MoE model takes in active parameters only (plan._law_for_shape)."""
    return (
        f"dense proxies: runplan shapes proxies as dense Llama 3-family models only, so a law fitted on these runs "
        f"is a dense law; applied to this MoE model ({n_experts} experts, top-{top_k}) it counts the active "
        f"parameters and credits nothing to the other experts (proxies with {n_experts} experts, top-{top_k}, "
        "shaped by hand, would give this architecture's law)"
    )


#: A sweep costing more than this share of the main run's compute is flagged (a planning choice: the default
#: fraction 0.01 gives a few percent, and a sweep that costs a quarter of the run delays it by as much).
MAX_SWEEP_SHARE = 0.25


def moe_law_for_dense_proxies(law: ParametricLaw) -> str:
    """Why a mixture-of-experts law centring dense proxies misleads: its N counts every expert (Krajewski et al.
    2024, Eq. 5), yet the proxies are dense, every parameter active in C = 6·N·D, and the granularity term g/G^γ
    is dropped (a dense shape has no G), as `runplan allocate` reads it without a MoE model."""
    return (
        f"law '{law.name}' was fitted on {law.moe_origin}, "
        "and these proxies are dense: their sizes are centred on it read as a dense law, every parameter active "
        "in C = 6·N·D and the granularity term left out; name a dense law to size dense proxies (a MoE plan's "
        "sweep takes the law in active parameters)"
    )


def _notes(request: SweepRequest, runs: list[SweepRun], total_flops: float) -> list[str]:
    notes = flag_notes(request.wsd, request.budgets)
    # a MoE plan passes the law rewritten in active parameters (for_moe), which has no granularity term
    if request.law.is_moe_law:
        notes.append(moe_law_for_dense_proxies(request.law))
    share = total_flops / request.flops
    if share > MAX_SWEEP_SHARE:
        notes.append(
            f"the sweep costs {share:.0%} of the main run's compute (more than {MAX_SWEEP_SHARE:.0%}); a smaller "
            "sweep.fraction keeps it to a few percent"
        )
    if runs:
        biggest = max(r.params for r in runs)
        if note := request.law.extrapolation_note(biggest, max(r.tokens for r in runs)):
            notes.append(note)
        notes += _too_deep(runs, request.vocab_size)
    return notes


#: Kaplan et al. 2020 (arXiv 2001.08361, §3.1, Fig. 5): at fixed non-embedding parameters the loss is within a
#: few percent for d_model / layers of about 20 to 200. Half the low end is flagged (a planning choice: GPT-3's
#: 125M is 64, Qwen2.5 0.5B 37; 20 layers of 384 at 19 is an ordinary small model).
MIN_PROXY_ASPECT = 10.0


#: How the narrow-proxy caution names the vocabulary setting: the sweep command's flag, and in a plan its key
VOCAB_FLAG, VOCAB_PLAN_KEY = "`runplan sweep --vocab-size`", "training.vocab_size"


def _too_deep(runs: list[SweepRun], vocab_size: int) -> list[str]:
    """A caution naming the proxy shapes far narrower than Kaplan's compared aspect ratios: at the bottom of a sweep
    with a large vocabulary, the embedding takes most of the count and the generated shape is a deep, thin
    stack no one would train (66.4 M total at 128 layers of width 128, vocabulary 128,256)."""
    narrow = sorted(
        {(r.total_params, r.n_layers, r.d_model) for r in runs if r.d_model / r.n_layers < MIN_PROXY_ASPECT}
    )
    if not narrow:
        return []
    shapes = ", ".join(f"{format_si(n)} at {layers} layers × {width}" for n, layers, width in narrow)
    return [
        f"{len(narrow)} proxy shape(s) far narrower than the shapes Kaplan et al. 2020 compared (d_model / layers "
        f"< {MIN_PROXY_ASPECT:g}, their Fig. 5 spans about 20-200: {shapes}): the {vocab_size:,}-token embedding "
        f"takes much of their count; a smaller proxy vocabulary ({VOCAB_FLAG}) or larger budgets "
        "avoid them"
    ]


def design_sweep(request: SweepRequest) -> Sweep:
    """The proxy sweep for ``request`` (see the module docstring)."""
    r = request
    budget_list, pairs = _size_targets(r)
    shapes = _shapes(r, pairs)
    pairs, model_notes = _distinct_models(r, pairs, shapes)
    peak = r.gpu.bf16_flops * r.mfu if r.gpu is not None else None
    n_labels = _labels({_law_n(shapes[t], r.law) for _, t in pairs})
    c_labels = _labels(set(budget_list))

    runs: list[SweepRun] = []
    by_size: dict[tuple[int, ...], list[int]] = {}  # one WSD trunk per generated model
    for c_p, target in pairs:
        shape = shapes[target]
        by_size.setdefault(_model_key(shape), []).append(len(runs))
        run_id = f"c{c_labels[c_p]}-n{n_labels[_law_n(shape, r.law)]}"
        runs.append(_run(c_p, shape, r, peak, run_id))

    independent = sum(run.flops for run in runs)
    training_runs, total, total_model = len(runs), independent, sum(run.model_flops for run in runs)
    if r.wsd:
        total, total_model = _share_trunks(runs, by_size, r.cooldown_fraction, peak, n_labels)
        training_runs = len(by_size)
    gpu_hours = total_model / peak / SECONDS_PER_HOUR if peak else None
    return Sweep(
        main_flops=r.flops,
        law=r.law.name,
        param_count=r.law.param_count,
        fraction=r.fraction,
        budgets=budget_list,
        sizes_per_budget=r.sizes,
        seq_len=r.seq_len,
        runs=runs,
        wsd=r.wsd,
        cooldown_fraction=r.cooldown_fraction if r.wsd else None,
        training_runs=training_runs,
        runs_saved=len(runs) - training_runs,
        total_flops=total,
        independent_flops=independent,
        total_fraction=total / r.flops,
        gpu=r.gpu.name if r.gpu else None,
        mfu=r.mfu if r.gpu else None,
        gpu_hours=gpu_hours,
        cost_usd=gpu_hours * r.price_per_gpu_hour if gpu_hours is not None and r.price_per_gpu_hour else None,
        gpus=r.gpus if gpu_hours is not None else None,
        days=gpu_hours / r.gpus / 24 if gpu_hours is not None and r.gpus else None,
        warnings=[*_notes(r, runs, total), *model_notes],
    )


__all__ = [
    "PLAN_BUDGETS",
    "Sweep",
    "SweepRequest",
    "SweepRun",
    "SweepSpec",
    "dense_proxies_note",
    "design_sweep",
    "flag_notes",
    "moe_law_for_dense_proxies",
]
_ = np  # numpy is used by the law's vectorized loss
