"""Operations stages of a run plan: schedule, checkpointing, reliability, monitoring, cost.

Each stage is a pure function from a pydantic request to a frozen pydantic result whose every number has a
one-line reason in its ``notes`` dict (see ``runplan.ops._notes``). A stage is a short chain of topic helpers
that each return ``Reasoned`` values (the number and its reason, written together next to the formula) or a
dict of them keyed by output field; ``Output.build(**derived)`` files the values and the notes. ``operate``
chains the three stages that depend on each other (failure rate → checkpoint interval → goodput, and the
interval → rollback numbers).
"""

from __future__ import annotations

from pydantic import Field, model_validator

from runplan.errors import Infeasible
from runplan.ops._notes import Explained, Reasoned, fmt_seconds
from runplan.ops.checkpoint import (
    CheckpointPart,
    CheckpointPlan,
    CheckpointRequest,
    LayoutRequest,
    StageTiming,
    daly_interval_seconds,
    plan_checkpoints,
    young_interval_seconds,
)
from runplan.ops.cost import Cost, CostLine, CostRequest, CostSpec, estimate_cost
from runplan.ops.monitoring import Metric, Monitoring, MonitoringRequest, MonitoringSpec, plan_monitoring
from runplan.ops.reliability import (
    LLAMA3_FAILURES_PER_1000_NODE_DAYS,
    OperationsSpec,
    Reliability,
    ReliabilityRequest,
    assess_reliability,
    default_failure_rate,
    expected_segment_seconds,
    failing_nodes,
    failure_rate_for,
    first_order_segment_seconds,
    job_mtbf_seconds,
)
from runplan.ops.schedule import (
    BatchStage,
    LrPhase,
    RampStage,
    Schedule,
    ScheduleRequest,
    ScheduleSpec,
    batch_tokens_at_step,
    deepseek_batch_tokens,
    deepseek_peak_lr,
    lr_at_step,
    plan_schedule,
    tokens_at_step,
)
from runplan.units import PositiveCount, PositiveNumber

__all__ = [
    "LLAMA3_FAILURES_PER_1000_NODE_DAYS",
    "MIN_GOODPUT",
    "BatchStage",
    "CheckpointPart",
    "CheckpointPlan",
    "CheckpointRequest",
    "Cost",
    "CostLine",
    "CostRequest",
    "CostSpec",
    "Explained",
    "LayoutRequest",
    "LrPhase",
    "Metric",
    "Monitoring",
    "MonitoringRequest",
    "MonitoringSpec",
    "Operations",
    "OperationsRequest",
    "OperationsSpec",
    "RampStage",
    "Reliability",
    "ReliabilityRequest",
    "Schedule",
    "ScheduleRequest",
    "ScheduleSpec",
    "assess_reliability",
    "batch_tokens_at_step",
    "daly_interval_seconds",
    "deepseek_batch_tokens",
    "deepseek_peak_lr",
    "default_failure_rate",
    "estimate_cost",
    "expected_segment_seconds",
    "failing_nodes",
    "failure_rate_for",
    "first_order_segment_seconds",
    "job_mtbf_seconds",
    "lr_at_step",
    "operate",
    "plan_checkpoints",
    "plan_monitoring",
    "plan_schedule",
    "tokens_at_step",
    "training_seconds",
    "young_interval_seconds",
]


def training_seconds(
    schedule: Schedule, step_seconds: float, stage_step_seconds: list[float] | None = None
) -> float:
    """Failure-free training time: Σ over batch stages of steps × that stage's step time.

    ``stage_step_seconds`` (one per batch stage) come from the layout evaluated at each stage's micro-batch
    count, so a ramp stage keeps what a smaller batch does not shrink: the pipeline bubble ((p−1)/v micro-batch
    times, Narayanan et al. 2021 §2.2), the gradient reduction of ZeRO-0/1 and the optimizer step. Without
    them each stage's step is taken proportional to its batch (optimistic for ramp stages).
    """
    if stage_step_seconds is not None:
        return sum(s.steps * t for s, t in zip(schedule.batch_stages, stage_step_seconds, strict=True))
    main = schedule.global_batch_tokens
    return sum(s.steps * step_seconds * s.global_batch_tokens / main for s in schedule.batch_stages)


class OperationsRequest(LayoutRequest):
    """Everything ``operate`` needs from the model, the layout and the schedule."""

    seq_len: PositiveCount = Field(description="Tokens per sequence.")
    step_seconds: PositiveNumber = Field(description="Time of one step at the main batch, seconds.")
    stage_step_seconds: list[PositiveNumber] | None = Field(
        None,
        description="Step time of the layout at each batch stage's micro-batch count, seconds (one per "
        "schedule batch stage; default: proportional to the stage's batch).",
    )

    @model_validator(mode="after")
    def _one_step_time_per_stage(self) -> OperationsRequest:
        if self.stage_step_seconds is not None and len(self.stage_step_seconds) != len(
            self.schedule.batch_stages
        ):
            raise ValueError(
                f"stage_step_seconds has {len(self.stage_step_seconds)} entries for "
                f"{len(self.schedule.batch_stages)} batch stages; give one step time per stage"
            )
        return self

    schedule: Schedule = Field(description="Result of plan_schedule for this run.")
    operations: OperationsSpec = Field(default_factory=OperationsSpec, description="Plan file `operations:`.")
    monitoring: MonitoringSpec = Field(default_factory=MonitoringSpec, description="Plan file `monitoring:`.")


class Operations(Explained):
    """Checkpointing, reliability and monitoring of one run, chained."""

    checkpointing: CheckpointPlan
    reliability: Reliability
    monitoring: Monitoring
    useful_seconds: float
    warnings: list[str]


#: Below this goodput the run does not make progress in any useful sense: the expected wall clock is over
#: 1,000× the failure-free time (and, at the extreme, overflows). Llama 3 reports ~90% (§3.3.4).
MIN_GOODPUT = 1e-3


def _ensure_progress(reliability: Reliability) -> None:
    """Infeasible when checkpoint segments almost never complete between failures (goodput ≈ 0)."""
    import math

    r = reliability
    if math.isfinite(r.expected_elapsed_seconds) and r.goodput >= MIN_GOODPUT:
        return
    segment = r.interval_seconds + r.save_blocking_seconds
    raise Infeasible(
        f"goodput ≈ 0: a checkpoint segment almost never completes between failures (τ+δ = "
        f"{fmt_seconds(segment)} of work and save, restart R = {fmt_seconds(r.restart_seconds)}, against a "
        f"job MTBF of {fmt_seconds(r.job_mtbf_seconds)} on {r.n_nodes:,} nodes at "
        f"{r.failures_per_1000_node_days:.3g} failures per 1,000 node-days)",
        suggestions=[
            "lower operations.failures_per_1000_node_days (Llama 3: 3.8)",
            "faster saves: operations.save_fixed_seconds, and host_link_bandwidth_bytes_per_s for async saves "
            "(host_staging) or host_staging: true and more storage bandwidth for synchronous ones",
            "faster restarts (operations.restart_seconds)",
            "fewer GPUs (fewer nodes to fail)",
        ],
    )


def operate(request: OperationsRequest) -> Operations:
    """Failure rate → MTBF → checkpoint plan (Daly interval) → goodput (exact renewal) → monitoring."""
    spec, schedule = request.operations, request.schedule
    world = request.tp * request.pp * request.dp * request.cp
    n_nodes = -(-world // request.gpus_per_node)
    stage_steps = request.stage_step_seconds or [
        request.step_seconds * st.global_batch_tokens / schedule.global_batch_tokens
        for st in schedule.batch_stages
    ]
    useful = training_seconds(schedule, request.step_seconds, stage_steps)
    checkpoint = plan_checkpoints(_checkpoint_request(request, n_nodes, world, stage_steps))
    reliability = assess_reliability(
        ReliabilityRequest(
            n_nodes=n_nodes,
            gpus=world,
            useful_seconds=useful,
            # the saves come every interval_steps steps, ramp steps included: τ is their average work, so the
            # failure model counts the checkpoint stage's saves (⌈steps / interval⌉), not W / main-batch τ
            interval_seconds=useful * min(1.0, checkpoint.interval_steps / schedule.total_steps),
            interval_steps=checkpoint.interval_steps,
            total_steps=schedule.total_steps,
            save_blocking_seconds=checkpoint.save_blocking_seconds,
            gpus_per_node=request.gpus_per_node,
            spec=spec,
        )
    )
    _ensure_progress(reliability)
    monitoring = plan_monitoring(_monitoring_request(request, checkpoint, useful))
    stages = " + ".join(
        f"{st.steps:,} × {t:.4g} s" for st, t in zip(schedule.batch_stages, stage_steps, strict=True)
    )
    return Operations.build(
        checkpointing=checkpoint,
        reliability=reliability,
        monitoring=monitoring,
        useful_seconds=Reasoned(
            useful,
            f"Σ steps × step time at that stage's batch (the layout re-timed at its micro-batch count) = "
            f"{stages} = {fmt_seconds(useful)}",
        ),
        warnings=[
            *checkpoint.warnings,
            *reliability.warnings,
            *_durability_lag_warning(checkpoint, reliability),
            *monitoring.warnings,
        ],
    )


#: Share of the elapsed time above which the loss that the goodput leaves out (async writes) is worth a warning.
DURABILITY_LAG_WARN_FRACTION = 1e-3


def _durability_lag_warning(checkpoint: CheckpointPlan, reliability: Reliability) -> list[str]:
    """A caution when async saves make the goodput optimistic: a failure during the background write of L
    seconds rolls back to the previous checkpoint.

    Hand-derived: a failure x seconds after a save started loses x when x ≥ L and x + τ when x < L (that save
    is not on storage yet); with x uniform over τ (L ≤ τ: the interval is raised to the write) the expected
    loss is τ/2 + L, L more than the renewal formula charges. Each interruption costs about L more, and they
    come at rate 1/M over the whole wall clock: elapsed' ≈ elapsed / (1 − L/M). Not folded into the goodput
    (docs/operations.md §3, Leaves out); printed when it is over 0.1% of the elapsed time.
    """
    lag, r = checkpoint.background_write_seconds, reliability
    if not checkpoint.host_staging:
        return []
    if lag >= r.job_mtbf_seconds:
        return [
            f"async saves: the background write ({fmt_seconds(lag)}) outlasts the job MTBF "
            f"({fmt_seconds(r.job_mtbf_seconds)}): most checkpoints never reach storage and the goodput is far "
            "too high; faster storage (operations.storage_write_bandwidth_bytes_per_s) or fewer nodes"
        ]
    elapsed = r.expected_elapsed_seconds / (1.0 - lag / r.job_mtbf_seconds)
    extra = elapsed - r.expected_elapsed_seconds
    if extra <= DURABILITY_LAG_WARN_FRACTION * r.expected_elapsed_seconds:
        return []
    return [
        f"async saves: a failure during a checkpoint's background write ({fmt_seconds(lag)}) rolls back to the "
        f"one before, about {fmt_seconds(extra)} more than the goodput counts (goodput ≈ "
        f"{r.useful_seconds / elapsed:.1%} instead of {r.goodput:.1%}); faster storage shortens the write"
    ]


def _checkpoint_request(
    request: OperationsRequest, n_nodes: int, world: int, stage_seconds: list[float]
) -> CheckpointRequest:
    """The checkpoint stage's inputs: the layout, the batch stages (the interval counts their steps, milestones
    their tokens), the job MTBF (a job on part of a node at its GPUs' share of the node's rate,
    ``failing_nodes``) and the rollback window."""
    schedule, watch = request.schedule, request.monitoring
    return CheckpointRequest(
        **request.layout(),
        n_nodes=n_nodes,
        step_seconds=request.step_seconds,
        tokens_per_step=schedule.global_batch_tokens,
        total_steps=schedule.total_steps,
        training_tokens=schedule.scheduled_tokens,
        batch_stages=[
            StageTiming(name=st.name, steps=st.steps, tokens_per_step=st.global_batch_tokens, step_seconds=t)
            for st, t in zip(schedule.batch_stages, stage_seconds, strict=True)
        ],
        job_mtbf_seconds=job_mtbf_seconds(
            failure_rate_for(request.operations, request.gpus_per_node)[0],
            failing_nodes(world, request.gpus_per_node),
        ),
        rollback_window_steps=watch.rollback_margin_steps + watch.spike_recovery_steps,
        spec=request.operations,
    )


def _monitoring_request(
    request: OperationsRequest, checkpoint: CheckpointPlan, useful: float
) -> MonitoringRequest:
    """The monitoring stage's inputs: the run's steps and batch, its tokens and work W, where the checkpoints land."""
    return MonitoringRequest(
        total_steps=request.schedule.total_steps,
        run_tokens=request.schedule.scheduled_tokens,
        run_seconds=useful,
        tokens_per_step=request.schedule.global_batch_tokens,
        step_seconds=request.step_seconds,
        seq_len=request.seq_len,
        checkpoint_interval_steps=checkpoint.interval_steps,
        retention_generations=request.operations.retention_generations,
        rollback_checkpoint_every_steps=checkpoint.rollback_every_steps or None,
        dp=request.dp,
        moe=request.expert_params > 0,
        spec=request.monitoring,
    )
