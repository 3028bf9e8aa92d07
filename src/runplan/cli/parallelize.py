"""`runplan parallelize`: the best TP x PP x DP x EP x CP layouts for a model on a cluster.

Parses flags into ``runplan.parallel.layout.ParallelRequest`` (the same models a plan file fills), calls
``runplan.parallel.search.search``, renders. JSON keys (stable, docs/parallel.md): model, cluster, candidates,
feasible, layouts, plus space_size, batch_range_tokens, critical_batch, best_by_tp, notes.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from runplan.cli.common import handle_errors, print_json, warn
from runplan.defaults import DEFAULT_GPU, DEFAULT_SEQ_LEN

if TYPE_CHECKING:
    from runplan.cli.search_flags import SearchOverrides
    from runplan.errors import Infeasible
    from runplan.parallel.layout import Constraints, ParallelRequest, Pins, SearchResult
    from runplan.parallel.stack import Stack
    from runplan.spec import PlanSpec

#: The plan-file path (or ``parallelize.<option>``) of each ParallelRequest field, for error messages; the CLI
#: prints its flag (runplan.cli.flags).
_REQUEST_PATHS = {
    "n_gpus": "cluster.gpus",
    "gpus_per_node": "cluster.gpus_per_node",
    "seq_len": "training.seq_len",
    "global_batch_tokens": "schedule.global_batch_tokens",
    "global_batch_tolerance": "parallelize.global_batch_tolerance",
    "training_tokens": "parallelize.training_tokens",
    "top": "parallelize.top",
    "mfu_override": "parallelize.mfu",
    "gpu": "cluster.gpu",
    "model": "model",
    "stack": "stack",
    "pins": "parallel",
    "constraints": "constraints",
}


def _opt(*names: str, help: str) -> Any:
    """A string option: numbers are parsed by runplan.units after typer (``2e23``, ``4M``, ``128k``)."""
    return typer.Option(*names, help=help)


Text = str | None
PlanFile = Annotated[
    Path | None,
    typer.Argument(
        help="A plan file: its model (or allocated shape), cluster, constraints and pins; the layout, constraint and stack flags override it (--model, --gpus, --seq-len and --global-batch come from the file)."
    ),
]
Model = Annotated[
    Text,
    _opt(
        "--model",
        help="Catalog name (llama-3.1-70b), a size (70b), or a local Hugging Face config.json or checkpoint folder.",
    ),
]
Gpus = Annotated[Text, _opt("--gpus", help="GPUs in the job, e.g. 512.")]
Gpu = Annotated[Text, _opt("--gpu", help=f"GPU type from the catalog (default {DEFAULT_GPU}).")]
GpusPerNode = Annotated[Text, _opt("--gpus-per-node", help="Override GPUs per node.")]
SeqLen = Annotated[
    Text,
    _opt(
        "--seq-len",
        help=f"Sequence length in tokens, e.g. 8192 or 128k = 131072 (default {DEFAULT_SEQ_LEN}).",
    ),
]
GlobalBatch = Annotated[Text, _opt("--global-batch", help="Target tokens per step, e.g. 4M.")]
BatchTolerance = Annotated[
    Text, _opt("--batch-tolerance", help="Allowed distance from the target batch, fraction (default 0.1).")
]
MinBatch = Annotated[Text, _opt("--min-batch", help="Smallest global batch, tokens.")]
MaxBatch = Annotated[
    Text,
    _opt("--max-batch", help="Largest global batch, tokens (default: DeepSeek's compute-optimal B_opt)."),
]
TrainingTokens = Annotated[
    Text, _opt("--training-tokens", help="Tokens to train (days, B_opt batch ceiling); default 20 x params.")
]
Top = Annotated[Text, _opt("--top", help="How many layouts to show (default 5).")]
MaxBubble = Annotated[Text, _opt("--max-bubble", help="Largest bubble fraction (0.15).")]
Headroom = Annotated[Text, _opt("--headroom", help="HBM fraction kept free (0.05).")]
Reserve = Annotated[Text, _opt("--reserve", help="Bytes reserved per GPU (3GB).")]
CrossNodeTp = Annotated[bool, typer.Option("--allow-cross-node-tp", help="Allow TP beyond a node.")]
Tp = Annotated[Text, _opt("--tp", help="Pin tensor parallelism.")]
Pp = Annotated[Text, _opt("--pp", help="Pin pipeline parallelism.")]
Dp = Annotated[Text, _opt("--dp", help="Pin data parallelism.")]
Ep = Annotated[Text, _opt("--ep", help="Pin expert parallelism (MoE).")]
Cp = Annotated[Text, _opt("--cp", help="Pin context parallelism.")]
Zero = Annotated[Text, _opt("--zero", help="Pin the ZeRO stage 0-3 (1 = distributed optimizer).")]
MicroBatch = Annotated[Text, _opt("--mbs", "--micro-batch", help="Pin the micro-batch size (sequences).")]
Microbatches = Annotated[Text, _opt("--microbatches", help="Pin micro-batches per step.")]
Vpp = Annotated[Text, _opt("--vpp", help="Pin interleaved chunks per pipeline rank.")]
Recompute = Annotated[Text, _opt("--recompute", help="Pin recomputation: none|selective|full.")]
SequenceParallel = Annotated[
    bool | None,
    typer.Option(
        "--sequence-parallel/--no-sequence-parallel", help="Pin sequence parallelism (default: on with TP)."
    ),
]
StackPreset = Annotated[
    Text,
    _opt(
        "--stack",
        help="Training-stack preset: default, megatron-core, megatron-2022, deepspeed, torchtitan-fsdp2.",
    ),
]
FlashAttention = Annotated[
    bool | None,
    typer.Option("--flash-attention/--no-flash-attention", help="Override the stack's FlashAttention."),
]
TpOverlap = Annotated[
    bool | None,
    typer.Option(
        "--tp-comm-overlap/--no-tp-comm-overlap", help="Override the stack's TP communication overlap."
    ),
]
SelectiveRecompute = Annotated[
    Text,
    _opt(
        "--selective-recompute",
        help="What 'selective' recomputes, comma-separated: core_attn, layernorm, mlp_act, mlp, moe_act, "
        "every_other_mm (torchtitan's op-level policy; alone or with moe_act).",
    ),
]
Dropout = Annotated[Text, _opt("--dropout", help="Hidden and attention dropout probability.")]
Bf16Grads = Annotated[
    bool,
    typer.Option("--bf16-grads", help="bf16 gradients instead of fp32 accumulation (stack gradient_dtype)."),
]
Precision = Annotated[
    Text, _opt("--precision", help="Linear-layer GEMM precision: bf16 or fp8 (stack precision).")
]
Fp8Recipe = Annotated[
    Text,
    _opt(
        "--fp8-recipe",
        help="fp8 scaling recipe: tensorwise, delayed, rowwise, blockwise, mxfp8 (stack fp8_recipe).",
    ),
]
AttentionKernel = Annotated[
    Text,
    _opt(
        "--attention-kernel",
        help="Attention kernel: auto (TransformerEngine's choice: cuDNN on Hopper, FlashAttention-2 before), "
        "flash-attention-2, cudnn (stack attention_kernel).",
    ),
]
FusedElementwise = Annotated[
    bool | None,
    typer.Option(
        "--fused-elementwise/--no-fused-elementwise",
        help="Norms, activations, RoPE and residual adds as fused kernels (Megatron/TE, torch.compile) or "
        "PyTorch eager (stack fused_elementwise).",
    ),
]
Fp8ParamGather = Annotated[
    bool | None,
    typer.Option(
        "--fp8-param-gather/--no-fp8-param-gather",
        help="fp8 only: keep the linear weights in fp8 and gather them in fp8, Megatron-LM's "
        "--fp8-param-gather (stack fp8_param_gather).",
    ),
]
OptimizerStateDtype = Annotated[
    Text,
    _opt(
        "--optimizer-state-dtype",
        help="Adam's moments in fp32 or bf16 (DeepSeek-V3 §3.3.3; master weights stay fp32) "
        "(stack optimizer_state_dtype).",
    ),
]
Mfu = Annotated[Text, _opt("--mfu", help="Use this MFU instead of predicting step time.")]
PinKeyValue = Annotated[
    list[str],
    typer.Option(
        "--pin",
        help="Pin any layout field by its plan-file name, e.g. --pin sequence_parallel=false (repeatable).",
    ),
]
Catalogs = Annotated[list[str], typer.Option("--catalog", help="Extra catalog YAML file(s).")]
AsJson = Annotated[bool, typer.Option("--json", help="Print JSON (keys in docs/parallel.md).")]
Calibration = Annotated[
    Path | None,
    typer.Option(
        "--calibration", help="Calibration file from `runplan calibrate` (default: the shipped one)."
    ),
]


def parallelize(
    plan_file: PlanFile = None,
    model: Model = None,
    gpus: Gpus = None,
    gpu: Gpu = None,
    gpus_per_node: GpusPerNode = None,
    seq_len: SeqLen = None,
    global_batch: GlobalBatch = None,
    batch_tolerance: BatchTolerance = None,
    min_batch: MinBatch = None,
    max_batch: MaxBatch = None,
    training_tokens: TrainingTokens = None,
    top: Top = None,
    max_bubble: MaxBubble = None,
    headroom: Headroom = None,
    reserve: Reserve = None,
    allow_cross_node_tp: CrossNodeTp = False,
    tp: Tp = None,
    pp: Pp = None,
    dp: Dp = None,
    ep: Ep = None,
    cp: Cp = None,
    zero: Zero = None,
    mbs: MicroBatch = None,
    microbatches: Microbatches = None,
    vpp: Vpp = None,
    recompute: Recompute = None,
    sequence_parallel: SequenceParallel = None,
    stack_preset: StackPreset = None,
    flash_attention: FlashAttention = None,
    tp_comm_overlap: TpOverlap = None,
    selective_recompute: SelectiveRecompute = None,
    dropout: Dropout = None,
    bf16_grads: Bf16Grads = False,
    precision: Precision = None,
    fp8_recipe: Fp8Recipe = None,
    attention_kernel: AttentionKernel = None,
    fused_elementwise: FusedElementwise = None,
    fp8_param_gather: Fp8ParamGather = None,
    optimizer_state_dtype: OptimizerStateDtype = None,
    mfu: Mfu = None,
    pin: PinKeyValue = [],  # noqa: B006 (typer's way to declare a repeatable option)
    catalog_file: Catalogs = [],  # noqa: B006 (typer's way to declare a repeatable option)
    calibration: Calibration = None,
    as_json: AsJson = False,
) -> None:
    """Search every parallel layout exhaustively; rank the ones that fit by predicted throughput."""
    if plan_file is None:
        _required(model, "--model")
        _required(gpus, "--gpus")
    pins = _pins_from_flags(
        **_pins_by_name(pin, dict(
            tp=tp, pp=pp, dp=dp, ep=ep, cp=cp, zero=zero, micro_batch=mbs, microbatches=microbatches, vpp=vpp,
            recompute=recompute, sequence_parallel=sequence_parallel,
        ))
    )  # fmt: skip
    constraints = _constraints_from_flags(
        max_bubble_fraction=max_bubble, memory_headroom_fraction=headroom, reserve_bytes=reserve,
        min_global_batch_tokens=min_batch, max_global_batch_tokens=max_batch,
        allow_cross_node_tp=allow_cross_node_tp or None,
    )  # fmt: skip
    overrides = _search_overrides(top, mfu)
    stack = _stack_flags(
        stack_preset, flash_attention, tp_comm_overlap, selective_recompute, dropout, bf16_grads, precision=precision,
        fp8_recipe=fp8_recipe, attention_kernel=attention_kernel, fused_elementwise=fused_elementwise,
        fp8_param_gather=fp8_param_gather, optimizer_state_dtype=optimizer_state_dtype,
    )  # fmt: skip
    if plan_file is not None:
        _no_input_flags({"--model": model, "--gpus": gpus, "--gpu": gpu, "--gpus-per-node": gpus_per_node,
                         "--seq-len": seq_len, "--global-batch": global_batch,
                         "--training-tokens": training_tokens, "--catalog": catalog_file or None})  # fmt: skip
        _answer_plan_file(plan_file, pins, constraints, overrides, stack, calibration, as_json, batch_tolerance, zero is None)  # fmt: skip
        return
    request, resolution = _request_from_flags(
        _required(model, "--model"), gpu, catalog_file, pins, constraints, overrides, stack,
        n_gpus=gpus, gpus_per_node=gpus_per_node, seq_len=DEFAULT_SEQ_LEN if seq_len is None else seq_len,
        global_batch_tokens=global_batch, global_batch_tolerance=batch_tolerance, training_tokens=training_tokens,
    )  # fmt: skip
    request, label = _calibrated(request, calibration)
    _answer(request, resolution, as_json, label)


def _batch_tolerance(text: str) -> float:
    """``--batch-tolerance`` over a plan file, checked as ParallelRequest.global_batch_tolerance is."""
    from pydantic import create_model

    from runplan.cli.common import build_from_flags
    from runplan.units import Fraction

    model = create_model("BatchTolerance", global_batch_tolerance=(Fraction, ...))
    checked = build_from_flags(model, _REQUEST_PATHS, "--batch-tolerance", global_batch_tolerance=text)
    return float(checked.global_batch_tolerance)  # type: ignore[attr-defined]


def _search_overrides(top: str | None, mfu: str | None) -> SearchOverrides:
    """``--top`` and ``--mfu`` as the request's overrides, validated (and named) as flags."""
    from runplan.cli.common import build_from_flags
    from runplan.cli.search_flags import SearchOverrides

    return build_from_flags(SearchOverrides, _REQUEST_PATHS, "--top", top=top, mfu_override=mfu)


def _answer_plan_file(
    plan_file: Path,
    pins: Pins,
    constraints: Constraints,
    overrides: SearchOverrides,
    stack: dict[str, Any],
    calibration: Path | None,
    as_json: bool,
    batch_tolerance: str | None = None,
    zero_by_pin: bool = False,
) -> None:
    """Search the layout `runplan plan` would search for the plan file, with the flags laid over it
    (``--batch-tolerance`` too, once silently dropped here); ``zero_by_pin``: a ZeRO stage among ``pins`` came
    from ``--pin zero=N``, not ``--zero`` (its errors name what the user typed)."""
    from runplan.cli.common import load_plan_file, located
    from runplan.errors import Infeasible, PinConflict

    tolerance = None if batch_tolerance is None else _batch_tolerance(batch_tolerance)
    loaded, spec = load_plan_file(plan_file)
    from_flags = [  # plan keys the flags set: their errors name the flag, not a line of the file
        *(f"parallel.{axis}" for axis in pins.model_dump(exclude_unset=True)),
        *(f"constraints.{key}" for key in constraints.model_dump(exclude_unset=True)),
        *(f"stack.{key}" for key in stack),
        *(["parallelize.top"] if overrides.top is not None else []),
        *(["parallelize.mfu"] if overrides.mfu_override is not None else []),
        *(["parallelize.global_batch_tolerance"] if tolerance is not None else []),
        *(["calibration"] if calibration is not None else []),  # --calibration replaces the plan's key
    ]
    with located(loaded, from_flags):  # the search's errors about plan keys point at the plan file's lines
        request, resolution, label = _request_from_plan(
            plan_file,
            spec,
            pins,
            constraints,
            overrides.top,
            overrides.mfu_override,
            stack,
            calibration,
            zero_by_pin=zero_by_pin,
        )
        if tolerance is not None:
            request = request.model_copy(update={"global_batch_tolerance": tolerance})
        try:
            _answer(request, resolution, as_json, label)
        except PinConflict:  # bad input at the pin's line or flag (located)
            raise
        except Infeasible as error:
            raise _plan_inputs_as_keys(error) from None


#: The inputs a plan file sets and no flag may set beside it (``_no_input_flags``): advice about them names
#: the plan key, written as YAML (``cluster: {gpus: 24}``), not a flag this command refuses with a plan file.
_PLAN_FILE_INPUTS = re.compile(
    r"\b(cluster|schedule|training)\.(gpus|gpu|gpus_per_node|global_batch_tokens|seq_len)\b(?:=([^\s,;)]+))?"
)


def _plan_inputs_as_keys(error: Infeasible) -> Infeasible:
    """``error`` with the plan-owned inputs its advice names written as the plan file's keys, as commands with
    flags name a plan key (``cluster: {gpus: 24} in the plan file``); the plan-file commands (`plan`, `check`,
    `whatif`) write the bare key path (``cluster.gpus: 24``, cli.flags.paths_for_user)."""
    from runplan.errors import Infeasible

    def key(match: re.Match[str]) -> str:
        section, name, value = match.groups()
        if value:
            return f"{section}: {{{name}: {value}}} in the plan file"
        return f"{section}: {name} in the plan file"

    rewritten = Infeasible(
        _PLAN_FILE_INPUTS.sub(key, error.reason),
        suggestions=[_PLAN_FILE_INPUTS.sub(key, text) for text in error.suggestions],
    )
    rewritten.about_plan_file = error.about_plan_file
    return rewritten


def _calibrated(request: ParallelRequest, calibration: Path | None) -> tuple[ParallelRequest, str]:
    """The request with the constants of ``--calibration`` (if given), and the line naming them."""
    from runplan.calibrate.calibration import load_calibration, shipped_calibration
    from runplan.errors import SpecError

    if calibration is None:
        return request, shipped_calibration().label(request.gpu)
    try:
        cal = load_calibration(calibration)
    except SpecError as error:  # a file problem names the flag that gave the file, as `plan` and `check` do
        # (a key of the file at its line too: "--calibration: FILE:1: name: required key is missing")
        place = [part for part in (error.source, error.where) if part]
        message = ": ".join([*place, error.message])
        raise SpecError(message, where="--calibration", hint=error.hint) from None
    return request.model_copy(update={"efficiency": cal.efficiency(request.gpu)}), cal.label(request.gpu)


def _pins_from_flags(*, zero: str | None = None, recompute: str | None = None, **axes: Any) -> Pins:
    """The pinned axes, checked by the Pins model (a mode or stage out of range names its flag)."""
    from runplan.cli.common import build_from_flags, flag_value
    from runplan.errors import SpecError
    from runplan.parallel.layout import Pins

    if recompute is not None and recompute not in ("none", "selective", "full"):
        raise SpecError(
            f"unknown recompute mode {recompute!r}", where="--recompute", hint="use none, selective or full"
        )
    zero_stage = flag_value(zero, "--zero", "count")
    if zero_stage is not None and zero_stage not in (0, 1, 2, 3):
        raise SpecError(f"ZeRO stage must be 0, 1, 2 or 3, got {zero!r}", where="--zero")
    return build_from_flags(Pins, "parallel", "--tp", zero=zero_stage, recompute=recompute, **axes)


def _pins_by_name(items: list[str], flags: dict[str, Any]) -> dict[str, Any]:
    """The pin flags with ``--pin name=value`` items laid over them (any Layout axis, including ones without a
    flag of their own); an axis set by both is refused."""
    from runplan.cli.common import build_from_flags
    from runplan.errors import SpecError
    from runplan.parallel.layout import Layout, Pins

    pins = dict(flags)
    for item in items:
        name, sep, value = item.partition("=")
        name = name.strip().replace("-", "_")
        fields = ", ".join(Layout.model_fields)
        if name not in Layout.model_fields:
            raise SpecError(
                f"'{item}' does not name a layout field",
                where="--pin",
                hint=f"use name=value with one of {fields}",
            )
        if not sep:
            raise SpecError(f"'{item}' gives no value", where="--pin", hint=f"write {name}=VALUE")
        if pins.get(name) is not None:
            raise SpecError(f"{name} is pinned twice", where="--pin", hint="give it once")
        try:  # checked here, so that a bad value is blamed on this --pin item, not on --tp (or no flag at all)
            build_from_flags(Pins, "parallel", "--pin", **{name: value.strip()})
        except SpecError as error:
            raise SpecError(f"{item.strip()}: {error.message}", where="--pin", hint=error.hint) from None
        pins[name] = value.strip()
    return pins


def _constraints_from_flags(**fields: Any) -> Constraints:
    from runplan.cli.common import build_from_flags
    from runplan.parallel.layout import Constraints

    return build_from_flags(Constraints, "constraints", "--max-bubble", **fields)


def _stack_flags(
    preset: str | None,
    flash_attention: bool | None,
    tp_comm_overlap: bool | None,
    selective_recompute: str | None,
    dropout: str | None,
    bf16_grads: bool,
    **fields_as_given: str | bool | None,
) -> dict[str, Any]:
    """The stack fields the flags set (empty: the plan's or the default stack stands); ``fields_as_given``: flags
    whose value is the field's (precision, fp8_recipe, attention_kernel, fused_elementwise, fp8_param_gather,
    optimizer_state_dtype)."""
    from runplan.cli.common import flag_value

    probability = None if dropout is None else flag_value(dropout, "--dropout", "fraction")
    modules = (
        None
        if selective_recompute is None
        else tuple(m.strip() for m in selective_recompute.split(",") if m.strip())
    )
    fields = {
        "preset": preset,
        "flash_attention": flash_attention,
        "tp_comm_overlap": tp_comm_overlap,
        "selective_recompute": modules,
        "hidden_dropout": probability,
        "attention_dropout": probability,
        "gradient_dtype": "bf16" if bf16_grads else None,
        **fields_as_given,
    }
    return {key: value for key, value in fields.items() if value is not None}


def _no_input_flags(flags: dict[str, Any]) -> None:
    """A plan file sets the model, cluster and batch: the flags that would set them again are refused."""
    from runplan.errors import SpecError

    given = [flag for flag, value in flags.items() if value is not None]
    if given:
        raise SpecError(
            f"{given[0]} and a plan file both set the inputs",
            where=given[0],
            hint="edit the plan file, or drop it and use flags",
        )


def _request_from_flags(
    model: str,
    gpu: str | None,
    catalog_file: list[str],
    pins: Pins,
    constraints: Constraints,
    overrides: SearchOverrides,
    stack: dict[str, Any],
    **fields: Any,
) -> tuple[ParallelRequest, str]:
    """The search request the flags describe, and how the model was resolved."""
    from runplan.architect import resolve_model
    from runplan.catalog import load_catalog
    from runplan.cli.common import build_from_flags, warn
    from runplan.parallel.layout import ParallelRequest

    catalog = load_catalog(catalog_file)
    shape, resolution = resolve_model(model, catalog, where="--model")
    for warning in catalog.warnings_for(shape.name):  # a user entry whose shape misses its published count
        warn(warning)
    request = build_from_flags(
        ParallelRequest,
        _REQUEST_PATHS,
        "--gpus",
        model=shape,
        gpu=catalog.gpu(DEFAULT_GPU if gpu is None else gpu, where="--gpu"),
        top=overrides.top,
        stack=stack_from_flags(stack, None),
        mfu_override=overrides.mfu_override,
        constraints=constraints,
        pins=pins,
        **fields,
    )
    return request, resolution


def _required(value: str | None, flag: str) -> str:
    """``value``, or the SpecError for a flag that is required without a plan file."""
    if value is None:
        from runplan.errors import SpecError

        raise SpecError("missing", where=flag, hint="e.g. --model 70b --gpus 512, or give a plan file")
    return value


def _request_from_plan(
    plan_file: Path,
    spec: PlanSpec,
    pins: Pins,
    constraints: Constraints,
    top: int | None,
    mfu: float | None,
    stack: dict[str, Any],
    calibration: Path | None = None,
    zero_by_pin: bool = False,
) -> tuple[ParallelRequest, str, str]:
    """The layout request `runplan plan` would search, with pin and constraint flags laid over the plan's."""
    from runplan.cli.common import calibration_key, warn
    from runplan.plan import budget_fill, filled_stage, layout_request, resolve_inputs

    if calibration is not None:
        spec = spec.model_copy(
            update={"calibration": calibration_key(calibration, plan_file, spec.calibration)}
        )
    # the plan's model, as `runplan plan` sizes it (a GPU-time budget filled at its own layout's speed): the
    # layout flags below explore layouts for that model, they do not re-size it
    inputs = resolve_inputs(
        spec, plan_file.resolve().parent
    )  # catalog, law, calibration: not the constraints
    fill = budget_fill(spec, inputs)
    # the constraint flags first: the plan's batch target is clamped into their range (plan.layout_request)
    merged_constraints = spec.constraints.model_copy(update=constraints.model_dump(exclude_unset=True))
    spec = spec.model_copy(update={"constraints": merged_constraints})
    stage = filled_stage(spec, inputs, fill)
    for warning in inputs.catalog.warnings_for(stage.shape.name):  # a user entry missing its published count
        warn(warning)
    request = layout_request(spec, inputs, stage.shape, stage.allocation.tokens).request
    merged_pins = request.pins.model_copy(update=pins.model_dump(exclude_unset=True))
    update: dict[str, Any] = {"pins": merged_pins}
    if top is not None:
        update["top"] = top
    if mfu is not None:
        update["mfu_override"] = mfu
    if stack:
        update["stack"] = stack_from_flags(stack, request.stack)
    _refuse_zero_flag_against_stack(
        merged_pins.zero, update.get("stack", request.stack).distributed_optimizer, by_pin=zero_by_pin
    )
    return request.model_copy(update=update), stage.resolution, inputs.calibration_label()


def _refuse_zero_flag_against_stack(
    zero: int | None, distributed_optimizer: bool | None, by_pin: bool = False
) -> None:
    """--zero 1-3 (or ``--pin zero=1..3``, ``by_pin``) over a plan whose stack.distributed_optimizer is false (a
    plan file's own pin is refused when it is read, spec.parse_plan): the flag and the key contradict
    (request_rules.zero_against_stack). The error names the flag the user typed, as _pins_by_name's do."""
    from runplan.errors import SpecError
    from runplan.parallel.request_rules import zero_against_stack

    problem = zero_against_stack(zero, distributed_optimizer)
    if problem:
        keep, fix = (f"--pin zero={zero}", "--pin zero=0") if by_pin else (f"--zero {zero}", "--zero 0")
        raise SpecError(
            f"zero={zero}: {problem}" if by_pin else problem,
            where="--pin" if by_pin else "--zero",
            hint=f"remove stack.distributed_optimizer: false from the plan file to keep {keep}, or use {fix}",
        )


def _answer(request: ParallelRequest, resolution: str, as_json: bool, calibration: str = "") -> None:
    from runplan.calibrate.calibration import moe_cautions
    from runplan.parallel.search import ensure_feasible, search

    result = ensure_feasible(search(request), request)
    # under --mfu the times are its; the constants only order the layouts that tie (search._near)
    if request.mfu_override is not None:
        calibration += (
            f"; not behind the step times: --mfu {request.mfu_override:g} sets them (the constants only order "
            "the layouts that tie)"
        )
    # a MoE model on the shipped constants, fitted on dense runs only
    moe_warnings = moe_cautions(request.efficiency, request.model.is_moe)
    # the stack the times assume: its preset and every field that differs from runplan's default stack or from
    # the preset (a flag that sets a preset's field back to the default is shown too)
    from runplan.parallel.stack import Stack

    chosen = request.stack.model_dump(mode="json")
    default = Stack().model_dump(mode="json")
    preset = Stack(preset=request.stack.preset).model_dump(mode="json")
    # (a bf16 stack's dump leaves its unused fp8 recipe out: .get)
    stack = {k: v for k, v in chosen.items() if k == "preset" or v != default.get(k) or v != preset.get(k)}
    if "zero_stages" in stack:  # the stages the search tries, not the engine's whole list
        stack["zero_stages"] = _zero_stages_searched(request.stack)
    if as_json:
        data = result.model_dump(mode="json")
        data["model"]["resolution"] = resolution
        data["stack"] = request.stack.model_dump(mode="json")
        data["calibration"] = calibration  # the line naming the constants behind every time (docs/json.md)
        data["warnings"] = [*data["warnings"], *moe_warnings]
        print_json(data)
        return
    _render(result, resolution, request.constraints.throughput_tolerance, calibration, _stack_line(stack))
    for line in [*result.warnings[1:], *moe_warnings]:  # the first (the batch law, B_opt) is in the header
        warn(line)


def _zero_stages_searched(stack: Stack) -> str:
    """The ZeRO stages the search tries for ``stack``, as the stack line shows them: the engine's
    (Stack.zero_stages, all four when unset) that distributed_optimizer allows (false: ZeRO-0 only, true: ZeRO >= 1;
    search.build_grid's rule), with the key that narrowed them (``0 (distributed_optimizer off)``)."""
    engine = stack.zero_stages or (0, 1, 2, 3)
    sharded = stack.distributed_optimizer
    allowed = [z for z in (0, 1, 2, 3) if sharded is None or (z >= 1) == sharded]
    # none of the engine's stages allowed: build_grid searches the allowed ones
    searched = [z for z in allowed if z in engine] or allowed
    text = "+".join(map(str, searched))
    if set(searched) != set(engine):
        text += f" (distributed_optimizer {'on' if sharded else 'off'})"
    return text


def _stack_line(fields: dict[str, Any]) -> str:
    """One line naming the stack behind the times: its preset, then the fields it or the flags set."""

    def text(value: Any) -> str:
        if isinstance(value, bool):
            return "on" if value else "off"
        if isinstance(value, list):
            return "+".join(map(str, value)) or "none"
        return str(value)

    preset = fields.pop("preset", "default")
    changed = ", ".join(f"{key} {text(value)}" for key, value in fields.items())
    return f"training stack: {preset}" + (f": {changed}" if changed else "")


def _render(
    result: SearchResult, resolution: str, tolerance: float, calibration: str = "", stack: str = ""
) -> None:
    from runplan.cli.common import console
    from runplan.report.tables import fitted_table
    from runplan.units import format_si

    out = console()
    c = result.cluster
    out.print(
        f"[bold]{resolution}[/bold] on {c['n_gpus']} x {c['gpu']} ({c['gpus_per_node']} per node), "
        f"sequence {result.seq_len}"
    )
    out.print(
        f"{result.candidates:,} layout{'s' if result.candidates != 1 else ''} evaluated "
        f"({result.space_size:,} counting every micro-batch count), "
        f"{result.feasible:,} feasible, in {result.search_seconds * 1e3:.0f} ms"
    )
    if calibration:
        out.print(f"time-model constants: {calibration}")
    if stack:
        out.print(stack, markup=False)
    low, high = result.batch_range_tokens
    out.print(f"global batch range {format_si(low)} to {format_si(high)} tokens; {result.warnings[0]}")
    headers = [
        "#",
        "TP",
        "PP",
        "DP",
        "CP",
        "EP",
        "ZeRO",
        "mbs",
        "m",
        "v",
        "recompute",
        "batch",
        "bubble",
        "mem GB",
        "step s",
        "tok/s/GPU",
        "MFU",
    ]
    rows = [
        [
            str(i),
            str(x.tp),
            str(x.pp),
            str(x.dp),
            str(x.cp),
            str(x.ep),
            str(x.zero),
            str(x.micro_batch),
            str(x.microbatches),
            str(x.vpp),
            x.recompute,
            format_si(x.global_batch_tokens),
            f"{x.bubble_fraction:.1%}",
            f"{x.memory_bytes.total / 1e9:.1f}",
            f"{x.step_seconds:.2f}",
            f"{x.tokens_per_second_per_gpu:,.0f}",
            f"{x.mfu:.1%}",
        ]
        for i, x in enumerate(result.layouts, 1)
    ]
    title = f"Best layouts (ranked by predicted tokens/s; within {tolerance:.0%} of the fastest, by memory margin)"
    out.print(fitted_table(out, headers, rows, title=title, box_style="HEAVY_HEAD"))
    out.print(_COLUMN_MEANINGS, markup=False)
    _render_best(out, result, tolerance)


#: What each number of the ranked table is and its unit (the headers are short; docs/parallel.md, --json contract)
_COLUMN_MEANINGS = (
    "mbs = micro-batch size in sequences; m = micro-batches per step; v = interleaved chunks per pipeline stage; "
    "batch = global batch in tokens per step (d*mbs*m*s); bubble = (p-1)/(v*m), pipeline idle time over compute "
    "time; mem GB = memory per GPU in 1e9 bytes (the more loaded of the first and last stage); step s = seconds per "
    "step; tok/s/GPU = tokens per second per GPU; MFU = model FLOPs utilization (PaLM's model FLOPs per token x "
    "tokens/s over the GPUs' bf16 peak)"
)


def _render_best(out: Any, result: SearchResult, tolerance: float) -> None:
    """The best layout's memory and time by term, why it is feasible, and the best of each TP degree."""
    best = result.layouts[0]
    mem = best.memory_bytes
    out.print(
        f"[bold]Best layout[/bold], memory per GPU ({best.memory_stage} stage): weights "
        f"{mem.weights / 1e9:.2f} GB, gradients {mem.gradients / 1e9:.2f}, "
        f"optimizer {mem.optimizer / 1e9:.2f}, "
        f"activations {mem.activations / 1e9:.2f}, other {mem.other / 1e9:.2f}, "
        f"total {mem.total / 1e9:.2f} GB"
    )
    ts = best.time_seconds
    parts = ", ".join(f"{k.replace('_', ' ')} {v:.3f}" for k, v in ts.model_dump().items())
    out.print(
        f"step {best.step_seconds:.3f} s: {parts}; MFU {best.mfu:.1%}, HFU {best.hfu:.1%}, "
        f"{best.tokens_per_second:,.0f} tokens/s"
        + (f", {best.days_to_train:.1f} days to train" if best.days_to_train else "")
    )
    for line in best.why:
        out.print(f"  - {line}")
    from runplan.report.trade import margin_trade  # not report.sections: it loads the whole plan

    trade = margin_trade(best, [result.fastest] if result.fastest else [], tolerance)
    if trade:
        out.print(f"  - {trade}")
    for line in best.violations:
        out.print(f"  - [yellow]breaks[/yellow] {line}")
    if len(result.best_by_tp) > 1:
        ranked = ", ".join(
            f"TP{b.tp} {b.mfu:.1%}"
            + (
                " (chosen)"
                if b.tp == best.tp
                else f" ({-b.behind_best:.1%} more tokens/s, less memory margin)"
                if b.behind_best < 0
                else f" ({b.behind_best:.1%} fewer tokens/s)"
            )
            for b in result.best_by_tp
        )
        out.print(f"best layout per TP degree, MFU (pin one with --tp): {ranked}")


def register(app: typer.Typer) -> None:
    app.command(name="parallelize")(handle_errors(parallelize))


def stack_from_flags(flags: dict[str, Any], base: Stack | None) -> Stack:
    """The stack the flags ask for: a preset (or ``base``, the plan's stack) with the flags' fields laid over."""
    from pydantic import ValidationError

    from runplan.errors import SpecError
    from runplan.parallel.stack import Stack

    start = {} if base is None or "preset" in flags else base.model_dump()
    if flags.get("precision", "fp8") != "fp8":  # --precision bf16 over an fp8 plan drops the plan's recipe
        start.pop("fp8_recipe", None)
    try:
        return Stack.model_validate({**start, **flags})
    except ValidationError as error:
        # a bad value only: the error modules stay unloaded on the way to an answer (tests/test_cli_startup.py)
        from runplan.cli.flags import flag_for
        from runplan.validation import spec_error_from_validation

        found = spec_error_from_validation(error, Stack, prefix=("stack",))
        where, hint = found.where, found.hint
        typed = [key for key in flags if key != "preset"]
        # the flags the clash is about: those whose removal alone lets the stack validate
        named = [
            key for key in typed if _validates({**start, **{k: v for k, v in flags.items() if k != key}})
        ]
        named = named or typed
        overrides = sorted({str(flag_for(f"stack.{key}", "parallelize")) for key in named})
        if where == "stack" and "preset" in flags and overrides:
            # two fields of the whole stack clash and the user typed only some of them: the preset set the rest
            where = f"--stack {flags['preset']} with {', '.join(overrides)}"
            hint = hint or (
                f"the other setting comes from the preset (configs/stacks.yaml): drop {', '.join(overrides)} "
                "or choose a --stack preset without it"
            )
        raise SpecError(found.message, where=where, hint=hint) from None


def _validates(fields: dict[str, Any]) -> bool:
    """Whether these stack fields make a valid Stack."""
    from pydantic import ValidationError

    from runplan.parallel.stack import Stack

    try:
        Stack.model_validate(fields)
    except ValidationError:
        return False
    return True
