"""The ``runplan`` typer application. Each command lives in its own module and registers itself.

Command modules must import nothing heavy at module level (see tests/test_cli_startup.py): numpy, scipy,
rich and matplotlib are imported inside the command body.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from runplan import __version__

if TYPE_CHECKING:
    import typer

#: Each command, and the module that registers it (``register(app)``), in the order ``runplan --help`` lists
#: them. ``main`` imports only the module of the command it runs (tests/test_cli_startup.py checks this table
#: against what each module registers).
COMMAND_MODULES = {
    "catalog": "catalog",
    "schema": "schema",
    "allocate": "allocate",
    "fit": "fit",
    "sweep": "sweep",
    "parallelize": "parallelize",
    "plan": "plan",
    "check": "plan",
    "init": "plan",
    "diff": "compare",
    "whatif": "compare",
    "export": "export",
    "monitor": "monitor",
    "calibrate": "calibrate",
}


def _version(value: bool) -> None:
    import typer

    if value:
        typer.echo(f"runplan {__version__}")
        raise typer.Exit()


def _new_app() -> typer.Typer:
    """The ``runplan`` group with its options (``--version``) and no command yet."""
    import typer

    app = typer.Typer(
        name="runplan",
        help="Plan an LLM pre-training run before renting a GPU: allocation, parallel layout, schedule, cost.",
        no_args_is_help=True,
        add_completion=True,  # --install-completion and --show-completion SHELL (bash, zsh, fish, powershell)
        rich_markup_mode=None,  # click's plain help wraps long option names at any width; rich's panels cut them to `…`
        pretty_exceptions_enable=False,
        context_settings={"help_option_names": ["-h", "--help"]},
    )

    @app.callback()
    def _root(
        ctx: typer.Context,
        version: bool = typer.Option(
            False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ) -> None:
        """Plan an LLM pre-training run before renting a GPU."""
        ctx.call_on_close(_command_ended)  # the root context closes when the command returns or raises

    # typer finds the context parameter by its annotation's class; annotations are strings here and name a module
    # this module imports inside functions only, so the parameter is given the class itself
    _root.__annotations__["ctx"] = typer.Context
    return app


def _command_ended() -> None:
    """Put back what the command set in rich to print (runplan.cli.common.command_ended)."""
    from runplan.cli.common import command_ended

    command_ended()


def _register_commands(target: typer.Typer | None = None) -> None:
    """Register every command on ``target`` (default: this module's ``app``).

    Each module exposes register(app); imported here so `--help` lists every command. A missing module is a
    broken install, not an optional command: the import error propagates."""
    import importlib

    if target is None:
        target = sys.modules[__name__].app
    for name in dict.fromkeys(COMMAND_MODULES.values()):
        importlib.import_module(f"runplan.cli.{name}").register(target)


def __getattr__(name: str) -> Any:
    """``app``, the application with every command, built on first use: importing it imports every command
    module (and typer), which a run of one command does not need (:func:`main` builds only that command)."""
    if name != "app":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    app = _new_app()
    _register_commands(app)
    globals()["app"] = app
    return app


def _app_for(args: list[str]) -> typer.Typer:
    """The application that runs ``args``: only the named command's module when ``args`` starts with a command
    (click dispatches to that command alone, so its options, help and errors read the same), else every
    command (``--help``, a misspelled command, no arguments, shell completion)."""
    import importlib

    module = COMMAND_MODULES.get(args[0]) if args else None
    if module is None:
        return sys.modules[__name__].app
    app = _new_app()
    importlib.import_module(f"runplan.cli.{module}").register(app)
    return app


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point. Usage errors (unknown option, a flag's value of the wrong type) become one
    line on stderr and exit 2, like every other bad input (DESIGN.md), instead of click's boxed panel.

    Only the command ``argv`` names is imported and built (:func:`_app_for`); ``runplan --version`` alone is
    answered before typer is imported."""
    args = list(argv if argv is not None else sys.argv[1:])
    if args == ["--version"]:
        try:
            print(f"runplan {__version__}", flush=True)  # what typer.echo writes from the eager option
        except OSError as error:
            _exit_for_stream(error)
            raise
        raise SystemExit(0)
    import typer
    from typer.main import get_command

    command = get_command(_app_for(args))
    try:
        code = command.main(args=args, prog_name="runplan", standalone_mode=False)
        if sys.stdout is not None:
            sys.stdout.flush()
    except OSError as error:  # help or a command outside handle_errors writing to a full disk or closed pipe
        _exit_for_stream(error)
        raise
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


def _exit_for_stream(error: OSError) -> None:
    """Exit as :func:`runplan.cli.common.stream_failure` says for a failed write to standard output (closed
    pipe, full disk); return for any other OSError, which the caller re-raises."""
    from runplan.cli.common import stream_failure

    exit_ = stream_failure(error)
    if exit_ is not None:
        raise exit_ from None
