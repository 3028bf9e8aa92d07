"""A calibration file from an older runplan (a constant it did not have), with a misspelt key or a value that is
not a number is one line at that key in runplan's words (not pydantic's "Field required" / "Extra inputs are not
permitted"), saying what to do: refit for a missing constant, the key meant for a misspelt one."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from runplan.cli.app import app

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()


def _older(data):
    # a file fitted before the eager share existed (commit 4adbe1e) timed eager kernels as fused ones; read with
    # the field's default 1 it planned every eager stack (torchtitan's preset) slower than its own fit, silently
    del data["families"]["hopper"]["efficiency"]["eager_elementwise_share"]


def _older_required(data):
    del data["families"]["hopper"]["efficiency"]["elementwise_time_factor"]


def _misspelt(data):
    eff = data["families"]["hopper"]["efficiency"]
    eff["gemm_peak_fractoin"] = eff.pop("gemm_peak_fraction")


def _text(data):
    data["families"]["hopper"]["efficiency"]["gemm_half_dim"] = "big"


def _extra_top(data):
    data["schema_version"] = 1


@pytest.mark.parametrize(
    ("edit", "where", "expected"),
    [
        (
            _older,
            "families.hopper.efficiency.eager_elementwise_share",
            "required key is missing (written by a runplan without this constant: run `runplan calibrate` "
            "on its measured runs again)",
        ),
        (
            _older_required,
            "families.hopper.efficiency.elementwise_time_factor",
            "required key is missing (written by a runplan without this constant: run `runplan calibrate` "
            "on its measured runs again)",
        ),
        (
            _misspelt,
            "families.hopper.efficiency.gemm_peak_fractoin",
            "unknown key 'gemm_peak_fractoin' (did you mean 'gemm_peak_fraction'?)",
        ),
        (_text, "families.hopper.efficiency.gemm_half_dim", "must be a valid number"),
        (_extra_top, "schema_version", "unknown key 'schema_version' (allowed: name, created, measured_file"),
    ],
)
def test_an_edited_calibration_file_is_one_line_in_runplans_words(
    tmp_path, edit, where, expected, one_error_line
):
    data = yaml.safe_load((REPO / "configs" / "calibration.yaml").read_text())
    edit(data)
    edited = tmp_path / "edited.yaml"
    edited.write_text(yaml.safe_dump(data, sort_keys=False))
    result = runner.invoke(
        app, ["parallelize", "--model", "llama-3.1-8b", "--gpus", "8", "--calibration", str(edited)]
    )
    line = one_error_line(result)
    assert "edited.yaml:" in line and f": {where}: " in line
    assert expected in line
    for pydantic_words in (
        "Field required",
        "Extra inputs",
        "Input should",
        "runplan schema",
        "runplan init",
    ):
        assert pydantic_words not in line


def test_a_measured_runs_file_given_as_the_calibration_says_to_calibrate_it_first(tmp_path, one_error_line):
    measured = tmp_path / "measured.yaml"
    measured.write_text("runs:\n  - id: r0\n")
    result = runner.invoke(
        app, ["parallelize", "--model", "llama-3.1-8b", "--gpus", "8", "--calibration", str(measured)]
    )
    line = one_error_line(result)
    assert "not a calibration file (no 'families:'): it lists measured runs (runs:)" in line
    assert (
        f"(`runplan calibrate {measured} -o calibration.yaml` writes the calibration file to give here)"
        in line
    )
