"""Failure-free training time over batch-ramp stages (runplan.ops.training_seconds, plan.stage_step_seconds)."""

from types import SimpleNamespace

import pytest

from runplan.ops import training_seconds


def _schedule(main_tokens: float, stages: list[tuple[int, float]]) -> SimpleNamespace:
    return SimpleNamespace(
        global_batch_tokens=main_tokens,
        batch_stages=[SimpleNamespace(steps=n, global_batch_tokens=b) for n, b in stages],
    )


def test_stage_step_times_are_summed():
    # hand-derived: 100 ramp steps of 6 s (a 10 s step whose 2 s of bubble/DP/optimizer do not shrink at half
    # the batch: 2 + 8 x 0.5) and 900 main steps of 10 s: 600 + 9,000 = 9,600 s
    schedule = _schedule(4e6, [(100, 2e6), (900, 4e6)])
    assert training_seconds(schedule, 10.0, [6.0, 10.0]) == pytest.approx(9600.0)
    # without stage times every stage scales with its batch (optimistic for the ramp): 500 + 9,000
    assert training_seconds(schedule, 10.0) == pytest.approx(9500.0)


def test_stage_times_must_match_the_stages():
    with pytest.raises(ValueError):
        training_seconds(_schedule(4e6, [(100, 2e6), (900, 4e6)]), 10.0, [10.0])


@pytest.mark.parametrize("zero", [0, 1, 2, 3])
def test_ramp_stages_are_retimed_at_their_microbatch_count(zero):
    from tests.parallel.shapes import H100, LLAMA_70B

    from runplan.parallel.layout import ParallelRequest, Pins
    from runplan.parallel.search import search
    from runplan.plan import stage_step_seconds

    request = ParallelRequest(
        model=LLAMA_70B,
        gpu=H100,
        n_gpus=512,
        seq_len=4096,
        global_batch_tokens=8e6,
        pins=Pins(pp=4, zero=zero),
    )
    best = search(request).layouts[0]
    m = best.microbatches
    stages = [
        SimpleNamespace(microbatches_per_replica=m // 4, global_batch_tokens=1.0),
        SimpleNamespace(microbatches_per_replica=m // 2, global_batch_tokens=2.0),
        SimpleNamespace(microbatches_per_replica=m, global_batch_tokens=4.0),
    ]
    times = stage_step_seconds(request, best, SimpleNamespace(batch_stages=stages))
    assert times[-1] == pytest.approx(best.step_seconds, rel=1e-9)  # the main stage is the layout itself
    assert times[0] < times[1] < times[2]
    # the bubble is (p-1)/v micro-batch times whatever m is, so a quarter of the batch takes more than a quarter
    # of the step; every other term shrinks at most in proportion
    assert times[0] > best.step_seconds / 4
    assert times[1] > best.step_seconds / 2


def test_plan_useful_time_counts_the_ramp_bubble():
    from tests.export._plans import example_plan

    plan = example_plan("405b-16k-h100-8k")
    stages = plan.schedule.batch_stages
    assert len(stages) >= 2 and plan.layout.best.pp > 1
    main = plan.schedule.global_batch_tokens
    proportional = sum(s.steps * plan.layout.best.step_seconds * s.global_batch_tokens / main for s in stages)
    assert plan.reliability.useful_seconds > proportional


def test_operations_request_wants_one_step_time_per_stage():
    import pydantic

    from runplan.ops import OperationsRequest
    from runplan.ops.schedule import ScheduleRequest, plan_schedule

    schedule = plan_schedule(
        ScheduleRequest(training_tokens=4e12, compute_flops=2e23, seq_len=4096, dp=64, micro_batch=1)
    )
    assert len(schedule.batch_stages) == 2
    base = dict(total_params=7e9, seq_len=4096, step_seconds=10.0, schedule=schedule, dp=64)
    OperationsRequest(**base, stage_step_seconds=[6.0, 10.0])
    with pytest.raises(pydantic.ValidationError, match="one step time per stage"):
        OperationsRequest(**base, stage_step_seconds=[10.0])
