"""The measured-value checks read a number the way the schema's pattern does (one decimal point, an optional
exponent): '1.2.3s' reached Python's float() ("could not convert string to float"), an MFU of '4.5e1%' was not
taken for a percentage, '2M' was told "m is the suffix", and 80 kb was told to write "80 KB" (SI's kilo is k)."""

import pytest

from runplan.calibrate.measured import _gib, _measured_number


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        (
            "step_seconds",
            "1.2.3s",
            "'1.2.3s' is not a plain number: step_seconds is a plain number of seconds",
        ),
        (
            "step_seconds",
            "1.5e1s",
            "'1.5e1s' has a unit: step_seconds is a plain number of seconds (write 15)",
        ),
        ("step_seconds", "2M", "(M is the suffix for million)"),
        ("mfu", "4.5e1%", "'4.5e1%' is a percentage: mfu is a fraction (write 0.45)"),
    ],
)
def test_a_measured_value_with_a_unit_names_the_plain_number(key, value, expected):
    with pytest.raises(ValueError, match=None) as info:
        _measured_number(key, value)
    assert expected in str(info.value)


@pytest.mark.parametrize(("value", "unit"), [("80 kb", "80 kB"), ("2 kib", "2 KiB"), ("45gib", "45GiB")])
def test_a_peak_in_bits_is_told_the_byte_unit_runplan_reads(value, unit):
    with pytest.raises(ValueError) as info:
        _gib(value)
    assert f"write {unit} (bytes," in str(info.value)
