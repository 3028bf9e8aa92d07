"""Failure-free training time over batch-ramp stages (runplan.ops.training_seconds)."""

from types import SimpleNamespace

import pytest

from runplan.ops import training_seconds


def _schedule(main_tokens: float, stages: list[tuple[int, float]]) -> SimpleNamespace:
    return SimpleNamespace(
        global_batch_tokens=main_tokens,
        batch_stages=[SimpleNamespace(steps=n, global_batch_tokens=b) for n, b in stages],
    )


def test_ramp_stage_keeps_its_fixed_part():
    # hand-derived: a 10 s step of which 2 s (bubble + exposed DP + optimizer) do not shrink with the batch;
    # 100 steps at half the batch take 2 + 8 x 0.5 = 6 s each, then 900 full steps: 600 + 9,000 = 9,600 s
    schedule = _schedule(4e6, [(100, 2e6), (900, 4e6)])
    assert training_seconds(schedule, 10.0, 2.0) == pytest.approx(9600.0)
    # without a fixed part every stage scales with its batch (the old, optimistic reading): 500 + 9,000
    assert training_seconds(schedule, 10.0) == pytest.approx(9500.0)


def test_without_a_ramp_the_fixed_part_changes_nothing():
    schedule = _schedule(4e6, [(1000, 4e6)])
    assert training_seconds(schedule, 10.0, 3.0) == pytest.approx(training_seconds(schedule, 10.0))
