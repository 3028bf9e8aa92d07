"""``benchmarks/published_runs.yaml`` (published training runs with their sources) read as measured runs.

The shipped calibration is ``runplan calibrate`` on that file: a published-runs document (it has ``sources:``)
is converted here row by row, so both files go through the same fit. Per row:

* the throughput compared is tokens/s per GPU where printed or derived, else step seconds, else model TFLOP/s
  per GPU, else MFU; a ``speedup`` row is compared as its ratio over its ``baseline`` row;
* stack facts (``_stack``): ``flash_attention`` (null = not stated: on), ``tp_comm_overlap`` (null: off),
  gradient bytes, dropout, the selective recompute kind, the distributed optimizer (a row's false beside a
  ZeRO >= 1 pin, "not Megatron's", is left out: the pin says the sharding), Megatron-LM 2021-22's
  scatter/gather of pipeline sends for its sources, FSDP mixed precision for the PyTorch FSDP groups, and the
  parameter gather after the step for DeepSpeed's and PyTorch's ZeRO optimizers, eager elementwise kernels for
  the PyTorch groups that ran without torch.compile;
  ``sequence_parallel`` and ``recompute`` fill the layout where the pins leave them open (every selective
  variant is runplan's selective recompute, except torchtitan's layer-wise ``selective-layer``: full
  recompute of every second block, as Megatron's ``block`` method over half of the layers);
* precision: an fp8 row (``precision: fp8`` on the row or in its ``stack:``) is timed with stack precision fp8
  and its ``fp8_recipe`` (tensorwise when not stated: the recipe torchao and torchtitan default to); fp8 rows
  are predicted, never fitted (``fit`` is forced false: no calibrated constant is specific to fp8, so they
  test the fp8 terms instead of moving the bf16 constants, docs/parallel.md, FP8); fp16 runs at the bf16
  tensor-core rate on A100 and H100;
* rows marked ``fit: false`` are predicted, not fitted, except rows held out only because their stack facts
  could not be expressed before (``pending_stack``), which now are.
"""

from __future__ import annotations

from typing import Any

#: Recompute names of the published rows' ``stack:`` mapped onto runplan's three modes.
_RECOMPUTE = {
    "none": "none",
    "full": "full",
    "selective-paper": "selective",
    "selective-core": "selective",
    "torchtitan-op-sac": "selective",
    # torchtitan's layer-wise selective AC checkpoints every n-th block whole, n = selective_ac_option, default
    # "2" ("checkpoint every other layer", torchtitan config_manager.py in every version): full recompute of
    # half the blocks (``_stack`` sets the block method); fms-fsdp's block-level selective AC likewise (its rows)
    "selective-layer": "full",
}


#: Selective recomputation as each published source describes it, in Megatron-core module names (stack.py).
_SELECTIVE_MODULES = {
    "selective-paper": ("core_attn",),  # Korthikanti et al. 2022 §5: the attention core
    "selective-core": ("core_attn",),  # Megatron-core's default --recompute-modules
    "torchtitan-op-sac": ("every_other_mm", "moe_act"),  # torchtitan's op-level SAC (stack.py)
}
#: Sources whose Megatron-LM (2021-22) scattered pipeline sends over the TP ranks (Narayanan et al. 2021 §4.1).
_SCATTER_GATHER_SOURCES = ("nvidia-megatron-2021", "nvidia-megatron-2022", "bigscience-bloom-2022")
#: Source groups that train with PyTorch FSDP mixed precision (Composer FSDP1, IBM fms-fsdp FSDP1, torchtitan
#: FSDP2): under ZeRO-3 their fp32 shards are the master copy (``Stack.fsdp_mixed_precision``).
_FSDP_GROUPS = ("mosaicml-composer-fsdp", "pytorch-fsdp-ibm", "pytorch-torchtitan")
#: Source groups that train under torch.autocast over fp32 parameters (``Stack.autocast_fp32_weights``): the
#: FlashAttention training code, PyTorch Lightning with trainer.precision 16 or bf16 (a mixed-precision plugin
#: around fp32 modules) and DDP or DDPStrategyZero1 (Dao-AILab/flash-attention training/configs/experiment/pile/
#: base.yaml, training/src/utils/ddp_zero1.py; the Lambda rows' fork, owt/base.yaml).
_AUTOCAST_GROUPS = ("hazy-flash-attn-training",)
#: Source groups whose ZeRO-1 gathers the updated parameters after the optimizer step, not under the next forward
#: (Megatron-DeepSpeed: DeepSpeed ZeRO-1/2; the FlashAttention training scripts: PyTorch ZeroRedundancyOptimizer
#: without overlap_with_ddp, Lightning's DDPStrategyZero1): ``Stack.overlap_param_gather`` off.
_GATHER_AFTER_STEP_GROUPS = ("megatron-deepspeed", "hazy-flash-attn-training")
#: Source groups whose attention runs through TransformerEngine (Megatron-core, NeMo): cuDNN fused attention on
#: Hopper, flash-attn on Ampere (``Stack.attention_kernel`` auto). Every other group calls FlashAttention-2 (the
#: flash-attn package, PyTorch SDPA's flash backend, xformers' FA2 path) or a named kernel (``attention_kernel``);
#: Meta's Llama 3 stack does not say, so it keeps FlashAttention-2.
_TRANSFORMER_ENGINE_GROUPS = ("nvidia-megatron",)
#: Source groups whose norms, activations, RoPE and residual adds run in PyTorch eager (``Stack.fused_elementwise``
#: off) unless the row ran under torch.compile (``torch_compile: true`` in its stack): torchtitan (compile off by
#: default, llama3_8b.toml @ 9dec370; RMSNorm and complex RoPE in plain PyTorch), IBM fms-fsdp (its README table
#: predates torch.compile) and llm-foundry's MPT benchmarks (no compile_config in their YAMLs). Megatron-LM and
#: Megatron-DeepSpeed (fused bias-GeLU, bias-dropout-add, apex/TE norms), flash-attn's training code (fused dense,
#: dropout-add-LayerNorm, rotary) and the Meta stacks (not stated) keep the fused default.
_EAGER_GROUPS = ("pytorch-torchtitan", "pytorch-fsdp-ibm", "mosaicml-composer-fsdp")


def _stack(row: dict[str, Any], stack: dict[str, Any], n_layers: int | None) -> dict[str, Any]:
    """The row's stated stack facts as a runplan Stack mapping (facts not stated keep the default stack)."""
    out: dict[str, Any] = {
        "flash_attention": stack.get("flash_attention") is not False,
        "attention_kernel": "auto"
        if (row.get("source_group") or "") in _TRANSFORMER_ENGINE_GROUPS
        else "flash-attention-2",
        "tp_comm_overlap": bool(row.get("tp_comm_overlap") or stack.get("tp_comm_overlap")),
        # 2 bytes: bf16, or the fp16 gradients of Megatron-LM --fp16 rows (the same traffic and memory)
        "gradient_dtype": "fp32" if row.get("gradient_bytes", 4) == 4 else "bf16",
        "pipeline_scatter_gather": (row.get("source_id") or "") in _SCATTER_GATHER_SOURCES,
        "fsdp_mixed_precision": (row.get("source_group") or "") in _FSDP_GROUPS,
        "autocast_fp32_weights": (row.get("source_group") or "") in _AUTOCAST_GROUPS,
        "overlap_param_gather": (row.get("source_group") or "") not in _GATHER_AFTER_STEP_GROUPS,
        # torchao's Float8Linear (torchtitan's fp8) recasts its weights every forward; TransformerEngine caches them
        "fp8_weight_cache": (row.get("source_group") or "") != "pytorch-torchtitan",
        # torchtitan @ 9dec370 leaves its F.cross_entropy(pred.float()) uncompiled ("compiling loss function
        # causes CUDA errors"): 12 bytes per logit at the backward's start (Stack.cross_entropy)
        "cross_entropy": "unfused" if (row.get("source_group") or "") == "pytorch-torchtitan" else "fused",
        "fused_elementwise": (row.get("source_group") or "") not in _EAGER_GROUPS
        or bool(stack.get("torch_compile")),
    }
    if (row.get("source_group") or "") == "pytorch-torchtitan":
        # PyTorch's context_parallel; torchtitan's published runs predate ff0829c, so K/V repeated to all heads
        out["context_parallel_impl"] = "pytorch"
        out["kv_repeated_before_attention"] = True
    if stack.get("dropout"):
        out["hidden_dropout"] = out["attention_dropout"] = float(stack["dropout"])
    if stack.get("recompute") == "selective-layer" and n_layers:  # every second block recomputed whole
        out["full_recompute_method"] = "block"
        out["full_recompute_layers"] = n_layers // 2
    if stack.get("recompute") in _SELECTIVE_MODULES:
        out["selective_recompute"] = _SELECTIVE_MODULES[stack["recompute"]]
    if stack.get("distributed_optimizer") is not None and not _sharded_by_pin(row, stack):
        out["distributed_optimizer"] = bool(stack["distributed_optimizer"])
    if _is_fp8(row):
        out["precision"] = "fp8"
        out["fp8_recipe"] = stack.get("fp8_recipe") or row.get("fp8_recipe") or "tensorwise"
        out["fp8_param_gather"] = bool(stack.get("fp8_param_gather"))
    return out


def _sharded_by_pin(row: dict[str, Any], stack: dict[str, Any]) -> bool:
    """Whether a row's ``distributed_optimizer: false`` stands beside a pinned ZeRO >= 1: the row means "not
    Megatron's --use-distributed-optimizer" (FSDP, DeepSpeed or PyTorch's ZeRO shard the states themselves, as
    the pin says), while a runplan stack's false means ZeRO-0 only, refused beside a ZeRO pin
    (request_rules.zero_against_stack). The pin says the sharding; the key is left out."""
    return stack.get("distributed_optimizer") is False and ((row.get("pins") or {}).get("zero") or 0) >= 1


def _is_fp8(row: dict[str, Any]) -> bool:
    return row.get("precision", "bf16") == "fp8" or (row.get("stack") or {}).get("precision") == "fp8"


def is_published(data: Any) -> bool:
    """Whether a loaded document is a published-runs file (has ``sources:`` and rows with ``published:``)."""
    return isinstance(data, dict) and "sources" in data and isinstance(data.get("runs"), list)


def _measured(row: dict[str, Any]) -> dict[str, Any]:
    published = row.get("published") or {}
    if row.get("metric") == "speedup":
        return {"speedup": published["speedup"], "speedup_over": row["baseline"]}
    for key, name in (
        ("tokens_per_s_per_gpu", "tokens_per_second_per_gpu"),
        ("step_seconds", "step_seconds"),
        ("tflops_per_gpu", "tflops_per_gpu"),
        ("mfu", "mfu"),
    ):
        if published.get(key) is not None:
            return {name: published[key]}
    return {}


def _layout(row: dict[str, Any]) -> dict[str, Any]:
    layout = dict(row.get("pins") or {})
    stack = row.get("stack") or {}
    stated = stack.get("sequence_parallel")
    if "sequence_parallel" not in layout and stated is not None and (stated or layout.get("tp", 2) > 1):
        layout["sequence_parallel"] = bool(stated)
    if "recompute" not in layout and stack.get("recompute") in _RECOMPUTE:
        layout["recompute"] = _RECOMPUTE[stack["recompute"]]
    return layout


def _peak_memory(row: dict[str, Any]) -> dict[str, Any] | None:
    if row.get("peak_memory_gib") is not None:
        peak = {
            "gib": row["peak_memory_gib"],
            "kind": row.get("peak_memory_kind", "reserved"),
            "rank": str(row.get("peak_memory_rank", "")),
        }
        # the pipeline stage the logging rank is on (PeakMemory.stage), where the row states it
        return peak | ({"stage": row["peak_memory_stage"]} if row.get("peak_memory_stage") else {})
    memory = (row.get("published") or {}).get("memory_gib")
    return {"gib": memory, "kind": "reserved"} if memory is not None else None


def measured_document(data: dict[str, Any]) -> dict[str, Any]:
    """A MEASURED.yaml document (dict) from a published-runs document: usable rows only (module docstring)."""
    models = data.get("models") or {}
    runs = []
    for row in data["runs"]:
        stack = row.get("stack") or {}
        shape = dict(models.get(row["model"], {}))
        if row.get("learned_positions"):
            shape["learned_positions"] = row["learned_positions"]
        run: dict[str, Any] = {
            "id": row["id"],
            "source": row.get("source_id") or row.get("source"),
            "model": {"name": row["model"], **shape} if shape else row["model"],
            "gpu": row["gpu"],
            "n_gpus": row["n_gpus"],
            "seq_len": row["seq_len"],
            "layout": _layout(row),
            "stack": _stack(row, stack, shape.get("n_layers")),
            "measured": _measured(row),
            "fit": bool(row.get("fit", True) or row.get("pending_stack", False)) and not _is_fp8(row),
        }
        for key in ("schedule_layers", "global_batch", "global_batch_tokens", "attention_kernel"):
            if row.get(key) is not None:
                run[key] = row[key]
        memory = _peak_memory(row)
        if memory is not None:
            run["peak_memory"] = memory
        runs.append(run)
    ids = {run["id"] for run in runs}
    for run in runs:  # a speedup whose baseline was skipped cannot be compared
        if run["measured"].get("speedup_over") not in (None, *ids):
            run["fit"] = False
    runs = [r for r in runs if r["measured"].get("speedup_over") in (None, *ids)]
    return {"gpus": data.get("gpus") or {}, "runs": runs}
