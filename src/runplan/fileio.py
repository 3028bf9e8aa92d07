"""The one way runplan reads an input file and writes an output file (issue 17: hostile files and names).

Reading (:func:`read_bytes`, :func:`read_text`): every input file (plan, catalog, law file, fit and sweep CSVs,
monitor logs) is opened once, refused unless it is a regular file (a FIFO would block until a writer comes, and
``/dev/zero`` or ``/dev/urandom`` report size 0 but never end), and read up to a cap *whatever size it reports*:
the read stops at cap + 1 bytes. Each file read is remembered by (device, inode) for the rest of the command.

Writing (:func:`write_file`), the rule for replacing a file:

- an existing regular file is replaced whole and atomically: the text goes to a temporary file beside it, which
  is renamed over it, so a reader (or a second runplan writing the same path) sees the old or the new content,
  never a mix, and a failed write (disk full, file-size limit) leaves the old file byte-identical; its
  permission bits are kept. A symbolic link is followed and its target replaced; other hard links to the old
  file keep the old content;
- a directory, FIFO, device or socket is refused, and so is any file this command has read (compared by device
  and inode, so a hard link or symlink to an input is caught as well as its own name);
- a path with a component over 255 bytes (the limit of ext4, XFS, APFS, NTFS) is refused before any work.

Library code never names a CLI flag: ``where`` is passed in by the caller (a flag or a field path).
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

from runplan.errors import SpecError

#: POSIX NAME_MAX on ext4, XFS, btrfs, APFS and NTFS: the longest file-name component, in bytes.
MAX_NAME_BYTES = 255
#: Linux PATH_MAX: the longest path the kernel accepts, in bytes.
MAX_PATH_BYTES = 4096
#: Read in pieces of this size, so a cap-sized read never holds two copies of a large buffer at once.
_CHUNK_BYTES = 1 << 20

_inputs: set[tuple[int, int]] = set()


def reset_inputs() -> None:
    """Forget the files read so far (called when a command starts; tests run many commands in one process)."""
    _inputs.clear()


def is_input(path: str | Path) -> bool:
    """Whether ``path`` (followed through symlinks) is a file this command has read."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return False
    return (info.st_dev, info.st_ino) in _inputs


def _size_text(cap: int) -> str:
    return f"{cap / 1e6:g} MB" if cap >= 1_000_000 else f"{cap / 1e3:g} kB"


def _kind(mode: int) -> str | None:
    """What a non-regular file is, in words; None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO): reading it would wait for a writer"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device, not a file: it may never end"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _refuse_kind(mode: int, source: str) -> None:
    kind = _kind(mode)
    if kind is not None:
        raise SpecError(
            f"is {kind}", source=source, hint="give a regular file; save a stream to a file first"
        )


def read_bytes(path: str | Path, cap: int) -> bytes:
    """The bytes of the regular file ``path``, at most ``cap``; a one-line SpecError (``source`` = path) else.

    Checked twice: by name before opening (so a FIFO or device is never opened) and on the open descriptor
    (so a file swapped in between is caught). O_NONBLOCK keeps the open itself from waiting on a FIFO.
    """
    source = str(path)
    fd = _open_regular(path)
    try:
        info = os.fstat(fd)
        _refuse_kind(info.st_mode, source)
        data = _read_up_to(fd, cap + 1)  # one byte past the cap tells a file over it
    except OSError as error:
        raise SpecError(f"cannot read file: {error.strerror or error}", source=source) from None
    finally:
        os.close(fd)
    if len(data) > cap:
        raise SpecError(
            f"file is larger than {_size_text(cap)}",
            source=source,
            hint="runplan's input files are small; is this the right file?",
        )
    _inputs.add((info.st_dev, info.st_ino))
    return data


def _open_regular(path: str | Path) -> int:
    """A read-only descriptor of ``path``, refused by name first if it is no regular file (a FIFO or device is
    never opened; O_NONBLOCK keeps the open itself from waiting on one swapped in). A one-line SpecError else."""
    source = str(path)
    try:
        _refuse_kind(os.stat(path).st_mode, source)
        return os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        raise SpecError(f"cannot read file: {error.strerror or error}", source=source) from None
    except ValueError as error:  # an embedded NUL in the name
        raise SpecError(f"cannot read file: {error}", source=repr(source)) from None


def _read_up_to(fd: int, limit: int) -> bytes:
    """At most ``limit`` bytes from the open descriptor ``fd``, in chunks, up to its end."""
    chunks: list[bytes] = []
    total = 0
    while total < limit and (chunk := os.read(fd, min(_CHUNK_BYTES, limit - total))):
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def read_tail(path: str | Path, nbytes: int) -> bytes:
    """The last ``nbytes`` bytes of the regular file ``path`` (all of it if shorter), for a look at a growing
    log's newest lines; a one-line SpecError where it cannot be read or is no regular file (checked on the open
    descriptor, as :func:`read_bytes`)."""
    source = str(path)
    fd = _open_regular(path)
    try:
        info = os.fstat(fd)
        _refuse_kind(info.st_mode, source)
        os.lseek(fd, max(0, info.st_size - nbytes), os.SEEK_SET)
        return _read_up_to(fd, nbytes)
    except OSError as error:
        raise SpecError(f"cannot read file: {error.strerror or error}", source=source) from None
    finally:
        os.close(fd)


def read_text(path: str | Path, cap: int, encoding: str = "utf-8") -> str:
    """:func:`read_bytes` decoded (``utf-8-sig`` drops a byte-order mark); not UTF-8 is a one-line SpecError."""
    data = read_bytes(path, cap)
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as error:
        raise SpecError(
            f"not a UTF-8 text file (byte {error.start + 1})", source=str(path), hint="save it as UTF-8"
        ) from None


class JsonInputError(ValueError):
    """An input's JSON text that Python's reader refuses, with a message fit for a one-line error."""


def parse_json(text: str) -> Any:
    """``json.loads`` for input files: every way the reader can refuse a text is a :class:`JsonInputError`.

    Besides malformed text (``JSONDecodeError``, whose line and message are kept) the reader raises a bare
    ``ValueError`` for an integer over Python's 4,300-digit conversion limit and ``RecursionError`` for arrays or
    objects nested about 1,000 deep; both would otherwise escape as internal errors."""
    import json

    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise JsonInputError(f"line {error.lineno}: {error.msg}") from None
    except RecursionError:
        raise JsonInputError("arrays or objects nested too deeply to read") from None
    except ValueError:
        raise JsonInputError("a number with more digits than can be read (over 4,300)") from None


def check_name(path: str | Path, where: str | None = None) -> None:
    """A SpecError naming ``where`` if ``path`` cannot be a file name: a NUL, a component over 255 bytes."""
    text = str(path)
    if "\0" in text:
        raise SpecError("the path contains a NUL character", where=where, hint="give a plain file name")
    encoded = os.fsencode(text)
    if len(encoded) > MAX_PATH_BYTES:
        raise SpecError(
            f"the path is {len(encoded):,} bytes; at most {MAX_PATH_BYTES:,} are allowed",
            where=where,
            hint="give a shorter path",
        )
    for part in Path(text).parts:
        size = len(os.fsencode(part))
        if size > MAX_NAME_BYTES:
            raise SpecError(
                f"a file name in the path is {size} bytes; file systems allow at most {MAX_NAME_BYTES}",
                where=where,
                hint="give a shorter name",
            )


def check_target(path: str | Path, where: str | None = None) -> Path:
    """The real path ``path`` writes to, after the checks of the replacing rule (module docstring)."""
    check_name(path, where)
    target = Path(os.path.realpath(path))
    try:
        info = os.stat(target)
    except FileNotFoundError:
        return target
    except OSError as error:
        raise SpecError(f"cannot write '{path}': {error.strerror or error}", where=where) from None
    kind = _kind(info.st_mode)
    if kind is not None:
        raise SpecError(
            f"'{path}' is {kind.split(':')[0]}",
            where=where,
            hint="give a file name ('-' writes to standard output)",
        )
    if (info.st_dev, info.st_ino) in _inputs:
        raise SpecError(
            f"'{path}' is a file this command reads; writing there would destroy the input",
            where=where,
            hint="give another file name",
        )
    return target


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_file(
    path: str | Path, data: bytes | str, *, where: str | None = None, executable: bool = False
) -> Path:
    """Write ``data`` to ``path`` by the replacing rule (module docstring); the real path written, or a SpecError.

    Missing parent directories are created. On any failure the temporary file is removed and an existing file
    at ``path`` is untouched.
    """
    body = data.encode("utf-8") if isinstance(data, str) else data
    target = check_target(path, where)
    try:
        old_mode = stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        old_mode = 0o666 & ~_umask()
    mode = old_mode | (0o111 & ~_umask() if executable else 0)
    temp: str | None = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(prefix=f".{target.name[:80]}.", suffix=".tmp", dir=target.parent)
        with os.fdopen(fd, "wb") as handle:
            handle.write(body)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, mode)
        os.replace(temp, target)
        temp = None
    except OSError as error:
        raise SpecError(
            f"cannot write '{path}': {error.strerror or error}", where=where, hint="give a writable file"
        ) from None
    finally:
        if temp is not None:
            with contextlib.suppress(OSError):
                os.unlink(temp)
    return target


def save_figure(figure: Any, path: str | Path, *, where: str | None = None, dpi: int = 110) -> Path:
    """Render a matplotlib ``figure`` in memory (format from the suffix; none: PNG) and :func:`write_file` it."""
    import io

    suffix = Path(path).suffix.lower().lstrip(".")
    buffer = io.BytesIO()
    try:
        figure.savefig(buffer, format=suffix or "png", dpi=dpi)
    except ValueError as error:  # an unknown format
        raise SpecError(
            f"cannot write '{path}': {error}", where=where, hint="give a .png, .pdf or .svg path"
        ) from None
    return write_file(path, buffer.getvalue(), where=where)


__all__ = [
    "MAX_NAME_BYTES",
    "check_name",
    "check_target",
    "is_input",
    "read_bytes",
    "read_text",
    "reset_inputs",
    "save_figure",
    "write_file",
]
