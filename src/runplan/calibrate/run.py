"""One calibration, end to end: measured runs in, a :class:`Calibration` and its per-run report out."""

from __future__ import annotations

import datetime
import math
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from runplan.calibrate.calibration import (
    FITTABLE_FAMILIES,
    Calibration,
    FamilyCalibration,
    HeldOutError,
    PeakMemoryCheck,
    Residuals,
    shipped_calibration,
)
from runplan.calibrate.constants import FITTED_CONSTANTS, PRIORS
from runplan.calibrate.fit import (
    calibrate,
    copied_run_warnings,
    leave_one_out,
    lone_run_warnings,
    memory_error,
    predict_memory,
    run_efficiency,
    slow_run_warnings,
    step_error,
    summary,
)
from runplan.errors import SpecError
from runplan.parallel.layout import Efficiency
from runplan.parallel.timing import COLLECTIVE_LATENCY_SECONDS

if TYPE_CHECKING:
    from collections.abc import Sequence

    from runplan.calibrate.fit import FitResult, Prepared


class RunResidual(BaseModel):
    """One run: what was measured, what the calibrated model predicts, and the errors."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    source: str
    family: str
    fit: bool
    layout: str = Field(
        description="The layout evaluated (completed by the search where the run left axes open)."
    )
    step_error: float = Field(description="Predicted / measured step time − 1 (a speedup run: of its ratio).")
    leave_one_out_error: float | None = Field(None, description="The same, from a fit without this run.")
    memory_error: float | None = Field(None, description="Predicted / measured peak memory − 1.")


class CalibrationReport(BaseModel):
    """What ``runplan calibrate`` prints (``--json``) and writes (``calibration``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    calibration: Calibration
    runs: list[RunResidual]
    condition_number: float | None = Field(
        description="Of the column-scaled Jacobian over the fitted constants; None when none is fitted (JSON "
        "cannot hold the infinite condition of an empty set)."
    )
    warnings: list[str] = Field(default_factory=list)


def prior_efficiencies() -> dict[str, Efficiency]:
    """The uncalibrated planning values (:data:`~runplan.calibrate.constants.PRIORS`) for every family."""
    from runplan.calibrate.fit import with_attention

    eff = Efficiency(**PRIORS, attention_fraction=1.0, collective_latency_seconds=COLLECTIVE_LATENCY_SECONDS)
    return {family: with_attention(eff, family) for family in FITTABLE_FAMILIES}


def base_efficiencies(base: Literal["shipped", "priors"] | Calibration) -> tuple[dict[str, Efficiency], str]:
    """(Efficiency per family the held constants come from, its name)."""
    if base == "priors":
        return prior_efficiencies(), "priors"
    shipped = shipped_calibration()
    effs = {family: c.efficiency for family, c in shipped.families.items()}
    if base == "shipped":
        return effs, f"shipped ({shipped.name})"
    assert isinstance(base, Calibration)
    effs.update({family: c.efficiency for family, c in base.families.items()})
    return effs, base.source or base.name


def run_calibration(
    prepared: list[Prepared],
    *,
    name: str,
    measured_file: str,
    base: Literal["shipped", "priors"] | Calibration = "shipped",
    created: str | None = None,
    hold: Sequence[str] = (),
) -> CalibrationReport:
    """Fit, leave-one-out, and the calibration file with its provenance; ``hold`` names constants kept at the
    base values even where the runs could identify them."""
    base_effs, base_name = base_efficiencies(base)
    result = calibrate(prepared, base_effs, hold=hold)
    loo, loo_method = leave_one_out(prepared, result)
    in_fit = {p.id: float(e) for p, e in zip(prepared, result.log_errors, strict=True)}
    warnings = slow_run_warnings(prepared) + copied_run_warnings(prepared) + result.warnings
    warnings += lone_run_warnings(in_fit, loo)
    effs = result.efficiencies()
    rows = [_residual(p, i, result, effs, loo, warnings) for i, p in enumerate(prepared)]
    fitted = [r for r in rows if r.fit]
    median, worst = summary([r.step_error for r in fitted])
    loo_errors = [r.leave_one_out_error for r in fitted if r.leave_one_out_error is not None]
    loo_median, loo_worst = summary(loo_errors) if loo_errors else (None, None)
    families = {}
    for family in sorted({p.family for p in prepared if p.run.fit}):
        keys = [k for k in result.space.keys if not k.startswith("attention_kernel")]
        mine = [k for k in keys if "[" not in k or k.endswith(f"[{family}]")]
        families[family] = FamilyCalibration(
            efficiency=effs[family],
            runs=[p.id for p in prepared if p.run.fit and p.family == family],
            gpus=sorted({p.request.gpu.name for p in prepared if p.run.fit and p.family == family}),
            fitted=_names(mine, result.identified),
            held=[c.name for c in FITTED_CONSTANTS if c.name in {*hold, *_names(mine, result.held)}],
            held_out=_held_out(fitted, family, loo_method),
            peak_memory=PeakMemoryCheck.of(
                [r.memory_error for r in rows if r.family == family and r.memory_error is not None]
            ),
        )
    kernels = {
        k[len("attention_kernel[") : -1]: v
        for k, v in result.values.items()
        if k.startswith("attention_kernel")
    }
    calibration = Calibration(
        name=name,
        created=created or datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        measured_file=measured_file,
        base=base_name,
        families=families,
        attention_kernels=kernels,
        residuals=Residuals(
            runs=len(fitted),
            median_abs_error=median,
            worst_abs_error=worst,
            leave_one_out_median_abs_error=loo_median,
            leave_one_out_worst_abs_error=loo_worst,
            leave_one_out_method=loo_method,
            per_run={r.id: round(r.step_error, 6) for r in fitted},
        ),
        warnings=warnings,
    )
    return CalibrationReport(
        calibration=calibration,
        runs=rows,
        condition_number=result.condition if result.identified and math.isfinite(result.condition) else None,
        warnings=warnings,
    )


#: A logged peak below 1/this of the memory model's prediction for its layout is a unit, not a measurement: the
#: model's worst miss on published runs is 23% (docs/calibration.md); such a peak would put a four- or five-digit
#: percentage into the file's peak-memory summary, which every plan on the file quotes.
IMPLAUSIBLE_PEAK_RATIO = 10.0


def _check_peak_plausible(p: Prepared, memory: float | None) -> None:
    """A SpecError at ``runs[i].peak_memory.gib`` when the logged peak is under a tenth of the prediction."""
    peak = p.run.peak_memory
    if peak is None or memory is None or memory + 1.0 <= IMPLAUSIBLE_PEAK_RATIO:
        return
    predicted_gib = (memory + 1.0) * peak.gib
    raise SpecError(
        f"peak memory {peak.gib:,.4g} GiB is under a tenth of the {predicted_gib:,.1f} GiB the memory model "
        f"predicts for the layout of run {p.id!r} ({memory + 1.0:,.0f}× the logged peak)",
        where=f"runs[{p.index}].peak_memory.gib",
        hint="give one GPU's peak in GiB (not TiB, not a fraction of the GPU's memory)",
    )


def _residual(
    p: Prepared,
    i: int,
    result: FitResult,
    effs: dict[str, Efficiency],
    loo: dict[str, float],
    warnings: list[str],
) -> RunResidual:
    """Run ``p``'s row of the report (its step errors in the fit and left out, its memory error); a peak the
    layout makes implausible is refused, a layout the memory model cannot fit is added to ``warnings``."""
    eff = run_efficiency(p, effs, result.values, result.space)
    logged_stage_bytes, predicted_bytes = predict_memory(p, result.layouts[i], eff)
    memory = memory_error(p, logged_stage_bytes)
    _check_peak_plausible(p, memory)
    warnings += _beyond_memory_warning(p, predicted_bytes)
    return RunResidual(
        id=p.id,
        source=p.run.source_id,
        family=p.family,
        fit=p.run.fit,
        layout=result.layouts[i].one_line(),
        step_error=step_error(float(result.log_errors[i])),
        leave_one_out_error=step_error(loo[p.id]) if p.id in loo else None,
        memory_error=memory,
    )


def _beyond_memory_warning(p: Prepared, predicted_bytes: float) -> list[str]:
    """A caution for a run whose layout the memory model says cannot fit on its GPU: it ran, so the layout or
    stack as written is not what ran (recompute, ZeRO, sequence parallelism), or the model misses a saving;
    either way its step time and any peak error it reports are about another layout."""
    gpu = p.request.gpu
    if predicted_bytes <= gpu.hbm_bytes:
        return []
    return [
        f"run {p.id!r}: the memory model predicts {predicted_bytes / 1e9:,.1f} GB per GPU for its layout, above "
        f"the {gpu.hbm_bytes / 1e9:,.0f} GB of one {gpu.name}: check its layout and stack (recompute, zero, "
        "sequence_parallel) against what ran"
    ]


def _held_out(fitted: list[RunResidual], family: str, method: str) -> HeldOutError | None:
    """The family's leave-one-out step errors, summarised; None when no run of it has one."""
    errors = [
        r.leave_one_out_error for r in fitted if r.family == family and r.leave_one_out_error is not None
    ]
    return HeldOutError.of(errors, f"leave-one-out, {method}")


def _names(keys: list[str], chosen: list[str]) -> list[str]:
    """Constant names of the fit keys in ``chosen`` (``gemm_peak_fraction[hopper]`` → ``gemm_peak_fraction``)."""
    return [k.split("[")[0] for k in keys if k in chosen]
