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


def plan_from_file(path: Any, calibration: Any = None) -> tuple[Any, Any, Any]:
    """(LoadedYaml, PlanSpec, RunPlan) for a plan-file argument, every error pointed at ``file:line``;
    ``calibration`` (``--calibration FILE``) replaces the plan's ``calibration:`` key."""
    from pathlib import Path

    from runplan.plan import build_plan

    loaded, spec = load_plan_file(path)
    if calibration is not None:
        spec = spec.model_copy(update={"calibration": str(Path(calibration).resolve())})
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


def flag_value(text: str | None, flag: str, kind: str = "number") -> Any:
    """A flag's text parsed by :mod:`runplan.units` (``kind``: number, count or bytes); None when not given.

    Only the notation is checked here ("2e23", "70B", "3GB"); bounds belong to the input model the value fills
    (:func:`build_from_flags`), so a flag and a plan-file key are checked by the same field.
    """
    if text is None:
        return None
    from runplan import units

    parse = {"number": units.parse_number, "count": units.parse_count, "bytes": units.parse_bytes}[kind]
    return parse(text, where=flag)


def build_from_flags(model: Any, flags: dict[str, str], where: str | None, /, **fields: Any) -> Any:
    """``model(**fields)`` without the fields that are None; a validation error names the flag that set it.

    ``flags`` maps a field name (or a dotted path into a nested model) to the flag that fills it; an error on
    a field without a flag, or on the whole model (a cross-field rule), names ``where``. The message is the
    one a plan file gets (:func:`runplan.validation.spec_error_from_validation`), one line.
    """
    from pydantic import ValidationError

    from runplan.errors import SpecError
    from runplan.validation import spec_error_from_validation

    try:
        return model(**{key: value for key, value in fields.items() if value is not None})
    except ValidationError as error:
        found = spec_error_from_validation(error, model)
        path = found.where or ""
        flag = flags.get(path) or flags.get(path.split(".")[0]) or where or path or None
        raise SpecError(found.message, where=flag, hint=found.hint) from None


def check_output_path(path: Any, flag: str = "--output", *, not_over: Any = None) -> Any:
    """``path`` as a Path if a command may write a file there, else a SpecError naming ``flag``.

    Refused: a directory, and ``not_over`` (the plan file being read). Commands call this before slow work
    so a bad ``-o`` fails at once; :func:`write_output` calls it again.
    """
    from pathlib import Path

    from runplan.errors import SpecError

    target = Path(path)
    if not_over is not None and target.resolve() == Path(not_over).resolve():
        raise SpecError(
            f"'{target}' is the plan file being read; writing there would overwrite it",
            where=flag,
            hint="give another file name",
        )
    if target.is_dir():
        raise SpecError(f"'{target}' is a directory", where=flag, hint="give a file name")
    _check_parents(target.parent, flag)
    return target


def _check_parents(directory: Any, flag: str) -> None:
    """A SpecError naming ``flag`` when an existing ancestor of ``directory`` is a file, not a directory."""
    from runplan.errors import SpecError

    for ancestor in (directory, *directory.parents):
        if ancestor.exists():
            if not ancestor.is_dir():
                raise SpecError(
                    f"'{ancestor}' is a file, not a directory", where=flag, hint="give a path in a directory"
                )
            return


def output_directory(path: Any, flag: str) -> Any:
    """Create ``path`` as a directory for a command's output files; a SpecError naming ``flag`` if it cannot."""
    from pathlib import Path

    from runplan.errors import SpecError

    directory = Path(path)
    if directory.exists() and not directory.is_dir():
        raise SpecError(f"'{directory}' is a file, not a directory", where=flag, hint="give a directory")
    _check_parents(directory, flag)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise SpecError(
            f"cannot create directory '{directory}': {error.strerror or error}",
            where=flag,
            hint="give a writable directory",
        ) from None
    return directory


def write_output(
    text: str, path: Any, flag: str = "--output", *, not_over: Any = None, executable: bool = False
) -> Any:
    """Write ``text`` to ``path`` (None or "-": stdout) and return the path written (None for stdout).

    Every command that writes a file goes through here, so each refuses the same things with one line that
    names ``flag``: a directory, a place it cannot create or write, and ``not_over`` (the plan file being
    read: ``-o`` pointing at it would overwrite the input). Missing parent directories are created.
    """

    from runplan.errors import SpecError

    body = text if text.endswith("\n") or not text else text + "\n"
    if path is None or str(path) == "-":
        sys.stdout.write(body)
        return None
    target = check_output_path(path, flag, not_over=not_over)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(body, encoding="utf-8")
        if executable:
            target.chmod(target.stat().st_mode | 0o111)
    except OSError as error:
        raise SpecError(
            f"cannot write '{target}': {error.strerror or error}",
            where=flag,
            hint="give a writable file",
        ) from None
    return target


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


__all__ = [
    "EXIT_BAD_INPUT",
    "build_from_flags",
    "check_output_path",
    "console",
    "debug_enabled",
    "fail",
    "flag_value",
    "handle_errors",
    "output_directory",
    "print_json",
    "write_output",
]
