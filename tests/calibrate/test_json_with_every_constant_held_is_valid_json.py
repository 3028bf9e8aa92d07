"""`runplan calibrate --json` with no constant fitted (every one held with --hold) printed an internal error
(exit 3): the condition number of no fitted constants is infinite, which JSON cannot hold. It is null there, and
the text report says no constant was fitted instead of "inf"."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from runplan.calibrate.constants import FITTED_CONSTANTS
from runplan.cli.app import app

from .one_run import ONE_RUN

runner = CliRunner()

ONE = ONE_RUN.replace("MEASURED", "{step_seconds: 2.0}")


def _args(tmp_path: Path) -> list[str]:
    path = tmp_path / "measured.yaml"
    path.write_text(ONE)
    held = [arg for c in FITTED_CONSTANTS for arg in ("--hold", c.name)]
    return ["calibrate", str(path), *held]


def test_json_with_every_constant_held_is_valid_json(tmp_path: Path):
    result = runner.invoke(app, [*_args(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
    assert report["condition_number"] is None
    assert report["calibration"]["families"]["hopper"]["fitted"] == []


def test_the_text_report_says_no_constant_was_fitted(tmp_path: Path):
    result = runner.invoke(app, _args(tmp_path))
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.split())
    assert "condition number of the fitted constants: none fitted;" in out
    assert "inf" not in out
