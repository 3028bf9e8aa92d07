"""MEASURED.yaml: runs timed on the user's cluster, and the one mapping from a run to a layout request.

A file has ``runs:`` (and optionally ``models:`` and ``gpus:``, inline shapes and specs its runs name). Each
run states what ran (model, GPU, GPU count, sequence, global batch, the layout, the stack facts the time model
takes today) and what was measured (step seconds or a throughput, optionally the peak memory of one rank).
docs/calibration.md shows a complete file.
"""

from __future__ import annotations

import contextlib
import math
import re
from typing import TYPE_CHECKING, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from runplan.errors import SpecError
from runplan.hardware import GpuSpec
from runplan.model import ModelShape
from runplan.parallel.layout import Constraints, ParallelRequest, Pins
from runplan.parallel.stack import Stack
from runplan.units import PositiveCount, PositiveNumber, TokenLength, parse_bytes, parse_number

if TYPE_CHECKING:
    from collections.abc import Iterator

    from runplan.catalog import Catalog
    from runplan.yamlio import LoadedYaml

#: The throughput a run may state (one of them), each convertible to tokens per second per GPU.
THROUGHPUT_KEYS = ("step_seconds", "tokens_per_second_per_gpu", "tflops_per_gpu", "mfu")
#: A run that states its batch in tokens matches layouts whose batch is within this fraction of it.
BATCH_TOKENS_TOLERANCE = 0.05


def _field_error(model: str, field: str, value: object, message: str) -> ValidationError:
    """A validation error at ``field`` of the model being validated (a model validator's own errors sit at the
    model, so a check across fields names the one to fix this way: ``runs[i].global_batch``)."""
    error = PydanticCustomError("value_error", "{message}", {"message": message})
    return ValidationError.from_exception_data(
        model, [InitErrorDetails(type=error, loc=(field,), input=value)]
    )


#: A step time written with a time unit, and the seconds in that unit. A bare "m" is apart: the number parser reads
#: it as the suffix million (runplan.units), so "2m" would be 2,000,000 seconds, not two minutes.
_NUMBER = r"(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?"  # 1, 1.5, .5, 1.5e1: one decimal point at most
_TIME_WITH_UNIT = re.compile(rf"^\s*({_NUMBER})\s*([a-zA-Z]+)\s*$")
_SECONDS_PER = {
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), 1.0),
    **dict.fromkeys(("ms", "msec", "millisecond", "milliseconds"), 1e-3),
    **dict.fromkeys(("min", "mins", "minute", "minutes"), 60.0),
    **dict.fromkeys(("h", "hr", "hrs", "hour", "hours"), 3600.0),
}
#: What each measured key holds, for a value written with a unit.
_PLAIN_NUMBER = {
    "step_seconds": "a plain number of seconds per optimizer step, e.g. 16.5",
    "tokens_per_second_per_gpu": "a plain number of tokens/s per GPU, e.g. 3300 or 3.3k",
    "tflops_per_gpu": "a plain number of model TFLOP/s per GPU, e.g. 420",
    "mfu": "a fraction, e.g. 0.45 for 45%",
}


def _measured_number(key: str, value: object) -> object:
    """``value`` unchanged unless it is text the number parser would misread or refuse with a budget's examples:
    a step time with a time unit (converted in the message: 1200ms is 1.2), "2m" (2 million seconds to the parser),
    an MFU in percent, a throughput with its unit. Each is a ValueError naming the plain number to write."""
    if not isinstance(value, str):
        return value
    time = _TIME_WITH_UNIT.match(value) if key == "step_seconds" else None
    if time and time.group(2) in ("m", "M"):
        raise ValueError(
            f"{value!r} would read as {time.group(1)} million seconds ({time.group(2)} is the suffix for million): "
            "step_seconds is "
            f"a plain number of seconds; for {time.group(1)} minutes write {float(time.group(1)) * 60:g}"
        )
    if time and time.group(2).lower() in _SECONDS_PER:
        seconds = float(time.group(1)) * _SECONDS_PER[time.group(2).lower()]
        raise ValueError(
            f"{value!r} has a unit: step_seconds is a plain number of seconds (write {seconds:g})"
        )
    percent = re.fullmatch(rf"\s*({_NUMBER})\s*%\s*", value)
    if key == "mfu" and percent:
        raise ValueError(
            f"{value!r} is a percentage: mfu is a fraction (write {float(percent.group(1)) / 100:g})"
        )
    try:
        parse_number(value)
    except SpecError:
        raise ValueError(f"{value!r} is not a plain number: {key} is {_PLAIN_NUMBER[key]}") from None
    return value


class Measured(BaseModel):
    """What was measured: exactly one of step_seconds, tokens_per_second_per_gpu, tflops_per_gpu (model FLOPs,
    PaLM convention) or mfu; or a speedup over another run of the same file (``speedup`` + ``speedup_over``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    step_seconds: PositiveNumber | None = Field(None, description="Seconds per optimizer step.")
    tokens_per_second_per_gpu: PositiveNumber | None = Field(None, description="Training tokens/s per GPU.")
    tflops_per_gpu: PositiveNumber | None = Field(
        None, description="Model TFLOP/s per GPU (6N + attention per token, no recomputation)."
    )
    mfu: PositiveNumber | None = Field(None, description="Model FLOPs utilisation (PaLM, App. B).")
    speedup: PositiveNumber | None = Field(None, description="Throughput / throughput of `speedup_over`.")
    speedup_over: str | None = Field(None, description="Id of the run the speedup is measured against.")

    @field_validator(*THROUGHPUT_KEYS, mode="before")
    @classmethod
    def _plain_number(cls, value: object, info: ValidationInfo) -> object:
        return _measured_number(str(info.field_name), value)

    @field_validator("mfu")
    @classmethod
    def _mfu_is_a_fraction(cls, mfu: float | None) -> float | None:
        if mfu is not None and mfu > 1:
            raise ValueError(f"an MFU is a fraction in (0, 1], got {mfu:g}: give 0.45 for 45%")
        return mfu

    @model_validator(mode="after")
    def _exactly_one(self) -> Measured:
        given = [key for key in THROUGHPUT_KEYS if getattr(self, key) is not None]
        if (self.speedup is None) != (self.speedup_over is None):
            raise ValueError("speedup and speedup_over go together")
        if len(given) + (self.speedup is not None) != 1:
            raise ValueError(f"give exactly one of {', '.join(THROUGHPUT_KEYS)} or speedup + speedup_over")
        return self


#: A size with a unit that ends in bytes ("70GiB", "75 GB", "71680MiB"); a prefix without the B ("80G") is not one.
_SIZE_WITH_UNIT = re.compile(r"^\s*[\d.]+(?:[eE][+-]?\d+)?\s*[kmgtpKMGTP][iI]?B\s*$")
#: ... and one that ends in a lower-case b, bits by the SI/IEC convention ("70Gb"): no memory logger writes it
_SIZE_IN_BITS = re.compile(r"^\s*[\d.]+(?:[eE][+-]?\d+)?\s*[kmgtpKMGTP][iI]?b\s*$")
_PREFIX_WITHOUT_BYTES = re.compile(r"^\s*[\d.]+(?:e[+-]?\d+)?\s*[kmgtp]i?\s*$", re.IGNORECASE)


def _gib(value: object) -> object:
    """A peak as GiB: a plain number is GiB; a size with a byte unit is converted (GiB and MiB binary, GB and MB
    decimal: 75GB is 69.85 GiB); a bare prefix ("80G") could be either, so it is refused saying both."""
    if isinstance(value, str) and _SIZE_WITH_UNIT.match(value):
        try:
            return parse_bytes(value) / 2**30
        except SpecError as error:  # a ValueError is what pydantic locates at runs[i].peak_memory.gib
            raise ValueError(f"{error.message} ({error.hint})") from None
    if isinstance(value, str) and _SIZE_IN_BITS.match(value):
        split = re.fullmatch(r"\s*(.*?[\d.])(\s*[a-zA-Z]+)\s*", value)  # the number, then its unit
        assert split is not None  # _SIZE_IN_BITS matched: a number then letters
        number, unit = split.groups()
        binary = unit.strip()[1:2].lower() == "i"  # Gib: the GiB prefix (2**30), Gb: the GB one (1e9)
        prefix = unit.strip()[0].upper() + ("i" if binary else "")  # Gib -> GiB, mb -> MB, kib -> KiB
        space = unit[: len(unit) - len(unit.lstrip())]  # as written: "45 Gib" -> "45 GiB"
        bytes_unit = (
            space + ("k" if prefix == "K" else prefix) + "B"
        )  # kb -> kB: SI writes kilo in lower case
        raise ValueError(
            f"{value!r} ends in b, bits: write {number}{bytes_unit} (bytes, {'binary' if binary else 'decimal'}) "
            "or a GiB figure as PyTorch reports it"
        )
    if isinstance(value, str) and _PREFIX_WITHOUT_BYTES.match(value):
        raise ValueError(
            f"{value!r} has no byte unit: write 80GiB (binary, as PyTorch reports it) or 80GB (decimal), or "
            "a plain number of GiB"
        )
    return value


class PeakMemory(BaseModel):
    """Peak memory of one GPU as the run logged it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    gib: PositiveNumber = Field(
        description="Peak memory in GiB: a number (GiB), or a size with its unit (70GiB, 75GB, 71680MiB)."
    )

    @field_validator("gib", mode="before")
    @classmethod
    def _read_units(cls, value: object) -> object:
        return _gib(value)

    @field_validator("rank", mode="before")
    @classmethod
    def _rank_as_text(cls, value: object) -> object:
        """A rank written as a number (``rank: 0``) is its text; it is a label, never computed with."""
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value

    kind: Literal["allocated", "reserved", "device"] = Field(
        "reserved",
        description="allocated = torch.cuda.max_memory_allocated (no CUDA context, NCCL buffers or allocator "
        "slack: compared without the reserve); reserved = max_memory_reserved; device = nvidia-smi.",
    )
    rank: str = Field("", description="Which rank (free text, e.g. 'last pipeline stage').")
    stage: Literal["first", "last"] | None = Field(
        None,
        description="The pipeline stage of the rank whose peak this is, compared with that stage's total (last: "
        "Megatron's TensorBoard, written on the last rank; torchtitan's TensorBoard under 1F1B); unset: the largest "
        "over ranks or not stated, compared with the most loaded stage's.",
    )


class MeasuredRun(BaseModel):
    """One measured run."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(description="Unique name of the run.")

    @field_validator("id")
    @classmethod
    def _id_is_a_name(cls, value: str) -> str:
        if not value.strip():  # a blank id names nothing in the report, in speedup_over or in the file
            raise ValueError("a run id is empty: give each run a short unique name, e.g. 70b-64gpu-tp8")
        return value

    source: str | None = Field(
        None, description="Independent measurement it belongs to (leave-one-source-out); default: its id."
    )
    model: str | ModelShape = Field(description="Catalog name, a name under `models:`, or an inline shape.")
    schedule_layers: PositiveCount | None = Field(
        None, description="Layer slots the pipeline schedule is laid out with (uneven first/last stages)."
    )
    gpu: str | GpuSpec = Field(description="Catalog GPU name, a name under `gpus:`, or an inline spec.")
    n_gpus: PositiveCount
    gpus_per_node: PositiveCount | None = None
    seq_len: TokenLength = Field(description="Tokens per sequence; '8k' is 8192, as in plan files.")
    global_batch: PositiveCount | None = Field(None, description="Sequences per optimizer step.")
    global_batch_tokens: PositiveNumber | None = Field(
        None, description="Tokens per step, when only that is known (layouts within 5% of it are accepted)."
    )
    layout: Pins = Field(
        description="The layout that ran (tp, pp, dp, cp, ep, zero, micro_batch, microbatches, vpp, recompute, "
        "sequence_parallel); axes left out are chosen by the search as the fastest."
    )
    stack: Stack = Field(
        default_factory=Stack,
        description="The software stack it ran on: a preset name or {preset: ..., field: override} "
        "(parallel/stack.py: FlashAttention, TP overlap, recompute modules, dropout, gradient dtype, ...).",
    )
    # only kernels with a benchmark ratio (calibrate.constants.KERNEL_BENCHMARK_RATIOS): any other name would
    # fit a ratio that soaks up what else differs in those runs and is never planned with
    attention_kernel: Literal["flash-attention-1", "triton-flash-2023"] | None = Field(
        None,
        description="A named attention kernel whose rate is fitted apart (reported, never planned with): "
        "flash-attention-1 or triton-flash-2023. Runs on FlashAttention-2, cuDNN or TransformerEngine attention "
        "leave it out (stack.attention_kernel says which kernel a plan uses).",
    )
    measured: Measured
    peak_memory: PeakMemory | None = None
    fit: bool = Field(True, description="False: predicted and reported, not fitted.")

    @model_validator(mode="after")
    def _one_batch(self) -> MeasuredRun:
        if (self.global_batch is None) == (self.global_batch_tokens is None):
            raise ValueError("give exactly one of global_batch (sequences) or global_batch_tokens")
        return self

    @model_validator(mode="after")
    def _layout_fits(self) -> MeasuredRun:
        """The pinned axes fit the GPU count (t·p·d·c = n_gpus) and, where dp, micro_batch and microbatches are
        all determined, make the stated global batch (d·b·m sequences); axes left open are the search's."""
        pins, n = self.layout, self.n_gpus
        from runplan.parallel.request_rules import pinned_mesh_problem

        problem = pinned_mesh_problem(pins, n)
        if problem is not None:
            fix = "give the layout that ran (tp·pp·dp·cp = n_gpus)"
            raise _field_error("MeasuredRun", "layout", pins, f"{problem} (n_gpus): {fix}")
        mesh = {
            axis: getattr(pins, axis) for axis in ("tp", "pp", "dp", "cp") if getattr(pins, axis) is not None
        }
        product = math.prod(mesh.values())
        dp = pins.dp if pins.dp is not None else (n // product if len(mesh) == 3 else None)
        if dp is None or pins.micro_batch is None or pins.microbatches is None:
            return self
        sequences = dp * pins.micro_batch * pins.microbatches
        stated = f"dp·micro_batch·microbatches = {dp}·{pins.micro_batch}·{pins.microbatches} = {sequences}"
        if self.global_batch is not None and sequences != self.global_batch:
            raise _field_error(
                "MeasuredRun",
                "global_batch",
                self.global_batch,
                f"global_batch {self.global_batch} sequences does not match the layout's {stated}: "
                "give the sequences per optimizer step that ran, or fix the layout",
            )
        tokens = self.global_batch_tokens
        if tokens is not None and abs(sequences * self.seq_len / tokens - 1) > BATCH_TOKENS_TOLERANCE:
            raise _field_error(
                "MeasuredRun",
                "global_batch_tokens",
                tokens,
                f"global_batch_tokens {tokens:.4g} is not within {BATCH_TOKENS_TOLERANCE:.0%} of the layout's "
                f"{stated} sequences of {self.seq_len} tokens ({sequences * self.seq_len:.4g}): "
                "give the tokens per optimizer step that ran, or fix the layout",
            )
        return self

    @property
    def source_id(self) -> str:
        return self.source or self.id


class MeasuredFile(BaseModel):
    """A MEASURED.yaml document."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    models: dict[str, ModelShape] = Field(default_factory=dict, description="Inline shapes runs name.")
    gpus: dict[str, GpuSpec] = Field(default_factory=dict, description="Inline GPU specs runs name.")
    runs: list[MeasuredRun] = Field(min_length=1)


def parse_measured(loaded: LoadedYaml) -> MeasuredFile:
    """Validate a loaded MEASURED.yaml; every problem is one line naming ``file:line: runs[i].key``."""
    from runplan.validation import spec_error_from_validation

    if not isinstance(loaded.data, dict):
        raise SpecError(
            "a measured-runs file is a mapping with a 'runs:' list",
            source=loaded.where(()),
            hint="see docs/calibration.md",
        )
    try:
        measured = MeasuredFile.model_validate(loaded.data)
    except ValidationError as error:
        raise measured_hint(spec_error_from_validation(error, MeasuredFile, loaded)) from None
    ids = [run.id for run in measured.runs]
    for i, run in enumerate(measured.runs):
        first = ids.index(run.id)
        if first != i:
            raise loaded.locate(
                SpecError(
                    f"duplicate run id {run.id!r} (also runs[{first}])",
                    where=f"runs[{i}].id",
                    hint="give each run its own id",
                )
            )
        over = run.measured.speedup_over
        if over == run.id:
            raise loaded.locate(
                SpecError(
                    f"run {over!r} is measured as a speedup over itself",
                    where=f"runs[{i}].measured.speedup_over",
                    hint="name the baseline run it was compared with",
                )
            )
        if over is not None and over not in ids:
            raise loaded.locate(
                SpecError(
                    f"no run {over!r} in this file",
                    where=f"runs[{i}].measured.speedup_over",
                    hint="name a run id",
                )
            )
    for i, run in enumerate(measured.runs):
        loop = _speedup_loop(run.id, {r.id: r.measured.speedup_over for r in measured.runs})
        if loop:
            raise loaded.locate(
                SpecError(
                    f"the speedups {' → '.join(map(repr, loop))} go round without a measured time: nothing "
                    "fixes how fast any of them ran",
                    where=f"runs[{i}].measured.speedup_over",
                    hint="give one of them step_seconds (or another throughput) instead of a speedup",
                )
            )
    return measured


#: Hints the shared validation gives for a plan file, which a measured-runs file has no use for, and its bare
#: hint for a missing key of any other file (runplan.validation: `runplan init` is named for plan files only).
_PLAN_FILE_HINTS = ("`runplan schema`", "`runplan init`")
_MISSING_KEY_HINT = "add it"


def measured_hint(error: SpecError) -> SpecError:
    """``error`` with a plan file's hint (``runplan schema`` lists a plan's keys, ``runplan init`` writes a
    plan) replaced by where a measured-runs file's keys are listed."""
    if error.hint is None or (
        error.hint != _MISSING_KEY_HINT and not any(tool in error.hint for tool in _PLAN_FILE_HINTS)
    ):
        return error
    if error.hint == _MISSING_KEY_HINT or "runplan init" in error.hint:  # a required key is missing
        hint = "add it; docs/calibration.md (MEASURED.yaml) shows a complete file"
    else:  # an unknown key: the keys its section takes, where it is one of this file's own sections
        parent = re.sub(r"\[\d+\]", "[]", (error.where or "").rpartition(".")[0])
        sections: dict[str, type[BaseModel]] = {
            "": MeasuredFile,
            "runs[]": MeasuredRun,
            "runs[].measured": Measured,
            "runs[].peak_memory": PeakMemory,
            "runs[].layout": Pins,
            "runs[].stack": Stack,
        }
        owner = sections.get(parent)
        hint = (
            "allowed: " + ", ".join(owner.model_fields)
            if owner is not None
            else "the keys a measured-runs file takes: docs/calibration.md (MEASURED.yaml)"
        )
    return SpecError(error.message, where=error.where, source=error.source, hint=hint)


def _speedup_loop(start: str, over: dict[str, str | None]) -> list[str]:
    """The runs from ``start`` following ``speedup_over`` back to ``start`` when they go round, else []."""
    chain, seen = [start], {start}
    while (step := over.get(chain[-1])) is not None:
        if step == start:
            return [*chain, start]
        if step in seen:  # a loop further on: reported at its own runs
            return []
        chain.append(step)
        seen.add(step)
    return []


def resolve_shape(
    run: MeasuredRun, i: int, file: MeasuredFile, catalog: Catalog
) -> tuple[ModelShape, ModelShape]:
    """(the model as trained, the shape its pipeline schedule is searched with)."""
    from runplan.architect import resolve_model

    if isinstance(run.model, ModelShape):
        shape = run.model if run.model.name else run.model.model_copy(update={"name": run.id})
    elif run.model in file.models:
        shape = file.models[run.model].model_copy(update={"name": run.model})
    else:
        with _suggest_own(run.model, list(file.models), "models"):
            shape, _ = resolve_model(run.model, catalog, where=f"runs[{i}].model")
    scheduled = shape.model_copy(update={"n_layers": run.schedule_layers}) if run.schedule_layers else shape
    return shape, scheduled


def resolve_gpu(run: MeasuredRun, i: int, file: MeasuredFile, catalog: Catalog) -> GpuSpec:
    """The run's GPU, with its architecture (``family``) known: :func:`runplan.catalog.with_family`, the rule
    every command applies to a GPU the user defines."""
    from runplan.catalog import with_family

    if isinstance(run.gpu, GpuSpec):
        return with_family(run.gpu, (run.gpu.name,), catalog, where=f"runs[{i}].gpu.family")
    if run.gpu in file.gpus:
        spec = file.gpus[run.gpu]
        return with_family(spec, (run.gpu, spec.name), catalog, where=f"gpus.{run.gpu}.family")
    with _suggest_own(run.gpu, list(file.gpus), "gpus"):
        entry = catalog.gpu_entry(run.gpu, where=f"runs[{i}].gpu")
    return catalog.gpu_spec(entry, where=f"runs[{i}].gpu")


@contextlib.contextmanager
def _suggest_own(name: str, own: list[str], section: str) -> Iterator[None]:
    """A catalog lookup whose unknown-name error suggests the file's own ``section`` name that ``name`` is closest
    to, where there is one: a typo of a name the file defines, not of a catalog entry."""
    import difflib

    try:
        yield
    except SpecError as error:
        close = difflib.get_close_matches(name, own, n=1)
        if not close or not error.message.startswith("unknown "):  # a file or shape problem, not the name
            raise
        # the catalog's own guess, where it is the closer spelling (h100-sxn: h100-sxm, not the file's h100-sxm-700w)
        guessed = re.search(r"did you mean '([^']+)'", error.hint or "")
        ratio = difflib.SequenceMatcher(None, name, close[0]).ratio()
        if guessed and difflib.SequenceMatcher(None, name, guessed.group(1)).ratio() >= ratio:
            raise
        raise SpecError(
            error.message,
            where=error.where,
            source=error.source,
            hint=f"did you mean {close[0]!r}, under {section}:?",
        ) from None


def measured_request(run: MeasuredRun, shape: ModelShape, gpu: GpuSpec) -> ParallelRequest:
    """THE mapping from a measured run to the layout request the time model evaluates (one place: the stack
    facts a run states become the request's fields here and nowhere else).

    The bubble cap is lifted (the layout really ran) and the batch is exact when given in sequences.
    """
    if run.global_batch is not None:
        batch_tokens, tolerance = float(run.global_batch * run.seq_len), 0.0
    else:
        batch_tokens, tolerance = float(run.global_batch_tokens or 0.0), BATCH_TOKENS_TOLERANCE
    try:  # the request's rules (whole nodes, bounds) run as it is built
        return _request(run, shape, gpu, batch_tokens, tolerance)
    except SpecError as error:  # its hints name plan-file keys: a measured run's own keys here
        hint = (error.hint or "").replace("set cluster.gpus_per_node", "set gpus_per_node on the run")
        raise SpecError(error.message, where=error.where, source=error.source, hint=hint or None) from None


def _request(
    run: MeasuredRun, shape: ModelShape, gpu: GpuSpec, batch_tokens: float, tolerance: float
) -> ParallelRequest:
    return ParallelRequest(
        model=shape,
        gpu=gpu,
        n_gpus=run.n_gpus,
        gpus_per_node=run.gpus_per_node,
        seq_len=run.seq_len,
        global_batch_tokens=batch_tokens,
        global_batch_tolerance=tolerance,
        stack=run.stack,
        top=1,
        pins=run.layout,
        constraints=Constraints(  # the fastest layout: no tie broken by memory margin
            max_bubble_fraction=0.99, allow_cross_node_tp=True, throughput_tolerance=0
        ),
    )
