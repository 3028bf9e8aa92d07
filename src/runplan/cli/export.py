"""`runplan export plan.yaml --to megatron|torchtitan|deepspeed [-o PATH] [--engine-version V]`: the plan as an
engine's launch file (for the engine release V, ``export._versions``).

Builds the run plan (``runplan.plan.build_plan``), or reads one stored by ``runplan plan -f json`` as planned,
calls the pure exporter and writes the file to stdout, to PATH, or into PATH when it is a directory (under the
exporter's file name). Warnings, one line each, go to stderr. ``--json`` prints ``{"target", "filename", "text",
"warnings"}`` instead of the text (with ``-o``, as well as writing the file, and ``filename`` is then the path
written; without, the exporter's suggested name). An empty ``-o`` is bad input. Nothing heavy is imported at module level.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from runplan.cli.common import handle_errors, print_json, warn

if TYPE_CHECKING:
    from runplan.plan import RunPlan
    from runplan.yamlio import LoadedYaml

TO_HELP = (
    "Engine to export to: megatron (bash launch script), torchtitan (0.2.x TOML), deepspeed (ds_config JSON)."
)
#: Main-branch version reports (Megatron-LM megatron/core/package_info.py): 0.18.0rc0 from f09f5c98e6 (2026-03-31),
#: 0.18.0+<short sha> from 2f5c62c312 (#4212, 2026-04-09); --step-batch-size-schedule from 532ad926 (#4411,
#: 2026-04-21), so ~160 main commits report 0.18 without it (docs/export.md, "Engine versions").
ENGINE_VERSION_HELP = (
    "The engine release the file is for. megatron: your Megatron-Core version (megatron.core.__version__ or the "
    "core_vX.Y.Z tag): 0.15-0.17 (default) or 0.18-0.20, where a batch ramp is --step-batch-size-schedule. "
    "A main-branch checkout reports 0.18.0rc0 (later 0.18.0+<sha>) from 2026-03-31, three weeks before "
    "--step-batch-size-schedule (532ad926): give it 0.20 only if 'git merge-base --is-ancestor 532ad926 HEAD' "
    "succeeds there, else 0.17. torchtitan: 0.2; deepspeed: 0.19 (one checked release each)."
)


@handle_errors
def export_command(
    plan_file: Path = typer.Argument(
        ...,
        help="Plan file (YAML), or a plan stored by `runplan plan -f json` (exported as planned).",
        dir_okay=False,
    ),
    to: str = typer.Option(..., "--to", "-t", help=TO_HELP),
    output: str | None = typer.Option(
        None,
        "--output",
        "-o",
        help="Write here (a directory, or a name ending in '/': <plan name>.<target>.<ext> inside it); "
        "default stdout.",
    ),
    as_json: bool = typer.Option(
        False, "--json", help="Print the export as JSON (text, filename, warnings)."
    ),
    engine_version: str | None = typer.Option(
        None, "--engine-version", help=ENGINE_VERSION_HELP, show_default=False
    ),
) -> None:
    """Export a plan to Megatron-LM, torchtitan or DeepSpeed; what the engine cannot express is a warning."""
    from runplan.errors import SpecError
    from runplan.export import TARGETS, export_plan

    target = to.strip().lower()
    if target not in TARGETS:
        raise SpecError(
            f"unknown export target '{to}'", where="--to", hint=f"use one of {', '.join(TARGETS)}"
        )
    from runplan.export._versions import engine_release

    engine_release(target, engine_version, where="--engine-version")  # before the plan is built
    if not plan_file.is_file():
        raise SpecError(
            f"no plan file at '{plan_file}'", where="PLAN_FILE", hint="give the path to a plan YAML"
        )

    from runplan.cli.common import check_output_path, located, write_output

    # an empty -o is Path('') = '.', a directory: the file would go into the current directory unasked
    if output is not None and not output.strip():
        raise SpecError(
            "the output name is empty", where="--output", hint="give a file or directory name ('-' is stdout)"
        )
    to_file = Path(output) if output is not None and output != "-" else None
    if to_file is not None:
        from runplan.fileio import check_name

        check_name(to_file, "--output")  # before is_dir(), which raises on a name over 255 bytes
    # a name ending in '/' is a directory to create (Path drops the slash, so decide before)
    into_directory = (
        to_file is not None and output is not None and (output.endswith(("/", os.sep)) or to_file.is_dir())
    )
    if to_file is not None and not into_directory:  # refuse a bad -o before the work, not after it
        check_output_path(to_file, "--output", not_over=plan_file)
    loaded, plan, extra = _planned(plan_file, target)
    with located(
        loaded
    ):  # an engine's refusal names the plan's key (stack.fp8_recipe) at file:line, not a flag
        result = export_plan(plan, target, engine_version, extra)

    if to_file is None:
        _warn(result.warnings, target)
        if as_json:
            print_json(result)
        else:
            sys.stdout.write(result.text)
        return
    path = to_file / result.filename if into_directory else to_file
    written = write_output(result.text, path, "--output", not_over=plan_file, executable=target == "megatron")
    _warn(result.warnings, target)
    if as_json:  # -o with --json: the file is written and its JSON printed, naming the path written
        print_json(result.model_copy(update={"filename": str(written)}))
    print(f"runplan: wrote {written} ({target}, {len(result.warnings)} warning(s))", file=sys.stderr)


def _planned(plan_file: Path, target: str) -> tuple[LoadedYaml, RunPlan, list[str]]:
    """(the file read, its plan, the Megatron memory warning for the script's WARNINGS block). A plan stored by
    `runplan plan -f json` is exported as it was planned (docs/json.md), not planned again: a plan checked in as
    JSON gives the script its plan file gave then. Its inputs are read again for Megatron's memory check only."""
    from runplan.cli.common import located, plan_from_file, stored_plan
    from runplan.errors import SpecError

    stored = stored_plan(plan_file, "PLAN_FILE")
    if stored is None:
        loaded, spec, plan = plan_from_file(plan_file)
    else:
        loaded, plan = _stored_inputs(plan_file), stored
    if target != "megatron":
        return loaded, plan, []
    from runplan.export.megatron import memory_as_megatron_runs_it
    from runplan.plan import plan_spec_of

    try:
        with located(loaded):
            if stored is not None:
                spec = plan_spec_of(stored)
            warning = memory_as_megatron_runs_it(spec, plan, plan_file.resolve().parent)
    except SpecError as error:  # a stored plan's inputs name files from its plan file's folder
        if stored is None or error.hint or "cannot read file" not in error.message:  # fileio.read_bytes
            raise
        raise SpecError(
            error.message,
            where=error.where,
            source=error.source,
            hint="a stored plan's inputs name files from its plan file's folder: store the JSON beside its plan "
            "file, or make those paths absolute",
        ) from None
    return loaded, plan, [warning] if warning else []


def _stored_inputs(plan_file: Path) -> LoadedYaml:
    """The stored plan's JSON with its line numbers, read so that an error about a plan key (``stack.fp8_recipe``)
    is pointed at that key under ``inputs``, where the stored plan holds the plan file's keys."""
    from runplan.yamlio import LoadedYaml, load_yaml_file

    loaded = load_yaml_file(plan_file)
    lines = {path[1:]: line for path, line in loaded.lines.items() if path[:1] == ("inputs",)}
    return LoadedYaml(loaded.data.get("inputs"), lines, loaded.source, loaded.text)


def _warn(warnings: list[str], target: str) -> None:
    """Warnings after the file is written, so a write error stays the only line on stderr."""
    for line in warnings:
        warn(f"{target}: {line}")


def register(app: typer.Typer) -> None:
    app.command(name="export")(export_command)
