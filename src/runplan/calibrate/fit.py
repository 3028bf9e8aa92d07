"""Predict measured runs, fit the time model's constants to them, and say how well the fit generalises.

Fit: bounded least squares (scipy ``least_squares``, trust-region reflective) on log(predicted / measured)
throughput, each source weighted equally (a run counts 1/√n of its source's n runs, so a 22-row table does not
outvote a 2-row one), over the constants the runs can identify. Identification: the Jacobian of the weighted
log errors with respect to each constant (scaled to its bounds) at the base values, column-normalised and
QR-factorised with column pivoting (Golub & Van Loan, Matrix Computations, §5.4.2); a constant whose pivot
falls below 1/30 of the largest, or beyond the number of runs, is held at the base value and named (30: where
Belsley, Kuh & Welsch, Regression Diagnostics, 1980, put the start of moderate to strong collinearity, condition
indices 30-100).
A run whose layout is not fully stated is laid out by the search (fastest layout under its pins), first with
the base constants, then once more with the fitted ones, and the fit is repeated on those layouts.
"""

from __future__ import annotations

import functools
import math
import statistics
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from runplan.calibrate.calibration import FITTABLE_FAMILIES, gpu_family
from runplan.calibrate.constants import (
    FITTED_CONSTANTS,
    KERNEL_RATIO_BOUNDS,
    UNSEEN_KERNEL_RATIO,
    attention_fraction,
    attention_half_seq,
    identified_by,
)
from runplan.calibrate.measured import (
    THROUGHPUT_KEYS,
    MeasuredFile,
    MeasuredRun,
    measured_request,
    resolve_gpu,
    resolve_shape,
)
from runplan.errors import SpecError
from runplan.parallel.layout import Efficiency, Layout, ParallelRequest

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from runplan.catalog import Catalog
    from runplan.hardware import GpuSpec
    from runplan.model import ModelShape
    from runplan.parallel.grid import Evaluation, LayoutGrid
    from runplan.parallel.memory import ShapeTerms

#: A pivot below this fraction of the largest leaves its constant unidentified: Belsley, Kuh & Welsch's condition
#: index of 30 (module docstring). It was 1e-3 (condition up to 1e3) until validation showed what that lets through:
#: torchtitan's 14 runs without its 405B one pinned 10 constants at condition 241, inter-node efficiency 0.65 -> 0.25,
#: and predicted that run 116% slow (docs/validation.md, a user's own runs).
IDENTIFY_TOLERANCE = 1.0 / 30.0
#: Runs up to which leave-one-out refits every fold; above it the linearised r/(1-h) estimate is used.
EXACT_LOO_MAX_RUNS = 40
#: A fitted run is named as resting on itself when the fit without it misses its step time by at least this
#: fraction and by at least LONE_RUN_RATIO times its in-fit error: its in-fit error then says nothing about the
#: next such run.
LONE_RUN_MIN_STEP_ERROR = 0.15
LONE_RUN_RATIO = 2.0


@dataclass(frozen=True)
class Prepared:
    """A measured run resolved against the catalog: its request, family and measured tokens/s per GPU."""

    index: int
    run: MeasuredRun
    request: ParallelRequest
    family: str
    #: tokens/s per GPU measured; None for a speedup run
    measured_tps: float | None
    #: the model FLOP/s per GPU it implies over the dense peak (:func:`implied_mfu`); None for a speedup run
    mfu: float | None = None

    @property
    def id(self) -> str:
        return self.run.id


def _measured_tps(run: MeasuredRun, request: ParallelRequest, flops_per_token: float) -> float | None:
    m = run.measured
    batch_tokens = float(request.global_batch_tokens or 0.0)
    if m.step_seconds is not None:
        return batch_tokens / m.step_seconds / run.n_gpus
    if m.tokens_per_second_per_gpu is not None:
        return m.tokens_per_second_per_gpu
    if m.tflops_per_gpu is not None:
        return m.tflops_per_gpu * 1e12 / flops_per_token
    if m.mfu is not None:
        return m.mfu * request.gpu.bf16_flops / flops_per_token
    return None


#: Per measured key: the unit mistakes that most often make a run faster than its GPU's peak.
_LIKELY_MISTAKE = {
    "step_seconds": "step_seconds is seconds per optimizer step: check the milliseconds-to-seconds conversion, "
    "that it is not one micro-batch's time, and that global_batch counts sequences, not tokens",
    "tokens_per_second_per_gpu": "tokens_per_second_per_gpu is per GPU: was it the total over all {n} GPUs?",
    "tflops_per_gpu": "tflops_per_gpu is model TFLOP/s per GPU: was it the total over all {n} GPUs?",
    "mfu": "mfu is a fraction of the bf16 peak",
}


def _peak(run: MeasuredRun, gpu: GpuSpec) -> tuple[float, str]:
    """(the dense peak FLOP/s per GPU a run's MFU is over, its precision): bf16, or fp8 for an fp8 stack."""
    fp8 = run.stack.precision == "fp8" and gpu.fp8_flops is not None
    return float(
        gpu.fp8_flops if fp8 and gpu.fp8_flops is not None else gpu.bf16_flops
    ), "fp8" if fp8 else "bf16"


def _check_possible(run: MeasuredRun, index: int, gpu: GpuSpec, model_flops_per_second: float) -> None:
    """A SpecError at the measured key when the run implies more model FLOP/s per GPU than the GPU's dense peak
    (bf16, or fp8 for an fp8 stack): MFU above 1 is a unit mistake, not a measurement."""
    peak, precision = _peak(run, gpu)
    mfu = model_flops_per_second / peak
    if mfu <= 1.0:
        return
    key = next(k for k in THROUGHPUT_KEYS if getattr(run.measured, k) is not None)
    raise SpecError(
        f"implies MFU {mfu:,.1f}: {model_flops_per_second / 1e12:,.0f} model TFLOP/s per GPU, above the "
        f"{precision} dense peak of {gpu.name} ({peak / 1e12:,.0f} TFLOP/s), which no run reaches",
        where=f"runs[{index}].measured.{key}",
        hint=_LIKELY_MISTAKE[key].format(n=run.n_gpus),
    )


#: The least MFU among the 166 published runs of benchmarks/published_runs.yaml (the model FLOP/s per GPU their
#: published throughput implies, over the dense peak, as :func:`prepare` computes it): torchtitan's Llama 3.1
#: 405B on 512 H100s at 256k context, fp8 (torchtitan docs/performance.md), 7.2%.
SLOWEST_PUBLISHED_MFU = 0.072
#: An implied MFU below this is a unit slip, not a slow run: 72 times below the slowest published run, and where
#: any possible run (MFU at most 1) timed in milliseconds and written as seconds lands (1/1000 of its MFU). Warned,
#: not refused: a real run this slow (a debugging job on a tiny model) is still fitted as written.
IMPLAUSIBLE_MFU = 1e-3


def slow_run_warnings(prepared: Sequence[Prepared]) -> list[str]:
    """One caution per run whose measured time implies an MFU below :data:`IMPLAUSIBLE_MFU`; a step_seconds
    that, read as milliseconds, gives a plausible MFU (at least that, and at most 1 since it is below 1/1000 as
    written) is named with that value: the likely slip."""
    out = []
    for p in prepared:
        if p.mfu is None or p.mfu >= IMPLAUSIBLE_MFU:
            continue
        key = next(k for k in THROUGHPUT_KEYS if getattr(p.run.measured, k) is not None)
        said = (
            f"run {p.id!r}: {key} implies MFU {p.mfu:.3%} of the {_peak(p.run, p.request.gpu)[1]} peak, under "
            f"{IMPLAUSIBLE_MFU:.1%} (the slowest published run: {SLOWEST_PUBLISHED_MFU:.1%})"
        )
        seconds = p.run.measured.step_seconds
        if key == "step_seconds" and seconds is not None and p.mfu * 1000 >= IMPLAUSIBLE_MFU:
            out.append(
                f"{said}; milliseconds written as seconds? step_seconds: {seconds / 1000:.4g} would be MFU "
                f"{p.mfu * 1000:.1%}"
            )
        else:
            out.append(f"{said}: check its unit")
    return out


def _check_memory_possible(run: MeasuredRun, index: int, gpu: GpuSpec) -> None:
    """A SpecError at the peak when it is above the GPU's memory: no rank holds more than its HBM. The catalog's
    hbm_bytes is the datasheet's decimal figure (80e9 for "80 GB"), but HBM comes in binary-sized stacks (an
    80 GB A100 or H100 reports a total capacity of about 79 GiB to PyTorch), so the bound is the datasheet
    number read as GiB."""
    peak = run.peak_memory
    physical_gib = gpu.hbm_bytes / 1e9
    if peak is None or peak.gib <= physical_gib:
        return
    raise SpecError(
        f"peak memory {peak.gib:,.4g} GiB is above the {physical_gib:,.4g} GiB of one {gpu.name}",
        where=f"runs[{index}].peak_memory.gib",
        hint="give one GPU's peak in GiB (not the total over GPUs, not MB)",
    )


#: A layout request's plan-file keys (parallel/request_rules.FIELD_PATHS) as a measured run's keys.
_RUN_KEYS = {
    "cluster.gpus_per_node": "gpus_per_node",
    "cluster.gpus": "n_gpus",
    "cluster.gpu": "gpu",
    "training.seq_len": "seq_len",
    "schedule.global_batch_tokens": "global_batch",
    "parallel.": "layout.",
}


def _at_run(error: SpecError, index: int) -> SpecError:
    """``error`` about a layout request, pointed at the measured run it came from (``runs[i].key``)."""
    where = error.where or ""
    for plan_key, run_key in _RUN_KEYS.items():
        if where.startswith(plan_key):
            where = run_key + where[len(plan_key) :]
            break
    return SpecError(error.message, where=f"runs[{index}].{where}".rstrip("."), hint=error.hint)


def prepare(measured: MeasuredFile, catalog: Catalog) -> list[Prepared]:
    """Every run with its request (:func:`~runplan.calibrate.measured.measured_request`) and measured rate."""
    out = []
    for i, run in enumerate(measured.runs):
        shape, scheduled = resolve_shape(run, i, measured, catalog)
        gpu = resolve_gpu(run, i, measured, catalog)
        try:  # the request's rules (whole nodes, bounds) run as it is built
            request = measured_request(run, scheduled, gpu)
        except SpecError as error:
            raise _at_run(error, i) from None
        flops_per_token = shape.model_flops_per_token(run.seq_len)
        tps = _measured_tps(run, request, flops_per_token)
        if tps is not None:
            _check_possible(run, i, gpu, tps * flops_per_token)
        _check_memory_possible(run, i, gpu)
        _check_family_fittable(run, i, gpu)
        mfu = None if tps is None else tps * flops_per_token / _peak(run, gpu)[0]
        out.append(Prepared(i, run, request, gpu_family(gpu), tps, mfu))
    return out


def _check_family_fittable(run: MeasuredRun, index: int, gpu: GpuSpec) -> None:
    """A SpecError for a fitted run on an architecture without constants of its own (a B200, an MI300X): the
    time model plans it with Hopper's, so its runs would be fitted into the hopper constants and every H100
    plan would inherit them, under a label that calls them Hopper's. Predicted only (fit: false), it is shown
    with the error the Hopper constants make on it."""
    if not run.fit or gpu.family is None or gpu.family in FITTABLE_FAMILIES:
        return
    raise SpecError(
        f"{gpu.name} is a {gpu.family} GPU: calibrate fits constants for {' and '.join(FITTABLE_FAMILIES)} "
        "GPUs only (others are planned with Hopper's), so its runs would overwrite the hopper constants",
        where=f"runs[{index}].gpu",
        hint="set fit: false on this run to see the error Hopper's constants make on it, or leave it out",
    )


# ---------------------------------------------------------------- constants as a vector -----------------
@dataclass(frozen=True)
class Space:
    """The candidate constants as named coordinates u in [0, 1] (scaled to their bounds)."""

    keys: tuple[str, ...]
    lows: np.ndarray
    highs: np.ndarray
    base: dict[str, Efficiency]

    def values(self, u: np.ndarray) -> dict[str, float]:
        return {
            k: float(lo + x * (hi - lo))
            for k, x, lo, hi in zip(self.keys, u, self.lows, self.highs, strict=True)
        }

    def start(self) -> np.ndarray:
        """The base values as coordinates (clipped into the bounds)."""
        out = []
        for key, lo, hi in zip(self.keys, self.lows, self.highs, strict=True):
            value = base_value(self, key)
            out.append(min(1.0, max(0.0, (value - lo) / (hi - lo))))
        return np.asarray(out)


def _split(key: str) -> tuple[str, str | None]:
    name, _, rest = key.partition("[")
    return name, (rest[:-1] if rest else None)


def base_value(space: Space, key: str) -> float:
    """The value a constant takes when the runs cannot identify it."""
    name, family = _split(key)
    if name == "attention_kernel":
        return UNSEEN_KERNEL_RATIO
    return _constant_value(space.base[family] if family else next(iter(space.base.values())), name)


def _constant_value(eff: Efficiency, name: str) -> float:
    """The value ``eff`` gives constant ``name`` (an unset inter-node efficiency is the NVLink one)."""
    value = getattr(eff, name)
    return float(eff.network_efficiency if value is None else value)


def make_space(prepared: Sequence[Prepared], base: dict[str, Efficiency], hold: Sequence[str] = ()) -> Space:
    """Candidate constants for these runs: per-family ones for the families present, kernel ratios for the
    named kernels present, the shared ones always; none named in ``hold`` (they keep the base values)."""
    fit = [p for p in prepared if p.run.fit]
    families = sorted({p.family for p in fit})
    kernels = sorted({p.run.attention_kernel for p in fit if p.run.attention_kernel})
    keys, lows, highs = [], [], []
    for constant in (c for c in FITTED_CONSTANTS if c.name not in hold):
        for family in families if constant.per_family else [None]:
            keys.append(f"{constant.name}[{family}]" if family else constant.name)
            lows.append(constant.low)
            highs.append(constant.high)
    for kernel in kernels:
        keys.append(f"attention_kernel[{kernel}]")
        lows.append(KERNEL_RATIO_BOUNDS[0])
        highs.append(KERNEL_RATIO_BOUNDS[1])
    ordered = {f: base[f] for f in sorted(base)}
    return Space(tuple(keys), np.asarray(lows), np.asarray(highs), ordered)


def efficiencies(space: Space, values: dict[str, float]) -> dict[str, Efficiency]:
    """One Efficiency per family of the base: base values, overridden by ``values`` (shared and per family)."""
    out = {}
    for family, eff in space.base.items():
        update: dict[str, float | None] = {}
        for key, value in values.items():
            name, fam = _split(key)
            if name != "attention_kernel" and fam in (None, family):
                update[name] = value
        merged = eff.model_copy(update=update)
        out[family] = with_attention(merged, family)
    return out


def run_efficiency(
    p: Prepared, effs: dict[str, Efficiency], values: dict[str, float], space: Space
) -> Efficiency:
    """The constants one run is predicted with (its family's; its named kernel's attention rate)."""
    eff = effs[p.family]
    kernel = p.run.attention_kernel
    if not kernel:
        return eff
    ratio = values.get(f"attention_kernel[{kernel}]", UNSEEN_KERNEL_RATIO)
    return with_kernel(eff, ratio)


def with_attention(eff: Efficiency, family: str) -> Efficiency:
    """``eff`` with FlashAttention-2's rate on ``family`` (the published kernel benchmark derated as the GEMMs)."""
    return eff.model_copy(
        update={
            "attention_fraction": attention_fraction(family, eff.gemm_peak_fraction),
            "attention_half_seq": attention_half_seq(family),
        }
    )


def with_kernel(eff: Efficiency, ratio: float) -> Efficiency:
    """``eff`` running a named attention kernel at ``ratio`` × FlashAttention-2's rate."""
    return eff.model_copy(update={"attention_fraction": min(1.0, ratio * eff.attention_fraction)})


# ---------------------------------------------------------------- prediction -----------------------------
def complete_layout(p: Prepared, eff: Efficiency) -> Layout:
    """The run's layout: the fastest one the search finds under its pins (the stated layout itself when every
    axis is pinned; the search checks it: mesh rule, divisibility, batch). Memory is not enforced: it ran."""
    from runplan.parallel.search import search

    request = p.request.model_copy(update={"efficiency": eff})
    try:
        result = search(request)
        if not result.layouts:
            roomy = request.gpu.model_copy(update={"hbm_bytes": 9e13})
            result = search(request.model_copy(update={"gpu": roomy}))
    except SpecError as error:
        raise _at_run(error, p.index) from None
    if not result.layouts:
        structural = result.suggestions if not result.candidates else []  # why the grid is empty: tp vs heads
        raise SpecError(
            "; ".join(structural) or "no layout matches this run's layout, GPU count and global batch",
            where=f"runs[{p.index}].layout",
            hint="give the layout that ran"
            if structural
            else "check that tp·pp·dp·cp = n_gpus and dp·micro_batch·microbatches = global_batch",
        )
    return result.layouts[0].layout


def predict(p: Prepared, layout: Layout, eff: Efficiency) -> tuple[float, float]:
    """(predicted tokens/s per GPU, predicted peak bytes per GPU of the stage the run's peak is from) of one run
    on one layout (:func:`predict_memory`)."""
    from runplan.parallel.grid import LayoutGrid
    from runplan.parallel.search import evaluate

    ev = evaluate(p.request, LayoutGrid.of([layout]), eff)
    return float(ev.tokens_per_second[0]) / p.request.n_gpus, _logged_stage_bytes(p, ev)


def predict_memory(p: Prepared, layout: Layout, eff: Efficiency) -> tuple[float, float]:
    """(predicted bytes per GPU of the pipeline stage the run's logged peak is from, of the most loaded stage).

    The first: ``peak_memory.stage``'s total where the run names it (Megatron writes TensorBoard on the last rank
    only, megatron/training/global_vars.py ``_set_tensorboard_writer`` @ d98e8a64; torchtitan under 1F1B on the
    first rank of the last stage, components/metrics.py ``_get_metrics_rank`` @ b5bcd76c), as ``runplan monitor``
    compares a log's peak (monitor/vs_plan.py); else the most loaded stage's (a peak over every rank, or one that
    does not say). The second decides whether the layout fits at all."""
    from runplan.parallel.grid import LayoutGrid
    from runplan.parallel.search import evaluate

    ev = evaluate(p.request, LayoutGrid.of([layout]), eff)
    return _logged_stage_bytes(p, ev), float(ev.memory.total[0])


def _logged_stage_bytes(p: Prepared, ev: Evaluation) -> float:
    """The one-row evaluation's total of ``peak_memory.stage``, or of the most loaded stage (:func:`predict_memory`)."""
    stage = p.run.peak_memory.stage if p.run.peak_memory is not None else None
    if stage is None:
        return float(ev.memory.total[0])
    return float(getattr(ev.memory_stage_totals, stage)[0])


@functools.lru_cache(maxsize=4096)
def _one_row(layout: Layout) -> LayoutGrid:
    """The one-row grid of ``layout``, built once: a fit evaluates the same layouts thousands of times (read-only,
    so no evaluation can change what the next one sees)."""
    from runplan.parallel.grid import LayoutGrid

    grid = LayoutGrid.of([layout])
    for name in Layout.model_fields:
        getattr(grid, name).flags.writeable = False
    return grid


@functools.lru_cache(maxsize=1024)
def _terms(shape: ModelShape) -> ShapeTerms:
    from runplan.parallel.memory import ShapeTerms

    return ShapeTerms.from_shape(shape)


def predicted_tps(p: Prepared, layout: Layout, eff: Efficiency) -> float:
    """Predicted tokens/s per GPU of one run on one layout: :func:`predict`'s first half, without the memory
    model (the fit's inner loop; the same arithmetic, so the same value)."""
    from runplan.parallel.search import tokens_per_second

    return (
        float(tokens_per_second(p.request, _one_row(layout), eff, _terms(p.request.model))[0])
        / p.request.n_gpus
    )


def log_errors(
    prepared: Sequence[Prepared], layouts: Sequence[Layout], space: Space, values: dict[str, float]
) -> np.ndarray:
    """log(predicted / measured) throughput of every run (a speedup run: of its ratio to its baseline)."""
    effs = efficiencies(space, values)
    tps = {
        p.id: predicted_tps(p, layout, run_efficiency(p, effs, values, space))
        for p, layout in zip(prepared, layouts, strict=True)
    }
    out = []
    for p in prepared:
        m = p.run.measured
        if m.speedup is not None and m.speedup_over is not None:
            out.append(math.log(tps[p.id] / tps[m.speedup_over]) - math.log(m.speedup))
        else:
            out.append(math.log(tps[p.id] / float(p.measured_tps or 1.0)))
    return np.asarray(out)


def step_error(log_error: float) -> float:
    """Predicted / measured step time − 1 from a log throughput error."""
    return math.exp(-log_error) - 1.0


# ---------------------------------------------------------------- fit --------------------------------------
@dataclass
class FitResult:
    """Fitted values, which constants the runs identified, and the errors."""

    space: Space
    values: dict[str, float]
    identified: list[str]
    held: list[str]
    layouts: list[Layout]
    log_errors: np.ndarray
    condition: float
    warnings: list[str] = field(default_factory=list)
    jacobian: np.ndarray | None = None

    def efficiencies(self) -> dict[str, Efficiency]:
        return efficiencies(self.space, self.values)


def _weights(prepared: Sequence[Prepared]) -> np.ndarray:
    counts: dict[str, int] = {}
    for p in prepared:
        if p.run.fit:
            counts[p.run.source_id] = counts.get(p.run.source_id, 0) + 1
    return np.asarray([1.0 / math.sqrt(counts[p.run.source_id]) if p.run.fit else 0.0 for p in prepared])


def _jacobian(fun: Callable[[np.ndarray], np.ndarray], u: np.ndarray, step: float = 1e-4) -> np.ndarray:
    f0 = fun(u)
    columns = []
    for j in range(len(u)):
        h = step if u[j] + step <= 1.0 else -step
        shifted = u.copy()
        shifted[j] += h
        columns.append((fun(shifted) - f0) / h)
    return np.stack(columns, axis=1) if columns else np.zeros((len(f0), 0))


#: How much less the last column (in the Space's key order: FITTED_CONSTANTS, most general first, then named kernels)
#: weighs in the pivoting than the first, the others in between: columns scaled to unit norm tie exactly, and a tie
#: went to whichever rounding favoured. 3 runs each 15% slower than predicted then fitted gemm_half_dim 18x its base
#: (22.9 -> 412.6) with gemm_peak_fraction held, and the plan chose other layouts at other sizes; the tie now goes to
#: gemm_peak_fraction, the constant a uniform slowdown means. Small enough not to move a pivot past the tolerance.
PIVOT_TIE_BREAK = 1e-3


def identify(jacobian: np.ndarray, n_runs: int) -> tuple[list[int], float]:
    """Columns of the Jacobian the runs identify (pivoted QR, module docstring) and their condition number; of
    columns the runs cannot tell apart, the first (PIVOT_TIE_BREAK)."""
    from scipy.linalg import qr

    norms = np.linalg.norm(jacobian, axis=0)
    live = [j for j in range(jacobian.shape[1]) if norms[j] > 1e-9]
    if not live:
        return [], math.inf
    scaled = jacobian[:, live] / norms[live] * (1.0 - PIVOT_TIE_BREAK * np.arange(len(live)) / len(live))
    _, r, pivots = qr(scaled, mode="economic", pivoting=True)
    diag = np.abs(np.diag(r))
    rank = int(np.sum(diag > IDENTIFY_TOLERANCE * diag[0]))
    rank = min(rank, n_runs)
    chosen = sorted(live[k] for k in pivots[:rank])
    sv = np.linalg.svd(jacobian[:, chosen] / norms[chosen], compute_uv=False)
    return chosen, float(sv[0] / sv[-1]) if len(sv) and sv[-1] > 0 else math.inf


def _solve(
    prepared: Sequence[Prepared], layouts: Sequence[Layout], space: Space, chosen: list[int], u0: np.ndarray
) -> np.ndarray:
    from scipy.optimize import least_squares

    weights = _weights(prepared)
    mask = weights > 0

    def residuals(sub: np.ndarray) -> np.ndarray:
        u = u0.copy()
        u[chosen] = sub
        return (weights * log_errors(prepared, layouts, space, space.values(u)))[mask]

    if not chosen:
        return u0
    result = least_squares(
        residuals,
        u0[chosen],
        bounds=(0.0, 1.0),
        method="trf",
        x_scale=1.0,
        diff_step=1e-5,
        ftol=1e-12,
        xtol=1e-10,
        gtol=1e-12,
        max_nfev=200,
    )
    u = u0.copy()
    u[chosen] = result.x
    return u


def fit_fixed(
    prepared: Sequence[Prepared], layouts: Sequence[Layout], space: Space, u0: np.ndarray | None = None
) -> tuple[np.ndarray, list[int], float, np.ndarray]:
    """Identify and fit on fixed layouts: (coordinates, identified columns, condition, weighted Jacobian)."""
    weights = _weights(prepared)
    mask = weights > 0
    start = space.start() if u0 is None else u0

    def weighted(u: np.ndarray) -> np.ndarray:
        return (weights * log_errors(prepared, layouts, space, space.values(u)))[mask]

    jac = _jacobian(weighted, start)
    chosen, condition = identify(jac, int(mask.sum()))
    return _solve(prepared, layouts, space, chosen, start), chosen, condition, jac


def _pin_held(base: dict[str, Efficiency], hold: Sequence[str]) -> dict[str, Efficiency]:
    """``base`` with a held inter-node efficiency set to the value it stands for: unset, it follows the NVLink
    efficiency, which the fit may move."""
    if "inter_node_network_efficiency" not in hold:
        return base
    name = "inter_node_network_efficiency"
    return {family: eff.model_copy(update={name: _constant_value(eff, name)}) for family, eff in base.items()}


def _fit_with_layouts(
    prepared: Sequence[Prepared], space: Space
) -> tuple[np.ndarray, list[int], float, list[Layout]]:
    """Fit on the layouts the base constants choose; where a run leaves axes to the search, fit again on the
    layouts the fitted constants choose. (coordinates, identified columns, condition, the layouts the final
    constants choose.)"""
    start = space.start()
    start_values = space.values(start)
    start_effs = efficiencies(space, start_values)
    layouts = [complete_layout(p, run_efficiency(p, start_effs, start_values, space)) for p in prepared]
    u, chosen, condition, _ = fit_fixed(prepared, layouts, space, start)
    if any(len(p.request.pins.pinned()) < len(Layout.model_fields) for p in prepared):
        values = space.values(u)
        effs = efficiencies(space, values)
        layouts = [complete_layout(p, run_efficiency(p, effs, values, space)) for p in prepared]
        u = _solve(prepared, layouts, space, chosen, u)
        values = space.values(u)  # report the layouts the final constants choose
        effs = efficiencies(space, values)
        layouts = [complete_layout(p, run_efficiency(p, effs, values, space)) for p in prepared]
    return u, chosen, condition, layouts


def calibrate(
    prepared: Sequence[Prepared], base: dict[str, Efficiency], hold: Sequence[str] = ()
) -> FitResult:
    """Fit the constants the runs identify; hold the rest (and those named in ``hold``) at ``base``."""
    fit_runs = [p for p in prepared if p.run.fit]
    if not fit_runs:
        raise SpecError("no run has fit: true", where="runs", hint="mark the runs to fit with fit: true")
    hold = (hold,) if isinstance(hold, str) else tuple(hold)
    space = make_space(prepared, _pin_held(base, hold), hold)
    u, chosen, condition, layouts = _fit_with_layouts(prepared, space)
    values = space.values(u)
    identified = [space.keys[j] for j in chosen]
    held = [k for k in space.keys if k not in identified]
    for key in held:  # exactly the base value, not its clipped coordinate
        values[key] = base_value(space, key)
    errors = log_errors(prepared, layouts, space, values)
    weights = _weights(prepared)
    jac = _jacobian(
        lambda x: (weights * log_errors(prepared, layouts, space, space.values(x)))[weights > 0], u
    )
    result = FitResult(space, values, identified, held, layouts, errors, condition, jacobian=jac[:, chosen])
    result.warnings = (
        fit_warnings(len(fit_runs), space, identified, held)
        + kernel_warnings(fit_runs, identified)
        + bound_warnings(space, values, identified)
        + moe_only_warnings(fit_runs, space, jac, chosen)
    )
    return result


def moe_only_warnings(
    fit_runs: Sequence[Prepared], space: Space, jacobian: np.ndarray, chosen: list[int]
) -> list[str]:
    """Name the fitted constants that only the mixture-of-experts runs identify, when dense runs are fitted
    beside them (``jacobian``: one row per fitted run, one column per key of ``space``): the dense runs' rows
    alone do not identify them (:func:`identify`), so every dense plan on the file takes values that MoE steps
    set. The time model has no all-to-all constant: the expert all-to-alls are timed with the network
    efficiencies every collective uses (parallel/timing.py, ``_expert_parallel_seconds``)."""
    moe = [i for i, p in enumerate(fit_runs) if p.request.model.is_moe]
    dense = [i for i, p in enumerate(fit_runs) if not p.request.model.is_moe]
    if not moe or not dense or not chosen:
        return []
    kept, _ = identify(jacobian[np.ix_(dense, chosen)], len(dense))
    only = [space.keys[j] for k, j in enumerate(chosen) if k not in kept]
    if not only:
        return []
    network = [k for k in only if "network_efficiency" in k]
    shared = (
        f"; the time model has no all-to-all constant of its own: {', '.join(network)} times the expert "
        "all-to-alls and the TP, PP and DP collectives alike, so an all-to-all slower than the other collectives "
        "slows every dense plan on this file too"
        if network
        else ""
    )
    advice = "; ".join(f"{key}: {identified_by(key)}" for key in only)
    ids = ", ".join(fit_runs[i].id for i in moe)
    return [
        f"{', '.join(only)}: only the MoE runs ({ids}) identify {'it' if len(only) == 1 else 'them'}, so dense "
        f"plans on this file take {'its value' if len(only) == 1 else 'their values'} from MoE steps{shared}. "
        f"To fit {'it' if len(only) == 1 else 'them'} on dense runs too, add dense runs of this kind: {advice}"
    ]


#: A fitted constant this close to an end of its range (as a fraction of the range) sits on the bound: the
#: solver stops there (least_squares returns bound values exactly, up to rounding), while 1e-3 of a wide range
#: (step overhead 0-30 s: 0.03 s) is still a plausible fitted value.
AT_BOUND = 1e-6


def bound_warnings(space: Space, values: dict[str, float], identified: list[str]) -> list[str]:
    """Name the fitted constants that ended on a bound of their physical range: the runs pushed them past what
    the model allows, so each absorbs something the model leaves out, and its value is a limit, not a fit."""
    out = []
    for key, low, high in zip(space.keys, space.lows, space.highs, strict=True):
        if key not in identified:
            continue
        where = (values[key] - low) / (high - low)
        if where <= AT_BOUND or where >= 1 - AT_BOUND:
            edge = f"{'lower' if where <= AT_BOUND else 'upper'} bound {low if where <= AT_BOUND else high:g}"
            name, family = _split(key)
            hold = (
                ""
                if name == "attention_kernel"  # (a kernel ratio cannot be held: add runs of the kernel)
                else f", or hold it (--hold {name}{', for every family' if family else ''})"
            )
            out.append(
                f"{key} = {values[key]:.4g} sits on its {edge}: these runs push it past what the model allows, "
                f"so it absorbs something else; check the runs that pin it{hold}"
            )
    return out


def kernel_warnings(fit_runs: Sequence[Prepared], identified: list[str]) -> list[str]:
    """Say when a named attention kernel's rate rests on the runs of one source: fitted there, it absorbs that
    source's other differences (leave-one-source-out on the published runs: a kernel ratio fitted on a single
    LLaMA 1 row went to its bound and put the FlashAttention-2 paper's FlashAttention-1 rows 143% off)."""
    out = []
    for key in identified:
        name, kernel = _split(key)
        if name != "attention_kernel":
            continue
        runs = [p for p in fit_runs if p.run.attention_kernel == kernel]
        sources = sorted({p.run.source_id for p in runs})
        if len(sources) == 1:
            out.append(
                f"{key} rests on {len(runs)} run(s) of one source ({sources[0]}): it absorbs whatever else differs "
                "there; check it with runs of the kernel from another source"
            )
    return out


def fit_warnings(n_runs: int, space: Space, identified: list[str], held: list[str]) -> list[str]:
    """Say when the fit is under-determined, and which constants the runs could not identify."""
    out = []
    if n_runs < len(space.keys):
        out.append(
            f"under-determined: {n_runs} run{'s' if n_runs != 1 else ''} for {len(space.keys)} constants; the "
            "fit sets only the "
            f"{len(identified)} the runs identify"
        )
    if held:
        advice = "; ".join(f"{key}: add {identified_by(key)}" for key in held)
        out.append(
            f"not identified by these runs, held at the base values: {', '.join(held)}. To fit them: {advice}"
        )
    if not identified:
        out.append("no constant was fitted: every one is held at its base value")
    if identified and n_runs <= len(identified):
        out.append(
            f"as many constants fitted as runs ({n_runs}): the in-fit residuals say nothing about accuracy (see leave-one-out)"
        )
    return out


# ---------------------------------------------------------------- generalisation ---------------------------
def leave_one_out(prepared: Sequence[Prepared], result: FitResult) -> tuple[dict[str, float], str]:
    """Log error of each fitted run predicted by a fit without it: exact refits up to EXACT_LOO_MAX_RUNS runs,
    else the linearised estimate r_i / (1 - h_ii) (the hat matrix of the Jacobian; exact for a linear model)."""
    fit_idx = [i for i, p in enumerate(prepared) if p.run.fit]
    if len(fit_idx) <= EXACT_LOO_MAX_RUNS:
        out = {}
        for i in fit_idx:
            fold = [p if j != i else _unfitted(p) for j, p in enumerate(prepared)]
            if not any(q.run.fit for q in fold):
                continue
            # from the base, as a user without run i would start: started from the full fit, a refit that
            # identifies fewer constants than the full one keeps the rest at values run i helped set (3 runs,
            # 3 constants: every run "predicted" exactly); and the layouts of runs that leave axes open searched
            # anew with the fold's constants, as calibrate does (the full fit's were chosen by constants run i
            # helped set)
            u, _, _, layouts = _fit_with_layouts(fold, result.space)
            out[prepared[i].id] = float(log_errors(fold, layouts, result.space, result.space.values(u))[i])
        return out, "exact refits"
    jac = result.jacobian if result.jacobian is not None else np.zeros((len(fit_idx), 0))
    hat = (
        jac @ np.linalg.pinv(jac.T @ jac) @ jac.T if jac.shape[1] else np.zeros((len(fit_idx), len(fit_idx)))
    )
    leverage = np.clip(np.diag(hat), 0.0, 0.999)
    return (
        {prepared[i].id: float(result.log_errors[i] / (1.0 - leverage[k])) for k, i in enumerate(fit_idx)},
        "linearised r/(1-h)",
    )


def lone_run_warnings(in_fit: dict[str, float], loo: dict[str, float]) -> list[str]:
    """Name each run the other runs cannot predict (log errors in, step errors shown): left out, it is missed by
    LONE_RUN_MIN_STEP_ERROR or more, LONE_RUN_RATIO times its in-fit error or more. Such a run alone pins some
    direction of the constants (high leverage), so the fit's accuracy on runs like it is unknown."""
    out = []
    for run_id, log_error in loo.items():
        alone, fitted = step_error(log_error), step_error(in_fit[run_id])
        if abs(alone) >= LONE_RUN_MIN_STEP_ERROR and abs(alone) >= LONE_RUN_RATIO * abs(fitted):
            out.append(
                f"run {run_id} rests on itself: {fitted:+.1%} in the fit, {alone:+.1%} by the fit without it; "
                "add runs like it (the same TP degree, node count and overlap settings) before trusting "
                "predictions near it"
            )
    return out


def copied_run_warnings(prepared: Sequence[Prepared]) -> list[str]:
    """Name fitted runs that are one run pasted twice: every key but ``id`` and ``source`` equal, the measurement
    too. Left out, each is predicted by its copy, so its leave-one-out error is its in-fit error and the
    held-out error the file records reads better than on a new job (3 runs and a copy of one: median 1.4% →
    0.2%). A repeat timed apart is a measurement (each repeat predicted by the others) and is not named, nor are
    copies of one ``source:``, held out together (:func:`source_folds`), so neither predicts the other."""
    first: dict[str, Prepared] = {}
    out = []
    for p in prepared:
        if not p.run.fit:
            continue
        key = p.run.model_dump_json(exclude={"id", "source"})
        if key not in first:
            first[key] = p
            continue
        if first[key].run.source_id == p.run.source_id:
            continue
        out.append(
            f"runs {first[key].id} and {p.id} are the same job with the same measurement (a pasted copy?): "
            "left out, each is predicted by the other, so their leave-one-out errors and the held-out error "
            "the file records read better than on a new job; remove the copy"
        )
    return out


def _unfitted(p: Prepared) -> Prepared:
    return Prepared(
        p.index, p.run.model_copy(update={"fit": False}), p.request, p.family, p.measured_tps, p.mfu
    )


@dataclass(frozen=True)
class HeldOut:
    """One run predicted by constants fitted without its source."""

    id: str
    source: str
    family: str
    log_error: float
    memory_error: float | None


@dataclass(frozen=True)
class SourceFold:
    """One source held out: every run, that source's unfitted, and the fit on every other source."""

    source: str
    prepared: list[Prepared]
    result: FitResult


def source_folds(
    prepared: Sequence[Prepared], base: dict[str, Efficiency], map_: Callable[..., Iterable[Any]] = map
) -> list[SourceFold]:
    """One fold per source that leaves some fitted run outside it, fitted from ``base``. ``map_``: how the
    independent fits are run (a process pool's map in benchmarks/validate.py; the same results either way)."""
    folds = []
    for source in sorted({p.run.source_id for p in prepared}):
        fold = [_unfitted(p) if p.run.source_id == source else p for p in prepared]
        if any(p.run.fit for p in fold):
            folds.append((source, fold))
    results = map_(functools.partial(calibrate, base=base), [fold for _, fold in folds])
    return [SourceFold(source, fold, result) for (source, fold), result in zip(folds, results, strict=True)]


def leave_one_source_out(
    prepared: Sequence[Prepared], base: dict[str, Efficiency], folds: Sequence[SourceFold] | None = None
) -> list[HeldOut]:
    """Every run predicted by a fit on the runs of every other source (their layouts searched anew with the
    fold's constants when not fully stated). A source with no fitted run is predicted by the full fit."""
    out: list[HeldOut] = []
    for f in source_folds(prepared, base) if folds is None else folds:
        effs = f.result.efficiencies()
        for i, p in enumerate(f.prepared):
            if p.run.source_id != f.source:
                continue
            eff = run_efficiency(p, effs, f.result.values, f.result.space)
            memory = memory_error(p, predict_memory(p, f.result.layouts[i], eff)[0])
            out.append(HeldOut(p.id, f.source, p.family, float(f.result.log_errors[i]), memory))
    return out


@dataclass(frozen=True)
class OwnRuns:
    """A source's runs treated as a user's own: calibrated on them, each predicted by a fit on the others."""

    source: str
    fitted_runs: int
    identified: list[str]
    values: dict[str, float]
    log_errors: dict[str, float]
    method: str


def own_runs_leave_one_out(prepared: Sequence[Prepared], fold: SourceFold) -> OwnRuns | None:
    """What ``runplan calibrate`` on one source's runs gives its user: the fit starts from (and holds what the
    runs cannot identify at) ``fold``'s constants, fitted without that source, as a user's shipped default saw
    none of their runs; each fitted run is then predicted by a refit on the source's other runs
    (:func:`leave_one_out`). None when the source has fewer than 3 fitted runs (too few to refit without one).
    ``values``: the constants fitted on all of the source's runs."""
    own = [p for p in prepared if p.run.source_id == fold.source]
    fitted = sum(p.run.fit for p in own)
    if fitted < 3:
        return None
    result = calibrate(own, fold.result.efficiencies())
    errors, method = leave_one_out(own, result)
    return OwnRuns(fold.source, fitted, result.identified, result.values, errors, method)


def memory_error(p: Prepared, predicted_bytes: float) -> float | None:
    """Predicted / measured peak memory − 1 (allocated peaks are compared without the fixed reserve)."""
    peak = p.run.peak_memory
    if peak is None:
        return None
    if peak.kind == "allocated":
        predicted_bytes -= p.request.constraints.reserve_bytes
    return predicted_bytes / (peak.gib * 2**30) - 1.0


def summary(errors: Sequence[float]) -> tuple[float, float]:
    """(median, worst) absolute value."""
    absolute = [abs(e) for e in errors]
    return (statistics.median(absolute), max(absolute)) if absolute else (math.nan, math.nan)
