"""`runplan fit runs.csv` refused a cell `7B` as "not a number: '7B'" and a cell `0`, `-1` or `nan` as "must be a
positive finite number": the row and column were named, the fix was not (README: bad input says how to fix it).
docs/scaling.md: CSV cells are plain numbers, `7e9` not `7B`."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app

runner = CliRunner()
GOOD = ["1e8,2e9,3.1", "2e8,2e9,3.0", "4e8,2e9,2.95", "1e8,2e10,2.8", "2e8,2e10,2.7", "4e8,2e10,2.6"]


@pytest.mark.parametrize(
    ("cell", "fix"),
    [("7B", "7e9"), ("1.3T", "7e9"), ("0", "delete"), ("-1", "delete"), ("nan", "delete")],
)
def test_the_bad_cell_is_named_with_its_fix(tmp_path, one_error_line, cell, fix):
    path = tmp_path / "runs.csv"
    path.write_text("params,tokens,loss\n" + "\n".join([f"{cell},2e9,3.2", *GOOD]) + "\n")
    line = one_error_line(runner.invoke(app, ["fit", str(path), "--bootstrap", "0"]))
    assert "row 1 (line 2), column 'params'" in line and repr(cell) in line
    assert fix in line
