"""The goodput caution fires below Llama 3's ~90% (§3.3.4) and must print a number below 90%: a goodput of 0.8998
read "goodput 90.0% is below the ~90% Llama 3 reported" (Llama 3.1 405B on 16,384 H100s with synchronous saves,
5 failures per 1,000 node-days), while the failures table beside it said W / elapsed = 0.8998."""

from __future__ import annotations

import pytest

from runplan.ops.reliability import _warnings


def _caution(goodput: float) -> str:
    (caution,) = [w for w in _warnings((300.0, 5.0), 1e6, goodput, 1.0, True) if w.startswith("goodput")]
    return caution


@pytest.mark.parametrize(
    ("goodput", "printed"),
    [
        (0.8998, "goodput 89.98% is below"),  # would round to 90.0%: truncated to two decimals
        (0.89999, "goodput 89.99% is below"),
        (0.8949, "goodput 89.5% is below"),  # one decimal already reads below 90%
        (0.5, "goodput 50.0% is below"),
    ],
)
def test_goodput_caution_prints_a_number_below_90_percent(goodput, printed):
    assert _caution(goodput).startswith(printed)


def test_no_caution_at_90_percent_or_more():
    assert not [w for w in _warnings((300.0, 5.0), 1e6, 0.9, 1.0, True) if w.startswith("goodput")]
