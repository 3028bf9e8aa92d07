"""The ``runplan`` typer application. Each command lives in its own module and registers itself.

Command modules must import nothing heavy at module level (see tests/test_cli_startup.py): numpy, scipy,
rich and matplotlib are imported inside the command body.
"""

from __future__ import annotations

import typer

from runplan import __version__

app = typer.Typer(
    name="runplan",
    help="Plan an LLM pre-training run before renting a GPU: allocation, parallel layout, schedule, cost.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"runplan {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Plan an LLM pre-training run before renting a GPU."""


def _register_commands() -> None:
    # Each module exposes register(app); imported here so `--help` lists every command.
    import importlib

    for name in ("catalog", "schema", "allocate", "fit", "sweep", "parallelize", "plan", "export"):
        try:
            module = importlib.import_module(f"runplan.cli.{name}")
        except ModuleNotFoundError as error:  # a command not built yet
            if error.name != f"runplan.cli.{name}":
                raise
            continue
        module.register(app)


_register_commands()


def main() -> None:
    """Console-script entry point; click's usage errors already exit 2 with one line."""
    app()
