"""Checkpointing: what a resumable checkpoint holds, how long a save blocks, how often to save, what to keep.

Sources (docs/operations.md §2):

* **Contents**: mixed-precision Adam keeps bf16 weights (2 B/param), fp32 master weights (4), and the two fp32
  Adam moments (4 + 4): 14 B/param (ZeRO, Rajbhandari et al. 2020, §3.1, counts the same 16 B/param with fp16
  gradients, which a checkpoint does not need). BLOOM-176B's checkpoints were 2.3 TB (BigScience, about 13
  B/param). Plus the data-loader cursor and RNG states so that a resumed run sees the same data and dropout.
* **Interval**: Young 1974 ("A first order approximation to the optimum checkpoint interval", CACM 17(9)):
  τ = sqrt(2δM). Daly 2006 (FGCS 22(3)): τ = sqrt(2δM)·[1 + (1/3)·sqrt(δ/(2M)) + (1/9)·(δ/(2M))] − δ
  for δ < 2M, else τ = M. δ = time a save blocks training, M = the job's mean time between interruptions.
  The interval is a number of steps, as the engines take it (Megatron-LM --save-interval: the train loop saves
  when iteration % save_interval == 0, megatron/training/training.py; iterations of a --rampup-batch-size ramp
  count alike), so the steps of a smaller ramp batch save at shorter intervals in seconds and tokens.
* **Async saves**: Megatron-Core async checkpointing and PyTorch DCP ``async_save`` copy each GPU's shard to
  host memory (blocking) and write it to storage in the background (not blocking). Nebula / CheckFreq /
  Gemini follow the same two-phase idea.

* **MoE**: the checkpoint holds every expert (14 B × total parameters); under expert parallelism a routed
  expert's state lives only on its EP rank (Megatron-Core parallel_state: expert layers over expert-tensor ×
  expert-parallel ranks), so a GPU holds dense / (t·p) + experts / (t·p·e) of a part not sharded over replicas.
* **fp8** keeps 14 B/param: Megatron-Core dequantizes fp8 weights to their nominal bf16 when it saves
  (dist_checkpointing/strategies/filesystem_async.py, utils.py ``force_all_tensors_to_non_fp8``, Megatron-LM
  @ d98e8a6; TransformerEngine ``Float8Tensor.dequantize`` @ d0067d0) and the optimizer keeps the fp32 master.
  Stacks whose fp32 parameters are the master (FSDP2 mixed precision, autocast) save 12 B/param.
* **bf16 Adam moments** (Stack ``optimizer_state_dtype: bf16``, DeepSeek-V3 arXiv 2412.19437 §3.3.3; only Megatron-LM
  --use-precision-aware-optimizer runs them beside an fp32 master) are saved as Megatron's distributed optimizer
  holds them (dp_reshardable, its default format: DistributedOptimizer._get_main_param_and_optimizer_states,
  megatron/core/optimizer/distrib_optimizer.py @ d98e8a6). Where Megatron keeps the fp32 master (fp8 recipes
  other than delayed) the moments are the optimizer's bf16 tensors: 2 + 4 + 2 + 2 = 10 B/param. Where
  TransformerEngine's FusedAdam holds the master (bf16 weights, delayed fp8: ``fused_adam_master``), its
  ``get_unscaled_state`` upcasts bf16 moments to fp32 and returns the master as its int16 low 16 bits
  (store_param_remainders, on by default; transformer_engine/pytorch/optimizers/fused_adam.py @ d0067d0):
  2 + 2 + 4 + 4 = 12 B/param. It is the rule by which the memory model holds that optimizer state at 2 + 2 + 2
  B/param (``Stack.fused_adam_master`` under ZeRO-1/2, runplan/parallel/memory.py ``model_state_bytes``).

Leaves out: checkpoint compression, the read time on restart (it belongs in ``restart_seconds``), file-system
metadata cost for very many small files, TE's fp8 scaling state (a few bytes per layer), and with a save that
is not fully parallel the exact placement of the first expert replica (the per-node figure is an upper bound).
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, Field, model_validator

from runplan.ops._notes import INPUT_CONFIG, Explained, Reasoned, fmt, fmt_bytes, fmt_plain, fmt_seconds
from runplan.ops.reliability import WRITE_HOST_GPUS, OperationsSection, OperationsSpec
from runplan.units import NonNegativeCount, PositiveCount, PositiveNumber, format_steps

BYTES_PER_PARAM = {"weights_bf16": 2, "master_fp32": 4, "adam_m_fp32": 4, "adam_v_fp32": 4}
#: When the fp32 parameters are the optimizer's master copy (PyTorch FSDP2 mixed precision, torch.autocast) there
#: is no bf16 weight copy: the fp32 weights and Adam's two moments, 12 B/param (torchtitan's DCP checkpointer
#: saves the model state dict, the fp32 shards, and the optimizer state: components/checkpointer/dcp.py @ b5bcd76).
FP32_MASTER_BYTES_PER_PARAM = {"weights_fp32": 4, "adam_m_fp32": 4, "adam_v_fp32": 4}
#: bf16 Adam moments saved as held beside Megatron's fp32 master (module docstring, bf16 Adam moments): 10 B/param.
BF16_MOMENTS_BYTES_PER_PARAM = {"weights_bf16": 2, "master_fp32": 4, "adam_m_bf16": 2, "adam_v_bf16": 2}
#: bf16 Adam moments under TransformerEngine's FusedAdam master: the master's int16 low bits beside the bf16
#: weights, the moments upcast to fp32 on save (module docstring): 12 B/param.
FUSED_ADAM_MASTER_BYTES_PER_PARAM = {
    "weights_bf16": 2,
    "master_low_bits_int16": 2,
    "adam_m_fp32": 4,
    "adam_v_fp32": 4,
}
_ALL_PARTS = {
    **BYTES_PER_PARAM,
    **FP32_MASTER_BYTES_PER_PARAM,
    **BF16_MOMENTS_BYTES_PER_PARAM,
    **FUSED_ADAM_MASTER_BYTES_PER_PARAM,
}
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


class LayoutRequest(BaseModel):
    """The model size and parallel layout every stage that shards or counts GPUs needs (checkpoint, operate)."""

    model_config = INPUT_CONFIG

    total_params: PositiveCount = Field(
        description="Every parameter the checkpoint saves: ModelShape.total_params plus mtp_params (the "
        "multi-token-prediction modules, DeepSeek-V3 arXiv 2412.19437 §2.2, trained and saved beside the model)."
    )
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
    ep: PositiveCount = Field(
        1,
        description="Expert-parallel degree e: each routed expert's weights live on one of e ranks, carved out "
        "of the d·c data-parallel ranks (Megatron-Core parallel_state; torchtitan ParallelDims).",
    )
    expert_params: NonNegativeCount = Field(
        0,
        description="Routed-expert parameters of all MoE layers, what expert parallelism divides "
        "(ModelShape.routed_expert_params + mtp_routed_expert_params; 0 for a dense model).",
    )

    fp32_master_weights: bool = Field(
        False,
        description="The fp32 parameters are the optimizer's master copy, with no bf16 weight copy (Stack "
        "fsdp_mixed_precision under ZeRO-3, torchtitan; autocast_fp32_weights): the checkpoint holds fp32 "
        "weights and Adam's two moments, 12 B/param. Off: bf16 weights beside an fp32 master (Megatron, "
        "DeepSpeed; also with fp8, whose weights Megatron saves dequantized), 14 B/param.",
    )
    optimizer_state_dtype: Literal["fp32", "bf16"] = Field(
        "fp32",
        description="Dtype Adam's moments are held in (Stack optimizer_state_dtype). bf16 (Megatron-LM "
        "--use-precision-aware-optimizer): saved as held beside the fp32 master, 10 B/param, or, with "
        "fused_adam_master, 12 B/param.",
    )
    fused_adam_master: bool = Field(
        False,
        description="bf16 moments only: TransformerEngine's FusedAdam holds the fp32 master (Megatron's "
        "precision-aware optimizer with bf16 weights or delayed fp8), and the checkpoint saves its 16 low bits "
        "(2 B) and the moments upcast to fp32 (4 + 4): 12 B/param.",
    )

    @model_validator(mode="after")
    def _experts_fit_the_layout(self) -> LayoutRequest:
        if self.expert_params > self.total_params:
            raise ValueError(
                f"expert_params ({self.expert_params:,}) exceeds total_params ({self.total_params:,}); give the "
                "routed-expert parameters only (ModelShape.routed_expert_params)"
            )
        if self.ep > 1 and not self.expert_params:
            raise ValueError(f"ep = {self.ep} needs expert_params > 0 (a dense model runs with ep = 1)")
        if self.optimizer_state_dtype == "bf16" and self.fp32_master_weights:
            raise ValueError(
                "optimizer_state_dtype bf16 with fp32_master_weights: no engine keeps bf16 moments beside fp32 "
                "parameters as the master (torchtitan has no state dtype); drop one of them"
            )
        if self.fused_adam_master and self.optimizer_state_dtype != "bf16":
            raise ValueError(
                "fused_adam_master applies only with optimizer_state_dtype bf16; set it or drop it"
            )
        if (self.dp * self.cp) % self.ep:
            raise ValueError(
                f"ep = {self.ep} must divide d·c = {self.dp}·{self.cp} (expert-parallel ranks are data-parallel "
                "ranks)"
            )
        return self

    def layout(self) -> dict[str, int]:
        """These fields by name, to pass the layout on to another stage's request."""
        return {name: getattr(self, name) for name in LayoutRequest.model_fields}


def multiples(every: int, count: int) -> list[int]:
    """every, 2·every, ... count·every: where milestones fall without a batch ramp (and fell in plans written
    before ``milestone_steps``, which counted ⌊steps / every⌋ of them)."""
    return [every * j for j in range(1, count + 1)]


class StageTiming(BaseModel):
    """One batch stage as the checkpoint stage sees it: its steps, tokens per step and step time."""

    model_config = INPUT_CONFIG

    name: str = Field(description="The stage's name (``ramp 1``, ``main``).")
    steps: PositiveCount = Field(description="Steps of the stage.")
    tokens_per_step: PositiveNumber = Field(description="Global batch of the stage, tokens.")
    step_seconds: PositiveNumber = Field(description="Step time at the stage's batch, seconds.")


class CheckpointRequest(LayoutRequest):
    """What the checkpoint stage needs from the model, the layout, the schedule and the failure model."""

    n_nodes: PositiveCount | None = Field(
        None,
        description="Nodes of the job, as `operate` computed them for the failure model too; unset = "
        "⌈t·p·d·c / gpus_per_node⌉.",
    )
    step_seconds: PositiveNumber = Field(description="Time of one training step, seconds (parallel stage).")
    tokens_per_step: PositiveNumber = Field(description="Global batch in tokens of the main batch stage.")
    total_steps: PositiveCount = Field(description="Training steps of the run (schedule stage).")
    training_tokens: PositiveNumber = Field(description="Training tokens D (for milestone spacing).")
    batch_stages: list[StageTiming] | None = Field(
        None,
        description="The schedule's batch stages in order, ramp first (their steps add up to total_steps); "
        "unset = one stage of total_steps at tokens_per_step and step_seconds.",
    )
    job_mtbf_seconds: PositiveNumber = Field(description="Job mean time between interruptions M, seconds.")
    rollback_window_steps: NonNegativeCount = Field(
        300,
        description="A loss-spike rollback needs a checkpoint this many steps before detection (monitoring: "
        "margin 100 + recovery window 200, PaLM §5.1); older checkpoints are kept for it when the rolling "
        "generations do not reach that far back.",
    )
    spec: OperationsSection

    @model_validator(mode="after")
    def _stages_add_up_to_the_run(self) -> CheckpointRequest:
        if self.batch_stages is not None and sum(st.steps for st in self.batch_stages) != self.total_steps:
            raise ValueError(
                f"batch_stages add up to {sum(st.steps for st in self.batch_stages):,} steps, not total_steps "
                f"{self.total_steps:,}; give every stage of the schedule"
            )
        return self

    def stages(self) -> list[StageTiming]:
        """The batch stages, or the one stage the main batch and step time make when none are given."""
        return self.batch_stages or [
            StageTiming(
                name="main",
                steps=self.total_steps,
                tokens_per_step=self.tokens_per_step,
                step_seconds=self.step_seconds,
            )
        ]


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
    main_interval_seconds: float
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
    milestone_steps: list[int]
    milestones: int
    milestone_bytes: float
    milestone_storage_bytes: float
    storage_bytes: float
    retention_procedure: list[str]
    warnings: list[str]

    @model_validator(mode="before")
    @classmethod
    def _read_a_plan_written_before(cls, data: object) -> object:
        """A plan written before ``interval_seconds`` became ``main_interval_seconds`` (reliability's τ has that
        name) and before ``milestone_steps``: its milestones were the multiples of ``milestone_every_steps``."""
        if not isinstance(data, dict) or "interval_seconds" not in data:
            return data
        data = {("main_interval_seconds" if k == "interval_seconds" else k): v for k, v in data.items()}
        notes = data.get("notes") or {}
        data["notes"] = {
            ("main_interval_seconds" if k == "interval_seconds" else k): v for k, v in notes.items()
        }
        every, count = data.get("milestone_every_steps", 0), data.get("milestones", 0)
        data.setdefault("milestone_steps", multiples(every, count))
        return data


def plan_checkpoints(request: CheckpointRequest) -> CheckpointPlan:
    """Size the checkpoint, time a save both ways, pick the Daly interval in whole steps, size the storage."""
    spec, n, step_s = request.spec, request.total_params, request.step_seconds
    world = _world_size(request)
    parts = _parts(request, world.value)
    total = _total_bytes(parts)
    held = _held_bytes_per_gpu(parts)
    written, per_node = _written_bytes(request, parts, (total.value, held.value), world.value)
    sync, bound, write = _sync_save(spec, total.value, per_node.value, _write_hosts(request, world.value))
    async_block = _async_blocking(spec, written.value)
    delta = _save_blocking(spec, sync.value, async_block.value)
    m = Reasoned(request.job_mtbf_seconds, f"M = {fmt_seconds(request.job_mtbf_seconds)} (reliability stage)")
    daly = _daly(delta.value, m.value)
    steps = _interval_steps(spec, (step_s, request.stages()), daly.value, write.value)
    interval_s = steps.value * step_s
    return CheckpointPlan.build(
        parts=parts,
        total_bytes=total,
        bytes_per_param=Reasoned(
            total.value / n, f"{fmt_bytes(total.value)} / {fmt(n)} params = {total.value / n:.4f} B/param"
        ),
        world_size=world,
        n_nodes=_n_nodes(request, world.value),
        held_bytes_per_gpu=held,
        written_bytes_per_rank=written,
        written_bytes_per_node=per_node,
        sync_seconds=sync,
        sync_bound=bound,
        async_blocking_seconds=async_block,
        background_write_seconds=write,
        host_staging=spec.host_staging,
        host_memory_bytes_per_node=Reasoned(
            per_node.value,
            f"pinned host buffer: {per_node.why} per node (what the node's GPUs write)",
        ),
        save_blocking_seconds=delta,
        job_mtbf_seconds=m,
        young_interval_seconds=_young(delta.value, m.value),
        daly_interval_seconds=daly,
        interval_steps=steps,
        main_interval_seconds=_main_interval(request, steps.value),
        **_saves_and_storage(request, steps.value, interval_s, total.value, parts[0].bytes),
        warnings=_warnings(
            spec,
            (step_s, request.stages()),
            steps.value,
            daly.value,
            (sync.value, write.value, delta.value, m.value),
        ),
    )


def _world_size(r: CheckpointRequest) -> Reasoned[int]:
    world = r.tp * r.pp * r.dp * r.cp
    return Reasoned(world, f"t·p·d·c = {r.tp}·{r.pp}·{r.dp}·{r.cp} = {world:,} GPUs")


def _n_nodes(r: CheckpointRequest, world: int) -> Reasoned[int]:
    """The job's nodes as ``operate`` counted them for the failure model, else whole nodes for the world."""
    n_nodes = r.n_nodes if r.n_nodes is not None else math.ceil(world / r.gpus_per_node)
    return Reasoned(n_nodes, f"⌈{world:,} / {r.gpus_per_node}⌉ = {n_nodes:,} node{'s' * (n_nodes != 1)}")


def _parts(r: CheckpointRequest, world: int) -> list[CheckpointPart]:
    """Weights, fp32 master and the Adam moments (sharded per the ZeRO stage), then RNG states and cursors."""
    replicas = r.dp * r.cp  # copies of each model-parallel shard
    model_state = [_state_part(name, per_param, r, replicas) for name, per_param in _state_bytes(r).items()]
    bookkeeping = (
        ("rng_states", RNG_BYTES_PER_RANK, world, "rank (Python, NumPy, torch CPU, CUDA)", "ranks",
         f"one per rank: {world:,}", ""),
        # the cp ranks of a replica read one sample stream (each takes its slice of the same sequences)
        ("dataloader_cursor", CURSOR_BYTES_PER_REPLICA, r.dp, "data-parallel replica", "replicas",
         f"one per data-parallel replica (dp = {r.dp:,}; context-parallel ranks share it)",
         " (sample index, epoch, mixture positions)"),
    )  # fmt: skip
    return model_state + [
        CheckpointPart.build(
            name=name,
            bytes=Reasoned(float(each * count), f"{each:,} B per {holder} × {count:,} {holders}"),
            shards=Reasoned(count, shards_why),
            bytes_per_shard=Reasoned(float(each), f"{each:,} B{contents}"),
        )
        for name, each, count, holder, holders, shards_why, contents in bookkeeping
    ]


def _state_bytes(r: LayoutRequest) -> dict[str, int]:
    """Bytes per parameter of each model-state part the checkpoint holds (weights first)."""
    if r.fp32_master_weights:
        return FP32_MASTER_BYTES_PER_PARAM
    if r.optimizer_state_dtype == "bf16":
        return FUSED_ADAM_MASTER_BYTES_PER_PARAM if r.fused_adam_master else BF16_MOMENTS_BYTES_PER_PARAM
    return BYTES_PER_PARAM


def _is_weights(name: str) -> bool:
    return name.startswith("weights_")


def _state_part(name: str, per_param: int, r: CheckpointRequest, replicas: int) -> CheckpointPart:
    """Weights are sharded over the replicas from ZeRO-3 on, optimizer state (master, m, v) from ZeRO-1 on.

    A part not sharded over the replicas is split t·p ways, its routed experts t·p·e ways: an expert's state
    lives only on its expert-parallel rank (Megatron-Core: expert layers over expert-tensor × expert-parallel
    ranks, replicated over the d·c/e expert-data-parallel ones), so a GPU holds the dense part / (t·p) plus the
    experts / (t·p·e). Sharded over the replicas, dense state splits over d·c and expert state over d·c/e:
    everything over t·p·d·c (the distributed optimizer; runplan/parallel/memory.py ``model_state_bytes``).
    """
    sharded = r.zero >= (3 if _is_weights(name) else 1)
    size = float(per_param * r.total_params)
    if sharded or r.ep == 1:
        shards = r.tp * r.pp * (replicas if sharded else 1)
        per_shard = Reasoned(size / shards, f"{fmt_bytes(size)} / {shards:,} = {fmt_bytes(size / shards)}")
    else:
        shards = r.tp * r.pp * r.ep
        dense, experts = r.total_params - r.expert_params, r.expert_params
        held = per_param * (dense / (r.tp * r.pp) + experts / shards)
        per_shard = Reasoned(
            held,
            f"{per_param} B × (dense {fmt(dense)} / {r.tp * r.pp:,} + experts {fmt(experts)} / {shards:,}) "
            f"= {fmt_bytes(held)} on each GPU",
        )
    return CheckpointPart.build(
        name=name,
        bytes=Reasoned(size, f"{per_param} B/param × {fmt(r.total_params)} params = {fmt_bytes(size)}"),
        shards=Reasoned(shards, _shard_note(name, (r.tp, r.pp, r.ep), replicas, r.zero)),
        bytes_per_shard=per_shard,
    )


def _total_bytes(parts: list[CheckpointPart]) -> Reasoned[float]:
    """Model state (every part but the RNG states and cursors, the last two) plus those two."""
    total = sum(p.bytes for p in parts)
    model_state = sum(p.bytes for p in parts[:-2])
    rng, cursor = parts[-2].bytes, parts[-1].bytes
    per_param = sum(_ALL_PARTS.get(p.name, 0) for p in parts[:-2])
    return Reasoned(
        total,
        f"{per_param} B/param model state {fmt_bytes(model_state)} + RNG {fmt_bytes(rng)} + cursor {fmt_bytes(cursor)}"
        f" = {fmt_bytes(total)}",
    )


def _held_bytes_per_gpu(parts: list[CheckpointPart]) -> Reasoned[float]:
    held = sum(p.bytes_per_shard for p in parts[:-2])
    names = "weights, master, m, v" if len(parts) == 6 else "fp32 weights (the master), m, v"
    return Reasoned(held, f"Σ bytes_per_shard of {names} = {fmt_bytes(held)} per GPU")


def _written_bytes(
    r: CheckpointRequest, parts: list[CheckpointPart], sizes: tuple[float, float], world: int
) -> tuple[Reasoned[float], Reasoned[float]]:
    """Bytes each rank and each node write per save: an equal share, or the first replica's whole shard
    (``sizes``: the checkpoint's total bytes and the model state one GPU holds)."""
    total, held = sizes
    if r.spec.fully_parallel_save:
        written = total / world
        how = f"fully parallel save: total / world = {fmt_bytes(total)} / {world:,}"
        gpus = _gpus_on_a_node(r, world)
        per_node = written * gpus
        return (
            Reasoned(written, f"{how} = {fmt_bytes(written)}"),
            Reasoned(per_node, f"{gpus} GPUs × {fmt_bytes(written)} = {fmt_bytes(per_node)}"),
        )
    written = held + RNG_BYTES_PER_RANK + CURSOR_BYTES_PER_REPLICA
    how = "first replica writes its weight shard plus its optimizer shard (not fully parallel)"
    return Reasoned(written, f"{how} = {fmt_bytes(written)}"), _first_replica_node_bytes(r, parts, written)


def _gpus_on_a_node(r: CheckpointRequest, world: int) -> int:
    """Ranks on the busiest node: a whole node, or the whole job when it is smaller than one (4 GPUs of an 8-GPU
    node write 4 shares, not 8)."""
    return min(r.gpus_per_node, world)


def _first_replica_node_bytes(
    r: CheckpointRequest, parts: list[CheckpointPart], written: float
) -> Reasoned[float]:
    """Bytes the busiest node writes when only the first data-parallel replica saves the replicated state.

    Hand-derived: the replica's t·p ranks sit on min(gpus_per_node, t·p) GPUs of a node (Megatron places
    tensor-parallel ranks innermost); each writes its whole shard. The node's other GPUs belong to other
    replicas and write only what is sharded across replicas (optimizer state from ZeRO-1, weights from ZeRO-3)
    and their RNG state. With t·p = 1 and ZeRO-0 one GPU of the node writes everything, not all of them.
    """
    gpus = _gpus_on_a_node(r, r.tp * r.pp * r.dp * r.cp)
    writers = min(gpus, r.tp * r.pp)
    sharded = _replica_sharded_bytes(r, parts)
    others = gpus - writers
    per_node = writers * written + others * (sharded + RNG_BYTES_PER_RANK)
    return Reasoned(
        per_node,
        f"{writers} GPU(s) of the first replica × {fmt_bytes(written)} + {others} other GPU(s) × "
        f"{fmt_bytes(sharded + RNG_BYTES_PER_RANK)} (their replica-sharded state and RNG) = {fmt_bytes(per_node)}",
    )


def _replica_sharded_bytes(r: CheckpointRequest, parts: list[CheckpointPart]) -> float:
    """What a GPU outside the first replica's t·p ranks still writes of the model state.

    A part sharded over the replicas (ZeRO) is written by its owner: its whole shard. Otherwise, with expert
    parallelism, the ranks of the first expert replica (e ranks, placed right after the tensor- and
    context-parallel ranks in Megatron-Core's default order tp-cp-ep-dp-pp) write their 1/(t·p·e) of the
    experts; every other GPU of the node is counted as one of them, an upper bound (exact for t·p·c = 1 and e ≥
    GPUs per node).
    """
    replica_sharded = 0.0
    for part in parts[:-2]:
        if r.zero >= (3 if _is_weights(part.name) else 1) and r.dp * r.cp > 1:
            replica_sharded += part.bytes_per_shard
        elif r.ep > 1:
            replica_sharded += _state_bytes(r)[part.name] * r.expert_params / (r.tp * r.pp * r.ep)
    return replica_sharded


def _write_hosts(r: CheckpointRequest, world: int) -> tuple[float, int]:
    """The 8-GPU hosts whose storage NICs the busiest node writes through, and the GPUs counted for them.

    node_write_bandwidth_bytes_per_s is one host's, a DGX H100 of 8 GPUs (WRITE_HOST_GPUS). A node of more GPUs is
    several hosts, each with its own NICs (a GB200 NVL72 NVLink domain: 18 compute trays of 4 GPUs, each its own
    host with two BlueField-3 for storage; NVIDIA DGX GB200 User Guide, Hardware), so it is counted per GPU, as
    the failure rate is (reliability.default_failure_rate: 3.79 × g/8): the job's w GPUs on it write through
    w/8 hosts (w = min(g, world), the ranks whose bytes it writes, :func:`_gpus_on_a_node`). A node of 8 or
    fewer GPUs is one host with its NICs whatever its size: 1."""
    gpus = _gpus_on_a_node(r, world)
    if r.gpus_per_node <= WRITE_HOST_GPUS:
        return 1.0, gpus
    return max(1.0, gpus / WRITE_HOST_GPUS), gpus


def _sync_save(
    spec: OperationsSpec, total: float, per_node: float, hosts: tuple[float, int]
) -> tuple[Reasoned[float], str, Reasoned[float]]:
    """A synchronous save: the fixed cost plus the write at the slower of storage and the node's NICs.

    Returns the blocking time, which bandwidth bounds it, and the write time alone (what an async save
    still spends in the background). Hand-derived: every node writes its share at once, so the write ends when
    the slower of the shared storage (total / aggregate bandwidth) and one node's NICs (per-node bytes / node
    bandwidth × its 8-GPU hosts, :func:`_write_hosts`) is done; the fixed cost (barrier, planning, metadata)
    comes on top.
    """
    storage_bw = spec.storage_write_bandwidth_bytes_per_s
    host_bw = spec.node_write_bandwidth_bytes_per_s
    node_bw = host_bw * hosts[0] if host_bw else None
    t_storage = total / storage_bw
    t_node = per_node / node_bw if node_bw else 0.0
    write = max(t_storage, t_node)
    fixed = spec.save_fixed_seconds
    sync = fixed + write
    bound = "aggregate storage bandwidth" if t_storage >= t_node else "per-node write bandwidth"
    return (
        Reasoned(
            sync,
            f"fixed {fixed:g} s + max(total/storage {fmt_bytes(total)}/{fmt_bytes(storage_bw)}/s = "
            f"{t_storage:.3g} s, per node {_per_node_write(per_node, host_bw, hosts)} = {t_node:.3g} s) = "
            f"{fmt_seconds(sync)}",
        ),
        bound,
        Reasoned(write, f"the write itself still takes {fmt_seconds(write)}, off the critical path"),
    )


def _per_node_write(per_node: float, host_bw: float | None, hosts: tuple[float, int]) -> str:
    """The per-node write term of a synchronous save in words: bytes per node over the node's bandwidth, that of
    its 8-GPU hosts where it has more than one (:func:`_write_hosts`)."""
    if not host_bw:
        return f"{fmt_bytes(per_node)}/node, node bandwidth not modelled"
    count, gpus = hosts
    if count == 1.0:
        return f"{fmt_bytes(per_node)}/node / {fmt_bytes(host_bw)}/s node bandwidth"
    # per GPU, not per whole host: 36 GPUs of a 72-GPU node are 4.5 of the 8-GPU hosts the bandwidth is given for
    return (
        f"{fmt_bytes(per_node)}/node / ({gpus} GPUs × {fmt_bytes(host_bw)}/s per {WRITE_HOST_GPUS} GPUs, an 8-GPU "
        f"host's NICs, = {fmt_bytes(host_bw * count)}/s)"
    )


def _async_blocking(spec: OperationsSpec, written: float) -> Reasoned[float]:
    """An async save blocks only for the fixed cost and the device→host copy of each rank's share.

    Hand-derived from the two-phase save (Megatron-Core async checkpointing, PyTorch DCP ``async_save``): every
    GPU copies its own share over its own host link in parallel, so the copy takes share / link bandwidth.
    """
    link = spec.host_link_bandwidth_bytes_per_s
    block = spec.save_fixed_seconds + written / link
    return Reasoned(
        block,
        f"fixed {spec.save_fixed_seconds:g} s + device→host copy: {fmt_bytes(written)} / {fmt_bytes(link)}/s "
        f"= {fmt_seconds(block)}",
    )


def _save_blocking(spec: OperationsSpec, sync: float, async_block: float) -> Reasoned[float]:
    delta = async_block if spec.host_staging else sync
    how = "async copy" if spec.host_staging else "synchronous write"
    return Reasoned(delta, f"δ = {how} = {fmt_seconds(delta)}")


def _young(delta: float, m: float) -> Reasoned[float]:
    young = young_interval_seconds(delta, m)
    return Reasoned(
        young, f"sqrt(2δM) = sqrt(2 × {delta:.4g} × {fmt_plain(m)}) = {fmt_seconds(young)} (Young 1974)"
    )


def _daly(delta: float, m: float) -> Reasoned[float]:
    daly = daly_interval_seconds(delta, m)
    return Reasoned(
        daly,
        f"sqrt(2δM)·[1 + ⅓·sqrt(δ/2M) + (1/9)·(δ/2M)] − δ with δ/2M = {delta / (2 * m):.4g} "
        f"= {fmt_seconds(daly)} (Daly 2006)",
    )


def _daly_steps(daly: float, step_seconds: float) -> int:
    """The Daly interval in whole steps (at least one)."""
    return max(1, round(daly / step_seconds))


def _interval_steps(
    spec: OperationsSpec, timing: tuple[float, list[StageTiming]], daly: float, write: float
) -> Reasoned[int]:
    """The Daly interval in whole steps of the main batch, raised when a background write would outlast it in
    the batch stage of the shortest steps (a ramp's: the interval counts steps there too)."""
    step_seconds, stages = timing
    steps = _daly_steps(daly, step_seconds)
    why = f"round({fmt_plain(daly)} s / {step_seconds:.4g} s per main step) = {steps:,} steps"
    least, stage = _shortest_steps(step_seconds, stages)
    if spec.host_staging and write > steps * least:
        steps = math.ceil(write / least)
        where = f" in {stage}'s {least:.4g} s steps" if stage else ""
        why += (
            f", raised to {steps:,} so that the background write ({fmt_seconds(write)}) ends before the next "
            f"save{where}"
        )
    return Reasoned(steps, why)


def _shortest_steps(step_seconds: float, stages: list[StageTiming]) -> tuple[float, str]:
    """The shortest step time over the batch stages and the ramp stage it belongs to ("" when none is shorter than
    the main batch's): where a step count of the interval is the fewest seconds."""
    shortest = min(stages, key=lambda st: st.step_seconds)
    if shortest.step_seconds >= step_seconds:
        return step_seconds, ""
    return shortest.step_seconds, shortest.name


def _main_interval(r: CheckpointRequest, steps: int) -> Reasoned[float]:
    """The interval in seconds at the main batch, and in each ramp stage (the same steps, shorter ones)."""
    main, ramps = r.step_seconds, r.stages()[:-1]
    each = "".join(
        f"; {st.name}: {steps:,} steps × {st.step_seconds:.4g} s = {fmt_seconds(steps * st.step_seconds)}"
        for st in ramps
    )
    also = (
        f"{each} (saves come every {steps:,} steps, ramp steps included); the failure model's τ, "
        "reliability.interval_seconds, is the mean over the run"
        if ramps
        else "; reliability.interval_seconds is the same work"
    )
    return Reasoned(
        steps * main,
        f"{steps:,} steps × {main:.4g} s at the main batch = {fmt_seconds(steps * main)}{also}",
    )


def _saves_and_storage(
    r: CheckpointRequest, steps: int, interval_s: float, total: float, weights_bytes: float
) -> dict[str, object]:
    """Tokens per interval, saves per run, and what is kept: rolling generations, milestones, rollback points."""
    tps, gens = r.tokens_per_step, r.spec.retention_generations
    saves = -(-r.total_steps // steps)
    rolling = (gens + 1) * total
    every, every_tokens, at, count, size, kept = _milestones(r, steps, total, weights_bytes)
    rollback_every, rollback_gens, rollback_bytes = _rollback(gens, steps, r.rollback_window_steps, total)
    storage = _storage(r.spec, saves, total, (rolling, rollback_bytes.value, kept.value))
    return dict(
        interval_tokens=Reasoned(
            steps * tps,
            f"{steps:,} steps × {fmt(tps)} tokens at the main batch = {fmt(steps * tps)} tokens"
            + "".join(f"; {st.name}: {fmt(steps * st.tokens_per_step)} tokens" for st in r.stages()[:-1]),
        ),
        checkpoints_per_run=Reasoned(
            saves,
            f"⌈{r.total_steps:,} / {steps:,}⌉ = {saves:,} save{'s' * (saves != 1)} (every {steps:,} steps and "
            "at the end)",
        ),
        retention_generations=Reasoned(
            gens, f"{gens} rolling generations kept (operations.retention_generations)"
        ),
        rolling_storage_bytes=Reasoned(
            rolling,
            f"({gens} kept + 1 being written and validated) × {fmt_bytes(total)} = {fmt_bytes(rolling)}",
        ),
        milestone_every_steps=every,
        milestone_every_tokens=every_tokens,
        milestone_steps=at,
        milestones=count,
        milestone_bytes=size,
        milestone_storage_bytes=kept,
        rollback_window_steps=Reasoned(
            r.rollback_window_steps,
            f"{r.rollback_window_steps} steps (monitoring: rollback margin + spike recovery window)",
        ),
        rollback_every_steps=rollback_every,
        rollback_generations=rollback_gens,
        rollback_storage_bytes=rollback_bytes,
        storage_bytes=storage,
        retention_procedure=_procedure(r, steps, interval_s, rollback_every.value, (every.value, at.value)),
    )


def _storage(
    spec: OperationsSpec, saves: int, total: float, kept: tuple[float, float, float]
) -> Reasoned[float]:
    """Peak checkpoint storage: rolling set + rollback points + milestones, counted apart (an upper bound), but
    never more than the run ever writes: its ``saves`` checkpoints, plus weights-only milestones where those are
    extra copies (the final checkpoint's weights when no milestone falls in the run, ``_milestone_storage``).
    Hand-derived: a short run's rolling generations, rollback points and milestones are the same
    few saves (a run with one save stores one checkpoint, not (g + 1) of them)."""
    rolling, rollback, milestones = kept
    bound = rolling + rollback + milestones
    why = (
        f"rolling ({spec.retention_generations} kept + 1 being written) {fmt_bytes(rolling)} + rollback "
        f"{fmt_bytes(rollback)} + milestones {fmt_bytes(milestones)} = {fmt_bytes(bound)}"
    )
    extra = milestones if spec.milestone_weights_only else 0.0
    written = saves * total + extra
    if written >= bound:
        return Reasoned(bound, why)
    also = f" + weights-only milestones {fmt_bytes(extra)}" if extra else ""
    return Reasoned(
        written,
        f"{why}, capped at what the run writes: {saves:,} checkpoint{'s' * (saves != 1)} × {fmt_bytes(total)}"
        f"{also} = {fmt_bytes(written)}",
    )


def _milestones(
    r: CheckpointRequest, steps: int, total: float, weights_bytes: float
) -> tuple[
    Reasoned[int], Reasoned[float], Reasoned[list[int]], Reasoned[int], Reasoned[float], Reasoned[float]
]:
    """Permanent checkpoints every ~10% of the tokens: spacing at the main batch (a multiple of the interval),
    the steps where they fall, count, bytes.

    The 10% default is a runplan planning choice, not a published figure: ten resumable points to branch a WSD
    cooldown from (Hägele et al. 2024, arXiv 2405.18392, cool down from any stable-phase checkpoint) or to
    evaluate. Milestone j is the save nearest the step where the run has trained j × the spacing in tokens,
    counted through the batch ramp (``_milestone_steps``); without a ramp these are the multiples of the spacing.
    Those past the run's last save are not promised (the final save is a rolling generation).
    """
    spec, tps = r.spec, r.tokens_per_step
    wanted = spec.milestone_every_tokens or 0.1 * r.training_tokens
    every = max(steps, round(wanted / tps / steps) * steps)
    at = _milestone_steps(r.stages(), steps, every * tps)
    ramp = len(r.stages()) > 1
    count = len(at.value)
    size = weights_bytes if spec.milestone_weights_only else total
    weights = "4 B/param fp32 weights" if r.fp32_master_weights else "2 B/param bf16 weights"
    what = weights if spec.milestone_weights_only else "full checkpoint"
    return (
        Reasoned(
            every,
            f"{fmt(wanted)} tokens / {fmt(tps)} per step, rounded to a multiple of the interval = "
            f"{fmt(every)} steps" + (" at the main batch (the ramp moves where they fall)" if ramp else ""),
        ),
        Reasoned(every * tps, f"{fmt(every)} × {fmt(tps)} = {fmt(every * tps)} tokens"),
        at,
        Reasoned(
            count,
            f"{count:,} milestone{'s' * (count != 1)} within the run's {r.total_steps:,} steps"
            + (f": at steps {format_steps(at.value, LISTED_IN)}" if count else ""),
        ),
        Reasoned(size, f"{what} = {fmt_bytes(size)}"),
        _milestone_storage(count, size, spec.milestone_weights_only),
    )


#: Where a plan lists every milestone step (units.format_steps names it when the reason line cannot)
LISTED_IN = "checkpointing.milestone_steps (runplan plan FILE -f json)"


def _milestone_steps(stages: list[StageTiming], steps: int, spacing: float) -> Reasoned[list[int]]:
    """The saves nearest the steps where the run has trained j × ``spacing`` tokens, j = 1, 2, ...

    Tokens grow by each stage's batch per step, so the step that reaches t tokens is found stage by stage
    (linear inside a stage); it is rounded to the nearest multiple of the interval (at least one interval), and
    those past the last save within the run are dropped. Without a ramp, with ``spacing`` a multiple of the
    interval's tokens, these are exact multiples of the spacing in steps.
    """
    import numpy as np  # lazy: `runplan --help` must not load numpy

    ends = np.cumsum([0] + [st.steps for st in stages])
    tokens = np.cumsum([0.0] + [st.steps * st.tokens_per_step for st in stages])
    targets = spacing * np.arange(1, int(tokens[-1] / spacing * (1 + 1e-12)) + 1)
    crossed = np.interp(targets, tokens, ends)
    saves = np.maximum(steps, steps * np.floor(crossed / steps + 0.5).astype(np.int64))
    at = [int(x) for x in np.unique(saves[saves <= ends[-1]])]
    return Reasoned(
        at,
        f"where the run has trained j × {fmt(spacing)} tokens (through the batch stages), each at the nearest "
        f"multiple of the {steps:,}-step interval: {format_steps(at, LISTED_IN) or 'none within the run'}",
    )


def _milestone_storage(count: int, size: float, weights_only: bool) -> Reasoned[float]:
    """Bytes kept as milestones. With none inside the run the recipe keeps the final checkpoint (``_procedure``):
    that is the last rolling generation, but weights-only it is a copy of its weights beside it, counted here so
    that the storage bound and its cap at what the run writes (``_storage``) hold it."""
    if count == 0 and weights_only:
        return Reasoned(
            size, f"no milestone in the run: the final checkpoint's weights, kept = {fmt_bytes(size)}"
        )
    return Reasoned(count * size, f"{count} × {fmt_bytes(size)} = {fmt_bytes(count * size)}")


def _rollback(
    gens: int, steps: int, window: int, total: float
) -> tuple[Reasoned[int], Reasoned[int], Reasoned[float]]:
    """Older checkpoints kept for a loss-spike rollback when the rolling generations do not reach back far
    enough: spacing, how many, bytes.

    Hand-derived: g rolling generations k steps apart reach (g − 1)·k steps back. A rollback (PaLM, arXiv
    2204.02311, §5.1) needs a checkpoint ≥ window = margin + detection steps before it is declared; keeping the
    2 newest checkpoints at multiples of ⌈window/k⌉·k always leaves one at least that far back.
    """
    reach = (gens - 1) * steps
    if reach >= window:
        every, kept = 0, 0
        why = f"the {gens} rolling generations reach {reach:,} ≥ {window} steps back"
    else:
        every, kept = math.ceil(window / steps) * steps, 2
        why = (
            f"rolling generations reach only {reach:,} steps back: keep the 2 newest checkpoints at "
            f"multiples of ⌈{window}/{steps}⌉·{steps} = {every:,} steps"
        )
    storage = kept * total
    return (
        Reasoned(every, why),
        Reasoned(kept, why),
        Reasoned(storage, f"{kept} × {fmt_bytes(total)} = {fmt_bytes(storage)}"),
    )


def _procedure(
    r: CheckpointRequest, steps: int, interval_s: float, rollback_every: int, milestone: tuple[int, list[int]]
) -> list[str]:
    """The save-validate-rotate recipe in this run's steps (``milestone``: spacing in steps and the steps)."""
    spec, tps = r.spec, r.tokens_per_step
    save = (
        "copy each GPU's shard to pinned host memory (blocks training), then write it in the background"
        if spec.host_staging
        else "write every shard to storage (blocks training)"
    )
    rollback = (
        [
            f"keep the 2 newest checkpoints at multiples of {rollback_every:,} steps as rollback points, so "
            f"a loss-spike rollback always finds one ≥ {r.rollback_window_steps} steps back"
        ]
        if rollback_every
        else []
    )
    weights = "fp32 weights only" if r.fp32_master_weights else "bf16 weights only"
    kept = weights if spec.milestone_weights_only else "full resumable state"
    milestone_steps, at = milestone
    if not at:
        keep = (
            f"no milestone falls within the run (one every {fmt(milestone_steps)} steps, the run has "
            f"{r.total_steps:,}): keep the final checkpoint permanently ({kept})"
        )
    elif at == multiples(milestone_steps, len(at)):
        keep = (
            f"every {milestone_steps:,} steps ({fmt(milestone_steps * tps)} tokens): keep that generation "
            f"permanently as a milestone ({kept})"
        )
    else:
        keep = (
            f"at steps {format_steps(at, LISTED_IN)} (each {fmt(milestone_steps * tps)} tokens further, counted "
            f"through the batch ramp): keep that generation permanently as a milestone ({kept})"
        )
    ramps = "".join(
        f"; {st.name}: {fmt(steps * st.tokens_per_step)} tokens, {fmt_seconds(steps * st.step_seconds)}"
        for st in r.stages()[:-1]
    )
    at_main = " at the main batch" if ramps else ""
    return [
        f"every {steps:,} steps ({fmt(steps * tps)} tokens, {fmt_seconds(interval_s)}{at_main}{ramps}): {save}",
        "write the new generation under a temporary name with a manifest of per-shard checksums (e.g. CRC32C "
        "or SHA-256), fsync, then read every shard back and compare with the manifest",
        "only when all shards validate: atomically mark it complete (rename / commit marker) and record "
        "it as the latest checkpoint",
        f"then delete the oldest rolling generation so that {spec.retention_generations} validated "
        "generations remain (a failed validation keeps the old ones and raises an alert)",
        *rollback,
        keep,
    ]


def _warnings(
    spec: OperationsSpec,
    timing: tuple[float, list[StageTiming]],
    steps: int,
    daly: float,
    save: tuple[float, float, float, float],
) -> list[str]:
    """Cautions about the interval: raised above Daly, a slow synchronous save, δ ≥ 2M, sub-step optimum."""
    sync, write, delta, m = save
    step_seconds = timing[0]
    interval_s = steps * step_seconds
    warnings = _raised_warning(timing, steps, daly, write)
    if not spec.host_staging and sync > 0.5 * interval_s:
        warnings.append(
            f"a synchronous save ({fmt_seconds(sync)}) takes over half the interval "
            f"({fmt_seconds(interval_s)}): enable host staging (async checkpointing)"
        )
    if delta >= 2 * m:
        warnings.append(f"save time δ {fmt_seconds(delta)} ≥ 2M: Daly's formula falls back to τ = M")
    if daly < step_seconds:
        warnings.append(
            f"the optimal interval ({fmt_seconds(daly)}) is shorter than one step: saving every step"
        )
    return warnings


def _raised_warning(
    timing: tuple[float, list[StageTiming]], steps: int, daly: float, write: float
) -> list[str]:
    """The interval raised for the background write (``_interval_steps``), with the interval the write outlasted:
    the Daly interval's steps in the stage of the shortest steps (a ramp's, where they are fewest seconds)."""
    step_seconds, stages = timing
    daly_steps = _daly_steps(daly, step_seconds)
    if steps <= daly_steps:
        return []
    least, stage = _shortest_steps(step_seconds, stages)
    where = f"in {stage}'s {least:.4g} s steps" if stage else f"of {least:.4g} s"
    return [
        f"the background checkpoint write ({fmt_seconds(write)}) outlasts the Daly interval's {daly_steps:,} steps "
        f"{where} ({fmt_seconds(daly_steps * least)}): the interval was raised to {steps:,} steps so that a save "
        "never starts before the previous one is on storage; faster storage would help"
    ]


def _shard_note(name: str, mp: tuple[int, int, int], replicas: int, zero: int) -> str:
    tp, pp, ep = mp
    sharded = zero >= (3 if _is_weights(name) else 1)
    if sharded:
        why = (
            "ZeRO-3 shards weights over replicas"
            if _is_weights(name)
            else f"ZeRO-{zero} / distributed optimizer"
        )
        return f"t·p·(d·c) = {tp}·{pp}·{replicas} shards ({why})"
    weights = _is_weights(name)
    copies = (
        f"replicated over {replicas} data-parallel copies"
        if weights
        else f"ZeRO-0: replicated over {replicas} copies"
    )
    if ep > 1:
        return (
            f"experts over t·p·e = {tp}·{pp}·{ep} = {tp * pp * ep:,} distinct shards (expert parallelism), the "
            f"dense part over t·p = {tp * pp} ({copies})"
        )
    return (
        f"t·p = {tp}·{pp} = {tp * pp} distinct shards ({copies})"
        if weights
        else f"t·p = {tp * pp} distinct shards ({copies})"
    )
