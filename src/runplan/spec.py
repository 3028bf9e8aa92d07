"""The plan file: a strict, typed, versioned description of one pre-training run to plan.

Every section is a pydantic model with ``extra="forbid"`` and a description on each field, so that
``runplan schema`` exports a JSON Schema that editors use to complete and check plan files. Sections owned
by a stage are defined beside that stage and reused here (objective and law in ``scaling``, constraints and
pins in ``parallel``, schedule, operations and cost inputs in ``ops``): a flag and a plan-file key always
fill the same model, so they can never mean two different things.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from runplan.defaults import (
    DEFAULT_GPU,
    DEFAULT_SEQ_LEN,
    DEFAULT_VOCAB_SIZE,
    MAX_GPUS,
    MAX_GPUS_PER_NODE,
    MAX_SEQ_LEN,
    MAX_VOCAB_SIZE,
)
from runplan.errors import SpecError
from runplan.escape import run_name_problem, text_problem
from runplan.hardware import GpuSpec
from runplan.model import ModelShape
from runplan.ops.cost import CostSpec
from runplan.ops.monitoring import MonitoringSpec
from runplan.ops.reliability import OperationsSpec
from runplan.ops.schedule import ScheduleSpec
from runplan.parallel.layout import Constraints, Pins
from runplan.parallel.stack import Stack
from runplan.scaling.allocate import Objective
from runplan.scaling.budget import Budget
from runplan.scaling.laws import LawSpec
from runplan.scaling.sweep import SweepSpec
from runplan.units import (
    MAX_PRICE_PER_GPU_HOUR,
    PositiveCount,
    PricePerGpuHour,
    TokenLength,
    at_most,
)
from runplan.validation import spec_error_from_validation
from runplan.yamlio import LoadedYaml, load_yaml_file, load_yaml_text

SCHEMA_VERSION = 1
#: The schema's ``$id``: a URN, not a URL, because the project publishes no web site (issue 15); editors find
#: the schema by path (``# yaml-language-server: $schema=docs/plan.schema.json``, runplan.starter).
SCHEMA_URL = f"urn:runplan:plan-schema:v{SCHEMA_VERSION}"

_STRICT = ConfigDict(extra="forbid", frozen=True)


class ModelChoice(BaseModel):
    """A fixed model: a catalog preset or size shorthand (``llama-3.1-70b``, ``70b``), an explicit shape, or a
    Hugging Face config.json (``model: {config: path}``, or ``model: path/config.json``)."""

    model_config = _STRICT

    name: str | None = Field(None, description="Catalog preset name or size shorthand such as '7b' or '70B'.")
    shape: ModelShape | None = Field(
        None, description="An explicit shape; every field as in `runplan catalog models`."
    )
    config: str | None = Field(
        None,
        description="A local Hugging Face config.json (path relative to the plan file): Llama, Mistral, Mixtral, "
        "Qwen2/3 (MoE), DeepSeek-V2/V3, GPT-NeoX, Gemma, Gemma 2 or Gemma 3 (text).",
    )

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"config": value} if value.strip().lower().endswith(".json") else {"name": value}
        if isinstance(value, dict):  # before the shape is validated: a preset plus one changed field is not a
            # whole shape missing nine keys
            given = [key for key in ("name", "shape", "config") if value.get(key) is not None]
            if len(given) > 1:
                preset = value.get("name") if isinstance(value.get("name"), str) else "NAME"
                raise ValueError(
                    f"{_ONE_OF}, not {' and '.join(given)}; to change a preset's field, write model.shape (or a "
                    f"catalog entry) with every shape key `runplan catalog models {preset}` lists and that one changed"
                )
        return value

    @model_validator(mode="after")
    def _one(self) -> ModelChoice:
        if sum(x is not None for x in (self.name, self.shape, self.config)) != 1:
            raise ValueError(_ONE_OF)
        return self


_ONE_OF = "give one of name (a preset or size like '70b'), shape or config (a config.json path)"


class Training(BaseModel):
    """Sequence and vocabulary of the run."""

    model_config = _STRICT

    seq_len: TokenLength = Field(
        DEFAULT_SEQ_LEN,
        **at_most(MAX_SEQ_LEN),
        description="Training sequence length s in tokens (at most 1e8); 8k = 8192, 128k = 131072.",
    )
    vocab_size: PositiveCount = Field(
        DEFAULT_VOCAB_SIZE,
        **at_most(MAX_VOCAB_SIZE),
        description="Vocabulary size V for generated shapes (a catalog preset keeps its own) and the proxy "
        "sweep's shapes (default there: a fixed model's own V); at most 1e7.",
    )


class Cluster(BaseModel):
    """Where the run trains."""

    model_config = _STRICT

    gpu: str | GpuSpec = Field(
        DEFAULT_GPU, description="GPU type: a catalog name (`runplan catalog gpus`) or an inline spec."
    )
    gpus: PositiveCount = Field(
        **at_most(MAX_GPUS),
        description="Number of GPUs the run uses (at most 1e7).",
    )
    gpus_per_node: PositiveCount | None = Field(
        None,
        **at_most(MAX_GPUS_PER_NODE),
        description="GPUs per node (NVLink domain); defaults to the GPU type's. At most 1,024.",
    )
    price_per_gpu_hour: PricePerGpuHour = Field(
        2.0,
        json_schema_extra={"maximum": MAX_PRICE_PER_GPU_HOUR},
        description="Price in USD per GPU-hour (2 USD/h is a common H100 planning figure, docs/operations.md §5); "
        "at most 1e5.",
    )


class PlanSpec(BaseModel):
    """A runplan plan file (schema version 1)."""

    model_config = ConfigDict(extra="forbid", frozen=True, title="runplan plan file")

    schema_version: Literal[1] = Field(description="Plan-file schema version; this runplan reads version 1.")
    name: str | None = Field(None, description="Short name of the run, used in report titles.")
    description: str | None = Field(None, description="Free text: what the run is for.")

    @field_validator("schema_version", mode="before")
    @classmethod
    def _version_is_a_number(cls, value: Any) -> Any:
        if isinstance(value, bool):  # YAML `true` equals 1 in Python; it is not a version number
            raise ValueError(f"must be the number 1, got {str(value).lower()}")
        return value

    @field_validator("name")
    @classmethod
    def _printable_name(cls, value: str | None) -> str | None:
        """The name titles reports and becomes part of export file names: printable, one line, bounded
        (``runplan.escape.run_name_problem``); each output format escapes it again on the way out."""
        problem = None if value is None else run_name_problem(value)
        if problem:
            raise ValueError(f"the run name {problem}")
        return value

    @field_validator("description")
    @classmethod
    def _no_control_characters(cls, value: str | None) -> str | None:
        problem = None if value is None else text_problem(value)
        if problem:
            raise ValueError(f"the description {problem} (terminal escape sequences are not shown)")
        return value

    catalog: list[str] = Field(
        default_factory=list,
        description="Extra catalog files (GPUs, models) merged over the shipped ones; paths relative to the plan file.",
    )
    budget: Budget | None = Field(  # None here so that plan.py says how to write one; the schema requires it
        None,
        description="Compute budget (required): FLOPs, GPU-hours, days on the cluster, or tokens for a fixed "
        "model.",
    )
    objective: Objective = Field(
        default_factory=Objective, description="How to split the budget into N and D."
    )
    law: LawSpec | None = Field(
        None, description="Scaling law L(N, D) for the allocation; omitted: the default law."
    )
    model: str | ModelChoice | None = Field(
        None,
        description="Fix the model: a preset or size ('llama-3.1-70b', '70b') or {shape: {...}}; omitted: a "
        "shape is generated for the allocated N.",
    )

    @field_validator("model", mode="after")
    @classmethod
    def _model_choice(cls, value: str | ModelChoice | None) -> ModelChoice | None:
        return ModelChoice(name=value) if isinstance(value, str) else value

    training: Training = Field(default_factory=Training, description="Sequence length and vocabulary.")
    cluster: Cluster = Field(description="GPU type, count and price.")
    constraints: Constraints = Field(
        default_factory=Constraints, description="Limits on the parallel layout."
    )
    parallel: Pins = Field(default_factory=Pins, description="Pin any parallel axis (tp, pp, zero, ...).")
    stack: Stack = Field(
        default_factory=Stack,
        description="Training stack: a preset name (default, megatron-core, megatron-2022, deepspeed, "
        "torchtitan-fsdp2) or {preset: ..., field: override}; every memory and time term follows it.",
    )
    calibration: str | None = Field(
        None,
        description="Time-model constants from `runplan calibrate` (path relative to the plan file); "
        "omitted: the shipped calibration (fitted on published runs).",
    )
    schedule: ScheduleSpec = Field(
        default_factory=ScheduleSpec, description="Batch, LR and WSD schedule inputs."
    )
    operations: OperationsSpec = Field(
        default_factory=OperationsSpec, description="Storage, failures, retention."
    )
    monitoring: MonitoringSpec = Field(
        default_factory=MonitoringSpec, description="Canary, alerts, rollback rule."
    )
    cost: CostSpec = Field(default_factory=CostSpec, description="Energy and cost inputs.")
    sweep: SweepSpec = Field(
        default_factory=SweepSpec,
        description="Shape of the proxy isoFLOP sweep the plan designs and costs (`runplan sweep`'s options); "
        "`sweep: false`: none (a stage of a run already trained).",
    )
    resolved: dict[str, Any] | None = Field(
        None,
        description="Derived numbers written by `runplan plan --format yaml`; `runplan check` diffs against them.",
    )


def parse_plan(loaded: LoadedYaml) -> PlanSpec:
    """Validate a loaded YAML document as a PlanSpec; errors become ``file:line: path: problem``."""
    data = loaded.data
    if not isinstance(data, dict):
        raise SpecError(
            "a plan file is a mapping of sections (budget:, cluster:, ...)",
            source=loaded.where(()),
            hint="start from `runplan init`",
        )
    if "schema_version" not in data:
        raise SpecError(
            "schema_version is missing",
            source=loaded.where(()),
            where="schema_version",
            hint=f"add 'schema_version: {SCHEMA_VERSION}' at the top",
        )
    written = data.get("schema_version")
    if isinstance(written, str) and written.strip() == str(
        SCHEMA_VERSION
    ):  # a number quoted, as others may be
        raise SpecError(
            f"the version is a number, got the string {written!r}",
            source=loaded.where(("schema_version",)),
            where="schema_version",
            hint=f"write schema_version: {SCHEMA_VERSION}, without quotes",
        )
    if written != SCHEMA_VERSION:
        raise SpecError(
            f"schema version {data.get('schema_version')!r} is not supported",
            source=loaded.where(("schema_version",)),
            where="schema_version",
            hint=f"this runplan reads schema_version: {SCHEMA_VERSION}",
        )
    _refuse_empty_sections(data, loaded)
    try:
        spec = PlanSpec.model_validate(data)
    except ValidationError as error:
        raise spec_error_from_validation(error, PlanSpec, loaded) from None
    _refuse_zero_against_stack(spec, loaded)
    return spec


def _refuse_zero_against_stack(spec: PlanSpec, loaded: LoadedYaml) -> None:
    """parallel.zero >= 1 beside stack.distributed_optimizer: false asks for two contradicting things
    (request_rules.zero_against_stack): refused at the pin, with the two ways out."""
    from runplan.parallel.request_rules import zero_against_stack

    problem = zero_against_stack(spec.parallel.zero, spec.stack.distributed_optimizer)
    if problem:
        raise SpecError(
            problem,
            source=loaded.where(("parallel", "zero")),
            where="parallel.zero",
            hint=f"remove stack.distributed_optimizer: false to keep parallel.zero: {spec.parallel.zero}, or pin "
            "parallel.zero: 0",
        )


def _refuse_empty_sections(data: dict[Any, Any], loaded: LoadedYaml) -> None:
    """A section header left with every key under it commented out (``parallel:`` uncommented alone in `runplan
    init`'s starter) is null in YAML: say so and how to fix it, rather than "must be a mapping, got None". The
    keys that may be null (budget:, law:, model:, resolved:, ...) are not sections that need a value."""
    for key, value in data.items():
        field = PlanSpec.model_fields.get(str(key))
        if value is not None or field is None or key == "schema_version":
            continue
        if field.default_factory is not None or field.is_required():
            raise SpecError(
                "the section is empty (every key under it is commented out)",
                source=loaded.where((key,)),
                where=str(key),
                hint=f"uncomment a key under {key}:, or comment out the {key}: line as well",
            )


def load_plan(path: str | Path) -> PlanSpec:
    """Read, parse and validate a plan file."""
    return parse_plan(load_yaml_file(path))


def load_plan_text(text: str, source: str = "<plan>") -> PlanSpec:
    return parse_plan(load_yaml_text(text, source))


def plan_json_schema() -> dict[str, Any]:
    """JSON Schema (draft 2020-12) of the plan file, with its $id."""
    schema = PlanSpec.model_json_schema(mode="validation")
    # every plan needs a budget (a fixed model's tokens are budget.tokens); the model leaves it optional only so
    # that its absence is the one line plan.py writes, with an example
    schema["required"] = [*schema.get("required", []), "budget"]
    budget = schema["properties"]["budget"]  # and not null: `budget:` left empty is refused as missing
    budget["anyOf"] = [branch for branch in budget["anyOf"] if branch != {"type": "null"}]
    budget.pop("default", None)
    # `stack:` as runplan reads it (Stack._preset_defaults): a preset name or a mapping; pydantic sees only the
    # mapping, so an editor flagged `stack: megatron-core`, a form docs/plan-file.md gives
    stack = schema["properties"]["stack"]
    mapping = stack.pop("$ref")
    preset = schema["$defs"][mapping.removeprefix("#/$defs/")]["properties"]["preset"]
    stack["anyOf"] = [{"$ref": mapping}, {"type": "string", "enum": preset["enum"]}]
    # `sweep: false` as runplan reads it (SweepSpec._bool_is_enabled: `sweep: {enabled: false}`); pydantic sees
    # only the mapping, so an editor would flag the form docs/plan-file.md gives for "no proxy sweep"
    sweep = schema["properties"]["sweep"]
    sweep["anyOf"] = [{"$ref": sweep.pop("$ref")}, {"type": "boolean"}]
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = SCHEMA_URL
    return schema
