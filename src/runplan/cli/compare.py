"""`runplan diff A B` (the inputs and headline numbers that differ) and `runplan whatif FILE --gpus LIST`
(one plan across cluster sizes: days, cost, MFU and layout per size)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import typer

from runplan.cli.common import handle_errors, print_json

if TYPE_CHECKING:
    from runplan.errors import Infeasible
    from runplan.plan import RunPlan
    from runplan.spec import PlanSpec


@handle_errors
def diff(
    first: Path = typer.Argument(..., help="A plan file.", show_default=False),
    second: Path = typer.Argument(..., help="Another plan file.", show_default=False),
    as_json: bool = typer.Option(
        False, "--json", help='Print {"inputs": [...], "headline": [...]} change records.'
    ),
) -> None:
    """The inputs and the headline numbers (days, cost, size, loss, MFU) that differ between two plans."""
    from runplan.resolved import diff_changes, in_two_currencies, resolved_section

    _, spec_a, plan_a = _named_plan(first)
    _, spec_b, plan_b = _named_plan(second)
    currencies = (plan_a.cost.currency, plan_b.cost.currency)  # each number in its report's unit
    dumps = [
        spec.model_dump(mode="json", exclude={"resolved"}, exclude_none=True) for spec in (spec_a, spec_b)
    ]
    _spell_out_gpu(dumps, (spec_a, spec_b), (first, second))
    inputs = diff_changes(dumps[0], dumps[1], rtol=1e-12)
    headline = [
        c for c in diff_changes(resolved_section(plan_a), resolved_section(plan_b), rtol=1e-4) if c.headline
    ]
    inputs, headline = (in_two_currencies(changes, *currencies) for changes in (inputs, headline))
    if as_json:
        print_json({"inputs": [c.record() for c in inputs], "headline": [c.record() for c in headline]})
        return
    from runplan.cli.common import echo_wrapped

    typer.echo(f"{first}\n→ {second}")
    typer.echo(f"inputs ({len(inputs)} changed):" if inputs else "inputs: the same")
    for change in inputs:
        echo_wrapped(f"  {change.readable(*currencies)}", indent="      ")
    typer.echo(f"headline ({len(headline)} changed):" if headline else "headline numbers: the same")
    for change in headline:
        echo_wrapped(f"  {change.readable(*currencies)}", indent="      ")


def _spell_out_gpu(dumps: list[dict[str, Any]], specs: tuple[PlanSpec, ...], paths: tuple[Path, ...]) -> None:
    """A catalog GPU name on one side and an inline GPU spec on the other: the name replaced by its catalog
    spec, so that the diff says which fields differ (`inter_node_bandwidth_bytes_per_s: 50 GB/s → 25 GB/s`),
    not a name against a mapping cut at 60 characters."""
    gpus = [dump.get("cluster", {}).get("gpu") for dump in dumps]
    if sum(isinstance(gpu, str) for gpu in gpus) != 1 or sum(isinstance(gpu, dict) for gpu in gpus) != 1:
        return
    from runplan.catalog import load_catalog

    side = 0 if isinstance(gpus[0], str) else 1
    base = paths[side].resolve().parent
    catalog = load_catalog([base / extra for extra in specs[side].catalog], where="catalog")
    spec = catalog.gpu(str(gpus[side]), where="cluster.gpu")
    dumps[side]["cluster"]["gpu"] = spec.model_dump(mode="json", exclude_none=True)


def _named_plan(path: Path) -> tuple[Any, PlanSpec, RunPlan]:
    """:func:`runplan.cli.common.plan_from_file`, an infeasible plan named by its file (diff reads two)."""
    from runplan.cli.common import plan_from_file
    from runplan.errors import Infeasible

    try:
        return plan_from_file(path)
    except Infeasible as error:
        raise Infeasible(f"{path}: {error.reason}", suggestions=error.suggestions) from None


@handle_errors
def whatif(
    plan_file: Path = typer.Argument(..., help="A plan file.", show_default=False),
    gpus: list[str] | None = typer.Option(
        None,
        "--gpus",
        help="Cluster sizes to compare, e.g. 256,512,1024 (or --gpus repeated).  [required]",
        show_default=False,
    ),
    as_json: bool = typer.Option(False, "--json", help="Print one record per cluster size."),
) -> None:
    """The plan at each cluster size: days, cost, MFU, goodput and the chosen layout, in one table. A size no
    layout fits is a row that says why (exit 1 only when no size is feasible)."""
    from runplan.cli.common import load_plan_file, located
    from runplan.errors import Infeasible, PinConflict, SpecError

    # each size once, in the order given (256,256 planned one size twice); a repeated --gpus adds its sizes
    # (it kept only the last: `--gpus 512 --gpus 256` planned 256 alone)
    if not gpus:  # click's "Missing option" named no list to write
        _, spec = load_plan_file(plan_file)
        own = spec.cluster.gpus
        raise SpecError(
            "no cluster sizes to compare",
            where="--gpus",
            hint=f"e.g. --gpus {own},{2 * own}; the plan's own size is {own:,} GPUs",
        )
    sizes = [text for given in gpus for text in given.split(",")]
    counts = list(dict.fromkeys(_gpu_count(text) for text in sizes))
    if not counts or len(counts) > 12:
        raise SpecError(
            f"expected 1 to 12 GPU counts, got {len(counts)}", where="--gpus", hint="e.g. 256,512,1024"
        )
    loaded, spec = load_plan_file(plan_file)
    with located(loaded):  # a catalog file that cannot be read: at the plan's `catalog:` line
        _warn_catalog(spec, plan_file)
    records, refused = [], []
    with located(loaded, from_flags=("cluster.gpus",)):  # a size --gpus gave is the flag's, not the file's
        for count in counts:
            try:
                records.append(_record(count, _plan_at(spec, count, plan_file)))
            except Infeasible as error:
                refused.append(error)
                records.append({"gpus": count, "infeasible": gpus_as_flag(error).one_line()})
    if as_json:  # every size's record, the infeasible ones too (docs/json.md), before the exit code says so
        print_json(records)
    if len(refused) == len(counts):
        first = refused[0]
        if all(
            isinstance(error, PinConflict) for error in refused
        ):  # a pin no size can take: bad input (exit
            with located(loaded, from_flags=("cluster.gpus",)):  # 2) at its file:line, as `runplan plan` says
                raise first
        raise _infeasible_everywhere(counts, [gpus_as_flag(error) for error in refused])
    if not as_json:
        _render(records, plan_file)


#: the plan key of the GPU count, bare or with its value as a plan-file command writes it (``cluster.gpus: 24``,
#: cli.flags.paths_for_user); not ``cluster.gpus_per_node``
_GPUS_KEY = re.compile(r"\bcluster\.gpus\b(?:: (\d[\d,]*))?")


def gpus_as_flag(error: Infeasible) -> Infeasible:
    """``error`` as whatif's user reads it: plan keys as plan keys (cli.flags.with_flag, whatif reads a plan file),
    but the GPU count, which whatif takes from ``--gpus`` alone, as that flag (``at least --gpus 24``, not ``at
    least cluster.gpus: 24``)."""
    from runplan.cli.flags import with_flag
    from runplan.errors import Infeasible

    shown = cast(Infeasible, with_flag(error, "whatif"))  # (an infeasible answer stays one)

    def flag(text: str) -> str:  # a value as --gpus takes it: 1,024 would be two sizes there
        return _GPUS_KEY.sub(
            lambda m: "--gpus" + (f" {m.group(1).replace(',', '')}" if m.group(1) else ""), text
        )

    reason, suggestions = flag(shown.reason), [flag(text) for text in shown.suggestions]
    if reason == shown.reason and suggestions == shown.suggestions:
        return shown
    return Infeasible(reason, suggestions=suggestions)


def _infeasible_everywhere(counts: list[int], refused: list[Any]) -> Any:
    """No size feasible: the constraint that ruled out each size (sizes can fail on opposite sides, 8 GPUs on
    memory and 1M on the global batch; it said the first size's alone) and each way to make it feasible, once
    when every size offers it, else named by its size. Each size's nearest misses are in its --json record."""
    from runplan.errors import Infeasible

    heads = [
        f"at {n:,} GPUs: {e.reason.partition('; nearest misses: ')[0]}"
        for n, e in zip(counts, refused, strict=True)
    ]
    suggestions: list[str] = []
    for count, error in zip(counts, refused, strict=True):
        for text in error.suggestions:
            shared = all(text in other.suggestions for other in refused)
            text = text if shared else f"at {count:,} GPUs: {text}"
            if text not in suggestions:
                suggestions.append(text)
    reason = "no size is feasible: " + "; ".join(heads) + " (--json: each size's nearest misses)"
    return Infeasible(reason, suggestions=suggestions)


def _warn_catalog(spec: PlanSpec, plan_file: Path) -> None:
    """The cautions about the plan's own catalog entries (a published count the shape misses), once, on stderr:
    every size plans the same model, so they are no size's warning."""
    if not spec.catalog:
        return
    from runplan.catalog import load_catalog
    from runplan.cli.common import warn

    base = plan_file.resolve().parent
    for warning in load_catalog([base / path for path in spec.catalog], where="catalog").warnings:
        warn(warning)


def _gpu_count(text: str) -> int:
    """One size of the --gpus list; a size that is not a number says the list's form (the number parser's own
    hint, "2e23, 70B, 15T", is a budget's, and `256;512` is a separator mistake)."""
    from runplan.cli.common import flag_value
    from runplan.errors import SpecError

    try:
        return flag_value(text.strip(), "--gpus", "count")
    except SpecError as error:
        if not error.message.startswith("expected a number"):
            raise
        raise SpecError(
            f"expected a GPU count, got {text.strip()!r}",
            where="--gpus",
            hint="a comma-separated list of counts, e.g. 256,512,1024 or 1k,2k",
        ) from None


def _plan_at(spec: PlanSpec, count: int, plan_file: Path) -> RunPlan:
    """The plan of ``spec`` on ``count`` GPUs; a count the cluster section refuses is a ``--gpus`` error."""
    from runplan.cli.common import build_from_flags
    from runplan.plan import build_plan

    fields = {**spec.cluster.model_dump(exclude_unset=True), "gpus": count}
    cluster = build_from_flags(type(spec.cluster), "cluster", "--gpus", **fields)
    return build_plan(spec.model_copy(update={"cluster": cluster}), plan_file.resolve().parent)


def _record(count: int, plan: RunPlan) -> dict[str, Any]:
    best, main = plan.layout.best, plan.cost.main
    layout = f"TP{best.tp} PP{best.pp} DP{best.dp}" + (f" CP{best.cp}" if best.cp > 1 else "")
    layout += (f" EP{best.ep}" if best.ep > 1 else "") + f" ZeRO-{best.zero}"
    return {
        "gpus": count,
        "params": plan.allocation.params,
        "model_params": plan.model.total_params,  # the model trained (the plan summary's count)
        "tokens": plan.allocation.tokens,
        "wall_clock_days": main.wall_clock_days,
        "cost": main.cost,
        "currency": plan.cost.currency,
        "mfu": best.mfu,
        "goodput": main.goodput,
        "layout": layout,
        # the per-layout switches two sizes can differ in under one TP/PP/DP (docs/parallel.md; the parallelize
        # table's mbs, v and recompute columns)
        "micro_batch": best.micro_batch,
        "vpp": best.vpp,
        "recompute": best.recompute,
        "warnings": len(plan.warnings),
    }


def _render(records: list[dict[str, Any]], plan_file: Path) -> None:
    from runplan.cli.common import console, echo_wrapped
    from runplan.report.format import fmt_count, fmt_percent
    from runplan.report.tables import fitted_table

    out = console()
    headers = ["GPUs", "params", "D", "days", "cost", "MFU", "goodput", "layout", "warnings"]
    rows = [
        [f"{r['gpus']:,}", *[""] * 6, "infeasible (below)", ""]
        if "infeasible" in r
        else [
            f"{r['gpus']:,}",
            fmt_count(r["model_params"]),
            fmt_count(r["tokens"]),
            f"{r['wall_clock_days']:.1f}",
            f"{r['cost']:,.0f} {r['currency']}",
            f"{r['mfu']:.1%}",
            fmt_percent(r["goodput"]),  # never 100.0% short of 1 (a 1-GPU run's 0.9996)
            f"{r['layout']} mbs{r['micro_batch']} v{r['vpp']} {r['recompute']}",
            str(r["warnings"]),
        ]
        for r in records
    ]
    title = (
        f"{plan_file}: the plan at each cluster size (params of the model trained; days with goodput; MFU of the "
        "chosen layout; layout: mbs = micro-batch sequences, v = virtual pipeline stages, then recomputation)"
    )
    out.print(fitted_table(out, headers, rows, title=title, left=("layout",)))
    if any(r.get("warnings") for r in records):  # a count alone tells nothing: say where the warnings are
        echo_wrapped(
            f"warnings: how many cautions the plan at that size carries; to read them, set cluster.gpus to "
            f"that size in {plan_file} and run `runplan plan`",
            indent="    ",
        )
    for r in records:
        if "infeasible" in r:
            echo_wrapped(f"infeasible at {r['gpus']:,} GPUs: {r['infeasible']}", indent="    ")


def register(app: typer.Typer) -> None:
    app.command(name="diff")(diff)
    app.command(name="whatif")(whatif)
