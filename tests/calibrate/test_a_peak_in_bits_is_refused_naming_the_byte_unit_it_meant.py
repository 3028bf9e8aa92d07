"""A peak written with a lower-case b (bits by the SI/IEC convention) is refused, and the unit the line suggests is
the byte unit of the same prefix, named binary or decimal as it is: '45 Gib' was told to write '45 GiB (bytes,
decimal)', and GiB is binary (2**30 bytes)."""

from __future__ import annotations

import pytest

from runplan.calibrate.measured import PeakMemory


@pytest.mark.parametrize(
    ("written", "suggested"),
    [
        ("45 Gib", "write 45 GiB (bytes, binary)"),
        ("45gib", "write 45GiB (bytes, binary)"),
        ("70Gb", "write 70GB (bytes, decimal)"),
        ("70 gb", "write 70 GB (bytes, decimal)"),
        ("71680mib", "write 71680MiB (bytes, binary)"),
    ],
)
def test_a_peak_in_bits_suggests_its_byte_unit(written, suggested):
    with pytest.raises(ValueError, match=r"ends in b, bits") as raised:
        PeakMemory.model_validate({"gib": written})
    assert suggested in str(raised.value)


@pytest.mark.parametrize(("written", "gib"), [("45 GiB", 45.0), ("70GB", 70e9 / 2**30), ("71680MiB", 70.0)])
def test_the_suggested_unit_reads_as_bytes(written, gib):
    assert PeakMemory.model_validate({"gib": written}).gib == pytest.approx(gib, rel=1e-12)
