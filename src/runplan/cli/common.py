"""What every command shares: the error convention, JSON output, lazy rich console.

Keep this module light: it is imported when ``runplan --help`` runs, so numpy, scipy, rich and
matplotlib are imported inside functions only.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from runplan.errors import EXIT_BAD_INPUT, RunplanError

F = TypeVar("F", bound=Callable[..., Any])


def debug_enabled() -> bool:
    return os.environ.get("RUNPLAN_DEBUG", "") not in ("", "0", "false", "no")


def fail(error: RunplanError) -> None:
    """Print one line to stderr and exit with the error's code (1 infeasible, 2 bad input)."""
    kind = "infeasible" if error.exit_code == 1 else "error"
    print(f"runplan: {kind}: {error.one_line()}", file=sys.stderr)
    raise SystemExit(error.exit_code)


def handle_errors(func: F) -> F:
    """Wrap a command so RunplanError becomes one line and an exit code; set RUNPLAN_DEBUG=1 for tracebacks."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except RunplanError as error:
            if debug_enabled():
                raise
            fail(error)
        except (KeyboardInterrupt, BrokenPipeError):
            raise SystemExit(130) from None
        except SystemExit:
            raise
        except Exception as error:  # a bug, not bad input: one line, a distinct exit code
            if type(error).__module__.startswith(("click", "typer")):  # typer.Exit, usage errors
                raise
            if debug_enabled():
                raise
            print(
                f"runplan: internal error: {type(error).__name__}: {error} "
                "(rerun with RUNPLAN_DEBUG=1 for the traceback and please report it)",
                file=sys.stderr,
            )
            raise SystemExit(3) from None
        return None

    return wrapper  # type: ignore[return-value]


def load_plan_file(path: Any) -> tuple[Any, Any]:
    """(LoadedYaml, PlanSpec) for a plan-file argument; bad files raise SpecError with file:line."""
    from runplan.spec import parse_plan
    from runplan.yamlio import load_yaml_file

    loaded = load_yaml_file(path)
    return loaded, parse_plan(loaded)


def plan_from_file(path: Any) -> tuple[Any, Any, Any]:
    """(LoadedYaml, PlanSpec, RunPlan) for a plan-file argument, every error pointed at ``file:line``."""
    from pathlib import Path

    from runplan.plan import build_plan

    loaded, spec = load_plan_file(path)
    with located(loaded):
        return loaded, spec, build_plan(spec, Path(path).resolve().parent)


@contextlib.contextmanager
def located(loaded: Any) -> Iterator[None]:
    """Point SpecErrors about plan keys (raised after validation) at their ``file:line``."""
    try:
        yield
    except RunplanError as error:
        from runplan.errors import SpecError

        if isinstance(error, SpecError):
            raise loaded.locate(error) from None
        raise


def _default(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return value.tolist()
    raise TypeError(f"cannot serialise {type(value).__name__}")


def print_json(data: Any) -> None:
    """Stable JSON to stdout: SI base units, keys as documented in docs/json.md."""
    sys.stdout.write(json.dumps(data, indent=2, default=_default, allow_nan=False) + "\n")


def console(stderr: bool = False):  # -> rich.console.Console, imported lazily
    from rich.console import Console

    # diagnostics on stderr stay one line each (a note wrapped at 80 columns reads as several messages)
    return Console(stderr=stderr, highlight=False, soft_wrap=stderr)


__all__ = ["EXIT_BAD_INPUT", "console", "debug_enabled", "fail", "handle_errors", "print_json"]
