"""When a background checkpoint write outlasts the interval, the warning names the interval it outlasted: in the
batch stage of the shortest steps (a ramp's, where the same step count is fewer seconds) when that stage raised it.

Before the fix the 70B example with 1.1 GB/s storage warned "the background checkpoint write (898.0 s) is slower
than the Daly interval (1,204 s)": 898 < 1,204. The raise came from ramp 1, whose 18.25 s steps make the Daly
interval's 33 steps 602 s.

Hand numbers (those of tests/ops/test_milestones_follow_the_tokens_through_the_batch_ramp.py): 1e9 parameters,
14e9 B + RNG 10,072 B + cursor 1,024 B written in the background; δ_async = 2 + 14e9 / 50e9 = 2.28 s, M = 100 s:
Daly τ = 19.86 s → round(19.86 / 2 s) = 10 main steps.
* Ramp of 1 s steps, storage 1e9 B/s: the write takes 14.000011 s > 10 × 1 s = 10 s in the ramp (the main
  stage's 10 × 2 s = 20 s holds it): raised to ⌈14.000011 / 1⌉ = 15 steps.
* No ramp, storage 0.5e9 B/s: the write takes 28.000022 s > 10 × 2 s = 20 s: raised to ⌈28.000022 / 2⌉ = 15.
* No ramp, storage 1e9 B/s: 14.000011 s < 20 s: not raised, no warning.
"""

from __future__ import annotations

import pytest
from tests.ops._two_stages import MAIN, RAMP, plan_two_stages

from runplan.ops.checkpoint import StageTiming


def _plan(stages: list[StageTiming] | None, storage: float):
    return plan_two_stages(
        stages,
        total_params=1_000_000_000,
        job_mtbf_seconds=100.0,
        storage_write_bandwidth_bytes_per_s=storage,
        node_write_bandwidth_bytes_per_s=None,
    )


def _raised(c) -> str:
    found = [w for w in c.warnings if "interval was raised" in w]
    assert len(found) == 1, c.warnings
    return found[0]


def test_a_ramp_stage_that_raised_the_interval_is_named_with_its_seconds():
    c = _plan([RAMP, MAIN], 1e9)
    assert c.background_write_seconds == pytest.approx(14.0, rel=1e-3)
    assert c.daly_interval_seconds == pytest.approx(19.86, abs=0.01)
    assert c.interval_steps == 15
    w = _raised(c)
    # the interval the write outlasted: 10 steps × 1 s in ramp 1 = 10 s, below the 14.00 s write
    assert "the Daly interval's 10 steps in ramp 1's 1 s steps (10 s)" in w
    assert "14.00 s" in w and "raised to 15 steps" in w
    # never the false comparison with Daly's seconds (19.86 s > 14.00 s)
    assert "19.86" not in w and "slower than the Daly interval (" not in w


def test_without_a_ramp_the_main_steps_are_named():
    c = _plan(None, 0.5e9)
    assert c.background_write_seconds == pytest.approx(28.0, rel=1e-3)
    assert c.interval_steps == 15
    w = _raised(c)
    assert "the Daly interval's 10 steps of 2 s (20 s)" in w
    assert "28.00 s" in w and "raised to 15 steps" in w


def test_a_write_that_fits_every_stage_raises_nothing():
    c = _plan(None, 1e9)
    assert c.interval_steps == 10
    assert not any("interval was raised" in w for w in c.warnings)
