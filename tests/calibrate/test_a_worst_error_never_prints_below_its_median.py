"""A calibration's accuracy phrase printed the worst error with no decimal and the median with one: a worst of
4.5% beside a median of 4.3% read "4.3% median, 4% worst". Below 10% the worst keeps one decimal too."""

import pytest

from runplan.calibrate.calibration import HeldOutError, PeakMemoryCheck


@pytest.mark.parametrize(
    ("errors", "expected"),
    [
        ([0.043, -0.043, 0.045], "4.3% median, 4.5% worst"),
        ([0.062, 0.37, -0.05], "6.2% median, 37% worst"),
        ([0.01, 0.0949], "5.2% median, 9.5% worst"),
        ([0.01, 0.0951], "5.3% median, 10% worst"),
    ],
)
def test_held_out_and_memory_phrases_keep_the_worst_at_or_above_the_median(errors, expected):
    held = HeldOutError.of(errors, "leave-one-out, exact refits")
    memory = PeakMemoryCheck.of(errors)
    assert held is not None and memory is not None
    assert expected in held.phrase()
    assert expected in memory.phrase()
