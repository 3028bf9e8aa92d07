"""runplan.fileio.read_tail: the monitor's stall check looks at a growing log's newest lines without reading
the whole file, through fileio like every other read (tests/test_hostile.py)."""

from __future__ import annotations

import os

import pytest

from runplan.errors import SpecError
from runplan.fileio import read_tail


def test_the_last_bytes_or_the_whole_of_a_short_file(tmp_path):
    path = tmp_path / "log.txt"
    path.write_bytes(b"0123456789")
    assert read_tail(path, 3) == b"789"
    assert read_tail(path, 100) == b"0123456789"
    assert read_tail(path, 0) == b""


def test_a_missing_file_or_a_fifo_is_one_line(tmp_path):
    with pytest.raises(SpecError, match="cannot read file"):
        read_tail(tmp_path / "gone.log", 10)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(SpecError):
        read_tail(fifo, 10)


def test_a_missing_file_says_why_once(tmp_path):
    """The reason, not the OSError's repr with the path a second time."""
    with pytest.raises(SpecError) as info:
        read_tail(tmp_path / "gone.log", 10)
    assert info.value.message == "cannot read file: No such file or directory"
