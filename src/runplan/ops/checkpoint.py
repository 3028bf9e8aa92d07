"""Checkpointing: what a resumable checkpoint holds, how long a save blocks, how often to save, what to keep.

Sources (docs/operations.md §2):

* **Contents**: mixed-precision Adam keeps bf16 weights (2 B/param), fp32 master weights (4), and the two fp32
  Adam moments (4 + 4): 14 B/param (ZeRO, Rajbhandari et al. 2020, §3.1, counts the same 16 B/param with fp16
  gradients, which a checkpoint does not need). BLOOM-176B's checkpoints were 2.3 TB (BigScience, about 13
  B/param). Plus the data-loader cursor and RNG states so that a resumed run sees the same data and dropout.
* **Interval**: Young 1974 ("A first order approximation to the optimum checkpoint interval", CACM 17(9)):
  τ = sqrt(2δM). Daly 2006 (FGCS 22(3)): τ = sqrt(2δM)·[1 + (1/3)·sqrt(δ/(2M)) + (1/9)·(δ/(2M))] − δ
  for δ < 2M, else τ = M. δ = time a save blocks training, M = the job's mean time between interruptions.
* **Async saves**: Megatron-Core async checkpointing and PyTorch DCP ``async_save`` copy each GPU's shard to
  host memory (blocking) and write it to storage in the background (not blocking). Nebula / CheckFreq /
  Gemini follow the same two-phase idea.

Leaves out: checkpoint compression, the read time on restart (it belongs in ``restart_seconds``), file-system
metadata cost for very many small files, and expert-parallel sharding of MoE optimizer state when the save is
not fully parallel (the per-rank figure is then an upper bound).
"""

from __future__ import annotations

import math

from pydantic import BaseModel, Field

from runplan.ops._notes import INPUT_CONFIG, Explained, fmt, fmt_bytes, fmt_seconds
from runplan.ops.reliability import OperationsSpec
from runplan.units import NonNegativeCount, PositiveCount, PositiveNumber

BYTES_PER_PARAM = {"weights_bf16": 2, "master_fp32": 4, "adam_m_fp32": 4, "adam_v_fp32": 4}
#: RNG states per rank, bytes: Python and NumPy Mersenne Twister (624 32-bit words each ≈ 2.5 kB),
#: torch CPU generator (5,056 B), CUDA Philox (seed + offset, 16 B).
RNG_BYTES_PER_RANK = 2_500 + 2_500 + 5_056 + 16
#: Data-loader cursor per data-parallel replica: sample index, epoch, per-source positions of a data mixture
#: (an assumption: 1 kB covers a mixture of ~60 sources at 16 B each).
CURSOR_BYTES_PER_REPLICA = 1_024


def young_interval_seconds(save_seconds: float, mtbf_seconds: float) -> float:
    """τ = sqrt(2δM) (Young 1974, first order)."""
    return math.sqrt(2.0 * save_seconds * mtbf_seconds)


def daly_interval_seconds(save_seconds: float, mtbf_seconds: float) -> float:
    """τ = sqrt(2δM)·[1 + (1/3)·sqrt(δ/2M) + (1/9)·(δ/2M)] − δ for δ < 2M, else M (Daly 2006)."""
    delta, m = save_seconds, mtbf_seconds
    if delta >= 2.0 * m:
        return m
    ratio = delta / (2.0 * m)
    return math.sqrt(2.0 * delta * m) * (1.0 + math.sqrt(ratio) / 3.0 + ratio / 9.0) - delta


class CheckpointRequest(BaseModel):
    """What the checkpoint stage needs from the model, the layout, the schedule and the failure model."""

    model_config = INPUT_CONFIG

    total_params: PositiveCount = Field(description="Every parameter of the model (ModelShape.total_params).")
    tp: PositiveCount = Field(1, description="Tensor-parallel degree t.")
    pp: PositiveCount = Field(1, description="Pipeline-parallel degree p.")
    dp: PositiveCount = Field(1, description="Data-parallel degree d (replicas).")
    cp: PositiveCount = Field(1, description="Context-parallel degree c (weights replicated across it).")
    zero: NonNegativeCount = Field(
        1,
        le=3,
        description="ZeRO stage: 0 none, 1 optimizer (Megatron distributed optimizer), 2 + grads, 3 + "
        "weights.",
    )
    gpus_per_node: PositiveCount = Field(8, description="GPUs per node (each writes through the node's NIC).")
    n_nodes: PositiveCount | None = Field(
        None,
        description="Nodes of the job, as `operate` computed them for the failure model too; unset = "
        "⌈t·p·d·c / gpus_per_node⌉.",
    )
    step_seconds: PositiveNumber = Field(description="Time of one training step, seconds (parallel stage).")
    tokens_per_step: PositiveNumber = Field(description="Global batch in tokens of the main batch stage.")
    total_steps: PositiveCount = Field(description="Training steps of the run (schedule stage).")
    training_tokens: PositiveNumber = Field(description="Training tokens D (for milestone spacing).")
    job_mtbf_seconds: PositiveNumber = Field(description="Job mean time between interruptions M, seconds.")
    rollback_window_steps: NonNegativeCount = Field(
        300,
        description="A loss-spike rollback needs a checkpoint this many steps before detection (monitoring: "
        "margin 100 + recovery window 200, PaLM §5.1); older checkpoints are kept for it when the rolling "
        "generations do not reach that far back.",
    )
    spec: OperationsSpec = Field(
        default_factory=OperationsSpec, description="The plan file's operations section."
    )


class CheckpointPart(Explained):
    """One named part of a checkpoint and how it is sharded."""

    name: str
    bytes: float
    shards: int
    bytes_per_shard: float


class CheckpointPlan(Explained):
    """The checkpointing section of a run plan."""

    parts: list[CheckpointPart]
    total_bytes: float
    bytes_per_param: float
    world_size: int
    n_nodes: int
    held_bytes_per_gpu: float
    written_bytes_per_rank: float
    written_bytes_per_node: float
    sync_seconds: float
    sync_bound: str
    async_blocking_seconds: float
    background_write_seconds: float
    host_staging: bool
    host_memory_bytes_per_node: float
    save_blocking_seconds: float
    job_mtbf_seconds: float
    young_interval_seconds: float
    daly_interval_seconds: float
    interval_steps: int
    interval_seconds: float
    interval_tokens: float
    checkpoints_per_run: int
    retention_generations: int
    rolling_storage_bytes: float
    rollback_window_steps: int
    rollback_every_steps: int
    rollback_generations: int
    rollback_storage_bytes: float
    milestone_every_steps: int
    milestone_every_tokens: float
    milestones: int
    milestone_bytes: float
    milestone_storage_bytes: float
    storage_bytes: float
    retention_procedure: list[str]
    warnings: list[str]


def plan_checkpoints(request: CheckpointRequest) -> CheckpointPlan:
    """Size the checkpoint, time a save both ways, pick the Daly interval in whole steps, size the storage."""
    spec = request.spec
    n = request.total_params
    tp, pp, dp, cp = request.tp, request.pp, request.dp, request.cp
    world = tp * pp * dp * cp
    replicas = dp * cp  # copies of each model-parallel shard
    n_nodes = request.n_nodes if request.n_nodes is not None else math.ceil(world / request.gpus_per_node)
    weight_shards = tp * pp * (replicas if request.zero >= 3 else 1)
    optimizer_shards = tp * pp * (replicas if request.zero >= 1 else 1)

    parts: list[CheckpointPart] = []
    for name, per_param in BYTES_PER_PARAM.items():
        shards = weight_shards if name == "weights_bf16" else optimizer_shards
        size = float(per_param * n)
        parts.append(
            CheckpointPart(
                name=name,
                bytes=size,
                shards=shards,
                bytes_per_shard=size / shards,
                notes={
                    "bytes": f"{per_param} B/param × {fmt(n)} params = {fmt_bytes(size)}",
                    "shards": _shard_note(name, tp, pp, replicas, request.zero),
                    "bytes_per_shard": f"{fmt_bytes(size)} / {shards:,} = {fmt_bytes(size / shards)}",
                },
            )
        )
    rng = float(RNG_BYTES_PER_RANK * world)
    cursor = float(CURSOR_BYTES_PER_REPLICA * replicas)
    parts.append(
        CheckpointPart(
            name="rng_states",
            bytes=rng,
            shards=world,
            bytes_per_shard=float(RNG_BYTES_PER_RANK),
            notes={
                "bytes": f"{RNG_BYTES_PER_RANK:,} B per rank (Python, NumPy, torch CPU, CUDA) × {world:,} "
                "ranks",
                "shards": f"one per rank: {world:,}",
                "bytes_per_shard": f"{RNG_BYTES_PER_RANK:,} B",
            },
        )
    )
    parts.append(
        CheckpointPart(
            name="dataloader_cursor",
            bytes=cursor,
            shards=replicas,
            bytes_per_shard=float(CURSOR_BYTES_PER_REPLICA),
            notes={
                "bytes": f"{CURSOR_BYTES_PER_REPLICA:,} B per data-parallel replica × {replicas:,} replicas",
                "shards": f"one per replica (dp × cp = {replicas:,})",
                "bytes_per_shard": f"{CURSOR_BYTES_PER_REPLICA:,} B (sample index, epoch, mixture positions)",
            },
        )
    )
    total = sum(p.bytes for p in parts)
    model_state = sum(p.bytes for p in parts[:4])
    held = sum(p.bytes_per_shard for p in parts[:4])

    if spec.fully_parallel_save:
        written = total / world
        written_note = f"fully parallel save: total / world = {fmt_bytes(total)} / {world:,}"
    else:
        written = held + RNG_BYTES_PER_RANK + CURSOR_BYTES_PER_REPLICA
        written_note = "first replica writes its weight shard plus its optimizer shard (not fully parallel)"
    per_node = written * request.gpus_per_node
    storage_bw = spec.storage_write_bandwidth_bytes_per_s
    t_storage = total / storage_bw
    t_node = (
        per_node / spec.node_write_bandwidth_bytes_per_s if spec.node_write_bandwidth_bytes_per_s else 0.0
    )
    write = max(t_storage, t_node)
    fixed = spec.save_fixed_seconds
    sync = fixed + write
    bound = "aggregate storage bandwidth" if t_storage >= t_node else "per-node write bandwidth"
    async_block = fixed + written / spec.host_link_bandwidth_bytes_per_s
    delta = async_block if spec.host_staging else sync
    m = request.job_mtbf_seconds

    young = young_interval_seconds(delta, m)
    daly = daly_interval_seconds(delta, m)
    daly_steps = max(1, round(daly / request.step_seconds))
    steps = daly_steps
    interval_reason = f"round({fmt(daly)} s / {request.step_seconds:.4g} s per step) = {steps:,} steps"
    if spec.host_staging and write > steps * request.step_seconds:
        steps = math.ceil(write / request.step_seconds)
        interval_reason += (
            f", raised to {steps:,} so that the background write ({fmt_seconds(write)}) ends "
            "before the next save"
        )
    interval_s = steps * request.step_seconds
    interval_tokens = steps * request.tokens_per_step
    n_ckpt = request.total_steps // steps

    gens = spec.retention_generations
    rolling = (gens + 1) * total
    milestone_tokens_wanted = spec.milestone_every_tokens or 0.1 * request.training_tokens
    milestone_steps = max(steps, round(milestone_tokens_wanted / request.tokens_per_step / steps) * steps)
    milestones = request.total_steps // milestone_steps
    milestone_size = parts[0].bytes if spec.milestone_weights_only else total
    milestone_storage = milestones * milestone_size
    window = request.rollback_window_steps
    if (gens - 1) * steps >= window:
        rollback_every, rollback_gens = 0, 0
        rollback_reason = f"the {gens} rolling generations reach {(gens - 1) * steps:,} ≥ {window} steps back"
    else:
        rollback_every, rollback_gens = math.ceil(window / steps) * steps, 2
        rollback_reason = (
            f"rolling generations reach only {(gens - 1) * steps:,} steps back: keep the 2 newest "
            "checkpoints "
            f"at multiples of ⌈{window}/{steps}⌉·{steps} = {rollback_every:,} steps"
        )
    rollback_storage = rollback_gens * total
    storage = rolling + rollback_storage + milestone_storage

    warnings: list[str] = []
    if steps > daly_steps:
        warnings.append(
            f"the background checkpoint write ({fmt_seconds(write)}) is slower than the Daly interval "
            f"({fmt_seconds(daly)}): the interval was raised to {steps:,} steps; faster storage would help"
        )
    if not spec.host_staging and sync > 0.5 * interval_s:
        warnings.append(
            f"a synchronous save ({fmt_seconds(sync)}) takes over half the interval "
            f"({fmt_seconds(interval_s)}): "
            "enable host staging (async checkpointing)"
        )
    if delta >= 2 * m:
        warnings.append(f"save time δ {fmt_seconds(delta)} ≥ 2M: Daly's formula falls back to τ = M")
    if daly < request.step_seconds:
        warnings.append(
            f"the optimal interval ({fmt_seconds(daly)}) is shorter than one step: saving every step"
        )

    procedure = [
        f"every {steps:,} steps ({fmt(interval_tokens)} tokens, {fmt_seconds(interval_s)}): "
        + (
            "copy each GPU's shard to pinned host memory (blocks training), then write it in the background"
            if spec.host_staging
            else "write every shard to storage (blocks training)"
        ),
        "write the new generation under a temporary name with a manifest of per-shard checksums (e.g. CRC32C "
        "or SHA-256), fsync, then read every shard back and compare with the manifest",
        "only when all shards validate: atomically mark it complete (rename / commit marker) and record "
        "it as the latest checkpoint",
        f"then delete the oldest rolling generation so that {gens} validated generations remain (a failed "
        "validation keeps the old ones and raises an alert)",
        *(
            [
                f"keep the 2 newest checkpoints at multiples of {rollback_every:,} steps as rollback "
                "points, so "
                f"a loss-spike rollback always finds one ≥ {window} steps back"
            ]
            if rollback_gens
            else []
        ),
        f"every {milestone_steps:,} steps ({fmt(milestone_steps * request.tokens_per_step)} tokens): keep "
        "that generation permanently as a milestone "
        f"({'bf16 weights only' if spec.milestone_weights_only else 'full resumable state'})",
    ]

    notes = {
        "total_bytes": (
            f"14 B/param model state {fmt_bytes(model_state)} + RNG {fmt_bytes(rng)} + cursor "
            f"{fmt_bytes(cursor)}"
            f" = {fmt_bytes(total)}"
        ),
        "bytes_per_param": f"{fmt_bytes(total)} / {fmt(n)} params = {total / n:.4f} B/param",
        "world_size": f"t·p·d·c = {tp}·{pp}·{dp}·{cp} = {world:,} GPUs",
        "n_nodes": f"⌈{world:,} / {request.gpus_per_node}⌉ = {n_nodes:,} nodes",
        "held_bytes_per_gpu": f"Σ bytes_per_shard of weights, master, m, v = {fmt_bytes(held)} per GPU",
        "written_bytes_per_rank": f"{written_note} = {fmt_bytes(written)}",
        "written_bytes_per_node": f"{request.gpus_per_node} GPUs × {fmt_bytes(written)} = "
        f"{fmt_bytes(per_node)}",
        "sync_seconds": (
            f"fixed {fixed:g} s + max(total/storage {fmt_bytes(total)}/{fmt_bytes(storage_bw)}/s = "
            f"{t_storage:.3g} s, per node "
            f"{fmt_bytes(per_node)}/node bandwidth = {t_node:.3g} s) = {fmt_seconds(sync)}"
        ),
        "async_blocking_seconds": (
            f"fixed {fixed:g} s + device→host copy: {fmt_bytes(written)} / "
            f"{fmt_bytes(spec.host_link_bandwidth_bytes_per_s)}/s "
            f"= {fmt_seconds(async_block)}"
        ),
        "background_write_seconds": f"the write itself still takes {fmt_seconds(write)}, off the critical "
        "path",
        "host_memory_bytes_per_node": (
            f"pinned host buffer: {request.gpus_per_node} × {fmt_bytes(written)} = {fmt_bytes(per_node)} "
            "per node"
        ),
        "save_blocking_seconds": f"δ = {'async copy' if spec.host_staging else 'synchronous write'} = "
        f"{fmt_seconds(delta)}",
        "job_mtbf_seconds": f"M = {fmt_seconds(m)} (reliability stage)",
        "young_interval_seconds": f"sqrt(2δM) = sqrt(2 × {delta:.4g} × {fmt(m)}) = {fmt_seconds(young)} "
        "(Young 1974)",
        "daly_interval_seconds": (
            f"sqrt(2δM)·[1 + ⅓·sqrt(δ/2M) + (1/9)·(δ/2M)] − δ with δ/2M = {delta / (2 * m):.4g} "
            f"= {fmt_seconds(daly)} (Daly 2006)"
        ),
        "interval_steps": interval_reason,
        "interval_seconds": f"{steps:,} steps × {request.step_seconds:.4g} s = {fmt_seconds(interval_s)}",
        "interval_tokens": f"{steps:,} steps × {fmt(request.tokens_per_step)} tokens = "
        f"{fmt(interval_tokens)} tokens",
        "checkpoints_per_run": f"⌊{request.total_steps:,} / {steps:,}⌋ = {n_ckpt:,} saves",
        "retention_generations": f"{gens} rolling generations kept (operations.retention_generations)",
        "rolling_storage_bytes": (
            f"({gens} kept + 1 being written and validated) × {fmt_bytes(total)} = {fmt_bytes(rolling)}"
        ),
        "milestone_every_steps": (
            f"{fmt(milestone_tokens_wanted)} tokens / {fmt(request.tokens_per_step)} per step, rounded to a "
            f"multiple of the interval = {milestone_steps:,} steps"
        ),
        "milestone_every_tokens": f"{milestone_steps:,} × {fmt(request.tokens_per_step)} = "
        f"{fmt(milestone_steps * request.tokens_per_step)} tokens",
        "milestones": f"⌊{request.total_steps:,} / {milestone_steps:,}⌋ = {milestones} milestones",
        "milestone_bytes": (
            f"{'2 B/param bf16 weights' if spec.milestone_weights_only else 'full checkpoint'} = "
            f"{fmt_bytes(milestone_size)}"
        ),
        "milestone_storage_bytes": f"{milestones} × {fmt_bytes(milestone_size)} = "
        f"{fmt_bytes(milestone_storage)}",
        "rollback_window_steps": f"{window} steps (monitoring: rollback margin + spike recovery window)",
        "rollback_every_steps": rollback_reason,
        "rollback_generations": rollback_reason,
        "rollback_storage_bytes": f"{rollback_gens} × {fmt_bytes(total)} = {fmt_bytes(rollback_storage)}",
        "storage_bytes": f"rolling {fmt_bytes(rolling)} + rollback {fmt_bytes(rollback_storage)} + "
        "milestones "
        f"{fmt_bytes(milestone_storage)} = {fmt_bytes(storage)}",
    }
    return CheckpointPlan(
        parts=parts,
        total_bytes=total,
        bytes_per_param=total / n,
        world_size=world,
        n_nodes=n_nodes,
        held_bytes_per_gpu=held,
        written_bytes_per_rank=written,
        written_bytes_per_node=per_node,
        sync_seconds=sync,
        sync_bound=bound,
        async_blocking_seconds=async_block,
        background_write_seconds=write,
        host_staging=spec.host_staging,
        host_memory_bytes_per_node=per_node,
        save_blocking_seconds=delta,
        job_mtbf_seconds=m,
        young_interval_seconds=young,
        daly_interval_seconds=daly,
        interval_steps=steps,
        interval_seconds=interval_s,
        interval_tokens=interval_tokens,
        checkpoints_per_run=n_ckpt,
        retention_generations=gens,
        rolling_storage_bytes=rolling,
        rollback_window_steps=window,
        rollback_every_steps=rollback_every,
        rollback_generations=rollback_gens,
        rollback_storage_bytes=rollback_storage,
        milestone_every_steps=milestone_steps,
        milestone_every_tokens=milestone_steps * request.tokens_per_step,
        milestones=milestones,
        milestone_bytes=milestone_size,
        milestone_storage_bytes=milestone_storage,
        storage_bytes=storage,
        retention_procedure=procedure,
        warnings=warnings,
        notes=notes,
    )


def _shard_note(name: str, tp: int, pp: int, replicas: int, zero: int) -> str:
    if name == "weights_bf16":
        if zero >= 3:
            return f"t·p·(d·c) = {tp}·{pp}·{replicas} shards (ZeRO-3 shards weights over replicas)"
        return (
            f"t·p = {tp}·{pp} = {tp * pp} distinct shards (replicated over {replicas} data-parallel copies)"
        )
    if zero >= 1:
        return f"t·p·(d·c) = {tp}·{pp}·{replicas} shards (ZeRO-{zero} / distributed optimizer)"
    return f"t·p = {tp * pp} distinct shards (ZeRO-0: replicated over {replicas} copies)"
