"""`runplan sweep`: design the proxy isoFLOP sweep to run before the main run.

Parses flags, calls ``runplan.scaling.sweep.design_sweep``, renders a table, JSON, or a CSV that
`runplan fit` reads back once the losses are filled in. Nothing heavy is imported at module level.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from runplan.cli.budget import LAW_HELP, MFU_HELP
from runplan.cli.common import handle_errors, print_json, warn
from runplan.defaults import DEFAULT_GPU, DEFAULT_SEQ_LEN, DEFAULT_VOCAB_SIZE

if TYPE_CHECKING:
    from runplan.scaling.sweep import Sweep


def _sizes_phrase(sweep: Sweep) -> str:
    """The header's sizes: ``7 sizes each``, or where neighbouring sizes fell on one generated shape (listed
    once) how many distinct models each budget has, ``7 sizes asked, 4 distinct models`` (``4/3/4`` per budget,
    largest first, when they differ)."""
    counts = sweep.models_per_budget
    if all(k == sweep.sizes_per_budget for k in counts):
        return f"{sweep.sizes_per_budget} sizes each"
    listed = str(counts[0]) if len(set(counts)) == 1 else "/".join(str(k) for k in counts)
    return f"{sweep.sizes_per_budget} sizes asked, {listed} distinct models"


def _model_flops_phrase(sweep: Sweep, peak_flops: float | None) -> str:
    """What the GPU-hours convert: the shapes' model FLOPs (6 × matmul parameters + attention per token, PaLM
    App. B; ModelShape.model_flops_per_token), larger than the 6·N·D total before them (1.7e22 against 1.55e22
    at 2e23: 11,918 GPU-hours, where 1.55e22 / (989e12 × 0.4) / 3600 would be 10,912)."""
    if sweep.gpu_hours is None or sweep.mfu is None or not peak_flops:
        return ""
    model_flops = sweep.gpu_hours * 3600 * peak_flops * sweep.mfu
    return (
        f" for {model_flops:.3g} model FLOPs (6 × matmul params + attention at sequence {sweep.seq_len:,} per "
        "token, PaLM App. B)"
    )


def render(sweep: Sweep, peak_flops: float | None = None) -> None:
    """The sweep as a table and a total line; ``peak_flops`` (the GPU's bf16 peak, FLOP/s) lets the line say the
    model FLOPs its GPU-hours convert (GPU-hours × 3600 × peak × MFU)."""
    from rich.table import Table

    from runplan.cli.budget import fmt_amount, gpus_phrase
    from runplan.cli.common import console
    from runplan.report.format import fmt_duration
    from runplan.scaling.sweep import WSD_HOURS_HEADER, wsd_hours_note
    from runplan.units import format_si

    out = console()
    out.print(
        f"[bold]Proxy sweep[/bold] for a {sweep.main_flops:.3g}-FLOP run (law {sweep.law}; N counts "
        f"{sweep.param_count.replace('_', '-')} parameters): {len(sweep.budgets)} budget(s) of "
        + ", ".join(f"{c:.3g}" for c in sweep.budgets)
        + f" FLOPs, {_sizes_phrase(sweep)}"
    )
    table = Table(box=None, padding=(0, 1))

    def si(value: float) -> str:
        return format_si(value).replace(" ", "")

    columns = ["budget", "total", "non-emb", "L", "d_model", "heads", "FFN", "tokens"]
    if sweep.gpu_hours is not None:
        columns.append(WSD_HOURS_HEADER if sweep.wsd else "GPU-h")
    if sweep.wsd:
        columns += ["cooldown@"]
    for column in columns:
        table.add_column(column, justify="right", no_wrap=True)
    for r in sweep.runs:
        row = [
            f"{r.budget_flops:.3g}",  # as the header lists the budgets: one budget, one spelling
            si(r.total_params),
            si(r.non_embedding_params),
            str(r.n_layers),
            str(r.d_model),
            f"{r.n_heads}/{r.n_kv_heads}",
            str(r.ffn_hidden),
            si(r.tokens),
        ]
        if sweep.gpu_hours is not None:
            row.append("-" if r.gpu_hours is None else fmt_amount(r.gpu_hours))
        if sweep.wsd:
            row += [si(r.cooldown_start_tokens or 0)]
        table.add_row(*row)
    out.print(table)
    if sweep.wsd and sweep.gpu_hours is not None:
        out.print(wsd_hours_note(sweep.cooldown_fraction))
    out.print(
        f"total: {sweep.total_flops:.3g} FLOPs = {sweep.total_fraction:.2%} of the main run"
        + (
            f"; {fmt_amount(sweep.gpu_hours)} GPU-hours on {sweep.gpu} at MFU {sweep.mfu:g}"
            + _model_flops_phrase(sweep, peak_flops)
            if sweep.gpu_hours is not None
            else ""
        )
        + (f"; {fmt_amount(sweep.cost_usd)} USD" if sweep.cost_usd is not None else "")
        + (
            f"; {fmt_duration(sweep.days * 86400)} on {gpus_phrase(sweep.gpus)} if the proxies keep them all busy"
            if sweep.days is not None and sweep.gpus is not None
            else ""
        )
    )
    if sweep.wsd:
        out.print(
            f"WSD: {sweep.training_runs} stable runs instead of {len(sweep.runs)} trainings "
            f"({sweep.runs_saved} saved); cooldown over the last {sweep.cooldown_fraction:.0%} of each "
            f"branch; FLOPs {sweep.total_flops:.3g} vs {sweep.independent_flops:.3g} independent "
            f"({1 - sweep.total_flops / sweep.independent_flops:.0%} less)"
        )
    from runplan.cli.flags import flags_in_text

    for warning in sweep.warnings:
        warn(flags_in_text(warning, "sweep"))


def sweep_command(
    flops: str | None = typer.Option(
        None, "--flops", help="Main-run training compute C in FLOPs, e.g. 2e23."
    ),
    gpus: str | None = typer.Option(
        None, "--gpus", help="GPUs of the main run: with --days gives C; alone, the sweep's wall-clock days."
    ),
    days: str | None = typer.Option(None, "--days", help="Wall-clock days of the main run on --gpus."),
    gpu: str | None = typer.Option(
        None, "--gpu", help=f"GPU catalog name for GPU-hours (default {DEFAULT_GPU})."
    ),
    mfu: str | None = typer.Option(None, "--mfu", help=MFU_HELP),
    price: str | None = typer.Option(None, "--price-per-gpu-hour", help="USD per GPU-hour, for the cost."),
    fraction: str = typer.Option(
        "0.01", "--fraction", help="Largest proxy budget as a fraction of C (per run)."
    ),
    sizes: int = typer.Option(7, "--sizes", help="Model sizes per budget (5 to 7 is usual)."),
    budgets: int = typer.Option(
        3, "--budgets", help="Budgets a decade apart (2+ let Approach 2 fit exponents; 1 gives one size)."
    ),
    span: str = typer.Option("1.0", "--span", help="Decades of N covered around each budget's optimum."),
    wsd: bool = typer.Option(
        False, "--wsd/--no-wsd", help="One WSD stable run per size, cooldown branches per budget."
    ),
    cooldown: str | None = typer.Option(
        None, "--cooldown", help="With --wsd: cooldown share of each branch's tokens (default 0.2)."
    ),
    seq_len: str | None = typer.Option(
        None, "--seq-len", help=f"Sequence length for the shape-aware FLOPs (default {DEFAULT_SEQ_LEN})."
    ),
    vocab_size: str | None = typer.Option(
        None, "--vocab-size", help=f"Vocabulary of the proxy shapes (default {DEFAULT_VOCAB_SIZE})."
    ),
    law: str | None = typer.Option(None, "--law", help=LAW_HELP),
    output: str | None = typer.Option(None, "-o", "--output", help="Write the CSV for `runplan fit` here."),
    json_output: bool = typer.Option(False, "--json", help="Print JSON (keys in docs/scaling.md)."),
) -> None:
    """Design the proxy isoFLOP sweep to run before the main run; write a CSV that `runplan fit` reads back."""
    from runplan.cli.budget import parse_budget
    from runplan.cli.common import build_from_flags, flag_value, write_output
    from runplan.errors import SpecError
    from runplan.scaling.laws import law_from_flag
    from runplan.scaling.sweep import SweepRequest, design_sweep

    if cooldown is not None and not wsd:  # only WSD runs have a cooldown: the flag would change nothing
        raise SpecError(
            "applies only with --wsd (independent runs have no cooldown)",
            where="--cooldown",
            hint="add --wsd or drop --cooldown",
        )
    budget = parse_budget(flops, gpus, days, gpu, mfu, price)
    request = build_from_flags(
        SweepRequest,
        "sweep",
        "sweep.flops",
        flops=budget.flops,
        law=law_from_flag(law),
        fraction=flag_value(fraction, "--fraction", "fraction"),
        sizes=sizes,
        budgets=budgets,
        gpu=budget.gpu,
        mfu=budget.mfu,
        wsd=wsd,
        span_decades=flag_value(span, "--span"),
        cooldown_fraction=flag_value(cooldown, "--cooldown"),  # None: the request's default
        seq_len=seq_len,  # a TokenLength field: 8k = 8192
        vocab_size=flag_value(vocab_size, "--vocab-size", "count"),
        price_per_gpu_hour=budget.price,
        gpus=budget.gpus,
    )
    result = design_sweep(request)
    if output is not None:
        write_output(result.to_csv(), output, "-o")
    if json_output:
        print_json(result.model_dump(mode="json"))
    else:
        render(result, request.gpu.bf16_flops if request.gpu is not None else None)
        if output is not None:
            print(f"wrote {output}: fill in the loss column, then `runplan fit {output}`")


def register(app: typer.Typer) -> None:
    app.command(name="sweep")(handle_errors(sweep_command))
