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
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

from runplan.errors import EXIT_BAD_INPUT, RunplanError

if TYPE_CHECKING:  # heavy at import time; the functions below import them when called
    from pydantic import BaseModel
    from rich.console import Console

    from runplan.plan import RunPlan
    from runplan.spec import PlanSpec
    from runplan.yamlio import LoadedYaml

F = TypeVar("F", bound=Callable[..., Any])
M = TypeVar("M", bound="BaseModel")


def debug_enabled() -> bool:
    return os.environ.get("RUNPLAN_DEBUG", "") not in ("", "0", "false", "no")


def fail(error: RunplanError, command: str | None = None) -> None:
    """Print one line to stderr and exit with the error's code (1 infeasible, 2 bad input).

    A field path from flags is printed as ``command``'s flag for it (:func:`runplan.cli.flags.with_flag`, the
    one table).
    """
    from runplan.cli.flags import with_flag

    error = with_flag(error, command)
    kind = "infeasible" if error.exit_code == 1 else "error"
    print(f"runplan: {kind}: {error.one_line()}", file=sys.stderr)
    raise SystemExit(error.exit_code)


def handle_errors(func: F) -> F:
    """Wrap a command so RunplanError becomes one line and an exit code; set RUNPLAN_DEBUG=1 for tracebacks.

    The command's name (``func``'s, without ``_command``) picks its flags for field paths.
    """
    command = func.__name__.removesuffix("_command")

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except RunplanError as error:
            if debug_enabled():
                raise
            fail(error, command)
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


def load_plan_file(path: str | Path) -> tuple[LoadedYaml, PlanSpec]:
    """(LoadedYaml, PlanSpec) for a plan-file argument; bad files raise SpecError with file:line."""
    from runplan.spec import parse_plan
    from runplan.yamlio import load_yaml_file

    loaded = load_yaml_file(path)
    return loaded, parse_plan(loaded)


def plan_from_file(
    path: str | Path, calibration: str | Path | None = None
) -> tuple[LoadedYaml, PlanSpec, RunPlan]:
    """(LoadedYaml, PlanSpec, RunPlan) for a plan-file argument, every error pointed at ``file:line``;
    ``calibration`` (``--calibration FILE``) replaces the plan's ``calibration:`` key."""
    from runplan.plan import build_plan

    loaded, spec = load_plan_file(path)
    if calibration is not None:
        spec = spec.model_copy(update={"calibration": str(Path(calibration).resolve())})
    with located(loaded):
        return loaded, spec, build_plan(spec, Path(path).resolve().parent)


@contextlib.contextmanager
def located(loaded: LoadedYaml) -> Iterator[None]:
    """Point SpecErrors about plan keys (raised after validation) at their ``file:line``."""
    try:
        yield
    except RunplanError as error:
        from runplan.errors import SpecError

        if isinstance(error, SpecError):
            raise loaded.locate(error) from None
        raise


@overload
def flag_value(text: str, flag: str, kind: Literal["count"]) -> int: ...
@overload
def flag_value(text: str, flag: str, kind: Literal["number", "bytes"] = "number") -> float: ...
@overload
def flag_value(text: None, flag: str, kind: Literal["count", "number", "bytes"] = "number") -> None: ...
@overload
def flag_value(text: str | None, flag: str, kind: Literal["count"]) -> int | None: ...
@overload
def flag_value(text: str | None, flag: str, kind: Literal["number", "bytes"] = "number") -> float | None: ...
def flag_value(
    text: str | None, flag: str, kind: Literal["count", "number", "bytes"] = "number"
) -> float | int | None:
    """A flag's text parsed by :mod:`runplan.units` (``kind``: number, count or bytes); None when not given.

    Only the notation is checked here ("2e23", "70B", "3GB"); bounds belong to the input model the value fills
    (:func:`build_from_flags`), so a flag and a plan-file key are checked by the same field.
    """
    if text is None:
        return None
    from runplan import units

    if kind == "count":
        return units.parse_count(text, where=flag)
    return units.parse_bytes(text, where=flag) if kind == "bytes" else units.parse_number(text, where=flag)


def build_from_flags(model: type[M], paths: str | dict[str, str], where: str | None, /, **fields: Any) -> M:
    """``model(**fields)`` without the fields that are None; a validation error names the field's path.

    ``paths`` says where each field lives in a plan file: a prefix for every field (``"parallel"``: ``tp`` is
    ``parallel.tp``), or a map from a field (or the head of a dotted path into a nested model) to its path.
    An error on a field without a path, or on the whole model (a cross-field rule), names ``where``. The
    message is the one a plan file gets (:func:`runplan.validation.spec_error_from_validation`), one line; the
    path becomes a flag where errors are printed (:mod:`runplan.cli.flags`).
    """
    from pydantic import ValidationError

    from runplan.errors import SpecError
    from runplan.validation import spec_error_from_validation

    try:
        return model(**{key: value for key, value in fields.items() if value is not None})
    except ValidationError as error:
        found = spec_error_from_validation(error, model)
        raise SpecError(
            found.message, where=_field_path(found.where, paths) or where or found.where, hint=found.hint
        ) from None


def _field_path(loc: str | None, paths: str | dict[str, str]) -> str | None:
    """The plan-file path of a model field's dotted ``loc`` (see :func:`build_from_flags`); None if unknown."""
    if not loc:
        return None
    if isinstance(paths, str):
        return f"{paths}.{loc}"
    head, _, rest = loc.partition(".")
    if loc in paths:
        return paths[loc]
    if head in paths:
        return f"{paths[head]}.{rest}" if rest else paths[head]
    return None


def check_output_path(
    path: str | Path, flag: str = "--output", *, not_over: str | Path | None = None
) -> Path:
    """``path`` as a Path if a command may write a file there, else a SpecError naming ``flag``.

    Refused: a directory, and ``not_over`` (the plan file being read). Commands call this before slow work
    so a bad ``-o`` fails at once; :func:`write_output` calls it again.
    """
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


def _check_parents(directory: Path, flag: str) -> None:
    """A SpecError naming ``flag`` when an existing ancestor of ``directory`` is a file, not a directory."""
    from runplan.errors import SpecError

    for ancestor in (directory, *directory.parents):
        if ancestor.exists():
            if not ancestor.is_dir():
                raise SpecError(
                    f"'{ancestor}' is a file, not a directory", where=flag, hint="give a path in a directory"
                )
            return


def output_directory(path: str | Path, flag: str) -> Path:
    """Create ``path`` as a directory for a command's output files; a SpecError naming ``flag`` if it cannot."""
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
    text: str,
    path: str | Path | None,
    flag: str = "--output",
    *,
    not_over: str | Path | None = None,
    executable: bool = False,
) -> Path | None:
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


def _default(value: object) -> object:
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return value.tolist()
    raise TypeError(f"cannot serialise {type(value).__name__}")


def print_json(data: object) -> None:
    """Stable JSON to stdout: SI base units, keys as documented in docs/json.md."""
    sys.stdout.write(json.dumps(data, indent=2, default=_default, allow_nan=False) + "\n")


def console(stderr: bool = False) -> Console:
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
