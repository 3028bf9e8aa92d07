"""A pinned parallel degree above the job's GPU count is refused in one line (exit 2) whose hint offers degrees
the job can take, the divisors of the GPU count (d = GPUs/(t·p·c), docs/parallel.md, The space): on one GPU
`--tp 2` was told "e.g. tp 8" and on 6 GPUs `--tp 8` was told "e.g. tp 8", the value just refused; and a count of
one reads "1 GPU"."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app


def _error(*argv: str) -> str:
    result = CliRunner().invoke(app, ["parallelize", "--model", "8b", *argv])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output
    return lines[0]


@pytest.mark.parametrize(
    ("argv", "said", "offered"),
    [
        (("--gpus", "1", "--tp", "2"), "tp=2 is more than the 1 GPU of the job", "pin one of 1)"),
        (("--gpus", "6", "--tp", "8"), "tp=8 is more than the 6 GPUs of the job", "pin one of 1, 2, 3, 6)"),
        (("--gpus", "8", "--pp", "33"), "pp=33 is more than the 8 GPUs of the job", "pin one of 1, 2, 4, 8)"),
    ],
)
def test_the_hint_lists_degrees_that_divide_the_gpu_count(argv, said, offered):
    line = _error(*argv)
    assert said in line and offered in line
    assert "e.g." not in line
