"""`runplan fit FILE.csv`: Hoffmann et al. 2022 Approaches 2 (isoFLOP) and 3 (parametric) on your proxy runs.

Parses flags, calls ``runplan.scaling.fit``, renders; writes a law YAML (``-o``) that allocate, sweep and plan
files accept, and optionally a plot. JSON keys: docs/scaling.md. Nothing heavy is imported at module level.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, NamedTuple

import typer

from runplan.cli.common import handle_errors, print_json, warn

if TYPE_CHECKING:
    from runplan.scaling.fit import FitReport, Interval, ParametricFit, Runs

#: Most bootstrap resamples accepted: 10,000 (2.5× the 4,000 of Besiroglu et al. 2024) pins the 10th and
#: 90th percentiles to a fraction of their width; more only takes hours (each resample is a full fit).
MAX_BOOTSTRAP = 10_000
#: Points of the Approach 3 start grid (``runplan.scaling.fit.start_grid``: 6·6·5·5·5); --starts picks from it.
GRID_STARTS = 4_500
#: Most L-BFGS starts --starts takes as a number: about 13 ms each on a busy 2-core machine (1,000 took 12.9 s),
#: so 500 stay inside issue 17's 10 s; 'all' (every grid point, minutes, docs/scaling.md) is an explicit choice.
MAX_STARTS = 500
#: File types --plot writes (matplotlib picks the format from the suffix; none means PNG).
PLOT_SUFFIXES = frozenset({"", ".png", ".pdf", ".svg", ".jpg", ".jpeg"})
#: Approach 3's optimum rows in the printed table: (label, ParametricFit field).
OPTIMUM_ROWS = (
    ("N_opt", "params_opt"),
    ("D_opt", "tokens_opt"),
    ("tokens per parameter", "tokens_per_param"),
)


def single_threaded_blas() -> None:
    """One BLAS thread for the fits, set before numpy and scipy load (the CLI imports them lazily).

    L-BFGS-B on five coefficients makes thousands of tiny BLAS calls per fit; OpenBLAS worker threads add only
    wake-up cost there and, on a shared machine, oversubscription: the Chinchilla fit with 100 resamples took
    0.6 s with one thread and 4-7 s with the default threads on a loaded 2-core machine. An explicit
    OPENBLAS_NUM_THREADS or OMP_NUM_THREADS from the user wins.
    """
    import os

    if "OMP_NUM_THREADS" not in os.environ:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def _progress(total: int):  # -> (callback, closer); a rich bar on stderr only when stderr is a terminal
    if total <= 0 or not sys.stderr.isatty():
        return None, lambda: None
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from runplan.cli.common import console

    bar = Progress(
        TextColumn("bootstrap"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=console(stderr=True),
        transient=True,
    )
    task = bar.add_task("bootstrap", total=total)
    bar.start()
    return (lambda done: bar.update(task, completed=done)), bar.stop


def _interval_text(interval: Interval, fmt: str = ".4g") -> str:
    if interval.low is None:
        return f"{interval.value:{fmt}}"
    return f"{interval.value:{fmt}}  [{interval.low:{fmt}}, {interval.high:{fmt}}]"


def render(report: FitReport, *, law_usable: bool = True) -> None:
    """The report as text; ``law_usable`` False prints Approach 3's coefficients but not the optimum they give
    (see _refuse_unusable_law). A warning both approaches give (the extrapolation one) is printed once."""
    from rich.table import Table

    from runplan.cli.budget import explained_table
    from runplan.cli.common import console
    from runplan.units import format_si

    out = console()
    p, iso = report.parametric, report.isoflop
    # a caution about the reported budget, not about either fit, comes from each approach: say it once
    shared = [w for w in p.warnings if w in iso.warnings] if p is not None and iso is not None else []
    for warning in [*report.warnings, *shared]:
        warn(warning)
    out.print(
        f"[bold]Fit[/bold] of {report.source}: {report.runs} runs"
        + (f" ({report.dropped} highest-loss dropped)" if report.dropped else "")
        + f"; N counts {report.param_count.replace('_', '-')} parameters"
    )
    if p is not None:
        lo, hi = p.percentiles
        ci = f" (bootstrap {p.bootstrap}, {lo:g}th-{hi:g}th percentiles)" if p.bootstrap else ""
        out.print(f"\n[bold]Approach 3[/bold], parametric L = E + A/N^α + B/D^β{ci}")
        out.print(explained_table(_parametric_rows(p, law_usable), out.width))
        for warning in p.warnings:
            if warning not in shared:
                warn(warning)
    if iso is not None:
        out.print(f"\n[bold]Approach 2[/bold], isoFLOP parabolas ({iso.grouping})")
        table = Table(box=None, padding=(0, 2))
        for column in ("budget C", "runs", "N_opt", "D_opt", "loss at min"):
            table.add_column(column)
        for b in iso.budgets:
            table.add_row(
                f"{b.flops:.3g}",
                str(b.runs),
                format_si(b.params_opt),
                format_si(b.tokens_opt),
                f"{b.loss_opt:.4f}",
            )
        out.print(table)
        out.print(f"  N_opt = {iso.k_params:.3g}·C^a, a = {_interval_text(iso.a)}")
        out.print(f"  D_opt = {iso.k_tokens:.3g}·C^b, b = {_interval_text(iso.b)}")
        out.print(
            f"  at C = {iso.at_flops:.3g}: N_opt {_interval_text(iso.params_opt, '.3g')}, "
            f"D_opt {_interval_text(iso.tokens_opt, '.3g')}"
        )
        for warning in iso.warnings:
            if warning not in shared:
                warn(warning)
    if report.isoflop_error:
        warn(f"Approach 2 skipped: {report.isoflop_error}")


#: Why each Approach 3 row is what it is (printed beside it): the law and its optimum, Hoffmann et al. 2022 (Eq. 2,
#: Eq. 4, App. D.2 for the fit); the published values a reader compares with (Eq. 10; Besiroglu et al. 2024).
PARAMETRIC_WHY = {
    "E": "irreducible loss, L as N and D grow without bound (Eq. 2)",
    "A": "parameter-term coefficient (Chinchilla 406.4, Epoch 482.01)",
    "B": "data-term coefficient (Chinchilla 410.7, Epoch 2085.43)",
    "alpha": "parameter exponent (Chinchilla 0.34, Epoch 0.3478)",
    "beta": "data exponent (Chinchilla 0.28, Epoch 0.3658)",
    "params_opt": "G·(C/6)^a of this law (Hoffmann et al. 2022, Eq. 4)",
    "tokens_opt": "C/(6·N_opt)",
    "tokens_per_param": "D_opt / N_opt; Chinchilla ≈ 20 (Table 3)",
    "objective": "Σ Huber_δ(LSE(a − α ln N, b − β ln D, e) − ln L), δ 1e-3 (App. D.2), at the optimum",
}


def _parametric_rows(p: ParametricFit, law_usable: bool) -> list[tuple[str, str, str]]:
    """Approach 3's printed rows as (name, value, why): the coefficients, the optimum at ``p.at_flops`` (or
    'not usable', see _refuse_unusable_law) and the fit's objective."""
    rows = [
        (label, _interval_text(getattr(p, key)), PARAMETRIC_WHY[key])
        for key, label in (("E", "E"), ("A", "A"), ("B", "B"), ("alpha", "α"), ("beta", "β"))
    ]
    for k, (label, key) in enumerate(OPTIMUM_ROWS):
        value = _interval_text(getattr(p, key), ".3g") if law_usable else "not usable (see the warning)"
        rows.append((f"at C = {p.at_flops:.3g}: {label}" if k == 0 else label, value, PARAMETRIC_WHY[key]))
    done = f"{p.objective:.4g} ({p.converged_starts}/{p.starts} starts converged, {p.seconds:.1f} s)"
    rows.append(("Huber objective", done, PARAMETRIC_WHY["objective"]))
    return rows


#: Flags that only the scaling-law fit reads (ignored by --hyperparams) and flags only --hyperparams reads, by
#: the fit_command parameter that holds each: given with the other mode, they would be silently ignored.
LAW_FIT_ONLY_FLAGS = {
    "method": "--method",
    "params_col": "--params-col",
    "tokens_col": "--tokens-col",
    "param_count": "--param-count",
    "drop_highest": "--drop-highest",
    "starts": "--starts",
    "plot": "--plot",
}
HYPERPARAMS_ONLY_FLAGS = {"lr_col": "--lr-col", "batch_col": "--batch-col"}


def fit_command(
    ctx: typer.Context,
    csv_file: str = typer.Argument(
        ..., metavar="FILE.csv", help="Runs: columns params, tokens or flops, loss."
    ),
    method: str = typer.Option("both", "--method", help="parametric, isoflop or both."),
    params_col: str = typer.Option("params", "--params-col", help="Column with N."),
    tokens_col: str = typer.Option("tokens", "--tokens-col", help="Column with D (or give --flops-col)."),
    flops_col: str = typer.Option("flops", "--flops-col", help="Column with C (D = C/(6N) if no tokens)."),
    loss_col: str = typer.Option("loss", "--loss-col", help="Column with the final loss."),
    param_count: str | None = typer.Option(
        None,
        "--param-count",
        help="What N counts: total or non_embedding (a `runplan sweep` CSV: that count's column; default: the "
        "count its params column repeats, the N its tokens and flops were computed from; else non_embedding "
        "from a non_embedding_params column; else total, with a warning).",
    ),
    drop_highest: int = typer.Option(0, "--drop-highest", help="Drop the N highest-loss runs (Epoch: 5)."),
    bootstrap: int = typer.Option(
        100, "--bootstrap", help="Bootstrap resamples for the intervals (0: none)."
    ),
    ci: float = typer.Option(80.0, "--ci", help="Central interval in percent (80: 10th-90th percentiles)."),
    starts: str = typer.Option(
        "16", "--starts", help="L-BFGS starts: the N best of the 4,500-point grid, or 'all'."
    ),
    bin_decades: str | None = typer.Option(
        None,
        "--bin-decades",
        help="isoFLOP grouping: 0 exact budgets, w bins of w decades "
        "(default: exact when budgets repeat, else budgets from the data: peaks of the log10 C density).",
    ),
    at_flops: str | None = typer.Option(
        None, "--flops", help="Budget to report the optimum at (default: the largest in the file)."
    ),
    output: str | None = typer.Option(None, "-o", "--output", help="Write the fitted law YAML here."),
    plot: str | None = typer.Option(None, "--plot", help="Write a PNG of the fits (needs matplotlib)."),
    seed: int = typer.Option(0, "--seed", help="Bootstrap random seed."),
    json_output: bool = typer.Option(False, "--json", help="Print JSON (keys in docs/scaling.md)."),
    hyperparams: bool = typer.Option(
        False,
        "--hyperparams",
        help="FILE.csv is a batch/LR sweep (columns flops, lr, batch in tokens, loss): fit B_opt(C) and "
        "η_opt(C) as DeepSeek LLM §3.1 did.",
    ),
    lr_col: str = typer.Option("lr", "--lr-col", help="--hyperparams: column with the peak learning rate."),
    batch_col: str = typer.Option(
        "batch", "--batch-col", help="--hyperparams: column with the global batch in tokens."
    ),
) -> None:
    """Fit scaling laws to your proxy runs (Hoffmann et al. 2022 Approaches 2 and 3) and write a law file.

    With --hyperparams: fit the compute-optimal batch size and learning rate to a batch/LR sweep instead."""
    single_threaded_blas()
    _refuse_flags_of_other_mode(ctx, hyperparams)
    options = _check_options(method, param_count, bootstrap, ci, starts, bin_decades, at_flops, seed)
    _refuse_flags_the_method_ignores(ctx, method, bootstrap)  # after the values' own checks (--seed -1)
    _check_outputs(plot, output, method)
    if hyperparams:
        _fit_hyperparams(
            csv_file,
            columns=(flops_col, lr_col, batch_col, loss_col),
            options=options,
            output=output,
            json_output=json_output,
        )
        return
    options = options._replace(named_columns=_typed_column_flags(ctx))
    report, runs = _fit_runs(csv_file, (params_col, tokens_col, flops_col, loss_col), drop_highest, options)
    report, usable = _refuse_unusable_law(report, runs, output)
    if output is not None and report.parametric is not None:
        _write_law(report.parametric, output)
    if plot is not None:
        from runplan.scaling.fit import plot_fits

        plot_fits(report, runs, plot)
    if json_output:
        print_json(report.model_dump(mode="json"))
    else:
        render(report, law_usable=usable)
        _say_written(plot, output)


def _say_written(plot: str | None, output: str | None) -> None:
    """Name the files the fit wrote, and what each is for."""
    if plot is not None:
        print(f"\nwrote plot {plot} (isoFLOP profiles; compute-optimal N over C)")
    if output is not None:
        print(f"\nwrote law file {output} (use it with --law {output})")


def _refuse_unusable_law(report: FitReport, runs: Runs, output: str | None) -> tuple[FitReport, bool]:
    """(``report``, whether Approach 3's law is usable); an unusable one's reason joins its warnings. Infeasible
    (exit 1, nothing written) when that law was to be written (-o) or nothing usable is left (no Approach 2).

    A law file from such a fit reads back without complaint and then plans with it (one budget gave N_opt 3e-06
    parameters and 2e31 tokens per parameter), so it is not written, whatever the warnings say."""
    from runplan.errors import Infeasible
    from runplan.scaling.fit import one_budget_span, unusable_reason

    if report.parametric is None:
        return report, True
    reason = unusable_reason(report.parametric, runs)
    if reason is None:
        return report, True
    one_budget = one_budget_span(runs) is not None
    if one_budget:
        fixes = [
            "run proxies at 3 or more compute budgets a decade apart (runplan sweep --budgets 3) and fit them"
        ]
    else:
        fixes = [
            "check the loss column is in nats/token and N and D are plain counts",
            "vary N and D over a decade or more each, at several compute budgets",
        ]
    if output is not None:
        raise Infeasible(f"no law file written to {output}: {reason}", suggestions=fixes)
    if report.isoflop is None:
        if report.isoflop_error is None:  # --method parametric
            skipped = ""
        elif one_budget:  # its error says again what the reason says
            skipped = "; Approach 2 needs 2 or more budgets to fit an exponent"
        else:
            skipped = "; Approach 2 was not fitted: " + report.isoflop_error.removeprefix(
                f"{report.source}: "
            )
        raise Infeasible(f"no usable fit: {reason}{skipped}", suggestions=fixes)
    # Approach 2 stands: print it, with Approach 3's law marked unusable (render leaves out its optimum)
    warnings = [*report.parametric.warnings, f"Approach 3's law is not usable: {reason}"]
    parametric = report.parametric.model_copy(update={"warnings": warnings})
    return report.model_copy(update={"parametric": parametric}), False


def _on_command_line(ctx: typer.Context, name: str) -> bool:
    """Whether the parameter ``name`` was typed (compared by name: typer >= 0.22 vendors click, so the enum's
    module depends on typer's version)."""
    return getattr(ctx.get_parameter_source(name), "name", None) == "COMMANDLINE"


def _typed_column_flags(ctx: typer.Context) -> tuple[str, ...]:
    """The column flags as typed (read_runs ``named``): a typed --tokens-col or --flops-col column must exist, and
    a typed flag's column takes precedence over an optional column left at its default name."""
    return tuple(
        flag
        for name, flag in (
            ("params_col", "--params-col"),
            ("tokens_col", "--tokens-col"),
            ("flops_col", "--flops-col"),
            ("loss_col", "--loss-col"),
        )
        if _on_command_line(ctx, name)
    )


def _refuse_flags_of_other_mode(ctx: typer.Context, hyperparams: bool) -> None:
    """A SpecError naming the first flag given on the command line that this mode does not read (the law fit's
    --method under --hyperparams, --lr-col without it): a flag that changes nothing must not look accepted."""
    from runplan.errors import SpecError

    unused = LAW_FIT_ONLY_FLAGS if hyperparams else HYPERPARAMS_ONLY_FLAGS
    for name, flag in unused.items():
        if _on_command_line(ctx, name):
            raise SpecError(
                "applies to the scaling-law fit, not to --hyperparams"
                if hyperparams
                else "applies only with --hyperparams (a batch/LR sweep)",
                where=flag,
                hint=f"drop {flag}" if hyperparams else f"add --hyperparams or drop {flag}",
            )


def _refuse_flags_the_method_ignores(ctx: typer.Context, method: str, bootstrap: int) -> None:
    """A SpecError for a typed flag that the chosen approach does not read: --starts steers Approach 3 only,
    --bin-decades Approach 2 only, --ci the bootstrap only (`--method isoflop --starts 100` printed a fit as if
    the flag had been used). --seed with --bootstrap 0 stays accepted: tests/test_hostile.py runs two fits that
    differ only in it."""
    from runplan.errors import SpecError

    unread = (
        ("starts", method == "isoflop", "steers Approach 3's L-BFGS starts", "--method parametric or both"),
        ("bin_decades", method == "parametric", "groups Approach 2's budgets", "--method isoflop or both"),
        ("ci", bootstrap == 0, "sets the bootstrap interval", "--bootstrap N (N > 0)"),
    )
    for name, ignored, what, fix in unread:
        if ignored and _on_command_line(ctx, name):
            flag = "--" + name.replace("_", "-")
            given = f"--method {method}" if fix.startswith("--method") else "--bootstrap 0"
            raise SpecError(
                f"{what}, which {given} does not run", where=flag, hint=f"use {fix}, or drop {flag}"
            )


class FitOptions(NamedTuple):
    """The fit flags, checked and parsed."""

    method: str
    param_count: str | None
    bootstrap: int
    percentiles: tuple[float, float]
    starts: int | None
    bin_decades: float | None
    at_flops: float | None
    seed: int
    named_columns: tuple[str, ...] = ()  # the --*-col flags as typed (read_runs ``named``)


def _check_options(
    method: str,
    param_count: str | None,
    bootstrap: int,
    ci: float,
    starts: str,
    bin_decades: str | None,
    at_flops: str | None,
    seed: int,
) -> FitOptions:
    """Each bad flag is a one-line SpecError naming it."""
    from runplan.cli.common import flag_value
    from runplan.errors import SpecError

    if method not in ("both", "parametric", "isoflop"):
        raise SpecError(f"unknown method {method!r}", where="--method", hint="parametric, isoflop or both")
    if param_count is not None and param_count not in ("total", "non_embedding"):
        raise SpecError(
            f"unknown count {param_count!r}", where="--param-count", hint="total or non_embedding"
        )
    if bootstrap < 0:
        raise SpecError("must not be negative", where="--bootstrap")
    if bootstrap > MAX_BOOTSTRAP:
        raise SpecError(
            f"{bootstrap:,} resamples is more than {MAX_BOOTSTRAP:,}",
            where="--bootstrap",
            hint="Besiroglu et al. 2024 use 4,000; 100 to 1,000 give usable 80% intervals",
        )
    if not 0 < ci < 100:
        raise SpecError(f"must be in (0, 100), got {ci:g}", where="--ci")
    n_starts = None
    if starts.strip().lower() != "all":
        try:
            n_starts = flag_value(starts, "--starts", "count")
        except SpecError:  # the generic number hint suggests 2e23 and 70B, which --starts refuses
            raise SpecError(
                f"expected a whole number of starts or 'all', got {starts!r}",
                where="--starts",
                hint=f"a count from 1 to {MAX_STARTS:,}, or 'all' for every one of the {GRID_STARTS:,} grid points",
            ) from None
        if n_starts < 1:
            raise SpecError("must be at least 1 (or 'all')", where="--starts")
        if n_starts > MAX_STARTS:
            raise SpecError(
                f"{n_starts:,} starts is more than {MAX_STARTS:,}: each L-BFGS start takes about 10-15 ms, so "
                f"{MAX_STARTS:,} already take several seconds and the best of 16 rarely differs",
                where="--starts",
                hint=f"give at most {MAX_STARTS:,}, or 'all' for every one of the {GRID_STARTS:,} grid points "
                "(minutes)",
            )
    bins = flag_value(bin_decades, "--bin-decades")
    if bins is not None and bins < 0:
        raise SpecError("must not be negative", where="--bin-decades")
    if seed < 0:
        raise SpecError(f"must not be negative, got {seed}", where="--seed", hint="e.g. 0")
    percentiles = ((100 - ci) / 2, 100 - (100 - ci) / 2)
    at = flag_value(at_flops, "--flops")
    return FitOptions(method, param_count, bootstrap, percentiles, n_starts, bins, at, seed)


def _check_outputs(plot: str | None, output: str | None, method: str) -> None:
    """--plot and -o: writable paths, a plot suffix matplotlib writes, a law file only with Approach 3."""
    from pathlib import Path

    from runplan.cli.common import check_output_path
    from runplan.errors import SpecError

    if plot is not None:
        if Path(plot).suffix.lower() not in PLOT_SUFFIXES:
            raise SpecError(
                f"cannot write a plot as '{Path(plot).suffix}'",
                where="--plot",
                hint="end the file name in " + ", ".join(sorted(s for s in PLOT_SUFFIXES if s)),
            )
        check_output_path(plot, "--plot")
        from runplan.report.plots import pyplot

        pyplot("fit.plot")  # a missing matplotlib is said before the fit, not after its seconds or minutes
    if output is not None:
        check_output_path(output, "-o")
    if output is not None and method == "isoflop":
        raise SpecError(
            "a law file needs the parametric fit", where="-o", hint="use --method parametric or both"
        )


def _fit_runs(
    csv_file: str, columns: tuple[str, str, str, str], drop_highest: int, options: FitOptions
) -> tuple[FitReport, Runs]:
    """Read the runs and fit the approaches ``options.method`` names (Approach 2 failing in 'both' is noted)."""
    from runplan.errors import SpecError
    from runplan.scaling.fit import FitReport, choose_param_count, fit_isoflop, fit_parametric, read_runs

    params_col, tokens_col, flops_col, loss_col = columns
    params_col, count, count_warnings = choose_param_count(csv_file, params_col, options.param_count)
    runs = read_runs(
        csv_file,
        params_col=params_col,
        tokens_col=tokens_col,
        flops_col=flops_col,
        loss_col=loss_col,
        named=options.named_columns,
    )
    total = runs.size
    runs = runs.drop_highest_loss(drop_highest)
    if options.method != "isoflop" and runs.size < 5 <= total:
        # the fit's own "needs at least 5 runs" would not say that --drop-highest took them away
        raise SpecError(
            f"dropping {drop_highest} of {total} runs leaves {runs.size}; a 5-parameter law needs at least 5",
            where="fit.drop_highest",
            hint=f"drop at most {total - 5}" if total > 5 else "drop none: 5 runs is the fewest it takes",
        )
    from runplan.cli.flags import flags_in_text
    from runplan.scaling.fit import duplicate_warnings, flops_warnings, magnitude_warnings

    cautions = (*count_warnings, *flops_warnings(runs), *magnitude_warnings(runs), *duplicate_warnings(runs))
    count_warnings = [flags_in_text(w, "fit") for w in cautions]
    boot, pct, at = options.bootstrap, options.percentiles, options.at_flops
    parametric = isoflop = isoflop_error = None
    if options.method in ("both", "isoflop"):
        try:
            isoflop = fit_isoflop(
                runs,
                bin_decades=options.bin_decades,
                bootstrap=boot,
                percentiles=pct,
                at_flops=at,
                seed=options.seed,
            )
        except SpecError as error:
            if (
                options.method == "isoflop"
            ):  # (its file is the source, so fail() keeps the hint: name the flags)
                hint = flags_in_text(error.hint, "fit") if error.hint else None
                raise SpecError(error.message, where=error.where, source=error.source, hint=hint) from None
            isoflop_error = flags_in_text(error.one_line(), "fit")
    if options.method in ("both", "parametric"):
        callback, close = _progress(options.bootstrap)
        try:
            parametric = fit_parametric(
                runs,
                starts=options.starts,
                bootstrap=boot,
                percentiles=pct,
                at_flops=at,
                seed=options.seed,
                param_count=count,
                progress=callback,
            )
        finally:
            close()
    report = FitReport(
        source=runs.source,
        runs=runs.size,
        dropped=drop_highest,
        param_count=count,
        parametric=parametric,
        isoflop=isoflop,
        isoflop_error=isoflop_error,
        warnings=count_warnings,
    )
    return report, runs


def _fit_hyperparams(
    csv_file: str,
    *,
    columns: tuple[str, str, str, str],
    options: FitOptions,
    output: str | None,
    json_output: bool,
) -> None:
    """`runplan fit --hyperparams`: B_opt(C) and η_opt(C) from a batch/LR sweep (runplan.scaling.hyperfit)."""
    import yaml

    from runplan.cli.common import write_output
    from runplan.scaling.hyperfit import fit_hyperparams, read_hyperparam_runs

    flops_col, lr_col, batch_col, loss_col = columns
    runs = read_hyperparam_runs(
        csv_file, flops_col=flops_col, lr_col=lr_col, batch_col=batch_col, loss_col=loss_col
    )
    fit = fit_hyperparams(
        runs,
        bootstrap=options.bootstrap,
        percentiles=options.percentiles,
        at_flops=options.at_flops,
        bin_decades=options.bin_decades,
        seed=options.seed,
    )
    if output is not None:
        text = yaml.safe_dump(fit.law().model_dump(mode="json"), sort_keys=False, allow_unicode=True)
        write_output(text, output, "-o")
    if json_output:
        print_json(fit.model_dump(mode="json"))
        return
    render_hyperparams(fit)
    if output is not None:
        print(f"\nwrote hyperparameter law {output}")


def render_hyperparams(fit: Any) -> None:
    from rich.table import Table

    from runplan.cli.common import console

    out = console()
    lo, hi = fit.percentiles
    ci = f" (bootstrap {fit.bootstrap}, {lo:g}th-{hi:g}th percentiles)" if fit.bootstrap else ""
    out.print(
        f"[bold]Hyperparameter fit[/bold] of {fit.source}: near-optimal runs (loss within "
        f"{fit.tolerance:.2%} of each budget's best) → power laws in C, as DeepSeek LLM §3.1{ci}"
    )
    table = Table(box=None, padding=(0, 2))
    for column in ("budget C", "runs", "near-optimal", "best lr", "best batch", "best loss"):
        table.add_column(column)
    for b in fit.budgets:
        table.add_row(
            f"{b.flops:.3g}",
            str(b.runs),
            str(b.near_optimal),
            f"{b.best_lr:.3g}",
            f"{b.best_batch:.3g}",
            f"{b.best_loss:.4f}",
        )
    out.print(table)
    out.print(f"  B_opt = {_interval_text(fit.batch_coef, '.4g')}·C^e, e = {_interval_text(fit.batch_exp)}")
    out.print(f"  η_opt = {_interval_text(fit.lr_coef, '.4g')}·C^e, e = {_interval_text(fit.lr_exp)}")
    out.print(
        f"  at C = {fit.at_flops:.3g}: B_opt {_interval_text(fit.batch_opt, '.3g')} tokens, "
        f"η_opt {_interval_text(fit.lr_opt, '.3g')}"
    )
    for warning in fit.warnings:
        warn(warning)


def _write_law(parametric: ParametricFit, output: str) -> None:
    """The fitted law as YAML (``runplan.scaling.fit.law_file_dict``), written through ``write_output``."""
    import yaml

    from runplan.cli.common import write_output
    from runplan.scaling.fit import law_file_dict

    write_output(yaml.safe_dump(law_file_dict(parametric), sort_keys=False, allow_unicode=True), output, "-o")


def register(app: typer.Typer) -> None:
    app.command(name="fit")(handle_errors(fit_command))
