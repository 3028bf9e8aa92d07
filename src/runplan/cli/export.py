"""`runplan export plan.yaml --to megatron|torchtitan|deepspeed [-o PATH]`: the plan as an engine's launch file.

Builds the run plan (``runplan.plan.build_plan``), calls the pure exporter and writes the file to stdout, to
PATH, or into PATH when it is a directory (under the exporter's file name). Warnings, one line each, go to
stderr. ``--json`` prints ``{"target", "filename", "text", "warnings"}`` instead. Nothing heavy is imported at
module level.
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from runplan.cli.common import handle_errors, print_json

TO_HELP = (
    "Engine to export to: megatron (bash launch script), torchtitan (0.2.x TOML), deepspeed (ds_config JSON)."
)


@handle_errors
def export_command(
    plan_file: Path = typer.Argument(..., help="Plan file (YAML).", dir_okay=False),
    to: str = typer.Option(..., "--to", "-t", help=TO_HELP),
    output: Path | None = typer.Option(
        None,
        "--output",
        "-o",
        help="Write here (a directory: <plan name>.<target>.<ext> inside it); default stdout.",
    ),
    as_json: bool = typer.Option(
        False, "--json", help="Print the export as JSON (text, filename, warnings)."
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
    if not plan_file.is_file():
        raise SpecError(
            f"no plan file at '{plan_file}'", where="PLAN_FILE", hint="give the path to a plan YAML"
        )

    from runplan.plan import build_plan
    from runplan.spec import load_plan

    plan = build_plan(load_plan(plan_file), plan_file.resolve().parent)
    result = export_plan(plan, target)

    for line in result.warnings:
        print(f"runplan: warning: {target}: {line}", file=sys.stderr)
    if as_json:
        print_json(result)
        return
    if output is None or str(output) == "-":
        sys.stdout.write(result.text)
        return
    path = output / result.filename if output.is_dir() else output
    try:
        path.write_text(result.text, encoding="utf-8")
    except OSError as error:
        raise SpecError(
            f"cannot write '{path}': {error.strerror}",
            where="--output",
            hint="give a writable file or directory",
        ) from None
    if target == "megatron":
        path.chmod(path.stat().st_mode | 0o111)
    _warn(result.warnings, target)
    print(f"runplan: wrote {path} ({target}, {len(result.warnings)} warning(s))", file=sys.stderr)


def _warn(warnings: list[str], target: str) -> None:
    """Warnings after the file is written, so a write error stays the only line on stderr."""
    for line in warnings:
        print(f"runplan: warning: {target}: {line}", file=sys.stderr)


def register(app: typer.Typer) -> None:
    app.command(name="export")(export_command)
