"""A value just under a unit boundary is printed in the unit it rounds into: 999.6e9 with three digits is
"1 T", never "1e+03 B" (the suffix was picked before rounding)."""

import pytest

from runplan.units import format_bytes, format_si


@pytest.mark.parametrize(
    ("value", "unit", "expected"),
    [
        (999.6e9, "", "1 T"),
        (999.6e9, "parameters", "1 T parameters"),
        (999.4e9, "", "999 B"),
        (999_960.0, "", "1 M"),
        (999.7, "", "1 k"),
        (4.08e10, "", "40.8 B"),
        (-999.6e6, "", "-1 B"),
        (999.6e15, "", "1e+18"),  # rounds past P: scientific
    ],
)
def test_format_si_picks_the_suffix_of_the_rounded_value(value, unit, expected):
    assert format_si(value, unit) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [(999.6e9, "1 TB"), (999.4e9, "999 GB"), (999.8, "1 kB"), (1.13e12, "1.13 TB"), (512.0, "512 B")],
)
def test_format_bytes_picks_the_unit_of_the_rounded_value(value, expected):
    assert format_bytes(value) == expected


def test_format_bytes_scale_of_still_sets_the_unit():
    assert format_bytes(0.95e9, scale_of=1.21e9) == "0.95 GB"
    assert format_bytes(999.6e9, scale_of=999.6e9, extra_digits=1) == "999.6 GB"
