"""`runplan plan`, `runplan init`, `runplan check`: the complete run plan and its CI check."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from runplan.cli.common import echo_wrapped, handle_errors, plan_from_file, print_json
from runplan.defaults import DEFAULT_GPU, DEFAULT_SEQ_LEN

if TYPE_CHECKING:
    from runplan.plan import RunPlan
    from runplan.resolved import Change
    from runplan.spec import PlanSpec
    from runplan.yamlio import LoadedYaml


class Format(StrEnum):
    terminal = "terminal"
    markdown = "markdown"
    json = "json"
    yaml = "yaml"


#: The short names --format takes beside the full ones: a Markdown file's and a YAML file's usual extensions.
FORMAT_ALIASES = {"md": Format.markdown, "yml": Format.yaml}
FORMAT_HELP = "terminal, markdown (md), json or yaml (yml)"


def parse_format(name: str) -> Format:
    """``--format``'s value as a :class:`Format`: a full name or a short one (:data:`FORMAT_ALIASES`), in any
    case; anything else is a SpecError at --format naming every accepted value."""
    from runplan.errors import SpecError

    key = name.strip().lower()
    if key in FORMAT_ALIASES:
        return FORMAT_ALIASES[key]
    if key in Format.__members__:
        return Format(key)
    raise SpecError(f"unknown format '{name}'", where="--format", hint=f"use one of {FORMAT_HELP}")


def _complete_format(incomplete: str) -> list[str]:
    return [name for name in [*Format.__members__, *FORMAT_ALIASES] if name.startswith(incomplete.lower())]


@handle_errors
def plan(
    plan_file: Path = typer.Argument(
        ..., help="Plan file (YAML); start from `runplan init`.", show_default=False
    ),
    fmt_name: str = typer.Option(
        Format.terminal.value,
        "--format",
        "-f",
        help=f"{FORMAT_HELP}; yaml is the resolved plan (inputs plus every derived number, which `runplan check` "
        "diffs).",
        autocompletion=_complete_format,
    ),
    output: str | None = typer.Option(None, "--output", "-o", help="Write to this file instead of stdout."),
    plots: Path | None = typer.Option(
        None, "--plots", help="Write PNG plots here (plot extra); Markdown links them."
    ),
    json_flag: bool = typer.Option(False, "--json", help="Same as --format json."),
    detail: bool = typer.Option(
        False, "--detail", help="Terminal format: every section's explanation table, not just one screen."
    ),
    calibration: Path | None = typer.Option(
        None,
        "--calibration",
        help="Calibration file from `runplan calibrate` (replaces the plan's calibration:).",
    ),
) -> None:
    """Plan the whole run: allocation, shape, layout, schedule, checkpoints, failures, monitoring, sweep, cost."""
    from runplan.cli.common import check_output_path, write_output
    from runplan.plan import allocation_law

    fmt = parse_format(fmt_name)
    if json_flag and fmt not in (Format.terminal, Format.json):  # terminal is the default: not a choice
        from runplan.errors import SpecError

        raise SpecError(
            f"--json and --format {fmt.value} ask for two formats", where="--json", hint="give one of them"
        )
    if output is not None and str(output) != "-":  # refuse a bad -o before the work, not after it
        check_output_path(output, "--output", not_over=plan_file)
    if plots is not None:
        from runplan.report.plots import pyplot

        pyplot()  # a missing matplotlib is one line before the plan's work, and before --plots is created
    with _removed_if_failed(plots):
        loaded, spec, result = plan_from_file(plan_file, calibration)
        if json_flag:
            fmt = Format.json
        files: dict[str, str] = {}
        if plots is not None:
            from runplan.report.plots import write_plots

            law = allocation_law(spec, plan_file.resolve().parent, result.model.shape)
            files = write_plots(result, law, plots)
        to_stdout = output is None or str(output) == "-"
        moved = None if to_stdout else (plan_file.resolve().parent, Path(str(output)).resolve().parent)
        text = _rendered(
            fmt,
            loaded,
            result,
            _plot_links(plots, files, output),
            to_stdout=to_stdout,
            detail=detail,
            moved=moved,
        )
        if text is not None:
            write_output(text, output, "--output", not_over=plan_file)
        if fmt is Format.yaml and not to_stdout:
            _warn_of_moved_paths(plan_file, Path(str(output)), spec)
    machine_output = to_stdout and fmt in (Format.json, Format.yaml)  # stays clean: no line beside it
    if plots is not None and not machine_output:  # stderr when stdout is the report
        typer.echo("wrote plots " + ", ".join(str(plots / name) for name in files.values()), err=to_stdout)


def relative_path_keys(spec: PlanSpec, base_dir: Path) -> list[str]:
    """``key: path`` for each relative path among the plan's keys (read from the plan file's folder,
    ``base_dir``): catalog files, calibration, law file, hyperparameter law, model config (``model: {config:
    ...}``, or ``model:`` naming a config.json or a checkpoint folder, as runplan.plan.local_config reads it)."""
    from runplan.plan import local_config

    choice = spec.model if spec.model is not None and not isinstance(spec.model, str) else None
    name = choice.name if choice is not None else None
    local = local_config(name, base_dir)
    named = [
        *((f"catalog[{i}]", path) for i, path in enumerate(spec.catalog)),
        ("calibration", spec.calibration),
        ("law.file", spec.law.file if spec.law is not None else None),
        ("schedule.hyperparams", spec.schedule.hyperparams),
        ("model.config", choice.config if choice is not None else None),
        ("model", name if local else None),
    ]
    return [f"{key}: {path}" for key, path in named if path is not None and not Path(path).is_absolute()]


def _warn_of_moved_paths(plan_file: Path, output: Path, spec: PlanSpec) -> None:
    """The resolved plan (-f yaml) written to another folder than the plan file: its keys are copied as written,
    so a relative path among them would be read from the new folder; say which (stderr)."""
    from runplan.cli.common import warn

    if output.resolve().parent == plan_file.resolve().parent:
        return
    keys = relative_path_keys(spec, plan_file.resolve().parent)
    if keys:
        warn(
            f"{output} is in another folder than {plan_file}; the paths it copies are read relative to the "
            f"folder of the file that names them ({'; '.join(keys)}), so planned there they name nothing: write "
            f"it beside {plan_file.name}, or make those paths absolute"
        )


@contextmanager
def _removed_if_failed(directory: Path | None) -> Iterator[None]:
    """Create ``directory`` (``--plots``; None: nothing) for the block; if the block fails, remove the
    directories this created that are still empty, so a failed command leaves nothing behind."""
    from runplan.cli.common import output_directory

    if directory is None:
        yield
        return
    try:
        created = [d for d in (directory, *directory.parents) if not d.exists()]  # deepest first
    except OSError:  # a name the system refuses: output_directory says which
        created = []
    output_directory(directory, "--plots")
    try:
        yield
    except BaseException:
        for made in created:
            try:
                made.rmdir()  # only an empty directory goes
            except OSError:
                break
        raise


def _plot_links(plots: Path | None, files: dict[str, str], output: str | None) -> dict[str, str]:
    """{title: link} for the Markdown report: each plot's path relative to the report's directory (the working
    directory when the report goes to stdout), absolute only where no relative path exists (another drive)."""
    if plots is None:
        return {}
    anchor = Path(output).resolve().parent if output is not None and output != "-" else Path.cwd()
    links: dict[str, str] = {}
    for title, name in files.items():
        target = (plots / name).resolve()
        try:
            links[title] = Path(os.path.relpath(target, anchor)).as_posix()
        except ValueError:  # Windows: the plots and the report on different drives
            links[title] = str(target)
    return links


@handle_errors
def check(
    plan_file: Path = typer.Argument(
        ..., help="Plan file, ideally a resolved one (`runplan plan -f yaml`).", show_default=False
    ),
    rtol_text: str = typer.Option("1e-4", "--rtol", help="Relative tolerance for derived numbers."),
    as_json: bool = typer.Option(
        False,
        "--json",
        help='Print {"file", "status": ok|drift|unresolved|updated, "resolved", "rtol", "changes": '
        '[{path, section, kind, old, new, relative_change}], "inputs": the inputs changed since resolved, same '
        'form, "warnings": the plan\'s layout warnings}; an infeasible plan: {"file", "status": '
        '"infeasible", "reason", "suggestions"} (exit 1).',
    ),
    update: bool = typer.Option(
        False,
        "--update",
        help="Rewrite the file's resolved section with the recomputed numbers (keeps your keys and comments).",
    ),
    calibration: Path | None = typer.Option(
        None,
        "--calibration",
        help="Calibration file from `runplan calibrate` (replaces the plan's calibration:).",
    ),
) -> None:
    """For CI: validate, recompute, check feasibility, and diff against the file's resolved numbers (exit 1 on
    drift; --update rewrites them)."""
    from runplan.cli.common import flag_value
    from runplan.cli.flags import paths_for_user
    from runplan.errors import Infeasible, SpecError
    from runplan.resolved import diff_changes, input_changes, resolved_section

    rtol = flag_value(rtol_text, "--rtol")  # as every numeric flag: "--rtol: expected a number, got ..."
    if not 0 < rtol < 1:  # inf or 1 would accept any change: `check` must be able to fail (issue 17)
        raise SpecError(
            f"must be positive and below 1, got {rtol:g}",
            where="--rtol",
            hint="a relative tolerance, e.g. 1e-4",
        )
    try:
        _, spec, result = plan_from_file(plan_file, calibration)
    except Infeasible as error:  # exit 1 either way; --json still gives CI a record to parse
        if as_json:
            print_json(
                {
                    "file": str(plan_file),
                    "status": "infeasible",
                    "reason": paths_for_user(error.reason, "check"),
                    "suggestions": [paths_for_user(text, "check") for text in error.suggestions],
                }
            )
        raise
    changes = [] if spec.resolved is None else diff_changes(spec.resolved, resolved_section(result), rtol)
    inputs = None if spec.resolved is None else input_changes(spec.resolved, result)
    # `runplan plan`'s layout cautions (a pinned layout's broken bubble cap...): printed, or in the JSON
    warnings = [w for w in result.warnings if w.startswith("layout: ")]
    written = not update or _update(plan_file, spec, result)
    status = "updated" if update else "unresolved" if spec.resolved is None else "drift" if changes else "ok"
    if as_json:
        print_json(
            {
                "file": str(plan_file),
                "status": status,
                "resolved": spec.resolved is not None,
                "rtol": rtol,
                "changes": [change.record() for change in changes],
                "inputs": None if inputs is None else [change.record() for change in inputs],
                "warnings": warnings,
            }
        )
    else:
        resolved_cost = (spec.resolved or {}).get("cost") or {}
        currencies = (str(resolved_cost.get("currency", result.cost.currency)), result.cost.currency)
        _report_check(plan_file, status, changes, rtol, calibration, currencies, inputs, written=written)
        for warning in warnings:  # the same lines as `runplan plan`'s, the same exit code
            echo_wrapped(f"  warning: {warning}", err=status == "drift")
    if status == "drift":
        raise typer.Exit(1)


def _update(plan_file: Path, spec: PlanSpec, result: RunPlan) -> bool:
    """`check --update`: write ``result``'s resolved section into the plan file, keeping the user's text; a
    section already current (``runplan.resolved.is_current``: equal but for the search's wall time) is left as
    it is, so that an update with nothing to change leaves no diff to commit. True when the file was written."""
    from runplan.cli.common import write_output
    from runplan.fileio import read_text, reset_inputs
    from runplan.resolved import is_current, updated_text
    from runplan.yamlio import MAX_FILE_BYTES

    if spec.resolved is not None and is_current(spec.resolved, result):
        return False
    original = read_text(plan_file, MAX_FILE_BYTES)
    reset_inputs()  # the one write that replaces the file it read, on purpose (atomically: write_output)
    write_output(updated_text(original, result), plan_file, "--update")
    return True


def _report_inputs(inputs: list[Change], *, drift: bool, currencies: tuple[str, str] = ("", "")) -> None:
    """The inputs that differ from those the resolved section records, or (drift) that none does, so that the
    numbers moved with runplan, a catalog or the calibration; money in ``currencies`` (resolved, recomputed)."""
    if not inputs:
        if drift:
            echo_wrapped(
                "  no input changed since the file was resolved (defaults included): the numbers moved with "
                "runplan, a catalog or the calibration",
                err=True,
            )
        return
    echo_wrapped(
        f"  inputs changed since the file was resolved ({len(inputs)}, defaults included):", err=drift
    )
    for change in inputs[:CHANGES_PER_SECTION]:
        echo_wrapped(f"    {change.readable(*currencies)}", err=drift, indent="        ")
    if len(inputs) > CHANGES_PER_SECTION:
        echo_wrapped(f"    and {len(inputs) - CHANGES_PER_SECTION} more (--json lists every one)", err=drift)


#: How many changes of each section `check` prints before "and N more".
CHANGES_PER_SECTION = 5


def _rendered(
    fmt: Format,
    loaded: LoadedYaml,
    result: RunPlan,
    written: dict[str, str],
    *,
    to_stdout: bool,
    detail: bool,
    moved: tuple[Path, Path] | None = None,
) -> str | None:
    """The plan in ``fmt`` as text; None when the terminal view went straight to the console. ``moved``: the
    plan file's folder and the output's (the YAML's schema line names its file from the output's)."""
    if fmt is Format.json:
        import json

        text = json.dumps(result.model_dump(mode="json"), indent=2, allow_nan=False)
    elif fmt is Format.yaml:
        from runplan.resolved import resolved_document

        text = resolved_document(loaded.data, result, loaded.text, moved)
    elif fmt is Format.markdown:
        from runplan.report.markdown import render_markdown

        text = render_markdown(result, written)
    else:
        from runplan.report.terminal import render_terminal

        if to_stdout:
            from runplan.cli.common import console

            render_terminal(result, console(), detail=detail)
            return None
        import io

        from rich.console import Console

        buffer = io.StringIO()
        render_terminal(result, Console(file=buffer, width=140, color_system=None), detail=detail)
        text = buffer.getvalue()
    return text


def _report_check(
    plan_file: Path,
    status: str,
    changes: list[Change],
    rtol: float,
    calibration: Path | None = None,
    currencies: tuple[str, str] = ("", ""),
    inputs: list[Change] | None = None,
    *,
    written: bool = True,
) -> None:
    """One line of verdict (``written``: False where --update found the section current and left the file);
    the inputs that changed since the file was resolved (:func:`_report_inputs`); on drift the headline changes
    (days and cost first), then a few per section, each in the unit the report prints it in (``currencies``: the
    resolved section's and the recomputed plan's)."""
    if status == "unresolved":
        typer.echo(f"unresolved: {plan_file}")
        echo_wrapped(
            "  valid and feasible, but it has no resolved section to compare against; "
            "`runplan check --update` on it writes one"
        )
        return
    if status == "ok":
        typer.echo(f"ok: {plan_file}")
        echo_wrapped(f"  every derived number matches within rtol {rtol:g}")
        if inputs:
            _report_inputs(inputs, drift=False, currencies=currencies)
        return
    if status == "updated" and not written:
        typer.echo(f"updated: {plan_file}")
        echo_wrapped(
            "  resolved section already current (every value but the search's wall time): file left as it was"
        )
        return
    verb = "updated" if status == "updated" else "drift"
    count = f"{len(changes)} derived value(s) changed beyond rtol {rtol:g}" if changes else "resolved section"
    typer.echo(f"{verb}: {plan_file}", err=status == "drift")
    echo_wrapped(
        "  " + count + (" (resolved → recomputed):" if changes else " written"), err=status == "drift"
    )
    if status == "drift" and inputs is not None:
        _report_inputs(inputs, drift=True, currencies=currencies)
    headline = [c for c in changes if c.headline]
    lines: list[str] = [f"  {c.readable(*currencies)}" for c in headline]
    sections: dict[str, list[Change]] = {}
    for change in changes:
        if not change.headline:
            sections.setdefault(change.section, []).append(change)
    for section, items in sections.items():
        lines.append(f"  {section} ({len(items)}):")
        lines += [f"    {c.readable(*currencies)}" for c in items[:CHANGES_PER_SECTION]]
        if len(items) > CHANGES_PER_SECTION:
            lines.append(f"    and {len(items) - CHANGES_PER_SECTION} more (--json lists every one)")
    for line in lines:
        echo_wrapped(line, err=status == "drift", indent=line[: len(line) - len(line.lstrip())] + "    ")
    if status == "drift":
        echo_wrapped(
            "  if the change is intended: `runplan check --update "
            + (f"--calibration {calibration} " if calibration is not None else "")
            + f"{plan_file}` writes the recomputed numbers",
            err=True,
        )


@handle_errors
def init(
    flops: str | None = typer.Option(None, "--flops", help="Compute budget in FLOPs, e.g. 2e23."),
    model: str | None = typer.Option(None, "--model", help="Fix the model: a preset or a size like 70b."),
    tokens: str | None = typer.Option(None, "--tokens", help="With --model: training tokens, e.g. 2T."),
    days: str | None = typer.Option(None, "--days", help="Budget: wall-clock days on all the GPUs, e.g. 30."),
    gpus: str | None = typer.Option(
        None,
        "--gpus",
        help="GPU count (default 1024); given without a budget flag, the budget is a 30-day placeholder "
        "(with neither, 2e23 FLOPs).",
    ),
    gpu: str = typer.Option(DEFAULT_GPU, "--gpu", help="GPU type (`runplan catalog gpus`)."),
    gpus_per_node: str | None = typer.Option(
        None, "--gpus-per-node", help="GPUs per node (NVLink domain); default: the GPU type's."
    ),
    price_per_gpu_hour: str | None = typer.Option(
        None, "--price-per-gpu-hour", help="USD per GPU-hour, for the cost (default 2)."
    ),
    seq_len: str = typer.Option(
        str(DEFAULT_SEQ_LEN), "--seq-len", help="Sequence length in tokens, e.g. 8192 or 8k (= 8192)."
    ),
    name: str = typer.Option("my-run", "--name", help="Run name."),
) -> None:
    """Write a commented starter plan file to stdout (every key with its help text and default)."""
    from runplan.starter import starter_plan

    text = starter_plan(
        flops=flops,
        model=model,
        tokens=tokens,
        gpus=gpus,
        gpu=gpu,
        seq_len=seq_len,
        name=name,
        days=days,
        gpus_per_node=gpus_per_node,
        price_per_gpu_hour=price_per_gpu_hour,
    )
    typer.echo(text, nl=False)


def register(app) -> None:
    app.command(name="plan")(plan)
    app.command(name="check")(check)
    app.command(name="init")(init)
