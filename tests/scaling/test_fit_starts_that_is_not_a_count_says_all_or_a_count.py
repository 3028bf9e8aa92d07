"""`runplan fit --starts some` said "expected a number ... (write e.g. 2e23, 70B, 15T, 4M, 1.5k or 3e-4)": the
generic number hint, whose examples are all refused for --starts (2e23 and 70B are over the 500 cap, 3e-4 is not
whole). The error now says what --starts takes: a count from 1 to 500, or 'all'."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "isoflop_synthetic.csv"
runner = CliRunner()


@pytest.mark.parametrize("value", ["some", "", "1.5", "alll"])
def test_the_hint_names_what_starts_takes(value, one_error_line):
    line = one_error_line(runner.invoke(app, ["fit", str(EXAMPLE), "--starts", value, "--bootstrap", "0"]))
    assert line.startswith("runplan: error: --starts:")
    assert "'all'" in line and "500" in line
    assert "2e23" not in line and "70B" not in line


@pytest.mark.parametrize("value", ["4", " 8 "])
def test_counts_still_run(value):
    args = ["fit", str(EXAMPLE), "--starts", value, "--bootstrap", "0", "--method", "parametric"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert f"{int(value)}/{int(value)} starts converged" in result.output  # the example converges from each
