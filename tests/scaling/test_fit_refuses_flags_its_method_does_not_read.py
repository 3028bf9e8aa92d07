"""`runplan fit` refuses a typed flag that the chosen method does not read, as it already refuses --lr-col
without --hyperparams (cli/fit.py: "a flag that changes nothing must not look accepted"): --starts only steers
Approach 3's L-BFGS starts, --bin-decades only Approach 2's budget grouping, --ci only the bootstrap.
Before, `--method isoflop --starts 100`, `--method parametric --bin-decades 0.1` and `--bootstrap 0 --ci 90`
printed a fit as if the flag had been used."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "isoflop_synthetic.csv"
runner = CliRunner()


@pytest.mark.parametrize(
    ("flags", "named", "fix"),
    [
        (["--method", "isoflop", "--starts", "100"], "--starts", "--method"),
        (["--method", "parametric", "--bin-decades", "0.1"], "--bin-decades", "--method"),
        (["--bootstrap", "0", "--ci", "90"], "--ci", "--bootstrap"),
    ],
)
def test_a_flag_the_fit_would_ignore_is_refused(flags, named, fix, one_error_line):
    line = one_error_line(runner.invoke(app, ["fit", str(EXAMPLE), *flags]))
    assert line.startswith(f"runplan: error: {named}:") and fix in line


def test_hyperparams_without_bootstrap_refuses_ci(tmp_path, one_error_line):
    path = tmp_path / "sweep.csv"
    path.write_text("flops,lr,batch,loss\n1e17,1e-3,1e5,2.6\n")
    line = one_error_line(
        runner.invoke(app, ["fit", "--hyperparams", str(path), "--bootstrap", "0", "--ci", "90"])
    )
    assert line.startswith("runplan: error: --ci:")


@pytest.mark.parametrize(
    "flags",
    [
        ["--method", "parametric", "--starts", "4", "--bootstrap", "0"],
        ["--method", "isoflop", "--bin-decades", "0", "--bootstrap", "5", "--ci", "90", "--seed", "1"],
        ["--method", "both", "--starts", "4", "--bin-decades", "0", "--bootstrap", "0"],
    ],
)
def test_flags_the_method_reads_are_accepted(flags):
    result = runner.invoke(app, ["fit", str(EXAMPLE), *flags])
    assert result.exit_code == 0, result.output
    if "isoflop" in flags or "both" in flags:
        assert "a = 0.5159" in result.output  # the example's Approach 2 exponent, as `runplan fit` prints it
