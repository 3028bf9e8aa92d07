"""DeepSpeed ds_config JSON for a run plan (``runplan export --to deepspeed``).

Keys were read from DeepSpeed 0.19.8 (``export/data/deepspeed_config_keys.json``). Mapping:

* batch identity (``DeepSpeedConfig._batch_assertion``): ``train_batch_size`` = ``train_micro_batch_size_per_gpu``
  × ``gradient_accumulation_steps`` × DP world size, i.e. d·b·m = b × m × d.
* ``zero_optimization.stage`` the plan's ZeRO stage; ``bf16.enabled``; ``gradient_clipping``; AdamW.
  DeepSpeed's pipeline engine asserts a ZeRO stage below 2 (``runtime/pipe/engine.py``: "ZeRO-2 and ZeRO-3 are
  incompatible with pipeline parallelism"), so a plan with ZeRO ≥ 2 and p > 1 is refused (exit 2).
* gradients (``_gradient_dtypes``): the plan's ``stack.gradient_dtype`` is the dtype gradients are reduced in
  (``communication_data_type``; without it DeepSpeed reduces in the model's bf16) and accumulated in
  (``data_types.grad_accum_dtype``; without it bf16 too), both written. DeepSpeed refuses fp32 accumulation
  under bf16 without ZeRO (``NotImplementedError: unsupported mix``), so a ZeRO-0 fp32 plan gets fp32 reduction
  and a warning; ZeRO-1 with fp32 accumulation is its ``BF16_Optimizer``, which all-reduces the whole fp32
  gradient (a warning: twice the plan's ZeRO-1 reduce-scatter).
* DP overlap (``_grad_reduce_overlap_warning``): the plan's ``stack.overlap_grad_reduce`` hides the gradient
  reduction under the backward pass; DeepSpeed does that only with ZeRO-3 (``overlap_comm`` defaults to true
  there alone) or ZeRO-1/2 with ``zero_optimization.overlap_comm``, which the export then writes; without ZeRO, with ``BF16_Optimizer`` and
  under a PipelineModule it reduces after the backward pass. Each case is a warning.
* TP as AutoTP (``tensor_parallel.autotp_size``, for Hugging Face models AutoTP supports) when p = c = 1 only:
  AutoTP replaces the engine's mpu with its own data x tensor mesh (``_tensor_parallel_warning``), which a
  PipelineModule or Ulysses cannot share; there the warning says to build TP in the model code. Pipeline, context
  and expert parallelism live in user code in DeepSpeed (``PipelineModule(num_stages=p)``, Ulysses sequence
  parallel groups, ``deepspeed.moe.layer.MoE(ep_size=e)``) and activation recomputation is a call in the model
  (``deepspeed.checkpointing.checkpoint``): each gets a warning with the value to use. With c or t > 1 and no
  pipeline the engine must be given an ``mpu`` whose data-parallel size is d, or the batch identity counts
  model-parallel ranks as data-parallel; with p > 1 ``deepspeed.initialize`` refuses an mpu and takes the DP
  size from the PipelineModule's topology, so the warning names ``PipeModelDataParallelTopology(num_pp=p,
  num_mp=t, num_dp=d)`` (pipe, data and model axes only: c > 1 cannot run under it).
* checkpoints: ``save_checkpoint`` deletes nothing; the warning names every save the plan keeps (rolling
  generations, rollback points, milestones), the rest to delete by hand.
* LR: DeepSpeed 0.19.8 has no warmup-stable-decay scheduler (``runtime/lr_schedules.py``: LRRangeTest,
  OneCycle, WarmupLR, WarmupDecayLR, WarmupCosineLR). Of the three that warm up linearly, the export takes the
  one closest to the plan's schedule, by the mean |ΔLR| / peak over all steps (``closest_scheduler``), and says
  the mean and largest deviation; the exact schedule needs a client ``lr_scheduler`` passed to
  ``deepspeed.initialize``.
* no batch ramp: the run at the main batch with the plan's tokens (``_common``), with a warning.

JSON has no comments: the warnings, the model's architecture (``_architecture``) and the LR deviation go into a
top-level ``"runplan"`` object, which DeepSpeedConfig ignores (it reads known keys only), and to stderr.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from runplan.escape import file_slug
from runplan.export._architecture import BALANCE_SCOPE_WORDS, Architecture, architecture
from runplan.export._common import (
    ASSUMED_OPTIMIZER,
    ASSUMED_OPTIMIZER_SOURCE,
    Facts,
    facts,
    fmt_bytes,
    fmt_float,
    kept_checkpoints,
    zero0_advice,
)

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from runplan.export import ExportResult
    from runplan.plan import RunPlan

DATA = "deepspeed_config_keys"


@dataclass(frozen=True)
class LrRun:
    """The schedule DeepSpeed runs: steps at the main batch, linear warmup, constant, cooldown to final."""

    steps: int
    warmup: int
    cooldown: int
    peak_lr: float
    final_lr: float
    shape: str

    def plan_lr(self, step: np.ndarray) -> np.ndarray:
        """The plan's LR at 0-based ``step`` (runplan.ops.schedule.lr_at_step, on these step counts)."""
        import numpy as np

        cool_start = self.steps - self.cooldown
        x = np.clip((step - cool_start) / max(self.cooldown, 1), 0.0, 1.0)
        fall = {"1-sqrt": 1 - np.sqrt(x), "linear": 1 - x, "cosine": 0.5 * (1 + np.cos(np.pi * x))}[
            self.shape
        ]
        lr = np.where(step < self.warmup, self.peak_lr * step / max(self.warmup, 1), self.peak_lr)
        return np.where(step >= cool_start, self.final_lr + (self.peak_lr - self.final_lr) * fall, lr)


def deepspeed_lr(scheduler: dict[str, Any], peak_lr: float, step: np.ndarray) -> np.ndarray:
    """LR DeepSpeed 0.19.8 sets at ``step`` (its last_batch_iteration) for the schedulers exported here, from
    ``runtime/lr_schedules.py``: WarmupLR min + (max − min)·γ with γ = step/warmup then 1; WarmupDecayLR the
    same with γ = (total − step)/(total − warmup) after warmup; WarmupCosineLR peak·ratio, ratio linear from
    warmup_min_ratio over max(2, warmup) steps, then cos_min + (1 − cos_min)(1 + cos(π·progress))/2."""
    import numpy as np

    p = scheduler["params"]
    kind = scheduler["type"]
    if kind == "WarmupCosineLR":
        warm = max(2, p["warmup_num_steps"])
        w0, floor = p["warmup_min_ratio"], p["cos_min_ratio"]
        progress = np.minimum(1.0, (step - warm + 1) / max(1, p["total_num_steps"] - warm))
        ratio = np.where(
            step < warm,
            w0 + (1 - w0) * step / warm,
            np.maximum(0.0, floor + (1 - floor) * (1 + np.cos(np.pi * progress)) / 2),
        )
        return peak_lr * ratio
    warm = p["warmup_num_steps"]
    low, high = p["warmup_min_lr"], p["warmup_max_lr"]
    after = 1.0
    if kind == "WarmupDecayLR":
        total = p["total_num_steps"]
        after = np.maximum(0.0, (total - step) / max(1.0, total - warm))
    gamma = np.where(step < warm, step / max(warm, 1), after)
    return low + (high - low) * gamma


def _candidates(run: LrRun) -> list[dict[str, Any]]:
    linear = {"warmup_num_steps": int(run.warmup), "warmup_type": "linear"}
    return [
        {"type": "WarmupLR", "params": {"warmup_min_lr": 0.0, "warmup_max_lr": float(run.peak_lr), **linear}},
        {
            "type": "WarmupDecayLR",
            "params": {
                "total_num_steps": int(run.steps),
                "warmup_min_lr": 0.0,
                "warmup_max_lr": float(run.peak_lr),
                **linear,
            },
        },
        {
            "type": "WarmupCosineLR",
            "params": {
                "total_num_steps": int(run.steps),
                "warmup_min_ratio": 0.0,
                "cos_min_ratio": float(run.final_lr / run.peak_lr) if run.peak_lr else 0.0,
                **linear,
            },
        },
    ]


def closest_scheduler(run: LrRun) -> tuple[dict[str, Any], dict[str, tuple[float, float]]]:
    """The DeepSpeed scheduler closest to the plan's LR (smallest mean |ΔLR| over all steps), and for every
    candidate its mean and largest |ΔLR| as fractions of the peak LR."""
    import numpy as np

    step = np.arange(run.steps, dtype=float)
    target = run.plan_lr(step)
    scores: dict[str, tuple[float, float]] = {}
    for scheduler in _candidates(run):
        gap = np.abs(deepspeed_lr(scheduler, run.peak_lr, step) - target) / run.peak_lr
        scores[scheduler["type"]] = (float(gap.mean()), float(gap.max()))
    best = min(_candidates(run), key=lambda c: scores[c["type"]][0])
    return best, scores


def _lr_run(f: Facts, warnings: list[str]) -> LrRun:
    if f.ramp:
        steps = f.steps_without_ramp(f.scheduled_tokens)
        warmup = f.steps_without_ramp(f.warmup_end_tokens)
        cooldown = f.steps_without_ramp(f.cooldown_tokens)
        stages = ", ".join(f"{s.batch_sequences:,} sequences x {s.steps:,} steps" for s in f.ramp)
        warnings.append(
            f"batch ramp: DeepSpeed has none; the plan's ramp ({stages}) is dropped and the whole run uses "
            f"{f.global_batch_sequences:,} sequences per step: {steps:,} steps instead of {f.total_steps:,} "
            "(same tokens)"
        )
    else:
        steps, warmup, cooldown = f.total_steps, f.warmup_steps, f.cooldown_steps
    return LrRun(steps, warmup, cooldown, f.peak_lr, f.final_lr, f.cooldown_shape)


def _scheduler(f: Facts, warnings: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The closest DeepSpeed scheduler and the ``runplan.lr_schedule`` record of how far it is off."""
    run = _lr_run(f, warnings)
    scheduler, scores = closest_scheduler(run)
    mean, worst = scores[scheduler["type"]]
    stable = run.steps - run.warmup - run.cooldown
    missing = {
        "WarmupLR": f"it keeps the peak LR through the cooldown: run the last {run.cooldown:,} steps with a client "
        "scheduler",
        "WarmupDecayLR": "it decays linearly from the end of warmup",
        "WarmupCosineLR": "it decays along a cosine from the end of warmup",
    }[scheduler["type"]]
    warnings.append(
        f"LR schedule: DeepSpeed has no warmup-stable-decay scheduler; the plan's warmup {run.warmup:,}, stable "
        f"{stable:,} and {run.shape} cooldown {run.cooldown:,} steps are closest to {scheduler['type']}, whose LR "
        f"is off by {mean:.1%} of the peak on average and {worst:.1%} at most ({missing}); for the exact "
        "schedule pass a client lr_scheduler to deepspeed.initialize"
    )
    record = {
        "plan": {
            "warmup_steps": run.warmup,
            "stable_steps": stable,
            "cooldown_steps": run.cooldown,
            "cooldown_shape": run.shape,
            "peak_lr": run.peak_lr,
            "final_lr": run.final_lr,
        },
        "exported": scheduler["type"],
        "abs_deviation_of_peak": {
            kind: {"mean": round(m, 6), "max": round(w, 6)} for kind, (m, w) in scores.items()
        },
    }
    return scheduler, record


def _refuse_pipeline_zero(f: Facts) -> None:
    from runplan.errors import SpecError

    if f.layout.pp > 1 and f.layout.zero >= 2:
        raise SpecError(
            f"DeepSpeed's pipeline engine runs ZeRO stage 0 or 1 only; the plan has ZeRO-{f.layout.zero} with "
            f"pipeline degree {f.layout.pp}",
            where="parallel.zero",
            hint="pin parallel.zero: 1 (or parallel.pp: 1) and plan again, or export to megatron or torchtitan",
        )


def _parallel_warnings(f: Facts, arch: Architecture, config: dict[str, Any], warnings: list[str]) -> None:
    d = f.layout.dp
    if f.layout.tp > 1:
        warnings.append(_tensor_parallel_warning(f, config))
    if f.layout.pp > 1:
        warnings.append(_pipeline_warning(f))
    if f.layout.cp > 1:
        # Ulysses splits the attention heads across the c ranks with an all-to-all (Jacobs et al. 2023, arXiv
        # 2309.14509, §3); heads that do not divide by c take DeepSpeed's uneven-heads all-to-all
        # (deepspeed/sequence/layer.py uneven_heads_all2all), which needs more heads than ranks and has no
        # communication overlap. runplan times ring attention, not Ulysses.
        heads, c = f.n_heads // f.layout.tp, f.layout.cp
        limit = ""
        if heads < c:
            limit = (
                f", and it cannot split {heads} attention heads per TP rank {c} ways (its uneven-heads path needs "
                "more heads than ranks): use a ring-attention implementation (as the plan's times assume) or a "
                "layout with c dividing the heads"
            )
        elif heads % c:
            limit = (
                f"; {heads} heads per TP rank do not divide by {c}: DeepSpeed's uneven-heads all-to-all, without "
                "communication overlap"
            )
        warnings.append(
            f"context parallel: c = {c} has no ds_config key; DeepSpeed's Ulysses sequence "
            "parallelism is set up in user code (sequence-parallel process groups)" + limit
        )
    if f.n_experts:
        warnings.append(_expert_parallel_warning(f, arch))
    if f.layout.pp == 1 and (f.layout.tp > 1 or f.layout.cp > 1):
        warnings.append(
            f"batch identity: pass deepspeed.initialize an mpu whose data-parallel world size is d = {d} "
            f"(world {f.n_gpus} = t*p*d*c = {f.layout.tp}*{f.layout.pp}*{d}*{f.layout.cp}); without one DeepSpeed divides "
            "by the whole world"
        )


def _expert_parallel_warning(f: Facts, arch: Architecture) -> str:
    """How to build the plan's experts in DeepSpeed (any MoE plan: DeepSpeed builds no model). Its native layer
    ``deepspeed.moe.layer.MoE`` (v0.19.5 moe/layer.py) defaults to ``k=1``, ``drop_tokens=True`` at
    ``capacity_factor=1.0`` (tokens over an expert's capacity are dropped; the plan is dropless, top-k),
    ``enable_expert_tensor_parallelism=False`` (whole experts on every TP rank, where the plan splits them over
    t, ETP = TP) and ``top2_2nd_expert_sampling=True`` (at k = 2, Gumbel noise on the logits before the second
    expert is picked, moe/sharded_moe.py ``top2gating`` @ edaa7221; the plan's top-2 is deterministic), so each
    is named; then the balance loss (``_balance_loss``). It asserts under ZeRO-3 (``runtime/engine.py``
    ``_validate_zero3_moe_compatibility``: "Native DeepSpeed MoE is not supported with ZeRO Stage 3. Use AutoEP
    or choose ZeRO stage 1/2."; before v0.19.5 "MoE not supported with Stage 3"); AutoEP (ds_config
    ``expert_parallel``) runs under ZeRO-3 without AutoTP or sequence parallelism."""
    e, t = f.layout.ep, f.layout.tp
    etp = ", enable_expert_tensor_parallelism=True" if t > 1 else ""
    layer = f"deepspeed.moe.layer.MoE(num_experts={f.n_experts}, ep_size={e}, k={f.top_k}, drop_tokens=False{etp})"
    if f.layout.zero < 3:
        split = f", experts whole on each of the {t} TP ranks" if t > 1 else ""
        top2 = " (and top2_2nd_expert_sampling=False)" if f.top_k == 2 else ""
        sampled = ", a Gumbel-sampled second expert" if f.top_k == 2 else ""
        return (
            f"expert parallel: build the experts as {layer} in the model code{top2}; its defaults (k=1, drop_tokens=True "
            f"at capacity_factor 1.0{split}{sampled}) are not the plan's dropless top-{f.top_k} experts; "
            + _balance_loss(f, arch)
        )
    return (
        f"expert parallel: DeepSpeed's native MoE layer ({layer}) stops at start-up under ZeRO-3 ('Native "
        "DeepSpeed MoE is not supported with ZeRO Stage 3', runtime/engine.py); use AutoEP (ds_config "
        f"expert_parallel: enabled, autoep_size {e}; no AutoTP or sequence parallelism with ZeRO-3), or plan with "
        "parallel.zero: 1 or 2"
    )


def _balance_loss(f: Facts, arch: Architecture) -> str:
    """The model's balance loss with DeepSpeed's MoE layer. ``MoE.forward`` returns (output, l_aux, exp_counts)
    and the user adds l_aux to the loss (moe/layer.py @ edaa7221). l_aux is computed from the tokens the layer is
    given, this rank's micro-batch (``MOELayer.forward``: ``input[0].reshape(-1, d_model)``), with no reduction over
    ranks or micro-batches (moe/sharded_moe.py ``top1gating``: E·Σ me·ce; ``top2gating``: E²·mean(me·ce) with ce
    the first choice's, ``mask1``, only; ``topkgating``: E²·mean(me·ce)/k over every choice). So a micro-batch
    loss is l_aux × the model's coefficient; a per-sequence (DeepSeek-V3) or global-batch (Qwen3) loss is not
    what it computes."""
    coef = arch.router_aux_loss_coef
    if coef is None:
        return (
            "balance loss: the model publishes no coefficient (router_aux_loss_coef): the l_aux each MoE layer "
            "returns (MoE.forward's second output) counts only if the training script adds it to the loss, times a "
            "coefficient it chooses"
        )
    if arch.router_aux_loss_scope != "micro_batch":
        return (
            f"balance loss: the model's is {BALANCE_SCOPE_WORDS[arch.router_aux_loss_scope]} "
            "(router_aux_loss_scope), "
            "DeepSpeed's l_aux (MoE.forward's second output) each micro-batch's on its rank (moe/sharded_moe.py): "
            f"compute the model's loss in the model code and add {fmt_float(coef)} x it to the loss"
        )
    first = (
        " and, at k=2, each token's first choice only (moe/sharded_moe.py top2gating)" if f.top_k == 2 else ""
    )
    return (
        f"balance loss: add {fmt_float(coef)} (router_aux_loss_coef) x the l_aux each MoE layer returns "
        f"(MoE.forward's second output) to the loss; DeepSpeed's gate counts each micro-batch's tokens on its "
        f"rank{first or ' (moe/sharded_moe.py)'}"
    )


def _tensor_parallel_warning(f: Facts, config: dict[str, Any]) -> str:
    """AutoTP (``tensor_parallel.autotp_size``) when the plan has no pipeline and no context parallelism, else
    TP in the model code. DeepSpeed 0.19.8 has no check for the combinations, but AutoTP sets the engine's mpu
    to ``deepspeed.utils.groups`` (``runtime/engine.py:957``, ``_configure_tensor_parallel_states``), whose
    ``_init_tp_mesh_device`` builds a (world/t) x t data x tensor mesh (``utils/groups.py:212-221``): with a
    PipelineModule its data-parallel group spans the stages, ``_broadcast_model`` broadcasts parameters across
    them and ``PipelineEngine`` then asserts ``dp_world_size == grid.data_parallel_size``
    (``runtime/pipe/engine.py:103``, a bare AssertionError; run on 4 gloo ranks, t = p = 2); with Ulysses the
    mpu holding its sequence groups is replaced, and a ``sequence_parallel_size`` mesh from the config has no
    tensor axis (on 4 ranks with t = c = 2 the tensor and sequence groups came out the same ranks)."""
    t, p, c = f.layout.tp, f.layout.pp, f.layout.cp
    sequence = "Megatron-style sequence parallelism has no ds_config key"
    if p == 1 and c == 1:
        config["tensor_parallel"] = {"autotp_size": int(t)}
        overlap = (
            ", and AutoTP does not overlap its collectives with the GEMMs as the plan's step time assumes: "
            "expect a slower step"
            if f.stack.tp_comm_overlap and f.layout.sequence_parallel and t <= f.gpus_per_node
            else ""
        )
        if f.layout.sequence_parallel:
            # AutoTP's LinearLayer / LinearAllreduce (module_inject/layers.py) all-reduce the row-parallel output:
            # the norms and dropout between the blocks run on the whole sequence on every TP rank
            sequence = (
                "AutoTP has no sequence parallelism (its row-parallel layers all-reduce), so the norm and "
                f"dropout activations the plan split {t} ways are held whole on every TP rank: more activation "
                "memory than planned; pin parallel.sequence_parallel: false to plan AutoTP's memory and step time"
            )
        return (
            f"tensor parallel: exported as AutoTP (autotp_size {t}), which covers Hugging Face models AutoTP "
            f"supports; {sequence}{overlap}"
        )
    if p > 1:
        why = (
            f"under a PipelineModule (p = {p}) its data-parallel group spans the stages and PipelineEngine "
            "asserts dp_world_size == grid.data_parallel_size (runtime/pipe/engine.py)"
        )
        group = "the grid's tensor-slicing group (PipelineParallelGrid.get_slice_parallel_group)"
    else:
        why = (
            f"it replaces the mpu that carries the Ulysses groups (c = {c}), and a sequence_parallel_size mesh "
            "has no tensor axis"
        )
        group = "the mpu's tensor-parallel group"
    return (
        f"tensor parallel: t = {t} is not exported as AutoTP (tensor_parallel.autotp_size): AutoTP makes the "
        f"engine's mpu its own (world/t) x t data x tensor mesh, and {why}; split the linear layers {t} ways in "
        f"the model code on {group} (deepspeed.module_inject.layers LinearLayer / LinearAllreduce, or "
        f"Megatron-style column/row-parallel layers); {sequence}"
    )


def _gradient_dtypes(f: Facts, config: dict[str, Any], warnings: list[str]) -> None:
    """The plan's gradient dtype (``stack.gradient_dtype``: the gradient buffer and the reduction) as DeepSpeed
    0.19.8 sets it. Reduction: ``communication_data_type``, else the model dtype, bf16 here
    (``runtime/engine.py:1719-1730``); with Ulysses (c > 1) the engine replaces it with
    ``seq_parallel_communication_data_type`` (default fp32, ``runtime/engine.py:2182``, ``constants.py``).
    Accumulation: ``data_types.grad_accum_dtype``, else the model dtype (``get_data_types``,
    ``runtime/engine.py:1799-1810``). So a bf16 config without them reduces and accumulates bf16 gradients
    where the plan's default counts fp32 (4 bytes in memory and on the wire).

    bf16 weights with fp32 accumulation (``_do_optimizer_sanity_check``, ``runtime/engine.py:2294-2323``):
    ZeRO-1 runs ``BF16_Optimizer`` (a full fp32 gradient buffer, all-reduced by
    ``buffered_allreduce_fallback`` in the communication dtype, ``runtime/pipe/engine.py`` ``_bf16_reduce_grads``
    with a pipeline), ZeRO-2/3 accumulate their partition in fp32 and reduce-scatter in the communication dtype;
    without ZeRO it raises ``NotImplementedError("unsupported mix ...")``. Checked with deepspeed.initialize on
    one gloo rank: ZeRO-0/1/2/3 default: bf16 reduction and accumulation; with both keys fp32: NotImplementedError
    / BF16_Optimizer / fp32 / fp32."""
    dtype = f.stack.gradient_dtype
    config["communication_data_type"] = dtype
    if f.layout.cp > 1:
        config["seq_parallel_communication_data_type"] = dtype
    if dtype == "bf16" or f.layout.zero >= 1:
        config["data_types"] = {"grad_accum_dtype": dtype}
        if dtype == "fp32" and f.layout.zero == 1 and f.layout.dp > 1:
            warnings.append(
                "gradients: ZeRO-1 with fp32 gradient accumulation (stack gradient_dtype) runs DeepSpeed's "
                "BF16_Optimizer, which all-reduces the whole fp32 gradient (2 x 4 bytes per parameter on the "
                "data-parallel ring) where the plan's ZeRO-1 reduce-scatters it (4 bytes): expect more "
                "data-parallel traffic than the step time counts"
            )
        return
    m = f.layout.microbatches
    held = f"summed over the {m} micro-batches in bf16" if m > 1 else "held in bf16"
    warnings.append(
        "gradients: DeepSpeed without ZeRO rejects fp32 gradient accumulation under bf16 "
        "(data_types.grad_accum_dtype fp32 raises NotImplementedError), so the gradients are reduced in fp32 "
        f"(communication_data_type) as planned but {held}, 2 bytes per parameter where the plan counted 4; "
        f"for fp32 accumulation {zero0_advice(f, 'pin parallel.zero: 1')}, or plan with stack gradient_dtype: bf16"
    )


def _grad_reduce_overlap_warning(f: Facts, config: dict[str, Any]) -> str | None:
    """Where DeepSpeed 0.19.8 does not overlap the data-parallel gradient reduction with the backward pass that
    the plan's step time hides it under (``stack.overlap_grad_reduce``). ZeRO-1/2 (``zero/stage_1_and_2.py``)
    reduce on the compute stream unless ``zero_optimization.overlap_comm`` is true, and it defaults to true for
    stage 3 only (``zero/config.py`` ``overlap_comm_valid``); ZeRO-0 and ZeRO-1's ``BF16_Optimizer`` (fp32
    accumulation) all-reduce after the backward pass (``runtime/engine.py`` ``allreduce_gradients``:
    ``buffered_allreduce_fallback``), and ``PipelineEngine`` reduces after the last micro-batch (``ReduceGrads``
    in ``runtime/pipe/schedule.py`` ``TrainSchedule``), whatever the config says."""
    z, p = f.layout.zero, f.layout.pp
    if not f.stack.overlap_grad_reduce or f.layout.dp == 1 or (z == 3 and p == 1):
        return None
    fix = "; plan with stack overlap_grad_reduce: false for its step time"
    if p > 1:
        return (
            "gradient reduction: DeepSpeed's PipelineEngine reduces the data-parallel gradients after the last "
            "micro-batch (TrainSchedule ReduceGrads), where the plan's step time hides them under the backward "
            "pass (stack overlap_grad_reduce)" + fix
        )
    if z == 0 or (z == 1 and f.stack.gradient_dtype == "fp32"):
        engine = "without ZeRO" if z == 0 else "ZeRO-1's BF16_Optimizer (fp32 gradient accumulation)"
        return (
            f"gradient reduction: DeepSpeed {engine} all-reduces the gradients after the backward pass, where "
            "the plan's step time hides the reduction under it (stack overlap_grad_reduce)" + fix
        )
    # ZeRO-1/2 (bf16 gradients) overlap the reduction only when asked: written, as the plan's step time assumes
    config["zero_optimization"]["overlap_comm"] = True
    return None


def _pipeline_warning(f: Facts) -> str:
    """How to build the plan's pipeline. deepspeed.initialize asserts "mpu must be None with pipeline
    parallelism" and takes the DP size from the PipelineModule's topology (deepspeed/__init__.py); with
    num_stages alone that is PipeDataParallelTopology(num_pp=p, num_dp=world/p) (runtime/pipe/module.py), which
    counts TP and CP ranks as data parallel and fails the batch assertion. The topology's axes are pipe, data
    and model only, and PipelineParallelGrid asserts their product is the world (runtime/pipe/topology.py)."""
    t, p, d, c = f.layout.tp, f.layout.pp, f.layout.dp, f.layout.cp
    if t == 1 and c == 1:
        build = f"PipelineModule(..., num_stages={p})"
    else:
        build = (
            f"PipelineModule(..., topology=PipeModelDataParallelTopology(num_pp={p}, num_mp={t}, num_dp={d})), "
            f"not num_stages={p} alone, which makes the data-parallel size world/p = {f.n_gpus // p}"
        )
    text = (
        f"pipeline: DeepSpeed sets the pipeline in user code: {build}; deepspeed.initialize takes the "
        "data-parallel size of the batch identity from that topology (it refuses an mpu with a PipelineModule)"
    )
    if f.layout.vpp > 1:
        text += f"; no interleaving (the plan has v = {f.layout.vpp})"
    if c > 1:
        text += (
            f"; the topology has no sequence-parallel axis (its grid asserts pipe x data x model = world), so "
            f"c = {c} cannot run under PipelineModule: plan with parallel.cp: 1 or parallel.pp: 1"
        )
    return text


def _user_code_warnings(f: Facts, warnings: list[str]) -> None:
    if f.layout.recompute != "none":
        warnings.append(
            f"recompute: '{f.layout.recompute}' is applied in the model code "
            "(deepspeed.checkpointing.checkpoint around each layer); ds_config cannot switch it on"
        )
    # save_checkpoint deletes no earlier save (runtime/engine.py); a count of generations alone would have the
    # user delete the plan's rollback points and milestones
    warnings.append(
        f"checkpoints: DeepSpeed saves when the training script calls save_checkpoint: every "
        f"{f.checkpoint_interval_steps} steps"
        + (
            ", async via host staging (DeepSpeed Nebula or a custom checkpoint engine)"
            if f.async_checkpoint
            else ""
        )
        + "; it deletes none: to hold the plan's storage, delete by hand (after the newest save is complete) "
        f"every checkpoint except {kept_checkpoints(f, runs_the_ramp=False)}"
    )
    warnings.append(
        "model: DeepSpeed builds no model; construct it with every field of runplan.architecture in this file "
        "(RoPE base and scaling, norm epsilon, init std, biases, tied embeddings)"
    )


def _refuse_precision(f: Facts) -> None:
    """What the exported ds_config cannot train as planned: fp8 (no config key; fp8 runs through
    TransformerEngine modules in user code), torch.autocast over fp32 weights (the config sets bf16 mode) and
    bf16 Adam moments beside an fp32 master: DeepSpeed's ``bf16.bf16_optimizer_states`` asserts
    ``bf16_master_weights_and_grads`` (runtime/config.py, precision_config.py @ edaa722), a bf16 master."""
    from runplan.errors import SpecError

    if f.stack.optimizer_state_dtype != "fp32":
        raise SpecError(
            "DeepSpeed keeps bf16 optimizer states (bf16_optimizer_states) only with a bf16 master "
            "(bf16_master_weights_and_grads), not beside the plan's fp32 master",
            where="stack.optimizer_state_dtype",
            hint="plan with optimizer_state_dtype fp32, or export to megatron",
        )

    if f.stack.precision == "fp8":
        raise SpecError(
            "DeepSpeed's config has no fp8 training key (its ds_config sets bf16 or fp16 only)",
            where="stack.precision",
            hint="set stack precision: bf16, or export to megatron or torchtitan",
        )
    if f.stack.autocast_fp32_weights:
        raise SpecError(
            "the exported ds_config trains in DeepSpeed's bf16 mode (bf16 weights beside an fp32 master); the "
            "plan's memory and step time assume torch.autocast over fp32 weights",
            where="stack.autocast_fp32_weights",
            hint="set stack.autocast_fp32_weights: false to plan DeepSpeed's bf16 mode",
        )


def export_deepspeed(plan: RunPlan) -> ExportResult:
    """Render ``plan`` as a DeepSpeed ds_config (pure; see the module docstring)."""
    from runplan.export import ExportResult

    f = facts(plan)
    _refuse_pipeline_zero(f)
    _refuse_precision(f)
    warnings: list[str] = [f"optimizer: {ASSUMED_OPTIMIZER_SOURCE}"]
    scheduler, lr_record = _scheduler(f, warnings)
    b, m, d = f.layout.micro_batch, f.layout.microbatches, f.layout.dp
    config: dict[str, Any] = {
        "train_batch_size": int(d * b * m),
        "train_micro_batch_size_per_gpu": int(b),
        "gradient_accumulation_steps": int(m),
        "steps_per_print": 10,
        "gradient_clipping": ASSUMED_OPTIMIZER["grad_clip_norm"],
        "bf16": {"enabled": True},
        "zero_optimization": {"stage": int(f.layout.zero)},
        "optimizer": {
            "type": "AdamW",
            "params": {
                "lr": float(f.peak_lr),
                "betas": [ASSUMED_OPTIMIZER["beta1"], ASSUMED_OPTIMIZER["beta2"]],
                "eps": ASSUMED_OPTIMIZER["eps"],
                "weight_decay": ASSUMED_OPTIMIZER["weight_decay"],
            },
        },
        "scheduler": scheduler,
    }
    _gradient_dtypes(f, config, warnings)
    overlap = _grad_reduce_overlap_warning(f, config)
    if overlap:
        warnings.append(overlap)
    arch = architecture(plan)
    _parallel_warnings(f, arch, config, warnings)
    if f.layout.zero == 3 and f.stack.fsdp_mixed_precision:
        bf16_shard = (
            f.gradients_bytes_per_gpu / 2
        )  # the plan's fp32 gradient shard is 4 B per sharded parameter
        warnings.append(
            "ZeRO-3: the plan counted PyTorch FSDP's fp32 shards as the master copy (stack fsdp_mixed_precision); "
            f"DeepSpeed keeps a bf16 shard beside its fp32 master, about {fmt_bytes(bf16_shard)} more per GPU"
        )
    if f.layout.zero in (1, 2) and f.stack.overlap_param_gather and f.layout.dp > 1:
        warnings.append(
            "parameter all-gather: DeepSpeed ZeRO-1/2 gathers the updated parameters after the optimizer step, "
            "where the plan hid it under the next forward pass; plan with stack preset deepspeed (or "
            "overlap_param_gather: false) for its step time"
        )
    _user_code_warnings(f, warnings)
    config["runplan"] = {
        "note": "written by runplan export; DeepSpeed ignores this key (docs/export.md)",
        "plan": f.name,
        "warnings": list(warnings),
        "architecture": {"source": arch.source, **arch.fields()},
        "lr_schedule": lr_record,
    }
    text = json.dumps(config, indent=2, allow_nan=False) + "\n"
    return ExportResult(
        target="deepspeed", text=text, warnings=warnings, filename=f"{file_slug(f.name)}.deepspeed.json"
    )


__all__ = ["LrRun", "closest_scheduler", "deepspeed_lr", "export_deepspeed"]
