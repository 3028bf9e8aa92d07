"""`runplan allocate`: parameters and tokens for a compute budget, the predicted loss, and what it costs.

The command parses flags into an ``Objective`` and a budget, calls ``runplan.scaling.allocate.allocate`` and
renders the ``Allocation``. JSON keys: docs/scaling.md. Nothing heavy is imported at module level.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from runplan.cli.budget import GPU_HELP, LAW_HELP, MFU_HELP, explained_table, parse_budget
from runplan.cli.common import handle_errors, print_json, warn
from runplan.scaling import DEFAULT_LAW

if TYPE_CHECKING:
    from runplan.scaling.allocate import Allocation, Objective
    from runplan.scaling.laws import ParametricLaw


def _objective(
    tokens_per_param: str | None, params: str | None, inference_tokens: str | None, target_loss: str | None
) -> Objective:
    from runplan.cli.common import build_from_flags
    from runplan.errors import SpecError
    from runplan.scaling.allocate import Objective

    given = [
        flag
        for flag, value in (
            ("--tokens-per-param", tokens_per_param),
            ("--params", params),
            ("--inference-tokens", inference_tokens),
        )
        if value is not None
    ]
    if len(given) > 1:
        raise SpecError(f"choose one objective, got {' and '.join(given)}", where=given[1])
    if target_loss is not None and inference_tokens is None:
        raise SpecError(
            "--target-loss applies to the inference-optimal objective",
            where="--target-loss",
            hint="add --inference-tokens",
        )
    kind = "compute_optimal"
    if tokens_per_param is not None:
        kind = "tokens_per_param"
    elif params is not None:
        kind = "fixed_params"
    elif inference_tokens is not None:
        kind = "inference_optimal"
    return build_from_flags(
        Objective,
        "objective",
        given[0] if given else "--flops",
        kind=kind,
        tokens_per_param=tokens_per_param,
        params=params,
        inference_tokens=inference_tokens,
        target_loss=target_loss,
    )


def _count_phrase(param_count: str, moe_total: float | None = None) -> str:
    if moe_total is not None:
        count = "total" if param_count == "total" else "non-embedding"
        return (
            f"N counts active {count} parameters (MoE: {moe_total:.4g} with every expert; C = 6·N_active·D)"
        )
    if param_count == "total":
        return "N counts total parameters, embeddings included (Chinchilla's convention)"
    return "N counts non-embedding parameters (Kaplan et al. 2020's convention)"


def _against_compute_optimal(a: Allocation) -> list[tuple[str, str]]:
    """Rows comparing a fixed-ratio or fixed-size allocation with the compute-optimal one at its budget."""
    from runplan.report.format import fmt_change

    rows = [
        (
            "compute-optimal at this budget",
            f"N {_si(a.compute_optimal_params)}, D {_si(a.compute_optimal_tokens)}, "
            f"loss {a.compute_optimal_loss:.4f}",
        ),
        ("loss penalty", f"{a.loss_penalty:+.4f}"),
    ]
    if a.compute_overhead is not None:
        rows.append(
            (
                "compute-optimal FLOPs for the same loss",
                f"{a.compute_optimal_flops_same_loss:.3g} ({fmt_change(a.compute_overhead)} spent here)",
            )
        )
    return rows


def render(
    allocation: Allocation,
    law: ParametricLaw,
    *,
    shape_line: bool = True,
    currency: str = "USD",
    of_budget: bool = False,
    budget_why: str = "C given (--flops)",
) -> None:
    """Human-readable allocation on stdout (rich), every number with its reason (:func:`_reasons`);
    ``currency``: the plan's (cost.currency), USD from flags; ``of_budget``: the days and cost are a GPU-time
    budget's, spent whole (`runplan plan` predicts its own); ``budget_why``: where the budget C came from."""
    from runplan.cli.common import console
    from runplan.report.format import fmt_ratio
    from runplan.units import format_si

    out = console()
    a = allocation
    titles = {
        "compute_optimal": "compute-optimal (Hoffmann et al. 2022, Eq. 4)",
        "tokens_per_param": f"fixed ratio {a.tokens_per_param:.4g} tokens/param",
        "fixed_params": f"fixed size {format_si(a.params)} parameters",
        "inference_optimal": "inference-optimal (Sardana et al. 2024)",
    }
    out.print(f"[bold]Allocation[/bold]: {titles[a.objective]}; law [bold]{a.law}[/bold]")
    out.print(
        f"  law: L = {law.E:.4g} + {law.A:.5g}/N^{law.alpha:.4g} + {law.B:.5g}/D^{law.beta:.4g}; "
        f"{_count_phrase(a.param_count, a.moe_total_params)}"
    )
    rows: list[tuple[str, str]] = []
    if a.budget_flops is not None:
        rows.append(("budget", f"{a.budget_flops:.3g} FLOPs"))
    rows += [
        ("parameters N", f"{format_si(a.params)} ({a.params:.4g})"),
        ("tokens D", f"{format_si(a.tokens)} ({a.tokens:.4g})"),
        ("tokens per parameter", fmt_ratio(a.tokens_per_param)),
        ("training FLOPs 6ND", f"{a.flops:.3g}"),
        ("predicted loss", f"{a.loss:.4f}"),
    ]
    if a.intervals is not None:
        rows = [_with_interval(row, a.intervals) for row in rows]
    if a.objective == "inference_optimal":
        rows = [row for row in rows if row[0] != "training FLOPs 6ND"]
    if a.objective in ("tokens_per_param", "fixed_params"):
        rows += _against_compute_optimal(a)
    if a.objective == "inference_optimal":
        rows += [
            ("target loss", f"{a.target_loss:.4f}"),
            ("inference tokens", f"{a.inference_tokens:.3g}"),
            ("training FLOPs", f"{a.training_flops:.3g}"),
            ("inference FLOPs 2·N·D_inf", f"{a.inference_flops:.3g}"),
            ("total FLOPs", f"{a.total_flops:.3g}"),
            (
                "compute-optimal model, same loss",
                f"N {_si(a.compute_optimal_params)}: total {a.compute_optimal_total_flops:.3g} FLOPs",
            ),
            ("saving", f"{_no_negative_zero(a.total_flops_saving or 0.0):.1%} of total FLOPs"),
        ]
    rows += _hardware_rows(a, currency, of_budget)
    why = _reasons(a, law, budget_why)
    explained = [(key, value, why[key.removeprefix("budget's ")]) for key, value in rows]
    out.print(explained_table(explained, out.width))
    line = _shape_line(a, law) if shape_line else None
    if line:
        out.print(line)
    for warning in a.warnings:  # folded at the terminal width, as every command's warnings
        warn(warning)


def _reasons(a: Allocation, law: ParametricLaw, budget_why: str) -> dict[str, str]:
    """The one-line formula and source behind each row :func:`render` prints, by row name: the formulas of
    runplan.scaling.allocate (Hoffmann et al. 2022 Eq. 2 and 4; Sardana et al. 2024 §2) and scaling.budget."""
    split = {
        "compute_optimal": f"N_opt = G·(C/6)^a, a = β/(α+β) = {law.a:.3g} (Hoffmann et al. 2022, Eq. 4)",
        "tokens_per_param": f"sqrt(C/(6·r)), r = {a.tokens_per_param:.4g}: C = 6·N·(r·N)",
        "fixed_params": "given (--params, or the plan's model:)",
        "inference_optimal": "least 6·N·D_tr + 2·N·D_inf at the target loss (Sardana et al. 2024, §2)",
    }
    default_target = (
        a.target_loss is not None
        and a.budget_flops is not None
        and math.isclose(a.target_loss, law.compute_optimal_loss(a.budget_flops), rel_tol=1e-9)
    )
    return {
        "budget": budget_why,
        "parameters N": split[a.objective],
        "tokens D": "solves L(N, D) = target loss (Hoffmann et al. 2022, Eq. 2)"
        if a.objective == "inference_optimal"
        else "C/(6·N)",
        "tokens per parameter": "D / N; Chinchilla ≈ 20 (Hoffmann et al. 2022, Table 3)",
        "training FLOPs 6ND": "C = 6·N·D: forward 2ND + backward 4ND (Kaplan et al. 2020, §2.1)",
        "predicted loss": "L = E + A/N^α + B/D^β (Hoffmann et al. 2022, Eq. 2)"
        if a.moe_total_params is None
        else "L = E + A/N^α + B/D^β in active parameters (the law line above says how A counts experts)",
        "compute-optimal at this budget": "the same C split by Eq. 4 (Hoffmann et al. 2022)",
        "loss penalty": "loss − the compute-optimal loss at the same C",
        "compute-optimal FLOPs for the same loss": "6·(K/(L − E))^((α+β)/(αβ)): Eq. 4's frontier inverted",
        "target loss": "compute-optimal loss at the budget (Eq. 4 in Eq. 2)"
        if default_target
        else "given (--target-loss, or objective.target_loss)",
        "inference tokens": "lifetime tokens served, given (--inference-tokens)",
        "training FLOPs": "6·N·D_tr (may exceed the budget: the target sets N, D)",
        "inference FLOPs 2·N·D_inf": "2·N per token, weights only (Sardana et al. 2024, §2)",
        "total FLOPs": "training + inference",
        "compute-optimal model, same loss": "Eq. 4's model at the target loss, serving the same tokens",
        "saving": "1 − total / the compute-optimal model's total",
        "GPU-hours": "6·N·D / (bf16 peak × MFU) / 3600 (MFU: PaLM §4.1)",
        "wall-clock": "GPU-hours / GPUs / 24, no failures",
        "cost": "GPU-hours × price per GPU-hour",
    }


def _hardware_rows(a: Allocation, currency: str, of_budget: bool) -> list[tuple[str, str]]:
    """GPU-hours, wall-clock and cost of an allocation given a GPU (``of_budget``: a GPU-time budget's, spent
    whole; `runplan plan` predicts the run's own days and cost)."""
    from runplan.cli.budget import fmt_amount, gpus_phrase

    if a.gpu_hours is None:
        return []
    rows = [("GPU-hours", f"{fmt_amount(a.gpu_hours)} on {a.gpu} at MFU {a.mfu:.3g}")]
    if a.days is not None and a.gpus is not None:
        rows.append(
            (
                "budget's wall-clock" if of_budget else "wall-clock",
                f"{_days(a.days)} on {gpus_phrase(a.gpus)}",
            )
        )
    if a.cost_usd is not None:
        price = a.cost_usd / a.gpu_hours
        rows.append(
            (
                "budget's cost" if of_budget else "cost",
                f"{fmt_amount(a.cost_usd)} {currency} at {price:.4g} {currency} per GPU-hour"
                + (" (`runplan plan`: the predicted days and cost)" if of_budget else ""),
            )
        )
    return rows


def _days(days: float) -> str:
    """Wall-clock days with separators (``28,571.3 days``); under a day in hours or minutes, never ``0.0 days``."""
    from runplan.report.format import fmt_duration

    return f"{days:,.1f} days" if days >= 1.0 else fmt_duration(days * 86400.0)


def _no_negative_zero(fraction: float) -> float:
    """A fraction that rounds to 0.0% printed as ``0.0%``, not ``-0.0%`` (a -1e-16 saving is none)."""
    return 0.0 if abs(fraction) < 5e-4 else fraction


def _with_interval(row: tuple[str, str], intervals: Any) -> tuple[str, str]:
    """A parameters/tokens/loss row with its bootstrap percentiles appended (law fitted with resamples); none
    where every resample gives the same value: N and D that --params or --tokens-per-param fix with C."""
    from runplan.units import format_si

    key, text = row
    found = {"parameters N": intervals.params, "tokens D": intervals.tokens, "predicted loss": intervals.loss}
    interval = found.get(key)
    if interval is None or interval.low is None or interval.high is None:
        return row
    if math.isclose(interval.low, interval.high, rel_tol=1e-9):  # fixed by the objective (--params, a ratio)
        return row
    lo, hi = intervals.percentiles
    fmt = (lambda x: f"{x:.4f}") if key == "predicted loss" else format_si
    return key, f"{text}  [{fmt(interval.low)}, {fmt(interval.high)}] ({lo:g}th-{hi:g}th pct.)"


def _si(value: float | None) -> str:
    """``format_si`` for a field an objective may leave unset ("-")."""
    from runplan.units import format_si

    return "-" if value is None else format_si(value)


def _shape_line(allocation: Allocation, law: ParametricLaw) -> str | None:
    """Both parameter counts of a generated shape of this size (runplan.architect), when one exists."""
    try:
        from runplan.architect import shape_for_params
        from runplan.errors import SpecError
    except ImportError:  # pragma: no cover - architect is part of the package
        return None
    from runplan.defaults import DEFAULT_VOCAB_SIZE
    from runplan.units import format_si

    try:
        shape = shape_for_params(allocation.params, count=law.param_count)
    except SpecError as error:  # said, not dropped: `runplan plan` refuses this size (exit 1)
        return f"  no generated shape of this size: {error.message}; {error.hint}"
    return (
        f"  a generated shape of this size: {shape.n_layers} layers, d_model {shape.d_model}, "
        f"{shape.n_heads} heads ({shape.n_kv_heads} KV), FFN {shape.ffn_hidden}: "
        f"{format_si(shape.total_params)} total, {format_si(shape.non_embedding_params)} non-embedding "
        f"(vocabulary {DEFAULT_VOCAB_SIZE:,})"
    )


def allocate_command(
    plan_file: Path | None = typer.Argument(
        None, help="A plan file: its budget, objective, law, model and cluster instead of the flags."
    ),
    flops: str | None = typer.Option(None, "--flops", help="Training compute C in FLOPs, e.g. 2e23."),
    gpus: str | None = typer.Option(
        None, "--gpus", help="GPUs: with --days gives C; with --flops gives days."
    ),
    days: str | None = typer.Option(
        None, "--days", help="Wall-clock days on --gpus (C = GPUs × peak × MFU × time)."
    ),
    gpu: str | None = typer.Option(None, "--gpu", help=GPU_HELP),
    mfu: str | None = typer.Option(None, "--mfu", help=MFU_HELP),
    price: str | None = typer.Option(None, "--price-per-gpu-hour", help="USD per GPU-hour, for the cost."),
    tokens_per_param: str | None = typer.Option(
        None, "--tokens-per-param", help="Fixed ratio D/N, e.g. 20: N = sqrt(C/(6r))."
    ),
    params: str | None = typer.Option(None, "--params", help="Fixed model size, e.g. 7b: D = C/(6N)."),
    inference_tokens: str | None = typer.Option(
        None,
        "--inference-tokens",
        help="Lifetime inference tokens, e.g. 2e13: inference-optimal (Sardana 2024).",
    ),
    target_loss: str | None = typer.Option(
        None,
        "--target-loss",
        help="Inference-optimal: the loss to reach (default: the compute-optimal loss).",
    ),
    law: str | None = typer.Option(None, "--law", help=LAW_HELP),
    json_output: bool = typer.Option(False, "--json", help="Print JSON (keys in docs/scaling.md)."),
) -> None:
    """How many parameters and tokens for a compute budget; the predicted loss and what it costs.

    Objectives: compute-optimal (default), --tokens-per-param, --params, --inference-tokens.
    """
    from runplan.errors import SpecError
    from runplan.scaling.allocate import allocate, with_hardware
    from runplan.scaling.laws import law_from_flag

    if plan_file is not None:
        flags = {
            "--flops": flops,
            "--gpus": gpus,
            "--days": days,
            "--gpu": gpu,
            "--mfu": mfu,
            "--price-per-gpu-hour": price,
            "--tokens-per-param": tokens_per_param,
            "--params": params,
            "--inference-tokens": inference_tokens,
            "--target-loss": target_loss,
            "--law": law,
        }
        given = [flag for flag, value in flags.items() if value is not None]
        if given:
            raise SpecError(
                f"{given[0]} and a plan file both set the inputs",
                where=given[0],
                hint="edit the plan file, or drop the plan file and use flags",
            )
        _from_plan_file(plan_file, json_output)
        return
    objective = _objective(tokens_per_param, params, inference_tokens, target_loss)
    need_budget = not (objective.kind == "inference_optimal" and objective.target_loss is not None)
    budget = parse_budget(flops, gpus, days, gpu, mfu, price, required=need_budget)
    chosen = law_from_flag(law)
    result = allocate(budget.flops, objective, chosen)
    if budget.gpu is not None:
        result = with_hardware(
            result, budget.gpu, budget.mfu, gpus=budget.gpus, price_per_gpu_hour=budget.price
        )
    if json_output:
        print_json(result.model_dump(mode="json"))
    else:
        render(result, chosen, budget_why=_budget_why(flops, days))


def _budget_why(flops: str | None, days: str | None) -> str:
    """Where the budget C of flags came from (the row `budget` of :func:`render`)."""
    if days is not None:
        return "GPUs × bf16 peak × MFU × days (--gpus, --days)"
    if flops is not None:
        return "C given (--flops)"
    return "none given: the target loss sets N and D"


def _plan_budget_why(budget: Any) -> str:
    """Where a plan's budget C came from: its ``budget:`` key (scaling.budget.Budget, exactly one is set)."""
    if budget is None or budget.flops is not None:
        return "the plan's budget.flops"
    if budget.tokens is not None:
        return "6·N·D of the plan's model on its budget.tokens"
    key = "budget.days" if budget.days is not None else "budget.gpu_hours"
    return f"the plan's {key} filled at the layout's predicted speed"


def _from_plan_file(plan_file: Path, json_output: bool) -> None:
    """The allocation stage of `runplan plan`, with the plan's cluster for GPU-hours, days and cost."""
    from runplan.cli.common import load_plan_file, located
    from runplan.plan import (
        budget_days,
        budget_fill,
        budget_mfu,
        days_hold_it,
        filled_stage,
        resolve_inputs,
        token_fill_note,
    )
    from runplan.scaling.allocate import with_hardware

    loaded, spec = load_plan_file(plan_file)
    with located(loaded):
        inputs = resolve_inputs(spec, plan_file.resolve().parent)
        fill = budget_fill(spec, inputs)  # a GPU-time budget: sized and trained as `runplan plan` does
        stage = filled_stage(spec, inputs, fill)
    from runplan.defaults import DEFAULT_MFU

    first_guess = spec.budget.mfu if spec.budget is not None else DEFAULT_MFU
    days = budget_days(spec, inputs.n_gpus)
    # the rate at which the run's training FLOPs take the budget's days, as `runplan plan` gives it: an
    # inference-optimal D trains more than the budget's C (stage.flops), and the days and cost shown are the budget's
    mfu = first_guess if fill is None or days is None else budget_mfu(stage.allocation, inputs, days)
    allocation = stage.allocation if fill is None or days is None else days_hold_it(stage.allocation, days)
    result = with_hardware(
        allocation,
        inputs.gpu,
        mfu,
        gpus=inputs.n_gpus,
        price_per_gpu_hour=spec.cluster.price_per_gpu_hour,
    )
    if json_output:
        print_json(result.model_dump(mode="json"))
        return
    # a fixed model: its own shape, printed below; the price is in the plan's currency (cost_usd is a misnomer)
    render(
        result,
        stage.law,
        shape_line=spec.model is None,
        currency=spec.cost.currency,
        of_budget=fill is not None,  # budget_fill is None without a GPU-time budget
        budget_why=_plan_budget_why(spec.budget),
    )
    from runplan.cli.common import console, echo_wrapped

    console().print(f"model: {stage.resolution}")
    if fill is not None:
        echo_wrapped(
            f"sized as `runplan plan` sizes it: C fills the budget's {days:g} days at the chosen layout's "
            f"predicted speed ({mfu:.1%} of peak with goodput; budget.mfu {first_guess:g} was only the first "
            "guess)"
        )
    if (note := token_fill_note(result)) is not None:
        echo_wrapped(note)


def register(app: typer.Typer) -> None:
    app.command(name="allocate", help=(allocate_command.__doc__ or "") + f"\n\nDefault law: {DEFAULT_LAW}.")(
        handle_errors(allocate_command)
    )
