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
    add_completion=True,  # --install-completion and --show-completion SHELL (bash, zsh, fish, powershell)
    rich_markup_mode=None,  # click's plain help wraps long option names at any width; rich's panels cut them to `…`
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
    # Each module exposes register(app); imported here so `--help` lists every command. A missing module is
    # a broken install, not an optional command: the import error propagates.
    import importlib

    for name in (
        "catalog",
        "schema",
        "allocate",
        "fit",
        "sweep",
        "parallelize",
        "plan",
        "compare",
        "export",
        "monitor",
        "calibrate",
    ):
        importlib.import_module(f"runplan.cli.{name}").register(app)


_register_commands()


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point. Usage errors (unknown option, a flag's value of the wrong type) become one
    line on stderr and exit 2, like every other bad input (DESIGN.md), instead of click's boxed panel."""
    import sys

    from typer.main import get_command

    command = get_command(app)
    try:
        code = command.main(
            args=argv if argv is not None else sys.argv[1:], prog_name="runplan", standalone_mode=False
        )
        if sys.stdout is not None:
            sys.stdout.flush()
    except OSError as error:  # help or a command outside handle_errors writing to a full disk or closed pipe
        from runplan.cli.common import stream_failure

        exit_ = stream_failure(error)
        if exit_ is None:
            raise
        raise exit_ from None
    except typer.Abort:
        print("runplan: aborted", file=sys.stderr)
        raise SystemExit(130) from None
    except Exception as error:  # click's UsageError/BadParameter (typer vendors click; no public name)
        if not hasattr(error, "format_message") or not hasattr(error, "exit_code"):
            raise
        if type(error).__name__ == "NoArgsIsHelpError":  # `runplan` (or a group) alone: the help, as written
            print(error.format_message(), file=sys.stderr)
            raise SystemExit(error.exit_code) from None
        where = ""
        ctx = getattr(error, "ctx", None)
        if ctx is not None and ctx.info_name and ctx.info_name != "runplan":
            where = f"{ctx.info_name}: "
        # typer's enum parsing says "Invalid value for '--format' / '-f': Value error, 'md' is not one of ..."
        message = " ".join(error.format_message().split()).replace(": Value error, ", ": ")
        if not message:  # no arguments: the help was already printed
            raise SystemExit(error.exit_code) from None
        print(
            f"runplan: error: {where}{message} (see `runplan {where[:-2] + ' ' if where else ''}--help`)",
            file=sys.stderr,
        )
        raise SystemExit(error.exit_code) from None
    raise SystemExit(code if isinstance(code, int) else 0)
