"""`runplan parallelize`'s ranked table gives every number a unit and a one-line meaning: the headers `mbs`, `m`,
`v`, `batch` (tokens, printed as `17.6 M` with no unit of its own), `bubble`, `mem GB`, `step s`, `tok/s/GPU`
and `MFU` are explained under the table, as `runplan whatif` explains its layout column, at 80 and 200 columns."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app

MEANINGS = (
    "mbs = micro-batch size in sequences",
    "m = micro-batches per step",
    "v = interleaved chunks per pipeline stage",
    "batch = global batch in tokens per step",
    "bubble = (p-1)/(v*m)",
    "mem GB = memory per GPU in 1e9 bytes",
    "step s = seconds per step",
    "tok/s/GPU = tokens per second per GPU",
    "MFU = model FLOPs utilization",
)


@pytest.mark.parametrize("columns", [80, 200])
def test_the_ranked_table_explains_its_columns(columns):
    result = CliRunner().invoke(
        app,
        ["parallelize", "--model", "8b", "--gpus", "64", "--top", "2"],
        env={"COLUMNS": str(columns), "NO_COLOR": "1"},
    )
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    missing = [meaning for meaning in MEANINGS if meaning not in text]
    assert not missing, missing
    assert all(len(line) <= columns for line in result.stdout.splitlines())
