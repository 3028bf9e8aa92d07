"""`runplan fit --tokens-col X` / `--flops-col X` where the CSV has no column X: an error naming the flag, not a
fit that silently reads the other column (D = C/(6N) from `flops`, or C = 6ND from `tokens`), which differ when
the flops column counts attention (docs/scaling.md, Fitting: "rows whose flops is more than 2× from 6·N·D").
One column named for two roles (`--params-col loss`) is refused too, rather than fitted into nonsense."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.scaling.fit import fit_isoflop, read_runs

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "isoflop_synthetic.csv"
runner = CliRunner()


@pytest.mark.parametrize("flag", ["--tokens-col", "--flops-col"])
def test_a_named_d_or_c_column_that_is_absent_is_an_error(flag, one_error_line):
    line = one_error_line(runner.invoke(app, ["fit", str(EXAMPLE), flag, "train_tokens", "--bootstrap", "0"]))
    assert "missing column 'train_tokens'" in line
    assert flag in line


def test_one_column_named_for_two_roles_is_an_error(one_error_line):
    line = one_error_line(
        runner.invoke(app, ["fit", str(EXAMPLE), "--params-col", "loss", "--bootstrap", "0"])
    )
    assert "'loss'" in line and "--params-col" in line and "--loss-col" in line


def test_a_csv_with_flops_and_no_tokens_still_fits_by_default(tmp_path):
    # the default names stay optional: D = C/(6N) (docs/scaling.md), the same isoFLOP exponent as with tokens
    rows = EXAMPLE.read_text().splitlines()
    kept = [",".join(c for i, c in enumerate(r.split(",")) if i != 1) for r in rows]  # drop 'tokens'
    path = tmp_path / "flops_only.csv"
    path.write_text("\n".join(kept) + "\n")
    a_flops = fit_isoflop(read_runs(path), bootstrap=0).a.value
    a_both = fit_isoflop(read_runs(EXAMPLE), bootstrap=0).a.value
    assert a_flops == pytest.approx(a_both, rel=1e-6)
    assert a_both == pytest.approx(0.5159, abs=5e-4)  # the value `runplan fit` prints for the example


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--lr-col", "batch"], ("--lr-col", "--batch-col")),
        (["--flops-col", "loss"], ("--flops-col", "--loss-col")),
    ],
)
def test_a_hyperparameter_sweep_column_named_for_two_roles_is_an_error(
    tmp_path, flags, named, one_error_line
):
    # these read one column twice and ended in an IndexError (exit 3) before the check
    path = tmp_path / "sweep.csv"
    path.write_text("flops,lr,batch,loss\n1e17,1e-3,1e5,2.6\n1e17,2e-3,1e5,2.59\n1e18,1e-3,2e5,2.48\n")
    line = one_error_line(runner.invoke(app, ["fit", "--hyperparams", str(path), *flags]))
    assert all(flag in line for flag in named) and f"'{flags[1]}'" in line
