"""Milestones fall where the run has trained each 10% of its tokens, batch ramp included; the checkpoint interval
stays in steps (Megatron-LM's --save-interval counts iterations, ramp iterations included), and its seconds and
tokens are said for each batch stage.

Before the fix, milestones were multiples of the main-batch spacing in steps, so a ramp at half the batch moved
each one earlier (the 70B example's first at 8.5% of the tokens), and the interval's seconds were the main
stage's for every save.

Hand numbers: a ramp of 1,000 steps at 2e6 tokens (1 s each), then 9,500 main steps at 4e6 tokens (2 s each):
S = 10,500 steps, D = 2e9 + 38e9 = 40e9 tokens. δ = 1 s fixed + 14 MB / 25 GB/s = 1.00056 s (1e6 parameters,
synchronous), M = 20,000 s: Daly τ = sqrt(2δM)·(1 + ⅓·sqrt(δ/2M) + δ/18M) − δ = 200.056 × 1.0016699 − 1.00056 =
199.39 s → round(199.39 / 2 s) = 100 steps. Main-batch spacing of milestones: 10% of D = 4e9 tokens / 4e6 = 1,000 steps (a multiple of 100).
Tokens cross j × 4e9 at step 1,000 + (4e9·j − 2e9) / 4e6 = 500 + 1,000·j: milestones at 1,500, 2,500, ...,
10,500 (the last save, D itself), 10 of them; the old rule put them at multiples of 1,000 (the first at 2e9
tokens, 5%). The interval: 100 steps = 200 s and 4e8 tokens at the main batch, 100 s and 2e8 tokens in the ramp.
"""

from __future__ import annotations

import pytest
from tests.ops._two_stages import MAIN, RAMP, plan_two_stages

from runplan.ops import CheckpointRequest, OperationsSpec, plan_checkpoints


def _plan(stages=(RAMP, MAIN), **spec):
    return plan_two_stages(
        stages,
        total_params=1_000_000,
        job_mtbf_seconds=20_000.0,
        **{"host_staging": False, "save_fixed_seconds": 1.0, **spec},
    )


def test_interval_is_100_steps():
    c = _plan()
    assert c.save_blocking_seconds == pytest.approx(1.00056, abs=1e-5)
    assert c.daly_interval_seconds == pytest.approx(199.39, abs=0.01)
    assert c.interval_steps == 100
    assert c.checkpoints_per_run == 105  # ⌈10,500 / 100⌉: saves come every 100 steps, ramp included


def test_milestones_cross_each_tenth_of_the_tokens():
    c = _plan()
    assert c.milestone_every_steps == 1_000 and c.milestone_every_tokens == 4e9
    assert c.milestone_steps == [500 + 1_000 * j for j in range(1, 11)]
    assert c.milestones == 10
    assert "1,500" in c.notes["milestones"]
    assert c.retention_procedure[-1].startswith("at steps 1,500, 2,500")


def test_without_a_ramp_milestones_are_multiples_of_the_spacing():
    # one stage of 10,000 steps at 4e6 tokens, D = 40e9: 10% = 1,000 steps, milestones at 1,000 × j
    c = plan_checkpoints(
        CheckpointRequest(
            total_params=1_000_000,
            step_seconds=2.0,
            tokens_per_step=4e6,
            total_steps=10_000,
            training_tokens=40e9,
            job_mtbf_seconds=20_000.0,
            spec=OperationsSpec(host_staging=False, save_fixed_seconds=1.0),
        )
    )
    assert c.milestone_steps == [1_000 * j for j in range(1, 11)]
    assert c.retention_procedure[-1].startswith("every 1,000 steps")


def test_the_interval_in_seconds_and_tokens_per_stage():
    c = _plan()
    assert c.main_interval_seconds == 200.0
    assert c.interval_tokens == 4e8
    assert "ramp 1: 100 steps × 1 s = 100 s" in c.notes["main_interval_seconds"]
    assert "ramp 1: 200 M tokens" in c.notes["interval_tokens"]
    assert "ramp 1: 200 M tokens, 100 s" in c.retention_procedure[0]


def test_an_async_write_is_raised_over_the_shortest_stage_interval():
    # the background write must end before the next save in the ramp too. 1e9 parameters: 14e9 B + RNG 10,072 B +
    # cursor 1,024 B; storage 1e9 B/s → write 14.000011 s. δ_async = 2 + 14e9 / 50e9 = 2.28 s, M = 100 s: Daly
    # sqrt(456)·(1 + sqrt(0.0114)/3 + 0.0114/9) − 2.28 = 21.354 × 1.03686 − 2.28 = 19.86 s → round(19.86 / 2) =
    # 10 steps: 20 s of main steps outlast the write, but 10 s of ramp steps do not: raised to ⌈14.000011 / 1⌉ =
    # 15 steps (the main stage's step alone kept 10)
    c = plan_two_stages(
        [RAMP, MAIN],
        total_params=1_000_000_000,
        job_mtbf_seconds=100.0,
        storage_write_bandwidth_bytes_per_s=1e9,
        node_write_bandwidth_bytes_per_s=None,
    )
    assert c.background_write_seconds == pytest.approx(14.0, rel=1e-3)
    assert c.daly_interval_seconds == pytest.approx(19.86, abs=0.01)
    assert c.interval_steps == 15
    assert "ramp" in c.notes["interval_steps"]


def test_stage_steps_must_add_up_to_the_run():
    with pytest.raises(ValueError, match="batch_stages"):
        _plan(stages=(RAMP,))
