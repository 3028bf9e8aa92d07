"""A calibration's accuracy phrase printed the worst error with no decimal and the median with one: a worst of
4.5% beside a median of 4.3% read "4.3% median, 4% worst", and 10.49% beside 10.4% read "10.4% median, 10%
worst". Both now carry one decimal, as docs/validation.md prints them."""

import pytest

from runplan.calibrate.calibration import HeldOutError, PeakMemoryCheck


@pytest.mark.parametrize(
    ("errors", "expected"),
    [
        ([0.043, -0.043, 0.045], "4.3% median, 4.5% worst"),
        ([0.062, 0.367, -0.05], "6.2% median, 36.7% worst"),
        ([0.104, 0.1049], "10.4% median, 10.5% worst"),
        ([0.0, 0.0], "0.0% median, 0.0% worst"),
    ],
)
def test_held_out_and_memory_phrases_keep_the_worst_at_or_above_the_median(errors, expected):
    held = HeldOutError.of(errors, "leave-one-out, exact refits")
    memory = PeakMemoryCheck.of(errors)
    assert held is not None and memory is not None
    assert expected in held.phrase()
    assert expected in memory.phrase()
