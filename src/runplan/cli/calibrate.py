"""`runplan calibrate MEASURED.yaml -o calibration.yaml`: fit the time model's constants to measured runs.

Parses flags, calls ``runplan.calibrate``, renders. The file it writes is what ``plan``, ``parallelize`` and
``check`` take with ``--calibration`` (plan key ``calibration:``). Nothing heavy is imported at module level.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

import typer

from runplan.cli.common import handle_errors, print_json, warn

if TYPE_CHECKING:
    from collections.abc import Sequence

    from runplan.calibrate.calibration import Calibration
    from runplan.yamlio import LoadedYaml

HEADER = (
    "# runplan calibration: time-model constants per GPU family, fitted by `runplan calibrate` on the runs\n"
    "# listed under each family (provenance below). Use it with `runplan plan|parallelize|check --calibration`\n"
    "# or the plan key `calibration:`. What each constant means and its bounds: runplan.calibrate.constants,\n"
    "# docs/calibration.md.\n"
)


def load_measured(path: Path, catalog_files: list[str]) -> tuple[list[Any], LoadedYaml]:
    """(prepared runs, the loaded file) of a MEASURED.yaml or a published-runs file; errors at file:line."""
    from runplan.calibrate.fit import prepare
    from runplan.calibrate.measured import parse_measured
    from runplan.calibrate.published import is_published
    from runplan.catalog import load_catalog
    from runplan.cli.common import located
    from runplan.yamlio import load_yaml_file

    loaded = load_yaml_file(path)
    catalog = load_catalog(catalog_files)
    measured = _published_runs(loaded, path) if is_published(loaded.data) else parse_measured(loaded)
    with located(loaded):
        return prepare(measured, catalog), loaded


def _published_runs(loaded: LoadedYaml, path: Path) -> Any:
    """A published-runs file (benchmarks/published_runs.yaml's layout) as a MeasuredFile; a row the measured-run
    model refuses is one line naming the file at that row's line, the row's id and ``runs[i].key`` (its index
    among the usable rows)."""
    import re

    from pydantic import ValidationError

    from runplan.calibrate.measured import MeasuredFile, measured_hint
    from runplan.calibrate.published import measured_document
    from runplan.errors import SpecError
    from runplan.validation import spec_error_from_validation

    document = measured_document(loaded.data)
    try:
        return MeasuredFile.model_validate(document)
    except ValidationError as error:
        found = spec_error_from_validation(error, MeasuredFile)
        index = re.match(r"runs\[(\d+)\]", found.where or "")
        run_id = document["runs"][int(index.group(1))].get("id") if index else None
        rows = loaded.data.get("runs") or []
        at = [k for k, row in enumerate(rows) if isinstance(row, dict) and row.get("id") == run_id]
        source = loaded.where(("runs", at[0])) if at else str(path)  # the row's line in the file as written
        run = f"run {run_id!r}: " if index else ""
        raise measured_hint(
            SpecError(run + found.message, where=found.where, source=source, hint=found.hint)
        ) from None


def _base_choice(base: str) -> Literal["shipped", "priors"] | Calibration:
    """``--base``: shipped, priors, or a calibration file; a file that cannot be read names the flag."""
    from runplan.calibrate.calibration import load_calibration
    from runplan.errors import SpecError

    if base in ("shipped", "priors"):
        return cast('Literal["shipped", "priors"]', base)
    try:
        return load_calibration(base)
    except SpecError as error:
        if error.where:  # a key inside the file, at its file:line
            raise
        raise SpecError(
            f"'{base}' is neither shipped nor priors, nor a readable calibration file: {error.message}",
            where="--base",
            hint="--base takes shipped, priors, or a calibration file written by `runplan calibrate -o`",
        ) from None


def _check_held(names: list[str]) -> None:
    from runplan.calibrate.constants import FITTED_CONSTANTS
    from runplan.errors import SpecError

    known = [c.name for c in FITTED_CONSTANTS]
    for name in names:
        if name not in known:
            raise SpecError(
                f"'{name}' is not a fitted constant", where="--hold", hint="one of " + ", ".join(known)
            )


def render(report: Any, written: Path | None, *, stderr: bool = False, hold: Sequence[str] = ()) -> None:
    """The report as tables; on stderr when stdout carries the calibration file (``-o -``). ``hold``: the
    constants --hold named, marked apart from those the runs could not identify."""
    from runplan.cli.common import console
    from runplan.report.tables import fitted_table

    out = console(stderr=stderr)
    out.soft_wrap = False  # tables and lines folded at the terminal width on stderr too
    cal = report.calibration
    headers = ("run", "source", "layout evaluated", "step error", "leave-one-out", "memory error")
    rows = [
        (
            r.id + ("" if r.fit else " (not fitted)"),
            r.source,
            r.layout,
            f"{r.step_error:+.1%}",
            "" if r.leave_one_out_error is None else f"{r.leave_one_out_error:+.1%}",
            "" if r.memory_error is None else f"{r.memory_error:+.1%}",
        )
        for r in report.runs
    ]
    title = f"Calibration on {cal.measured_file}"
    out.print(fitted_table(out, headers, rows, title=title, left=headers[:3], box_style="HEAVY_HEAD"))
    res = cal.residuals
    out.print(
        f"step time, predicted / measured − 1 over {res.runs} fitted runs: median |error| {res.median_abs_error:.1%}, "
        f"worst {res.worst_abs_error:.1%}"
    )
    if res.leave_one_out_median_abs_error is not None:
        out.print(
            f"leave-one-out ({res.leave_one_out_method}): median |error| {res.leave_one_out_median_abs_error:.1%}, "
            f"worst {res.leave_one_out_worst_abs_error:.1%}"
        )
    else:  # a warning may point here ("see leave-one-out"): say why there is none
        out.print("leave-one-out: none (it needs 2 or more fitted runs; add runs to measure it)")
    for family, fam in cal.families.items():  # what every plan using this file will print beside its numbers
        for check in (fam.held_out, fam.peak_memory):
            if check is not None:
                out.print(f"{family}: {check.phrase()}")
    constant_rows = []
    for name in type(next(iter(cal.families.values())).efficiency).model_fields:
        cells = []
        for fam in cal.families.values():
            value = getattr(fam.efficiency, name)
            mark = (
                " (--hold)"
                if name in hold
                else " (held)"
                if name in fam.held
                else (" (fitted)" if name in fam.fitted else "")
            )
            cells.append(("-" if value is None else f"{value:.4g}") + mark)
        constant_rows.append((name, *cells))
    out.print(
        fitted_table(
            out,
            ("constant", *cal.families),
            constant_rows,
            title="Constants per GPU family",
            left=("constant",),
            box_style="HEAVY_HEAD",
        )
    )
    out.print(
        "fitted: identified by these runs; held: not identified by them, so the base value (--base); --hold: "
        "held because you asked; unmarked: not fitted: "
        "attention_fraction follows gemm_peak_fraction (FlashAttention-2's benchmark rate, derated as the "
        "GEMMs are), attention_half_seq is that benchmark's, collective_latency_seconds is fixed "
        "(docs/calibration.md)"
    )
    condition = "none fitted" if report.condition_number is None else f"{report.condition_number:.3g}"
    out.print(f"condition number of the fitted constants: {condition}; base: {cal.base}")
    for warning in report.warnings:  # folded at the terminal width, as every command's warnings
        warn(warning)
    if written is not None:
        out.print(f"wrote {written}")


@handle_errors
def calibrate(
    measured: Path = typer.Argument(
        ..., help="MEASURED.yaml: runs timed on your cluster (docs/calibration.md)."
    ),
    output: str | None = typer.Option(None, "--output", "-o", help="Write the calibration YAML here."),
    base: str = typer.Option(
        "shipped",
        "--base",
        help="Where constants the runs cannot identify come from: shipped, priors, or a calibration file.",
    ),
    name: str | None = typer.Option(
        None, "--name", help="Name recorded in the file (default: the file stem)."
    ),
    hold: list[str] = typer.Option(
        [],
        "--hold",
        help="Keep this constant at its base value instead of fitting it (repeat the flag for more); "
        "e.g. a bus efficiency you measured, or one your runs barely move.",
    ),
    catalog_file: list[str] = typer.Option([], "--catalog", help="Extra catalog YAML file(s)."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Fit the time model's physical constants to step times measured on your cluster."""
    from runplan.calibrate.calibration import dump_calibration
    from runplan.calibrate.run import run_calibration
    from runplan.cli.common import check_output_path, console, located, write_output
    from runplan.errors import SpecError
    from runplan.escape import run_name_problem

    to_stdout = output is not None and output == "-"  # the calibration file is stdout: the report goes aside
    if to_stdout and as_json:
        raise SpecError(
            "-o - and --json both write to standard output, which would mix YAML and JSON",
            where="--output",
            hint="give -o a file name, or drop --json",
        )
    if output is not None and not to_stdout:
        check_output_path(output, "--output", not_over=measured)
    if name is not None and (problem := run_name_problem(name)) is not None:  # it titles every plan's times
        raise SpecError(
            f"the name {problem}", where="--name", hint="give a short one-line name, or drop --name"
        )
    _check_held(hold)
    base_choice = _base_choice(base)
    prepared, loaded = load_measured(measured, catalog_file)
    fitted = sum(p.run.fit for p in prepared)
    # a minute or more with many runs: say what it is doing (on a terminal only; rich draws nothing elsewhere)
    status = console(stderr=True).status(
        f"fitting the time model to {fitted} measured runs and its leave-one-out error ...", spinner="line"
    )
    with located(loaded), status:  # a run the search cannot lay out: at its file:line
        report = run_calibration(
            prepared, name=name or measured.stem, measured_file=str(measured), base=base_choice, hold=hold
        )
    written = None
    if output is not None:
        written = write_output(
            dump_calibration(report.calibration, HEADER), output, "--output", not_over=measured
        )
    if as_json:
        print_json(report.model_dump(mode="json"))
        return
    render(report, written, stderr=to_stdout, hold=hold)


def register(app: typer.Typer) -> None:
    app.command(name="calibrate")(calibrate)
