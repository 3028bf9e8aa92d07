"""A measured step time or throughput written with a unit ("1.2s", "1200ms", "2m", "45%", "420 TFLOP/s") is one
line at its key naming the plain number to write; "2m" is never read as 2 million seconds (the number suffix m)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from runplan.calibrate.measured import Measured
from runplan.cli.app import app

from .one_run import ONE_RUN

runner = CliRunner()

ONE = ONE_RUN.replace("MEASURED", "{MEASURED}")


@pytest.mark.parametrize(
    ("measured", "expected"),
    [
        # hand-derived conversions: 1200 ms = 1.2 s, 2 min = 120 s, 0.5 h = 1800 s
        ("step_seconds: 1.2s", "'1.2s' has a unit: step_seconds is a plain number of seconds (write 1.2)"),
        (
            "step_seconds: 1200ms",
            "'1200ms' has a unit: step_seconds is a plain number of seconds (write 1.2)",
        ),
        ("step_seconds: 2 min", "'2 min' has a unit: step_seconds is a plain number of seconds (write 120)"),
        ("step_seconds: 0.5h", "'0.5h' has a unit: step_seconds is a plain number of seconds (write 1800)"),
        ("step_seconds: 2m", "'2m' would read as 2 million seconds (m is the suffix for million)"),
        ("mfu: 45%", "'45%' is a percentage: mfu is a fraction (write 0.45)"),
        ("tflops_per_gpu: 420 TFLOP/s", "'420 TFLOP/s' is not a plain number: tflops_per_gpu is"),
        ("tokens_per_second_per_gpu: 3.3k tok/s", "'3.3k tok/s' is not a plain number"),
    ],
)
def test_a_measurement_with_a_unit_is_one_line_at_its_key(tmp_path: Path, measured, expected, one_error_line):
    path = tmp_path / "measured.yaml"
    path.write_text(ONE.replace("MEASURED", measured))
    line = one_error_line(runner.invoke(app, ["calibrate", str(path)]))
    key = measured.split(":")[0]
    assert f"measured.yaml:10: runs[0].measured.{key}: " in line
    assert expected in line


def test_two_minutes_written_2m_says_what_to_write_for_minutes():
    with pytest.raises(ValueError, match=r"for 2 minutes write 120"):
        Measured.model_validate({"step_seconds": "2m"})


@pytest.mark.parametrize(
    ("written", "key", "value"),
    [
        ("16.5", "step_seconds", 16.5),
        (16.5, "step_seconds", 16.5),
        ("3.3k", "tokens_per_second_per_gpu", 3300.0),
        ("0.45", "mfu", 0.45),
        ("420", "tflops_per_gpu", 420.0),
    ],
)
def test_a_plain_number_is_still_read(written, key, value):
    assert getattr(Measured.model_validate({key: written}), key) == pytest.approx(value, rel=1e-12)
