"""The calibration file: fitted time-model constants per GPU family, with their provenance.

``runplan calibrate`` writes one; ``plan``, ``parallelize`` and ``check`` read one (``--calibration FILE``,
plan key ``calibration:``). The shipped default (``runplan/configs/calibration.yaml``, package data) is one
such file, built from ``benchmarks/published_runs.yaml`` by the same command; :func:`shipped_calibration`
reads it and :func:`runplan.parallel.timing.default_efficiency` takes its constants.
"""

from __future__ import annotations

import functools
import statistics
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from runplan.errors import SpecError
from runplan.parallel.layout import Efficiency

if TYPE_CHECKING:
    from collections.abc import Sequence

    from runplan.hardware import GpuSpec
    from runplan.yamlio import LoadedYaml

SHIPPED_NAME = "runplan/configs/calibration.yaml"


#: GPU architectures with constants of their own (:func:`gpu_family`; timing's FlashAttention-2 rates): the
#: families a calibration file holds and `runplan calibrate` fits.
FITTABLE_FAMILIES = ("ampere", "hopper")


def gpu_family(gpu: GpuSpec) -> str:
    """'ampere' for an Ampere GPU (the catalog field ``family``), 'hopper' otherwise (other GPUs have no published
    runs: Hopper's constants are assumed for them, docs/validation.md says so)."""
    return "ampere" if gpu.family == "ampere" else "hopper"


def _abs_summary(errors: Sequence[float]) -> dict[str, float | int]:
    """Count, median and largest absolute value of signed errors, rounded to six decimals (0.0001%), so the
    file stays readable and a re-run that changes nothing rewrites nothing."""
    absolute = [abs(e) for e in errors]
    return {
        "runs": len(absolute),
        "median_abs_error": round(statistics.median(absolute), 6),
        "worst_abs_error": round(max(absolute), 6),
    }


class HeldOutError(BaseModel):
    """Step-time error of one GPU family's runs each predicted by constants fitted without it: what a time from
    this file is worth on a run it has not seen (in-fit error flatters; docs/validation.md)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    method: str = Field(
        description="How each run was held out: 'leave-one-out, exact refits' or 'leave-one-out, linearised "
        "r/(1-h)' (`runplan calibrate`), 'leave-one-source-out' (benchmarks/validate.py, the shipped file)."
    )
    runs: int = Field(ge=1, description="Runs predicted.")
    median_abs_error: float = Field(ge=0, description="Median |predicted / measured step time − 1|.")
    worst_abs_error: float = Field(ge=0, description="Largest |predicted / measured step time − 1|.")

    @classmethod
    def of(cls, errors: Sequence[float], method: str) -> HeldOutError | None:
        """Summary of signed step-time errors (predicted / measured − 1); None when there are none."""
        if not errors:
            return None
        return cls(method=method, **_abs_summary(errors))

    def phrase(self) -> str:
        """'held-out step error 6.2% median, 36.7% worst (leave-one-source-out, 81 runs)'."""
        return (
            f"held-out step error {self.median_abs_error:.1%} median, {self.worst_abs_error:.1%} worst "
            f"({self.method}, {self.runs} runs)"
        )


class PeakMemoryCheck(BaseModel):
    """Peak-memory error of one GPU family's runs that logged a peak: predicted / logged peak − 1. The memory
    model has no fitted constant, so every such run counts (fitted or not) and in-fit is held-out."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    runs: int = Field(ge=1, description="Runs with a logged peak.")
    median_abs_error: float = Field(ge=0, description="Median |predicted / logged peak − 1|.")
    worst_abs_error: float = Field(ge=0, description="Largest |predicted / logged peak − 1|.")
    under: int = Field(ge=0, description="Runs whose predicted peak is below the logged one.")

    @classmethod
    def of(cls, errors: Sequence[float]) -> PeakMemoryCheck | None:
        """Summary of signed memory errors (predicted / logged − 1); None when there are none."""
        if not errors:
            return None
        return cls(under=sum(e < 0 for e in errors), **_abs_summary(errors))

    def phrase(self) -> str:
        """'peak memory error 6.6% median, 23.5% worst, under the logged peak in 22 of 22 runs'."""
        return (
            f"peak memory error {self.median_abs_error:.1%} median, {self.worst_abs_error:.1%} worst, "
            f"under the logged peak in {self.under} of {self.runs} runs"
        )


class FamilyCalibration(BaseModel):
    """The constants of one GPU family and the runs that set them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    efficiency: Efficiency = Field(description="Every Efficiency field, fitted or held.")
    runs: list[str] = Field(description="Ids of the measured runs of this family in the fit.")
    gpus: list[str] = Field(
        default_factory=list,
        description="GPU types of those runs (catalog or user names); empty in files written before it was.",
    )
    fitted: list[str] = Field(description="Constants the runs identified (fitted).")
    held: list[str] = Field(
        description="Constants held at the base values: the runs could not identify them, or the caller asked."
    )
    held_out: HeldOutError | None = Field(
        None, description="Step-time error on this family's runs each predicted by a fit without it."
    )
    peak_memory: PeakMemoryCheck | None = Field(
        None, description="Peak-memory error on this family's runs that logged a peak (every such run)."
    )


class Residuals(BaseModel):
    """How well the constants reproduce the runs: step-time errors (predicted / measured − 1)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    runs: int = Field(description="Runs in the fit.")
    median_abs_error: float
    worst_abs_error: float
    leave_one_out_median_abs_error: float | None = None
    leave_one_out_worst_abs_error: float | None = None
    leave_one_out_method: str = Field("", description="exact refits, or the linearised r/(1-h) estimate.")
    per_run: dict[str, float] = Field(
        default_factory=dict, description="Step-time error of each run in the fit."
    )


class Calibration(BaseModel):
    """A calibration file (``runplan calibrate -o``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="What the constants were fitted on, e.g. 'published-runs'.")
    created: str = Field(description="UTC time of the fit (ISO 8601).")
    measured_file: str = Field(description="The MEASURED.yaml the fit read.")
    base: str = Field(description="Where the held constants come from ('priors' or a calibration file).")
    families: dict[str, FamilyCalibration] = Field(description="Constants per GPU family (ampere, hopper).")
    attention_kernels: dict[str, float] = Field(
        default_factory=dict,
        description="Fitted attention rate / FlashAttention-2 rate of named kernels (reported only, never planned with).",
    )
    residuals: Residuals
    warnings: list[str] = Field(default_factory=list)
    source: str = Field(
        "", description="Where this file was read from (set on load, not written).", exclude=True
    )

    def label(self, gpu: GpuSpec) -> str:
        """One line naming the constants behind a time on ``gpu``."""
        family = gpu_family(gpu)
        where = self.source or self.name
        if family in self.families:
            cal = self.families[family]
            if (
                gpu.family != family
            ):  # another architecture on Hopper's constants: their error is not its error
                accuracy = f"; {family} constants stand in for {gpu.name} ({gpu.family}): no runs of it, error unknown"
            else:
                checks = [c.phrase() for c in (cal.held_out, cal.peak_memory) if c is not None]
                if cal.held_out is None:  # say it, as "error unknown" above: silence reads as no error
                    checks.insert(0, _no_held_out(len(cal.runs)))
                if cal.gpus and gpu.name not in cal.gpus:  # the same architecture, another card (PCIe, H200)
                    checks.append(f"measured on {', '.join(cal.gpus)}, not on {gpu.name}")
                accuracy = "".join(f"; {c}" for c in checks)
            return f"{where} ({self.name}, {family}: {_runs(len(cal.runs))}, fitted {self.created[:10]}){accuracy}"
        shipped = shipped_calibration()  # the constants the time falls back to, and what they are worth
        worth = f", {shipped.label(gpu)}" if family in shipped.families and shipped is not self else ""
        return f"{where} has no {family} runs: runplan's shipped {family} constants{worth}"

    def efficiency(self, gpu: GpuSpec) -> Efficiency | None:
        """The constants of ``gpu``'s family, or None when this file has none for it."""
        family = self.families.get(gpu_family(gpu))
        return family.efficiency if family else None


def _runs(n: int) -> str:
    return f"{n} run" if n == 1 else f"{n} runs"


def _no_held_out(n_runs: int) -> str:
    """What a family without a held-out step error says in its label: a single fitted run has none to leave
    out (its in-fit error, 0 where it sets a constant, says nothing of other runs); more runs without one are a
    file written before the field."""
    if n_runs < 2:
        return f"step error on runs it has not seen not measured: {n_runs} fitted run, none to leave out"
    return "step error on runs it has not seen not recorded (refit to record it)"


def parse_calibration(data: object, source: str, loaded: LoadedYaml | None = None) -> Calibration:
    """Validate a loaded calibration document; errors are one line naming the key (and its line, given the
    ``loaded`` file)."""
    if not isinstance(data, dict) or "families" not in data:
        measured = isinstance(data, dict) and "runs" in data  # the measured runs, given where their fit goes
        raise SpecError(
            "not a calibration file (no 'families:')"
            + (": it lists measured runs (runs:), the input of `runplan calibrate`" if measured else ""),
            source=source,
            hint=f"`runplan calibrate {source} -o calibration.yaml` writes the calibration file to give here"
            if measured
            else "write one with `runplan calibrate`",
        )
    try:
        calibration = Calibration.model_validate(data).model_copy(update={"source": source})
    except ValidationError as error:
        errors = error.errors()
        given_old = {str(e["loc"][-1]) for e in errors if e["type"] == "extra_forbidden"}
        replaced = [
            e
            for e in errors
            if e["type"] == "missing" and _RENAMED_CONSTANTS.get(str(e["loc"][-1])) in given_old
        ]
        first = (replaced or errors)[0]
        where = ".".join(str(p) for p in first["loc"])
        hint = None
        message = first["msg"].removeprefix("Value error, ")
        bounded = _fit_bound_message(first)
        if replaced:
            old = _RENAMED_CONSTANTS[str(first["loc"][-1])]
            hint = (
                f"written before '{old}' was replaced with a constant of another meaning: run `runplan "
                "calibrate` on its measured runs again"
            )
        elif bounded is not None:  # a fitted constant past a field bound: said as _check_fit_bounds says it
            message, hint = bounded, "refit, or fix the value"
        elif first["type"] != "value_error":  # ours say how to fix; pydantic's do not
            raise _plain_error(error, source, loaded) from None
        raise _located(SpecError(message, where=where or None, hint=hint), source, loaded) from None
    _check_complete(data, source, loaded)
    _check_fit_bounds(calibration, source, loaded)
    return calibration


def _check_complete(data: dict[str, Any], source: str, loaded: LoadedYaml | None) -> None:
    """Every ``Efficiency`` field written out, as `runplan calibrate` writes them all: a field with a default
    (eager_elementwise_share 1, step_overhead_seconds 0, attention_half_seq 0, inter_node_network_efficiency
    None) missing from a family is a file
    written before runplan had it, and its default is not what that fit meant: a file fitted before the eager
    share existed timed eager kernels as fused ones, and read with the default 1 it would plan them slower."""
    for family, fitted in data["families"].items():
        written = fitted.get("efficiency") if isinstance(fitted, dict) else None
        missing = [name for name in Efficiency.model_fields if name not in (written or {})]
        if isinstance(written, dict) and missing:
            raise _located(
                SpecError(
                    "required key is missing",
                    where=f"families.{family}.efficiency.{missing[0]}",
                    hint=_OLDER_FILE_HINT,
                ),
                source,
                loaded,
            )


#: The model each section of a calibration file is read into (``*``: a GPU family's name), for the keys an
#: unknown key is compared with.
_SECTIONS: dict[str, type[BaseModel]] = {
    "": Calibration,
    "families.*": FamilyCalibration,
    "families.*.efficiency": Efficiency,
    "families.*.held_out": HeldOutError,
    "families.*.peak_memory": PeakMemoryCheck,
    "residuals": Residuals,
}


def _section_model(where: str) -> type[BaseModel] | None:
    """The model of the section holding key ``where`` (``families.hopper.efficiency.x`` -> Efficiency)."""
    parts = where.split(".")[:-1]
    if len(parts) >= 2 and parts[0] == "families":
        parts[1] = "*"
    return _SECTIONS.get(".".join(parts))


#: The fix for an efficiency constant missing from a calibration file: a runplan before it wrote the file.
_OLDER_FILE_HINT = (
    "written by a runplan without this constant: run `runplan calibrate` on its measured runs again"
)


def _plain_error(error: ValidationError, source: str, loaded: LoadedYaml | None) -> SpecError:
    """A pydantic problem in runplan's words (runplan.validation: "required key is missing", "unknown key"),
    with a calibration file's fix: a constant missing from ``efficiency`` means a file written before runplan
    had it (refit); a misspelt key gets the key it is closest to, else the keys its section takes."""
    import difflib

    from runplan.validation import spec_error_from_validation

    found = spec_error_from_validation(error, Calibration)
    where = found.where or ""
    key = where.rpartition(".")[2]
    owner = _section_model(where)
    hint = "calibration files are written by `runplan calibrate`: refit, or fix this key as docs/calibration.md describes it"
    if found.message.startswith("required key is missing") and ".efficiency." in f".{where}":
        hint = _OLDER_FILE_HINT
    elif found.message.startswith("unknown key") and owner is not None:
        close = difflib.get_close_matches(key, list(owner.model_fields), n=1)
        allowed = [name for name, field in owner.model_fields.items() if not field.exclude]
        hint = f"did you mean {close[0]!r}?" if close else "allowed: " + ", ".join(allowed)
    return _located(SpecError(found.message, where=found.where, hint=hint), source, loaded)


def _fit_bound_message(error: Any) -> str | None:
    """The fit-bounds wording for a pydantic bound error on a fitted constant (gemm_peak_fraction 1.5 read
    "Input should be less than or equal to 1", 0.1 "outside [0.2, 1]": one message either side), else None."""
    from runplan.calibrate.constants import FITTED_CONSTANTS

    name = str(error["loc"][-1])
    constant = next((c for c in FITTED_CONSTANTS if c.name == name), None)
    if constant is None or error["type"] not in (
        "less_than_equal",
        "greater_than_equal",
        "less_than",
        "greater_than",
    ):
        return None
    return _outside_fit_bounds(constant, error.get("input"))


def _outside_fit_bounds(constant: Any, value: Any) -> str:
    """The one wording of a fitted constant outside the bounds `runplan calibrate` fits it in."""
    shown = f"{value:g}" if isinstance(value, int | float) else repr(value)
    return (
        f"{constant.name} = {shown} is outside [{constant.low:g}, {constant.high:g}], the range `runplan "
        "calibrate` fits it in"
    )


def _located(error: SpecError, source: str, loaded: LoadedYaml | None) -> SpecError:
    """``error`` at its key's ``file:line`` when the file's lines are known, else at the file."""
    if loaded is not None and error.where:
        return loaded.locate(error)
    return SpecError(error.message, source=source, where=error.where, hint=error.hint)


def _check_fit_bounds(calibration: Calibration, source: str, loaded: LoadedYaml | None) -> None:
    """Each fitted constant of a file read within the bounds ``runplan calibrate`` fits it in
    (calibrate.constants): a hand-edited step_overhead_seconds of 1e6 would otherwise plan a 6-million-day run
    without a word. (Files `runplan calibrate` writes are within them by construction.)"""
    from runplan.calibrate.constants import FITTED_CONSTANTS

    for family, fitted in calibration.families.items():
        if family not in FITTABLE_FAMILIES:  # a misspelt family was read as none: shipped constants, quietly
            raise _located(
                SpecError(
                    f"unknown GPU family {family!r}",
                    where=f"families.{family}",
                    hint="use ampere or hopper, the families `runplan calibrate` writes",
                ),
                source,
                loaded,
            )
        latency = fitted.efficiency.collective_latency_seconds
        if not 0.0 <= latency <= MAX_COLLECTIVE_LATENCY_SECONDS:  # held, not fitted: no fit bound catches it
            raise _located(
                SpecError(
                    f"collective_latency_seconds = {latency:g} is outside [0, {MAX_COLLECTIVE_LATENCY_SECONDS:g}]: "
                    "seconds per collective call, tens of microseconds for NCCL",
                    where=f"families.{family}.efficiency.collective_latency_seconds",
                    hint="refit, or fix the value: the default is 2e-05",
                ),
                source,
                loaded,
            )
        for constant in FITTED_CONSTANTS:
            value = getattr(fitted.efficiency, constant.name)
            if value is not None and not constant.low <= value <= constant.high:
                raise _located(
                    SpecError(
                        _outside_fit_bounds(constant, value),
                        where=f"families.{family}.efficiency.{constant.name}",
                        hint="refit, or fix the value",
                    ),
                    source,
                    loaded,
                )


#: A hand-edited collective latency above this is a unit slip (ms or µs written as seconds): NCCL's small-message
#: latency is tens of microseconds (nccl-tests), 1 ms already 50× the default.
MAX_COLLECTIVE_LATENCY_SECONDS = 1e-3

#: Constants that replaced one of another meaning (new name -> old name): a file fitted under the old meaning is
#: refused with this hint rather than read with wrong numbers (elementwise traffic counted op by op, not as a
#: multiple of the stored activations).
_RENAMED_CONSTANTS = {"elementwise_time_factor": "elementwise_traffic_factor"}


def load_calibration(path: str | Path) -> Calibration:
    """Read a calibration file (bad input: one-line SpecError, exit 2)."""
    from runplan.yamlio import load_yaml_file

    loaded = load_yaml_file(path)
    return parse_calibration(loaded.data, str(path), loaded)


#: The shipped file's fit has no mixture-of-experts run: benchmarks/published_runs.yaml's MoE rows (NVIDIA's
#: Grok-1 runs) are predict-only (fit: false; tests/calibrate/test_calibrate.py checks it), and the time model
#: has no all-to-all constant of its own (calibrate.fit.moe_only_warnings).
SHIPPED_MOE_CAUTION = (
    "the shipped time-model constants were fitted on dense runs only: this MoE model's expert all-to-all is "
    "timed with the network efficiencies dense runs set, and uneven expert loads are not timed (held out: "
    "Mixtral 8x22B at capacity factor 1 within 4%, dropless Mixtral 8x7B 18-19% slower than predicted; "
    "docs/validation.md); `runplan calibrate` on your own MoE runs fits them"
)


def moe_cautions(efficiency: Efficiency | None, is_moe: bool) -> list[str]:
    """The caution for a MoE model timed with the shipped constants (``efficiency`` None: no calibration file,
    or one without this GPU family); a user's file may hold MoE runs, and its fit names the constants only they
    set."""
    return [SHIPPED_MOE_CAUTION] if is_moe and efficiency is None else []


@functools.cache
def shipped_calibration() -> Calibration:
    """The shipped default (package data), read once."""
    from importlib import resources

    from runplan.yamlio import load_yaml_text

    text = resources.files("runplan").joinpath("configs", "calibration.yaml").read_text("utf-8")
    # the C loader through yamlio: PyYAML's pure-Python safe_load takes ~40 ms of `parallelize`'s start-up
    return parse_calibration(load_yaml_text(text, SHIPPED_NAME).data, SHIPPED_NAME)


def dump_calibration(calibration: Calibration, header: str = "") -> str:
    """The YAML text of a calibration file (a comment header, then the model's fields in order)."""
    import yaml

    data = calibration.model_dump(mode="json")
    body = yaml.safe_dump(data, sort_keys=False, width=110)
    return header + body
