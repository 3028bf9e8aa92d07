"""A logged peak memory with a unit (80GiB, 75GB, 71680MiB) is read in GiB; an ambiguous one is refused in one
line; a numeric rank is free text like any other."""

from __future__ import annotations

import pytest

from runplan.calibrate.measured import PeakMemory


@pytest.mark.parametrize(
    ("written", "gib"),
    [
        (70, 70.0),
        ("70", 70.0),
        ("70GiB", 70.0),
        ("70 GiB", 70.0),
        ("75GB", 75e9 / 2**30),  # decimal gigabytes: 69.85 GiB
        ("71680MiB", 70.0),  # nvidia-smi and torch.cuda.memory_summary print MiB
        ("71680 MiB", 70.0),
        ("0.0625TiB", 64.0),
    ],
)
def test_a_peak_with_a_unit_is_read_in_gib(written, gib):
    assert PeakMemory.model_validate({"gib": written}).gib == pytest.approx(gib, rel=1e-12)


@pytest.mark.parametrize("written", ["80G", "80Gi", "80 M"])
def test_a_unit_without_bytes_is_refused_naming_both_readings(written):
    with pytest.raises(ValueError, match=r"80GiB \(binary.* or 80GB \(decimal"):
        PeakMemory.model_validate({"gib": written})


def test_a_numeric_rank_is_read_as_text():
    assert PeakMemory.model_validate({"gib": 40, "rank": 0}).rank == "0"


def test_a_malformed_size_is_one_line_at_its_key(tmp_path):
    # it escaped the validation as a bare error without the file's line or key
    from typer.testing import CliRunner

    from runplan.cli.app import app

    from .test_measured_file_errors import ONE

    path = tmp_path / "measured.yaml"
    path.write_text(ONE + "    peak_memory: {gib: 1.2.3GB}\n")
    res = CliRunner().invoke(app, ["calibrate", str(path)])
    assert res.exit_code == 2
    (line,) = [x for x in res.output.splitlines() if x.strip()]
    assert "measured.yaml:11: runs[0].peak_memory.gib: expected a byte size, got '1.2.3GB'" in line


@pytest.mark.parametrize("written", ["70Gb", "70 gb", "70Gib"])
def test_a_lower_case_b_is_bits_and_refused(written):
    # 70Gb reads as gigabits by the SI/IEC convention; it was taken as 70 GB (the pattern ignored case)
    with pytest.raises(ValueError, match=r"ends in b, bits"):
        PeakMemory.model_validate({"gib": written})
