"""`runplan fit trainingresults.csv --loss-col mmlu_5_shot_avg` (Sardana et al.'s 47 runs, MMLU accuracy near
chance, 0.23-0.27, in the loss column) "fitted" E 0.2515, A 1, B 148.4, α 1.5, β 2: a start point of the grid that
L-BFGS never left, where A/N^α and B/D^β are below 1e-12 for every run, so L(N, D) = E is flat and α, β and the
optimum (4.16e11 parameters on 0.0175 tokens each at 1.8e22 FLOPs) mean nothing. Every resample restarted there,
so the bootstrap intervals collapsed ([1.5, 1.5]) and the ill-conditioning warning, which reads them, said nothing;
`-o` wrote the law. Now such a fit is unusable: exit 1 with -o, and no optimum printed without it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.scaling.fit import Runs, fit_parametric, unusable_reason

runner = CliRunner()
SARDANA = (
    Path("beyond_chinchilla") / "trainingresults.csv"
)  # under ../shared/data (the shared_data_dir fixture)
COLUMNS = ["--params-col", "Parameters", "--tokens-col", "Tokens"]


def _runs(loss: np.ndarray, n: np.ndarray, d: np.ndarray) -> Runs:
    return Runs(params=n, tokens=d, flops=6 * n * d, loss=loss, lines=np.arange(2, n.size + 2))


def _grid() -> tuple[np.ndarray, np.ndarray]:
    n, d = np.meshgrid(np.geomspace(1e8, 1e10, 5), np.geomspace(2e9, 2e11, 5))
    return n.ravel(), d.ravel()


def test_a_constant_loss_column_is_unusable():
    n, d = _grid()
    runs = _runs(np.full(n.size, 0.25), n, d)
    reason = unusable_reason(fit_parametric(runs, bootstrap=0), runs)
    assert reason is not None and "flat" in reason


def test_a_real_law_is_usable():
    """L = 1.85 + 520/N^0.34 + 1600/D^0.36 (examples/make_isoflop_csv.py's law), exact: the fit is kept."""
    n, d = _grid()
    runs = _runs(1.85 + 520 / n**0.34 + 1600 / d**0.36, n, d)
    assert unusable_reason(fit_parametric(runs, bootstrap=0), runs) is None


def test_an_accuracy_near_chance_writes_no_law(tmp_path, shared_data_dir):
    law = tmp_path / "law.yaml"
    args = [
        "fit",
        str(shared_data_dir / SARDANA),
        *COLUMNS,
        "--loss-col",
        "mmlu_5_shot_avg",
        "--bootstrap",
        "0",
    ]
    result = runner.invoke(app, [*args, "-o", str(law)])
    assert result.exit_code == 1, result.output
    assert "flat" in result.stderr and not law.exists()
    shown = json.loads(runner.invoke(app, [*args, "--json"]).stdout)
    assert any("not usable" in w and "flat" in w for w in shown["parametric"]["warnings"])


def test_the_smoothed_loss_still_fits(tmp_path, shared_data_dir):
    law = tmp_path / "law.yaml"
    args = [
        "fit",
        str(shared_data_dir / SARDANA),
        *COLUMNS,
        "--loss-col",
        "Smoothed Loss",
        "--bootstrap",
        "0",
        "-o",
        str(law),
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert law.exists()
