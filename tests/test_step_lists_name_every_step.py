"""units.format_steps: step numbers in words with every step recoverable (an operator deletes checkpoints by
these), never "5 more"."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from runplan.units import format_steps


def _read_back(text: str) -> list[int]:
    """The steps a reader recovers from the text."""
    head, _, tail = text.partition(", then every ")
    steps = [int(x.replace(",", "")) for x in head.split(", ")]
    if tail:
        gap, _, last = tail.partition(" through ")
        step, gap_n, last_n = steps[-1], int(gap.replace(",", "")), int(last.replace(",", ""))
        while step < last_n:
            step += gap_n
            steps.append(step)
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
    # a ramp's many milestones, gaps alternating with the save interval's rounding: the count and where they are
    alternating = [sum((396, 429)[i % 2] for i in range(n)) for n in range(1, 41)] + [20_000, 21_000, 22_000]
    assert format_steps(alternating, "the plan's milestone_steps") == (
        "396 to 22,000 (43 of them, each listed in the plan's milestone_steps)"
    )


@given(st.lists(st.integers(1, 10**7), min_size=1, max_size=60, unique=True).map(sorted))
def test_every_step_is_recovered_or_its_list_is_named(steps):
    text = format_steps(steps, "X")
    if text.endswith("each listed in X)"):
        assert text.startswith(f"{steps[0]:,} to {steps[-1]:,} ({len(steps):,} of them")
    else:
        assert _read_back(text) == steps
