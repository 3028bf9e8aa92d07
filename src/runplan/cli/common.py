"""What every command shares: the error convention, JSON output, lazy rich console.

Keep this module light: it is imported when ``runplan --help`` runs, so numpy, scipy, rich and
matplotlib are imported inside functions only.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NoReturn, TypeVar, overload

from runplan.errors import EXIT_BAD_INPUT, Infeasible, RunplanError

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


def terminal_columns() -> int:
    """The terminal's width (``COLUMNS`` first; 80 when the output is not a terminal)."""
    import shutil

    return shutil.get_terminal_size().columns


def echo_wrapped(text: str, *, err: bool = False, indent: str | None = None) -> None:
    """``text`` folded at the terminal width (:func:`runplan.report.format.wrap_lines`), to stdout or stderr."""
    from runplan.report.format import wrap_lines

    print(wrap_lines(text, terminal_columns(), indent=indent), file=sys.stderr if err else sys.stdout)


def warn(text: str) -> None:
    """A caution on stderr, ``runplan: warning: ...`` folded at the terminal width like every command's."""
    echo_wrapped(f"runplan: warning: {text}", err=True)


def fail(error: RunplanError, command: str | None = None) -> None:
    """Print the error to stderr and exit with its code: 2, bad input, one line; 1, infeasible, an answer
    folded at the terminal width.

    A field path from flags is printed as ``command``'s flag for it (:func:`runplan.cli.flags.with_flag`, the
    one table).
    """
    from runplan.cli.flags import with_flag
    from runplan.errors import PinConflict

    if isinstance(error, PinConflict):  # bad input: one line at the pin's flag
        error = error.as_spec_error()
    error = with_flag(error, command)
    kind = "infeasible" if error.exit_code == 1 else "error"
    text = error.one_line()
    if isinstance(error, Infeasible):
        # an answer for a person to read, folded at the terminal width; a long one gets a line per nearest miss
        # and per suggestion. A bad-input error stays one line (a script greps it).
        if len(text) > 300:
            from runplan.report.format import infeasible_lines

            text = infeasible_lines(error.reason, error.suggestions)
        echo_wrapped(f"runplan: {kind}: {text}", err=True)
    else:
        print(f"runplan: {kind}: {text}", file=sys.stderr)
    raise SystemExit(error.exit_code)


#: Exit status after a broken pipe (`runplan plan x.yaml | head`): 128 + SIGPIPE, what a C program killed by the
#: signal reports, so `set -o pipefail` scripts treat runplan like `cat`; nothing is printed.
EXIT_BROKEN_PIPE = 141
#: errno values that mean "standard output cannot take the text": disk full, quota, file-size limit, closed.
_STDOUT_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EBADF, errno.EIO, errno.EINVAL})


class _ClosedStdout:
    """Stands in for ``sys.stdout`` when the shell closed it (``runplan ... >&-``): writing is an error."""

    encoding = "utf-8"

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, "standard output is closed")

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


def _silence_stdout() -> None:
    """Point file descriptor 1 at /dev/null so the interpreter's final flush cannot fail a second time."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)


def stream_failure(error: OSError) -> SystemExit | None:
    """The exit for a failed write to standard output, after saying so in one line; None for other errors.

    Broken pipe: quiet, :data:`EXIT_BROKEN_PIPE`. Disk full, quota, file-size limit, closed stdout: one line,
    exit 2 (the output is lost; the fix is on the user's side).
    """
    if isinstance(error, BrokenPipeError):
        _silence_stdout()
        return SystemExit(EXIT_BROKEN_PIPE)
    if error.errno in _STDOUT_ERRNOS and error.filename is None:
        _silence_stdout()
        print(f"runplan: error: cannot write the output: {error.strerror or error}", file=sys.stderr)
        return SystemExit(EXIT_BAD_INPUT)
    return None


def handle_errors(func: F) -> F:
    """Wrap a command so RunplanError becomes one line and an exit code; set RUNPLAN_DEBUG=1 for tracebacks.

    The command's name (``func``'s, without ``_command``) picks its flags for field paths. Standard output is
    flushed here, so a failed write (broken pipe, disk full, closed) is mapped by :func:`stream_failure`.
    """
    command = func.__name__.removesuffix("_command")

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from runplan.fileio import reset_inputs

        reset_inputs()
        if sys.stdout is None:
            sys.stdout = _ClosedStdout()
        try:
            result = func(*args, **kwargs)
            sys.stdout.flush()
            return result
        except RunplanError as error:
            if debug_enabled():
                raise
            fail(error, command)
        except KeyboardInterrupt:
            raise SystemExit(130) from None
        except SystemExit:
            raise
        except OSError as error:
            exit_ = stream_failure(error)
            if exit_ is None:
                _internal(error)
            raise exit_ from None
        except Exception as error:  # a bug, not bad input: one line, a distinct exit code
            if type(error).__module__.startswith(("click", "typer")):  # typer.Exit, usage errors
                raise
            _internal(error)
        return None

    return wrapper  # type: ignore[return-value]


def _internal(error: Exception) -> NoReturn:
    """A bug, not bad input: one line and exit 3 (RUNPLAN_DEBUG=1 re-raises for the traceback)."""
    if debug_enabled():
        raise error
    print(
        f"runplan: internal error: {type(error).__name__}: {error} "
        "(rerun with RUNPLAN_DEBUG=1 for the traceback and please report it)",
        file=sys.stderr,
    )
    raise SystemExit(3) from None


def load_plan_file(path: str | Path) -> tuple[LoadedYaml, PlanSpec]:
    """(LoadedYaml, PlanSpec) for a plan-file argument; bad files raise SpecError with file:line."""
    from runplan.spec import parse_plan
    from runplan.yamlio import load_yaml_file

    loaded = load_yaml_file(path)
    if _is_stored_plan(loaded.data):
        raise _not_a_plan_file(path, loaded.data)
    return loaded, parse_plan(loaded)


#: The keys `runplan plan FILE --format json` writes (runplan.plan.RunPlan's sections, docs/json.md) that a plan
#: file has none of (runplan.spec.PlanSpec's keys: model, schedule, monitoring, sweep and cost are both)
STORED_PLAN_KEYS = ("inputs", "allocation", "layout", "checkpointing", "reliability", "warnings")


def _is_stored_plan(data: object) -> bool:
    """Whether ``data`` is a plan as `runplan plan -f json` stores it: a mapping with the plan file it was built
    from under ``inputs`` and two more of :data:`STORED_PLAN_KEYS`, and no ``schema_version`` of its own (a
    plan file needs one; a plan file written in JSON is planned as one)."""
    return (
        isinstance(data, dict)
        and "schema_version" not in data
        and isinstance(data.get("inputs"), dict)
        and len(data.keys() & set(STORED_PLAN_KEYS)) >= 3
    )


def _not_a_plan_file(path: str | Path, data: dict[str, Any]) -> RunplanError:
    """The one line for a stored plan given where a plan file is planned: its keys are the plan's sections, so
    the plan file's first complaint ("schema_version is missing") would send the user to a fix that leads nowhere."""
    from runplan.errors import SpecError

    name = data["inputs"].get("name")
    named = f": its inputs name it {name[:60]!r}" if isinstance(name, str) and name else " (its inputs)"
    return SpecError(
        "a plan stored by `runplan plan -f json`, not a plan file",
        source=str(path),
        hint=f"give the plan file it was built from{named}; `runplan export` and "
        "`runplan monitor --plan` read a stored plan as it is",
    )


def stored_plan(path: str | Path, flag: str) -> RunPlan | None:
    """The plan in ``path`` when it is one stored by `runplan plan FILE -f json` (docs/json.md), read as it was
    planned (`export`, `monitor --plan`); None for anything else, a plan file to plan from its keys. A stored plan
    that does not read as one (a section missing, a key renamed since) is a SpecError naming ``flag``.

    Only a file whose text starts with ``{`` is parsed here (what ``-f json`` writes), so a YAML plan file costs
    one read, not a second parse."""
    from runplan.fileio import JsonInputError, parse_json, read_text
    from runplan.yamlio import MAX_FILE_BYTES

    text = read_text(path, MAX_FILE_BYTES)
    if not text.lstrip().startswith("{"):
        return None
    try:
        data = parse_json(text)
    except JsonInputError:
        return None  # the plan-file reader says where it breaks
    if not _is_stored_plan(data):
        return None
    import pydantic

    from runplan.errors import SpecError
    from runplan.plan import RunPlan

    try:
        return RunPlan.model_validate(data)
    except pydantic.ValidationError as error:
        first = error.errors()[0]
        key = ".".join(str(part) for part in first["loc"])
        raise SpecError(
            f"{path} is a plan stored by `runplan plan -f json` that does not read as one ({key}: "
            f"{first['msg'].lower()})",
            where=flag,
            hint="store it again with this runplan (`runplan plan FILE -f json -o PLAN.json`), or give the plan file",
        ) from None


def plan_from_file(
    path: str | Path, calibration: str | Path | None = None
) -> tuple[LoadedYaml, PlanSpec, RunPlan]:
    """(LoadedYaml, PlanSpec, RunPlan) for a plan-file argument, every error pointed at ``file:line``;
    ``calibration`` (``--calibration FILE``) replaces the plan's ``calibration:`` key."""
    from runplan.plan import build_plan

    loaded, spec = load_plan_file(path)
    if calibration is not None:
        spec = spec.model_copy(update={"calibration": calibration_key(calibration, path, spec.calibration)})
    with located(loaded, from_flags=("calibration",) if calibration is not None else ()):
        return loaded, spec, build_plan(spec, Path(path).resolve().parent)


def calibration_key(calibration: str | Path, plan_file: str | Path, key: str | None) -> str:
    """``--calibration FILE`` as the plan's ``calibration:`` value: the key as written where it names the same
    file; else, for a relative flag naming a file inside the plan's repository (the nearest folder above the plan
    holding ``.git``; no repository: the plan's own folder), its path relative to the plan's folder, as keys are
    read; else (an absolute flag, a file elsewhere) its absolute path. A flag naming the file the key already
    names is then the same input, and a plan resolved with ``--calibration cal/mine.yaml`` in one clone checks
    clean in another: an absolute path made `check` report drift in a teammate's clone or on a CI runner, and
    `--update` wrote a machine's path into the file. Paths are compared as written (``abspath``), so a symlink
    inside the repository is recorded as the link, not as its target's machine path."""
    import os

    given = Path(os.path.abspath(calibration))
    plan_dir = Path(os.path.abspath(plan_file)).parent
    if key is not None and (plan_dir / key).resolve() == given.resolve():
        return key
    root = next((d for d in (plan_dir, *plan_dir.parents) if (d / ".git").exists()), plan_dir)
    if not Path(calibration).is_absolute() and given.is_relative_to(root):
        return Path(os.path.relpath(given, plan_dir)).as_posix()
    return str(given)


@contextlib.contextmanager
def located(loaded: LoadedYaml, from_flags: Sequence[str] = ()) -> Iterator[None]:
    """Point SpecErrors about plan keys (raised after validation) at their ``file:line``; an error about a key in
    ``from_flags`` (set by a flag laid over the file) is left for the CLI to name by its flag."""
    try:
        yield
    except RunplanError as error:
        from runplan.errors import PinConflict, SpecError

        if isinstance(error, PinConflict):  # a pin of the file: bad input at its file:line
            error = error.as_spec_error()
        if isinstance(error, SpecError):
            where = error.where or ""
            if any(where == key or where.startswith(key + ".") for key in from_flags):
                raise
            raise loaded.locate(error) from None
        raise


@overload
def flag_value(text: str, flag: str, kind: Literal["count"]) -> int: ...
@overload
def flag_value(text: str, flag: str, kind: Literal["number", "bytes", "fraction"] = "number") -> float: ...
@overload
def flag_value(
    text: None, flag: str, kind: Literal["count", "number", "bytes", "fraction"] = "number"
) -> None: ...
@overload
def flag_value(text: str | None, flag: str, kind: Literal["count"]) -> int | None: ...
@overload
def flag_value(
    text: str | None, flag: str, kind: Literal["number", "bytes", "fraction"] = "number"
) -> float | None: ...
def flag_value(
    text: str | None, flag: str, kind: Literal["count", "number", "bytes", "fraction"] = "number"
) -> float | int | None:
    """A flag's text parsed by :mod:`runplan.units` (``kind``: number, count, bytes or fraction, whose bad
    notation is hinted with an example of its own kind); None when not given.

    Only the notation is checked here ("2e23", "70B", "3GB"); bounds belong to the input model the value fills
    (:func:`build_from_flags`), so a flag and a plan-file key are checked by the same field.
    """
    if text is None:
        return None
    from runplan import units

    if kind == "count":
        return units.parse_count(text, where=flag)
    if kind == "fraction":
        return units.parse_number(text, where=flag, hint=units.FRACTION_HINT)
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

    try:
        return model(**{key: value for key, value in fields.items() if value is not None})
    except ValidationError as error:
        from runplan.validation import spec_error_from_validation  # a bad value only: ~400 lines to load

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

    Refused (the replacing rule of :mod:`runplan.fileio`): a name over 255 bytes, a directory, FIFO or device,
    a file this command read, and ``not_over`` (the plan file about to be read), compared by device and inode
    so a hard link to it is caught. Commands call this before slow work so a bad ``-o`` fails at once;
    :func:`write_output` checks again.
    """
    from runplan.errors import SpecError
    from runplan.fileio import check_name, check_target

    check_name(path, flag)
    if isinstance(path, str) and not path.strip():  # Path("") is '.', which would be reported instead
        raise SpecError(
            "the file name is empty", where=flag, hint="give a file name ('-' writes to standard output)"
        )
    if isinstance(path, str) and path.endswith(("/", os.sep)):  # Path("out/") would drop the slash
        raise SpecError(f"'{path}' names a directory, not a file", where=flag, hint="add a file name")
    target = Path(path)
    if not_over is not None and _same_file(target, Path(not_over)):
        raise SpecError(
            f"'{target}' is the input file being read; writing there would overwrite it",
            where=flag,
            hint="give another file name",
        )
    _check_parents(target.parent, flag)
    check_target(target, flag)
    return target


def _same_file(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` are one file (same device and inode: hard links and symlinks included)."""
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


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
    from runplan.fileio import check_name

    check_name(path, flag)
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
    names ``flag``: a directory, a place it cannot create or write, a file the command read, and ``not_over``
    (the input file being read: ``-o`` pointing at it would overwrite it). Missing parent directories are
    created. The file is replaced atomically (:func:`runplan.fileio.write_file`): a failed write leaves an
    existing file byte-identical.
    """

    body = text if text.endswith("\n") or not text else text + "\n"
    if path is None or str(path) == "-":
        sys.stdout.write(body)
        return None
    from runplan.fileio import write_file

    target = check_output_path(path, flag, not_over=not_over)
    write_file(target, body, where=flag, executable=executable)
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


#: How to put back what the running command set in rich (:func:`_numbers_kept_whole_while_the_command_runs`);
#: runplan.cli.app runs them when the command's context closes, returned or raised
_UNDO_WHEN_THE_COMMAND_ENDS: list[Callable[[], None]] = []


def _numbers_kept_whole_while_the_command_runs() -> None:
    """Until the running command ends, rich never folds a number from its unit in what it prints (``16.78`` at a
    line's end, ``M`` at the next one's start: runplan.report.format.keep_numbers_whole), whichever table,
    bullet or panel prints it. Set where a command makes its console, so a command that prints no rich text
    (``--json``, ``schema``) loads no rich; put back when the command ends (:func:`command_ended`), so in-process
    runs (the tests' CliRunner) leave rich as they found it."""
    import rich.text

    from runplan.report.format import keep_numbers_whole

    _UNDO_WHEN_THE_COMMAND_ENDS.append(keep_numbers_whole(rich.text))


def command_ended() -> None:
    """Put back what the command set in rich, newest first."""
    while _UNDO_WHEN_THE_COMMAND_ENDS:
        _UNDO_WHEN_THE_COMMAND_ENDS.pop()()


def console(stderr: bool = False) -> Console:
    """A rich console; a broken pipe raises BrokenPipeError (mapped by :func:`handle_errors`) instead of rich's
    own quiet exit 1, which reads as "infeasible"."""
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            raise BrokenPipeError(errno.EPIPE, "broken pipe")

    _numbers_kept_whole_while_the_command_runs()

    # diagnostics on stderr stay one line each (a note wrapped at 80 columns reads as several messages)
    return _Console(stderr=stderr, highlight=False, soft_wrap=stderr)


__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_BROKEN_PIPE",
    "build_from_flags",
    "check_output_path",
    "console",
    "debug_enabled",
    "fail",
    "flag_value",
    "handle_errors",
    "output_directory",
    "print_json",
    "stream_failure",
    "write_output",
]
