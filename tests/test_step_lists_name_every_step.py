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
    assert format_steps([10, 20, 30]) == "10, 20, 30"
    assert format_steps(list(range(3_729, 91_510, 2_310))) == "3,729, then every 2,310 through 91,509"
    assert format_steps([100, 250, *range(300, 2_000, 100)]) == "100, 250, 300, then every 100 through 1,900"
    ragged = [1, 5, 9, 14, 20, 27, 35, 44, 54, 65, 77, 90, 104]
    assert format_steps(ragged) == ", ".join(str(x) for x in ragged)


@given(st.lists(st.integers(1, 10**7), min_size=1, max_size=60, unique=True).map(sorted))
def test_every_step_is_recovered(steps):
    assert _read_back(format_steps(steps)) == steps
