"""units.format_steps: step numbers in words with every step recoverable (an operator deletes checkpoints by
these), never "5 more"."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runplan.units import format_steps


def _read_back(text: str) -> list[int]:
    """The steps a reader recovers from the text: each item a step, or 'then every D through Z' after one."""
    steps: list[int] = []
    for item in text.split(", "):
        if item.startswith("then every "):
            gap, _, last = item.removeprefix("then every ").partition(" through ")
            gap_n, last_n = int(gap.replace(",", "")), int(last.replace(",", ""))
            while steps[-1] < last_n:
                steps.append(steps[-1] + gap_n)
        else:
            steps.append(int(item.replace(",", "")))
    return steps


def test_hand_examples():
    assert format_steps([10, 20, 30], "X") == "10, 20, 30"
    assert format_steps(list(range(3_729, 91_510, 2_310)), "X") == "3,729, then every 2,310 through 91,509"
    assert (
        format_steps([100, 250, *range(300, 2_000, 100)], "X")
        == "100, 250, 300, then every 100 through 1,900"
    )
    ragged = [1, 5, 9, 14, 20, 27, 35, 44, 54, 65, 77, 90, 104]
    assert format_steps(ragged, "X") == ", ".join(str(x) for x in ragged)
    # several evenly spaced runs (a ramp's milestones at 66-step saves, then 33 at the main batch): one item each
    runs = [*range(66, 1_255, 66), 1_353, *range(1_419, 2_740, 66), *range(2_772, 93_259, 33)]
    assert format_steps(runs, "X") == (
        "66, then every 66 through 1,254, 1,353, then every 66 through 2,739, 2,772, then every 33 through 93,258"
    )
    # a ramp's many milestones, gaps alternating with the save interval's rounding: the count and where they are
    alternating = [sum((396, 429)[i % 2] for i in range(n)) for n in range(1, 41)] + [20_000, 21_000, 22_000]
    assert format_steps(alternating, "the plan's milestone_steps") == (
        "396 to 22,000 (each listed in the plan's milestone_steps)"
    )


@given(st.lists(st.integers(1, 10**7), min_size=1, max_size=60, unique=True).map(sorted))
def test_every_step_is_recovered_or_its_list_is_named(steps):
    text = format_steps(steps, "X")
    if text.endswith("each listed in X)"):
        assert text == f"{steps[0]:,} to {steps[-1]:,} (each listed in X)"
    else:
        assert _read_back(text) == steps


@pytest.mark.parametrize("steps", [[5, 5, 5], [300, 200, 100]])
def test_steps_that_do_not_increase_are_refused(steps):
    """Duplicates read "5, then every 0 through 5"; a descending list "every -100" (no plan makes either:
    ops/checkpoint.py _milestone_steps takes np.unique)."""
    with pytest.raises(ValueError, match="increase strictly"):
        format_steps(steps, "X")
