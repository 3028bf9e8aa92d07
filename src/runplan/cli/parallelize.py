"""`runplan parallelize`: the best TP x PP x DP x EP x CP layouts for a model on a cluster.

Parses flags into ``runplan.parallel.layout.ParallelRequest`` (the same models a plan file fills), calls
``runplan.parallel.search.search``, renders. JSON keys (stable, docs/parallel.md): model, cluster, candidates,
feasible, layouts, plus space_size, batch_range_tokens, critical_batch, best_by_tp, notes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer

from runplan.cli.common import handle_errors, print_json
from runplan.defaults import DEFAULT_GPU, DEFAULT_SEQ_LEN

#: The flag that fills each field of Pins, Constraints and ParallelRequest (for error messages).
_FLAG_OF = {
    "tp": "--tp",
    "pp": "--pp",
    "dp": "--dp",
    "ep": "--ep",
    "cp": "--cp",
    "zero": "--zero",
    "micro_batch": "--mbs",
    "microbatches": "--microbatches",
    "vpp": "--vpp",
    "recompute": "--recompute",
    "max_bubble_fraction": "--max-bubble",
    "memory_headroom_fraction": "--headroom",
    "reserve_bytes": "--reserve",
    "min_global_batch_tokens": "--min-batch",
    "max_global_batch_tokens": "--max-batch",
    "n_gpus": "--gpus",
    "gpus_per_node": "--gpus-per-node",
    "seq_len": "--seq-len",
    "global_batch_tokens": "--global-batch",
    "global_batch_tolerance": "--batch-tolerance",
    "training_tokens": "--training-tokens",
    "top": "--top",
    "mfu_override": "--mfu",
}


def _overrides_model() -> Any:
    """--top and --mfu, typed as ParallelRequest types them: they also lay over a plan file's request."""
    from pydantic import BaseModel, ConfigDict, Field

    from runplan.parallel.layout import MfuFraction
    from runplan.units import PositiveCount

    class Overrides(BaseModel):
        model_config = ConfigDict(extra="forbid", frozen=True)

        top: PositiveCount | None = Field(None, description="How many ranked layouts to return.")
        mfu_override: MfuFraction | None = Field(None, description="Use this MFU instead of the time model.")

    return Overrides


def parallelize(
    plan_file: Path | None = typer.Argument(
        None,
        help="A plan file: its model (or allocated shape), cluster, constraints and pins; pin flags override.",
    ),
    model: str | None = typer.Option(None, "--model", help="Catalog name (llama-3.1-70b) or a size (70b)."),
    gpus: str | None = typer.Option(None, "--gpus", help="GPUs in the job, e.g. 512."),
    gpu: str | None = typer.Option(None, "--gpu", help=f"GPU type from the catalog (default {DEFAULT_GPU})."),
    gpus_per_node: str | None = typer.Option(None, "--gpus-per-node", help="Override GPUs per node."),
    seq_len: str | None = typer.Option(
        None, "--seq-len", help=f"Sequence length in tokens, e.g. 8192 or 128k (default {DEFAULT_SEQ_LEN})."
    ),
    global_batch: str | None = typer.Option(None, "--global-batch", help="Target tokens per step, e.g. 4M."),
    batch_tolerance: str | None = typer.Option(
        None, "--batch-tolerance", help="Allowed distance from the target batch, fraction (default 0.1)."
    ),
    min_batch: str | None = typer.Option(None, "--min-batch", help="Smallest global batch, tokens."),
    max_batch: str | None = typer.Option(
        None, "--max-batch", help="Largest global batch, tokens (default: the critical batch)."
    ),
    training_tokens: str | None = typer.Option(
        None,
        "--training-tokens",
        help="Tokens to train (days, critical batch); default 20 x params for the batch law.",
    ),
    top: str | None = typer.Option(None, "--top", help="How many layouts to show (default 5)."),
    max_bubble: str | None = typer.Option(None, "--max-bubble", help="Largest bubble fraction (0.15)."),
    headroom: str | None = typer.Option(None, "--headroom", help="HBM fraction kept free (0.05)."),
    reserve: str | None = typer.Option(None, "--reserve", help="Bytes reserved per GPU (3GB)."),
    allow_cross_node_tp: bool = typer.Option(False, "--allow-cross-node-tp", help="Allow TP beyond a node."),
    tp: str | None = typer.Option(None, "--tp", help="Pin tensor parallelism."),
    pp: str | None = typer.Option(None, "--pp", help="Pin pipeline parallelism."),
    dp: str | None = typer.Option(None, "--dp", help="Pin data parallelism."),
    ep: str | None = typer.Option(None, "--ep", help="Pin expert parallelism (MoE)."),
    cp: str | None = typer.Option(None, "--cp", help="Pin context parallelism."),
    zero: str | None = typer.Option(
        None, "--zero", help="Pin the ZeRO stage 0-3 (1 = distributed optimizer)."
    ),
    mbs: str | None = typer.Option(None, "--mbs", help="Pin the micro-batch size (sequences)."),
    microbatches: str | None = typer.Option(None, "--microbatches", help="Pin micro-batches per step."),
    vpp: str | None = typer.Option(None, "--vpp", help="Pin interleaved chunks per pipeline rank."),
    recompute: str | None = typer.Option(None, "--recompute", help="Pin recomputation: none|selective|full."),
    sequence_parallel: bool | None = typer.Option(
        None,
        "--sequence-parallel/--no-sequence-parallel",
        help="Pin sequence parallelism (default: on with TP).",
    ),
    bf16_grads: bool = typer.Option(
        False, "--bf16-grads", help="bf16 gradients instead of fp32 accumulation."
    ),
    mfu: str | None = typer.Option(None, "--mfu", help="Use this MFU instead of predicting step time."),
    catalog_file: list[str] = typer.Option([], "--catalog", help="Extra catalog YAML file(s)."),
    calibration: Path | None = typer.Option(
        None, "--calibration", help="Calibration file from `runplan calibrate` (default: the shipped one)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON (keys in docs/parallel.md)."),
) -> None:
    """Search every parallel layout exhaustively; rank the ones that fit by predicted throughput."""
    from runplan.architect import resolve_model
    from runplan.catalog import load_catalog
    from runplan.cli.common import build_from_flags, flag_value
    from runplan.errors import SpecError
    from runplan.parallel.layout import Constraints, ParallelRequest, Pins

    if plan_file is None:
        for flag, value in (("--model", model), ("--gpus", gpus)):
            if value is None:
                raise SpecError(
                    "missing", where=flag, hint="e.g. --model 70b --gpus 512, or give a plan file"
                )
    if recompute is not None and recompute not in ("none", "selective", "full"):
        raise SpecError(
            f"unknown recompute mode {recompute!r}", where="--recompute", hint="use none, selective or full"
        )
    zero_stage = flag_value(zero, "--zero", "count")
    if zero_stage is not None and zero_stage not in (0, 1, 2, 3):
        raise SpecError(f"ZeRO stage must be 0, 1, 2 or 3, got {zero!r}", where="--zero")
    pins = build_from_flags(
        Pins,
        _FLAG_OF,
        "--tp",
        tp=tp,
        pp=pp,
        dp=dp,
        ep=ep,
        cp=cp,
        zero=zero_stage,
        micro_batch=mbs,
        microbatches=microbatches,
        vpp=vpp,
        recompute=recompute,
        sequence_parallel=sequence_parallel,
    )
    constraints = build_from_flags(
        Constraints,
        _FLAG_OF,
        "--max-bubble",
        max_bubble_fraction=max_bubble,
        memory_headroom_fraction=headroom,
        reserve_bytes=reserve,
        min_global_batch_tokens=min_batch,
        max_global_batch_tokens=max_batch,
        allow_cross_node_tp=allow_cross_node_tp or None,
    )
    overrides = build_from_flags(_overrides_model(), _FLAG_OF, "--top", top=top, mfu_override=mfu)
    top_count, mfu_value = overrides.top, overrides.mfu_override
    if plan_file is not None:
        cluster_flags = {
            "--model": model,
            "--gpus": gpus,
            "--gpu": gpu,
            "--gpus-per-node": gpus_per_node,
            "--seq-len": seq_len,
            "--global-batch": global_batch,
            "--training-tokens": training_tokens,
            "--catalog": catalog_file or None,
        }
        given = [flag for flag, value in cluster_flags.items() if value is not None]
        if given:
            raise SpecError(
                f"{given[0]} and a plan file both set the inputs",
                where=given[0],
                hint="edit the plan file, or drop it and use flags",
            )
        request, resolution, label = _request_from_plan(
            plan_file, pins, constraints, top_count, mfu_value, bf16_grads, calibration
        )
        _answer(request, resolution, as_json, label)
        return
    catalog = load_catalog(catalog_file)
    shape, resolution = resolve_model(model, catalog, where="--model")
    spec = catalog.gpu(gpu or DEFAULT_GPU, where="--gpu")
    request = build_from_flags(
        ParallelRequest,
        _FLAG_OF,
        "--gpus",
        model=shape,
        gpu=spec,
        n_gpus=gpus,
        gpus_per_node=gpus_per_node,
        seq_len=DEFAULT_SEQ_LEN if seq_len is None else seq_len,
        global_batch_tokens=global_batch,
        global_batch_tolerance=batch_tolerance,
        training_tokens=training_tokens,
        top=top_count,
        gradient_bytes=2 if bf16_grads else None,
        mfu_override=mfu_value,
        constraints=constraints,
        pins=pins,
    )
    request, label = _calibrated(request, calibration)
    with _flags_for_paths():
        _answer(request, resolution, as_json, label)


def _calibrated(request: Any, calibration: Path | None) -> tuple[Any, str]:
    """The request with the constants of ``--calibration`` (if given), and the line naming them."""
    from runplan.calibrate.calibration import load_calibration, shipped_calibration

    if calibration is None:
        return request, shipped_calibration().label(request.gpu)
    cal = load_calibration(calibration)
    eff = cal.efficiency(request.gpu)
    return request.model_copy(update={"efficiency": eff}), cal.label(request.gpu)


#: The flag that sets each plan-key path the layout search names in its errors.
_FLAG_OF_PATH = {
    "cluster.gpus": "--gpus",
    "cluster.gpus_per_node": "--gpus-per-node",
    "cluster.gpu": "--gpu",
    "schedule.global_batch_tokens": "--global-batch",
    "budget": "--training-tokens",
    "constraints.min_global_batch_tokens": "--min-batch",
    "constraints.max_global_batch_tokens": "--max-batch",
    "constraints.reserve_bytes": "--reserve",
    "mfu_override": "--mfu",
    "training.seq_len": "--seq-len",
    **{f"parallel.{field}": flag for field, flag in _FLAG_OF.items()},
}


@contextlib.contextmanager
def _flags_for_paths() -> Iterator[None]:
    """Name the flag, not the plan key, in errors about a request built from flags."""
    from runplan.errors import SpecError

    try:
        yield
    except SpecError as error:
        path = error.where or ""
        flag = _FLAG_OF_PATH.get(path) or _FLAG_OF_PATH.get(path.rsplit(".", 1)[0]) or path
        raise SpecError(error.message, where=flag, hint=error.hint) from None


def _request_from_plan(
    plan_file: Path,
    pins: Any,
    constraints: Any,
    top: int | None,
    mfu: float | None,
    bf16_grads: bool,
    calibration: Path | None = None,
) -> tuple[Any, str, str]:
    """The layout request `runplan plan` would search, with pin and constraint flags laid over the plan's."""
    from runplan.cli.common import load_plan_file, located
    from runplan.plan import allocation_stage, layout_request, resolve_inputs

    loaded, spec = load_plan_file(plan_file)
    if calibration is not None:
        spec = spec.model_copy(update={"calibration": str(calibration.resolve())})
    with located(loaded):
        inputs = resolve_inputs(spec, plan_file.resolve().parent)
        stage = allocation_stage(spec, inputs)
        request = layout_request(spec, inputs, stage.shape, stage.allocation.tokens).request
    merged_pins = request.pins.model_copy(update=pins.model_dump(exclude_unset=True))
    merged_constraints = request.constraints.model_copy(update=constraints.model_dump(exclude_unset=True))
    update: dict[str, Any] = {"pins": merged_pins, "constraints": merged_constraints}
    if top is not None:
        update["top"] = top
    if mfu is not None:
        update["mfu_override"] = mfu
    if bf16_grads:
        update["gradient_bytes"] = 2
    return request.model_copy(update=update), stage.resolution, inputs.calibration_label()


def _answer(request: Any, resolution: str, as_json: bool, calibration: str = "") -> None:
    from runplan.parallel.search import ensure_feasible, search

    result = ensure_feasible(search(request))
    if as_json:
        data = result.model_dump(mode="json")
        data["model"]["resolution"] = resolution
        print_json(data)
        return
    _render(result, resolution, calibration)


def _render(result: Any, resolution: str, calibration: str = "") -> None:
    from rich.table import Table

    from runplan.cli.common import console
    from runplan.units import format_si

    out = console()
    out.width = max(out.width, 150)
    c = result.cluster
    out.print(
        f"[bold]{resolution}[/bold] on {c['n_gpus']} x {c['gpu']} ({c['gpus_per_node']} per node), "
        f"sequence {result.seq_len}"
    )
    out.print(
        f"{result.candidates:,} layouts evaluated ({result.space_size:,} counting every micro-batch count), "
        f"{result.feasible:,} feasible, in {result.search_seconds * 1e3:.0f} ms"
    )
    low, high = result.batch_range_tokens
    out.print(f"global batch range {format_si(low)} to {format_si(high)} tokens; {result.notes[0]}")
    if calibration:
        out.print(f"time-model constants: {calibration}")
    table = Table(title="Best layouts (ranked by predicted tokens/s)")
    for col in (
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
    ):
        table.add_column(col, justify="right")
    for i, x in enumerate(result.layouts, 1):
        table.add_row(
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
        )
    out.print(table)
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
    if len(result.best_by_tp) > 1:
        ranked = ", ".join(
            f"TP{b.tp} {b.mfu:.1%}"
            + (" (best)" if b.behind_best <= 0 else f" ({b.behind_best:.1%} fewer tokens/s)")
            for b in result.best_by_tp
        )
        out.print(f"best layout per TP degree, MFU (pin one with --tp): {ranked}")


def register(app: typer.Typer) -> None:
    app.command(name="parallelize")(handle_errors(parallelize))
