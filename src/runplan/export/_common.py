"""What every exporter reads from a ``RunPlan``, computed once, with the arithmetic beside each number.

Letters as in docs/parallel.md: t/p/d/e/c tensor/pipeline/data/expert/context degrees, v interleaved chunks per
rank, b micro-batch (sequences), m micro-batches per step, s sequence length, L layers.

The plan's numbers are used as they are; nothing here re-derives a layout or a schedule. Two things are
derived because some engines need them:

* **samples at a step** (Megatron's sample-based schedule): Σ over batch stages of steps × batch, exact
  integers from the schedule's stages.
* **a schedule without the batch ramp** (torchtitan 0.2.x and DeepSpeed have no ramp): the whole run at the
  main batch, with the step counts recomputed to keep the plan's token counts (round(tokens / main batch)),
  so D, the warmup tokens and the cooldown tokens stay what the plan says. It leaves out the ramp's benefit
  (a smaller batch while the critical batch is small: Zhang et al. 2024, arXiv 2410.21676).

Optimizer settings the plan does not carry (AdamW β, ε, weight decay, gradient clipping) are not invented per
engine: one set, ``ASSUMED_OPTIMIZER``, is written into every export and marked as assumed. It is DeepSeek
LLM's (Bi et al. 2024, arXiv 2401.02954, §2.3: AdamW β1 0.9, β2 0.95, weight decay 0.1, gradient clipping
1.0), the setting under which the plan's peak-LR law (same paper, §3.1) was fitted.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from runplan.model import ModelShape
    from runplan.ops.checkpoint import CheckpointPlan
    from runplan.parallel.layout import Layout, LayoutEstimate
    from runplan.parallel.stack import Stack
    from runplan.plan import RunPlan

#: Optimizer settings not in the plan: DeepSeek LLM §2.3 (the setting the peak-LR law was fitted under).
ASSUMED_OPTIMIZER: dict[str, float] = {
    "beta1": 0.9,
    "beta2": 0.95,
    "eps": 1e-8,
    "weight_decay": 0.1,
    "grad_clip_norm": 1.0,
}
ASSUMED_OPTIMIZER_SOURCE = (
    "not in the plan: AdamW beta1 0.9, beta2 0.95, eps 1e-8, weight decay 0.1, gradient clipping 1.0 "
    "(DeepSeek LLM, arXiv 2401.02954, Sec. 2.3, the setting its peak-LR law was fitted under)"
)


@cache
def engine_data(name: str) -> dict[str, Any]:
    """The checked-in flag/key list ``export/data/<name>.json`` (engine, version, source, entries)."""
    text = resources.files("runplan.export").joinpath("data", f"{name}.json").read_text(encoding="utf-8")
    return json.loads(text)


def runplan_version() -> str:
    try:
        from importlib.metadata import version

        return version("runplan")
    except Exception:  # pragma: no cover - not installed as a distribution
        return "unknown"


@dataclass(frozen=True)
class Stage:
    """One batch stage: ``steps`` steps at ``batch_sequences`` sequences per step."""

    name: str
    steps: int
    batch_sequences: int


@dataclass(frozen=True)
class Facts:
    """The plan's numbers an exporter needs (see the module docstring)."""

    name: str
    # model
    n_layers: int
    d_model: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    ffn_hidden: int
    mlp: str
    post_norms: bool
    sliding_window: int
    global_every: int
    vocab_size: int
    tied_embeddings: bool
    norm: str
    linear_bias: bool
    qkv_bias: bool
    qk_norm: bool
    learned_positions: int
    attention: str
    q_lora_rank: int
    kv_lora_rank: int
    qk_rope_head_dim: int
    v_head_dim: int
    n_experts: int
    top_k: int
    expert_ffn_hidden: int
    n_shared_experts: int
    n_dense_layers: int
    model_name: str
    total_params: int
    # layout: the plan's Layout (sequence parallelism only where TP > 1), and what the estimate derived from it
    layout: Layout
    stack: (
        Stack  # the plan's training stack (parallel/stack.py): what the engine must do for the plan to hold
    )
    layers_per_stage: int
    uneven_stages: bool
    #: parameters a GPU of the plan's largest stage holds before ZeRO shards anything (memory.stage_params): not
    #: its weights term halved, which under fp8 also holds the linear weights' 1-byte copy (or 1 byte for 2)
    params_per_gpu: float
    gradients_bytes_per_gpu: float
    memory_bytes_per_gpu: float  # the plan's total on its largest stage
    memory_limit_bytes: float  # what the plan allowed per GPU (HBM less the headroom)
    # cluster
    attention_speedup: float  # the plan's attention kernel over FlashAttention-2 on its GPU (timing)
    gpu_name: str  # cluster.gpu as the plan names it
    gpu_family: str | None  # GpuSpec.family or the name's chip's; None: unknown, Hopper-class, warned
    n_gpus: int
    gpus_per_node: int
    n_nodes: int
    # schedule
    seq_len: int
    stages: tuple[Stage, ...]
    total_steps: int
    warmup_steps: int
    cooldown_steps: int
    cooldown_shape: str
    peak_lr: float
    final_lr: float
    warmup_end_tokens: float
    cooldown_tokens: float
    training_tokens: float
    scheduled_tokens: float
    # checkpointing
    checkpoint_interval_steps: int
    retention_generations: int
    rollback_every_steps: int  # 0: the rolling generations reach back far enough, no rollback points
    rollback_generations: int
    milestone_every_steps: int
    milestone_steps: tuple[int, ...]  # where milestones fall (a batch ramp moves them off the multiples)
    async_checkpoint: bool
    # monitoring: the canary batch (ops/monitoring.py)
    canary_examples: int
    canary_every_steps: int

    @property
    def global_batch_sequences(self) -> int:
        """Main-stage global batch d·b·m in sequences."""
        return self.stages[-1].batch_sequences

    @property
    def ramp(self) -> tuple[Stage, ...]:
        """The batch stages before the main one (empty when the plan has no ramp)."""
        return self.stages[:-1]

    def samples_at_step(self, step: int) -> int:
        """Sequences consumed after ``step`` optimizer steps: Σ_stages min(max(step − start, 0), steps)·B."""
        done, start = 0, 0
        for stage in self.stages:
            done += min(max(step - start, 0), stage.steps) * stage.batch_sequences
            start += stage.steps
        return done

    @property
    def main_batch_tokens(self) -> int:
        return self.global_batch_sequences * self.seq_len

    def steps_without_ramp(self, tokens: float) -> int:
        """round(tokens / main-batch tokens): the step count that keeps ``tokens`` at the main batch."""
        return round(tokens / self.main_batch_tokens)


def _merged_stages(batch_stages) -> tuple[Stage, ...]:
    """The schedule's batch stages, consecutive stages at the same batch merged (a ramp stage rounded up to
    the main batch is no ramp: Megatron's ramp needs a batch increase)."""
    merged: list[Stage] = []
    for s in batch_stages:
        if s.steps <= 0:
            continue
        if merged and merged[-1].batch_sequences == s.global_batch_sequences:
            merged[-1] = Stage(merged[-1].name, merged[-1].steps + s.steps, s.global_batch_sequences)
        else:
            merged.append(Stage(s.name, s.steps, s.global_batch_sequences))
    return tuple(merged)


def _plan_gpu(plan: RunPlan) -> tuple[str, str | None]:
    """The plan's GPU: its name and the family its layouts were timed with (``layout.gpu``, with the family the
    plan read from a user catalog's entry or an inline spec). In a plan written before that field: the inline
    spec's or the shipped catalog entry's; a GPU only a user catalog held takes what its name says by the rule
    every command reads it with (catalog.family_from_names: a100-ours → ampere), None when the name says nothing
    (:func:`unknown_family_warnings`)."""
    from runplan.catalog import family_from_names, load_catalog, with_family
    from runplan.errors import SpecError
    from runplan.hardware import GpuSpec

    if plan.layout.gpu is not None:
        return plan.layout.gpu.name, plan.layout.gpu.family
    gpu = (plan.inputs.get("cluster") or {}).get("gpu")
    shipped = load_catalog([])
    if isinstance(gpu, dict):
        try:
            spec = GpuSpec.model_validate(gpu)
        except ValueError:
            name = str(gpu.get("name") or "")
            return name, family_from_names((name,), shipped)
        with contextlib.suppress(
            SpecError
        ):  # the family the plan was timed with (runplan.catalog.with_family)
            spec = with_family(spec, (spec.name,), shipped, where="cluster.gpu.family")
        return spec.name, spec.family
    name = str(gpu or "")
    try:
        return name, shipped.gpu(name).family
    except SpecError:
        return name, family_from_names((name,), shipped)


def _attention_speedup(family: str | None, stack: Stack) -> float:
    """The rate the plan timed its attention kernel at, over FlashAttention-2's, on its GPU's family
    (timing.attention_kernel_speedup_on); Hopper's when the family is unknown (:func:`unknown_family_warnings`)."""
    from runplan.parallel.timing import attention_kernel_speedup_on

    return attention_kernel_speedup_on(stack, family or "hopper")


def unknown_family_warnings(f: Facts) -> list[str]:
    """One warning when the plan's GPU family is unknown (a plan stored without ``layout.gpu`` whose GPU only a
    user catalog held, and whose name names no chip): the exporters take it as Hopper-class, said rather than
    guessed silently. Empty for every shipped GPU and every plan that records ``layout.gpu``."""
    if f.gpu_family is not None:
        return []
    return [
        f"GPU: the plan records no layout.gpu (written before that field) and its GPU {f.gpu_name!r} is not in the "
        "shipped catalog, nor does its name say its family: exported as Hopper-class (e.g. --tp-comm-overlap, "
        "cuDNN attention), which is wrong for another family; re-run `runplan plan PLAN_FILE -f json` with the "
        "catalog that defines it (the plan file's catalog: list) to record layout.gpu and its family"
    ]


def _block_facts(shape: ModelShape) -> dict[str, Any]:
    """The MLP kind, post-norms and sliding window of ``shape`` (Facts fields)."""
    return {
        "mlp": shape.mlp,
        "post_norms": shape.post_norms,
        "sliding_window": shape.sliding_window,
        "global_every": shape.global_every,
    }


def _params_per_gpu(shape: ModelShape, best: LayoutEstimate) -> float:
    """Parameters per GPU of the stage ``memory_bytes`` reports (``memory_stage``), unsharded by ZeRO: the layers'
    dense ÷ t and experts ÷ (t·e), with the embedding or the head (and MTP modules) of that stage
    (runplan/parallel/memory.py ``stage_params``, the count the weights and gradients terms are made of)."""
    from runplan.parallel.memory import ShapeTerms, stage_params

    dense, expert = stage_params(
        ShapeTerms.from_shape(shape), best.tp, best.pp, best.ep, last=best.memory_stage == "last"
    )
    return float(dense + expert)


def _checkpoint_facts(ckpt: CheckpointPlan) -> dict[str, Any]:
    """The save interval, what the plan keeps and whether saves are async (Facts fields)."""
    return {
        "checkpoint_interval_steps": int(ckpt.interval_steps),
        "retention_generations": int(ckpt.retention_generations),
        "rollback_every_steps": int(ckpt.rollback_every_steps),
        "rollback_generations": int(ckpt.rollback_generations),
        "milestone_every_steps": int(ckpt.milestone_every_steps),
        "milestone_steps": tuple(int(step) for step in ckpt.milestone_steps),
        "async_checkpoint": bool(ckpt.host_staging),
    }


def facts(plan: RunPlan) -> Facts:
    """Collect the numbers every exporter reads (pure)."""
    from runplan.parallel.stack import resolve_stack

    shape = plan.model.shape
    best = plan.layout.best
    sched = plan.schedule
    ckpt = plan.checkpointing
    inputs = plan.inputs
    seq_len = round(sched.global_batch_tokens / sched.global_batch_sequences)
    phases = {p.name: p for p in sched.lr_phases}
    warmup_end_tokens = phases["warmup"].end_tokens if "warmup" in phases else 0.0
    cooldown_tokens = phases["cooldown"].tokens if "cooldown" in phases else 0.0
    n_nodes = max(int(ckpt.n_nodes), 1)
    world = best.tp * best.pp * best.dp * best.cp
    stack = resolve_stack(inputs.get("stack"))
    gpu_name, family = _plan_gpu(plan)
    return Facts(
        name=str(inputs.get("name") or shape.name or "runplan"),
        n_layers=shape.n_layers,
        d_model=shape.d_model,
        n_heads=shape.n_heads,
        n_kv_heads=shape.n_kv_heads,
        head_dim=shape.head_dim,
        ffn_hidden=shape.ffn_hidden,
        **_block_facts(shape),
        vocab_size=shape.vocab_size,
        tied_embeddings=shape.tied_embeddings,
        norm=shape.norm,
        linear_bias=shape.linear_bias,
        qkv_bias=shape.qkv_bias,
        qk_norm=shape.qk_norm,
        learned_positions=shape.learned_positions,
        attention=shape.attention,
        q_lora_rank=shape.q_lora_rank,
        kv_lora_rank=shape.kv_lora_rank,
        qk_rope_head_dim=shape.qk_rope_head_dim,
        v_head_dim=shape.v_head_dim,
        n_experts=shape.n_experts,
        top_k=shape.top_k,
        expert_ffn_hidden=shape.expert_ffn_hidden,
        n_shared_experts=shape.n_shared_experts,
        n_dense_layers=shape.n_dense_layers,
        model_name=str(shape.name or ""),
        total_params=shape.total_params,
        layout=best.layout.model_copy(update={"sequence_parallel": best.sequence_parallel and best.tp > 1}),
        stack=stack,
        layers_per_stage=best.layers_per_stage,
        uneven_stages=best.uneven_stages,
        params_per_gpu=_params_per_gpu(shape, best),
        gradients_bytes_per_gpu=float(best.memory_bytes.gradients),
        memory_bytes_per_gpu=float(best.memory_bytes.total),
        memory_limit_bytes=float(best.memory_limit_bytes),
        attention_speedup=_attention_speedup(family, stack),
        gpu_name=gpu_name,
        gpu_family=family,
        n_gpus=world,
        gpus_per_node=max(world // n_nodes, 1),
        n_nodes=n_nodes,
        seq_len=seq_len,
        stages=_merged_stages(sched.batch_stages),
        total_steps=sched.total_steps,
        warmup_steps=sched.warmup_steps,
        cooldown_steps=sched.cooldown_steps,
        cooldown_shape=sched.cooldown_shape,
        peak_lr=sched.peak_lr,
        final_lr=sched.final_lr,
        warmup_end_tokens=float(warmup_end_tokens),
        cooldown_tokens=float(cooldown_tokens),
        training_tokens=float(sched.training_tokens),
        scheduled_tokens=float(sched.scheduled_tokens),
        **_checkpoint_facts(ckpt),
        canary_examples=int(plan.monitoring.canary_examples),
        canary_every_steps=int(plan.monitoring.canary_every_steps),
    )


def kept_checkpoints(f: Facts, *, runs_the_ramp: bool = True) -> str:
    """The saves the plan keeps (ops/checkpoint.py, retention_procedure), in words: its rolling generations,
    its rollback points (the newest at multiples of ``rollback_every_steps``) and its milestones. An engine
    that deletes by count only (torchtitan's keep_latest_k) or not at all (DeepSpeed) needs this said. An
    engine that drops the plan's batch ramp (``runs_the_ramp`` False) runs every step at the main batch, where
    the milestones' tokens fall at the multiples of ``milestone_every_steps`` (the ramp's steps would not)."""
    keep = [f"the {f.retention_generations} newest checkpoints"]
    if f.rollback_every_steps:
        keep.append(
            f"the {f.rollback_generations} newest at multiples of {f.rollback_every_steps:,} steps (rollback points)"
        )
    if f.milestone_steps and f.ramp and not runs_the_ramp:
        keep.append(
            f"every one at a multiple of {f.milestone_every_steps:,} steps (milestones: with the ramp dropped, "
            "every step is at the main batch)"
        )
    elif f.milestone_steps:
        keep.append(_milestones_in_words(f.milestone_every_steps, f.milestone_steps))
    elif f.milestone_every_steps:  # the plan's recipe: no milestone within the run keeps the final checkpoint
        keep.append("the final checkpoint (no milestone falls within the run: the plan keeps it for good)")
    return keep[0] if len(keep) == 1 else f"{', '.join(keep[:-1])} and {keep[-1]}"


def _milestones_in_words(every: int, at: tuple[int, ...]) -> str:
    """The plan's milestones (ops/checkpoint.py ``_milestone_steps``): the multiples of ``every`` without a batch
    ramp; with one, the steps where the tokens cross each spacing, every one of them (units.format_steps)."""
    from runplan.ops.checkpoint import multiples
    from runplan.units import format_steps

    if list(at) == multiples(every, len(at)):
        return f"every one at a multiple of {every:,} steps (milestones)"
    many = "s" * (len(at) > 1)
    count = f"{len(at):,}" if many else "one"
    steps = format_steps(at, "the plan's checkpointing.milestone_steps: runplan plan FILE -f json")
    return f"the {count} at step{many} {steps} (milestones)"


def zero0_key(f: Facts) -> str:
    """The plan key behind a ZeRO-0 an engine cannot run as planned: ``stack.distributed_optimizer`` when it is
    false (it allows ZeRO-0 only, parallel/stack.py), else ``parallel.zero``."""
    return "stack.distributed_optimizer" if f.stack.distributed_optimizer is False else "parallel.zero"


def zero0_advice(f: Facts, pin: str) -> str:
    """``pin`` (a ZeRO >= 1 pin), after dropping ``distributed_optimizer: false``, which contradicts it."""
    if f.stack.distributed_optimizer is False:
        return f"remove stack.distributed_optimizer: false (ZeRO-0 only) and {pin}"
    return pin


def fmt_float(x: float) -> str:
    """Shortest round-tripping text of a float (``repr``), e.g. 0.00031655990988615747 or 1e-08."""
    return repr(float(x))


def fmt_bytes(x: float) -> str:
    return f"{x / 1e9:.1f} GB"
