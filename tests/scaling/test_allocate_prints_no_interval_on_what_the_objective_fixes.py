"""With a law carrying bootstrap resamples, `runplan allocate --params 7b` printed "7 B (7e+09)  [7 B, 7 B]
(10th-90th pct.)" and "--tokens-per-param 20" an interval of one value on N and D: those are fixed by the flag and
C, so every resample gives the same number and the interval says nothing. Only the loss, which the resamples move,
keeps one (Hoffmann et al. 2022 App. D.2 report intervals on what a fit estimates)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app

runner = CliRunner()
LAW = (
    "E: 1.8172\nA: 482.01\nB: 2085.43\nalpha: 0.3478\nbeta: 0.3658\n"
    "resamples:\n  - [1.80, 450.0, 2000.0, 0.34, 0.36]\n  - [1.83, 500.0, 2200.0, 0.35, 0.37]\n"
    "  - [1.81, 470.0, 2100.0, 0.345, 0.365]\n"
)


def _lines(tmp_path, *args: str) -> dict[str, str]:
    law = tmp_path / "law.yaml"
    law.write_text(LAW)
    result = runner.invoke(
        app, ["allocate", "--flops", "2e23", "--law", str(law), *args], env={"COLUMNS": "250"}
    )
    assert result.exit_code == 0, result.output
    return {line.split("  ")[0]: line for line in result.stdout.splitlines() if "  " in line}


@pytest.mark.parametrize("args", [["--params", "7b"], ["--tokens-per-param", "20"]])
def test_fixed_n_and_d_carry_no_interval_and_the_loss_does(tmp_path, args):
    rows = _lines(tmp_path, *args)
    assert "pct." not in rows["parameters N"] and "pct." not in rows["tokens D"]
    assert "(10th-90th pct.)" in rows["predicted loss"]


def test_compute_optimal_n_keeps_its_interval(tmp_path):
    rows = _lines(tmp_path)
    assert "(10th-90th pct.)" in rows["parameters N"] and "(10th-90th pct.)" in rows["tokens D"]
