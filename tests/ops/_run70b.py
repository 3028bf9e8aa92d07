"""The 70B run on 512 GPUs (TP8 PP4 DP16, 1.4T tokens, 9 s steps) that several operations tests plan by hand."""

from __future__ import annotations

from typing import Any

from runplan.ops import Operations, OperationsRequest, OperationsSpec, ScheduleRequest, operate, plan_schedule


def operations_70b(gpus_per_node: int = 8, step_seconds: float = 9.0, **spec: Any) -> Operations:
    """Every operations stage of the run, with ``spec`` as the plan file's ``operations:`` keys."""
    schedule = plan_schedule(
        ScheduleRequest(training_tokens=1.4e12, compute_flops=5.88e23, seq_len=4096, dp=16, micro_batch=1)
    )
    return operate(
        OperationsRequest(
            total_params=70_000_000_000,
            tp=8,
            pp=4,
            dp=16,
            seq_len=4096,
            gpus_per_node=gpus_per_node,
            step_seconds=step_seconds,
            schedule=schedule,
            operations=OperationsSpec(**spec),
        )
    )
