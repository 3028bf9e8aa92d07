"""A 'loss' column that rises with compute is not a loss (an accuracy or a score pasted in its place): Approach 3
fitted one silently (E 0.45, α 1.54, β 1.64, printed with an N_opt) while Approach 2 only said each budget had
no minimum. On every real data set the log loss falls with log C: Pearson r = −0.90 on the Chinchilla points,
−0.94 on Sardana et al.'s runs, −0.98 on examples/isoflop_synthetic.csv."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.scaling.fit import magnitude_warnings, read_runs

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "isoflop_synthetic.csv"
runner = CliRunner()


def _as_accuracy(tmp_path: Path) -> Path:
    """The example with its loss replaced by 1 − L/5, which rises as the loss falls (0.22 to 0.54)."""
    lines = EXAMPLE.read_text().splitlines()
    rows = [lines[0]]
    for line in lines[1:]:
        n, d, c, loss = line.split(",")
        rows.append(f"{n},{d},{c},{1 - float(loss) / 5:.6f}")
    path = tmp_path / "accuracy.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def test_a_score_that_rises_with_compute_is_warned(tmp_path):
    runs = read_runs(_as_accuracy(tmp_path))
    r = float(np.corrcoef(np.log(runs.flops), np.log(runs.loss))[0, 1])
    assert r > 0.9  # by construction
    found = [w for w in magnitude_warnings(runs) if "rises with compute" in w]
    assert len(found) == 1 and f"r = {r:+.2f}" in found[0]


def test_the_cli_says_it_once_on_stderr(tmp_path):
    """Approach 3 on the accuracy stops where A/N^α and B/D^β are ~0 for every run (a law flat over the runs) and
    Approach 2 finds no minimum: no usable fit, exit 1 (tests/scaling/test_fit_refuses_a_law_flat_over_its_runs.py),
    with the caution that says why said once, in the refusal."""
    result = runner.invoke(
        app, ["fit", str(_as_accuracy(tmp_path)), "--bootstrap", "0", "--starts", "4", "--json"]
    )
    assert result.exit_code == 1, result.output
    said = " ".join(result.stderr.split())
    assert result.stdout == ""
    assert said.count("rises with compute") == 1 and "flat over the runs" in said


@pytest.mark.parametrize(
    ("path", "columns"),
    [
        (EXAMPLE, {}),
        (
            Path("chinchilla/svg_extracted_data.csv"),
            {"params_col": "Model Size", "flops_col": "Training FLOP"},
        ),
        (
            Path("beyond_chinchilla/trainingresults.csv"),
            {"params_col": "Parameters", "tokens_col": "Tokens", "loss_col": "Smoothed Loss"},
        ),
    ],
)
def test_real_losses_are_not_warned(path, columns, request):
    if not path.is_absolute():
        path = request.getfixturevalue("shared_data_dir") / path
    runs = read_runs(path, **columns)
    r = float(np.corrcoef(np.log(runs.flops), np.log(runs.loss))[0, 1])
    assert r < -0.85 and not math.isnan(r)
    assert not [w for w in magnitude_warnings(runs) if "rises with compute" in w]


def test_a_rise_that_is_noise_is_not_warned(tmp_path):
    """Three runs whose loss wobbles up by chance: r = +0.32 on 3 points is p = 0.40 one-sided (t = r·√(n−2)/
    √(1−r²) = 0.34 on 1 degree of freedom), above the 5% level: no caution."""
    path = tmp_path / "noise.csv"
    path.write_text("params,tokens,loss\n1e8,2e9,3.0\n1e8,4e9,2.9\n1e8,8e9,3.05\n")
    runs = read_runs(path)
    r = float(np.corrcoef(np.log(runs.flops), np.log(runs.loss))[0, 1])
    assert r == pytest.approx(0.3215, abs=1e-4)
    assert not [w for w in magnitude_warnings(runs) if "rises with compute" in w]
