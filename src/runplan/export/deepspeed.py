"""DeepSpeed ds_config JSON for a run plan (``runplan export --to deepspeed``).

Keys were read from DeepSpeed 0.19.8 (``export/data/deepspeed_config_keys.json``). Mapping:

* batch identity (``DeepSpeedConfig._batch_assertion``): ``train_batch_size`` = ``train_micro_batch_size_per_gpu``
  × ``gradient_accumulation_steps`` × DP world size, i.e. d·b·m = b × m × d.
* ``zero_optimization.stage`` the plan's ZeRO stage; ``bf16.enabled``; ``gradient_clipping``; AdamW.
* TP as AutoTP (``tensor_parallel.autotp_size``, for Hugging Face models AutoTP supports). Pipeline, context
  and expert parallelism live in user code in DeepSpeed (``PipelineModule(num_stages=p)``, Ulysses sequence
  parallel groups, ``deepspeed.moe.layer.MoE(ep_size=e)``) and activation recomputation is a call in the model
  (``deepspeed.checkpointing.checkpoint``): each gets a warning with the value to use. With p, c or t > 1 the
  engine must be given an ``mpu`` whose data-parallel size is d, or the batch identity counts model-parallel
  ranks as data-parallel.
* LR: DeepSpeed's schedulers decay from the end of warmup, so WSD is not expressible: ``WarmupDecayLR``
  (linear to 0) when the final LR is 0 and the cooldown is not cosine, else ``WarmupCosineLR`` (cosine to
  ``cos_min_ratio`` = final / peak). A warning gives the plan's stable and cooldown steps; the exact schedule
  needs a client ``lr_scheduler`` passed to ``deepspeed.initialize``.
* no batch ramp: the run at the main batch with the plan's tokens (``_common``), with a warning.

JSON has no comments: the warnings go to stderr only (``runplan export``), not into the file.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from runplan.export._common import ASSUMED_OPTIMIZER, ASSUMED_OPTIMIZER_SOURCE, facts

if TYPE_CHECKING:  # pragma: no cover
    from runplan.export import ExportResult
    from runplan.plan import RunPlan

DATA = "deepspeed_config_keys"


def export_deepspeed(plan: RunPlan) -> ExportResult:
    """Render ``plan`` as a DeepSpeed ds_config (pure; see the module docstring)."""
    from runplan.export import ExportResult

    f = facts(plan)
    warnings: list[str] = [f"optimizer: {ASSUMED_OPTIMIZER_SOURCE}"]
    b, m, d = f.micro_batch, f.microbatches, f.dp

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

    cosine = f.final_lr > 0 or f.cooldown_shape == "cosine"
    if cosine:
        scheduler = {
            "type": "WarmupCosineLR",
            "params": {
                "total_num_steps": int(steps),
                "warmup_min_ratio": 0.0,
                "warmup_num_steps": max(int(warmup), 1),
                "cos_min_ratio": float(f.final_lr / f.peak_lr) if f.peak_lr else 0.0,
                "warmup_type": "linear",
            },
        }
    else:
        scheduler = {
            "type": "WarmupDecayLR",
            "params": {
                "total_num_steps": int(steps),
                "warmup_min_lr": 0.0,
                "warmup_max_lr": float(f.peak_lr),
                "warmup_num_steps": int(warmup),
                "warmup_type": "linear",
            },
        }
    warnings.append(
        f"LR schedule: DeepSpeed has no WSD scheduler; the plan's warmup {warmup:,}, stable "
        f"{steps - warmup - cooldown:,} and {f.cooldown_shape} cooldown {cooldown:,} steps become {scheduler['type']} "
        f"decaying over all {steps - warmup:,} post-warmup steps; for the exact schedule pass a client "
        "lr_scheduler to deepspeed.initialize"
    )

    config: dict[str, Any] = {
        "train_batch_size": int(d * b * m),
        "train_micro_batch_size_per_gpu": int(b),
        "gradient_accumulation_steps": int(m),
        "steps_per_print": 10,
        "gradient_clipping": ASSUMED_OPTIMIZER["grad_clip_norm"],
        "bf16": {"enabled": True},
        "zero_optimization": {"stage": int(f.zero)},
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
    if f.tp > 1:
        config["tensor_parallel"] = {"autotp_size": int(f.tp)}
        warnings.append(
            f"tensor parallel: exported as AutoTP (autotp_size {f.tp}), which covers Hugging Face "
            "models AutoTP supports; Megatron-style sequence parallelism has no ds_config key"
            + (
                ", and AutoTP does not overlap its collectives with the GEMMs as the plan's step time assumes: "
                "expect a slower step"
                if f.sequence_parallel and f.tp <= f.gpus_per_node
                else ""
            )
        )
    if f.pp > 1:
        warnings.append(
            f"pipeline: DeepSpeed sets the pipeline degree in user code: PipelineModule(..., "
            f"num_stages={f.pp})" + (f"; no interleaving (the plan has v = {f.vpp})" if f.vpp > 1 else "")
        )
    if f.cp > 1:
        warnings.append(
            f"context parallel: c = {f.cp} has no ds_config key; DeepSpeed's Ulysses sequence "
            "parallelism is set up in user code (sequence-parallel process groups)"
        )
    if f.ep > 1:
        warnings.append(f"expert parallel: set ep_size={f.ep} in deepspeed.moe.layer.MoE in the model code")
    if f.tp > 1 or f.pp > 1 or f.cp > 1:
        warnings.append(
            f"batch identity: pass deepspeed.initialize an mpu whose data-parallel world size is d = {d} "
            f"(world {f.n_gpus} = t*p*d*c = {f.tp}*{f.pp}*{d}*{f.cp}); without one DeepSpeed divides "
            "by the whole world"
        )
    if f.recompute != "none":
        warnings.append(
            f"recompute: '{f.recompute}' is applied in the model code "
            "(deepspeed.checkpointing.checkpoint around each layer); ds_config cannot switch it on"
        )
    warnings.append(
        f"checkpoints: DeepSpeed saves when the training script calls save_checkpoint: every "
        f"{f.checkpoint_interval_steps} steps, keep {f.retention_generations} generations"
        + (
            ", async via host staging (DeepSpeed Nebula or a custom checkpoint engine)"
            if f.async_checkpoint
            else ""
        )
    )

    text = json.dumps(config, indent=2) + "\n"
    return ExportResult(target="deepspeed", text=text, warnings=warnings, filename=f"{f.name}.deepspeed.json")
