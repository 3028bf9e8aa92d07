"""A small run of 10,500 steps (40e9 tokens at 4e6 a step, 2 s steps) with a 1,000-step ramp at half the batch
and half the step time, planned by the checkpoint stage: the hand-derived cases of the ramp tests share it."""

from __future__ import annotations

from typing import Any

from runplan.ops import CheckpointRequest, OperationsSpec, plan_checkpoints
from runplan.ops.checkpoint import CheckpointPlan, StageTiming

RAMP = StageTiming(name="ramp 1", steps=1_000, tokens_per_step=2e6, step_seconds=1.0)
MAIN = StageTiming(name="main", steps=9_500, tokens_per_step=4e6, step_seconds=2.0)


def plan_two_stages(
    stages: tuple[StageTiming, ...] | list[StageTiming] | None,
    *,
    total_params: int,
    job_mtbf_seconds: float,
    **spec: Any,
) -> CheckpointPlan:
    """The checkpoint plan of the run with ``stages`` (None: one main stage of 10,500 steps) and ``spec``."""
    return plan_checkpoints(
        CheckpointRequest(
            total_params=total_params,
            step_seconds=2.0,
            tokens_per_step=4e6,
            total_steps=10_500,
            training_tokens=40e9,
            job_mtbf_seconds=job_mtbf_seconds,
            batch_stages=None if stages is None else list(stages),
            spec=OperationsSpec(**spec),
        )
    )
