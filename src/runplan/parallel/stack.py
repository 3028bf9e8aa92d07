"""The training stack a layout runs on: which kernels, overlaps, recomputation rules and dtypes the engine uses.

The same layout runs at different speeds and memory on different software stacks (FlashAttention or not, TP
communication overlapped or not, what "selective" recomputation recomputes, dropout masks kept or not). A
``Stack`` names those choices; every memory and time term of ``memory.py`` and ``timing.py`` reads them. Named
presets bundle the defaults of common engines (:data:`PRESETS`); each field of a preset can be overridden
(plan file ``stack:``, ``runplan parallelize --stack NAME`` and its override flags).

Sources per field are in the field descriptions; the presets cite the engine defaults they copy.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from runplan.errors import SpecError

#: Recomputation units, named as Megatron-core's ``--recompute-modules`` where it has one (``core_attn``,
#: ``layernorm``, ``mlp``, ``moe_act``; megatron/core/transformer/transformer_config.py), plus ``mlp_act``: the
#: dense MLP's activation output alone (what Megatron-core's ``moe_act`` does for experts), and
#: ``every_other_mm``: torchtitan's op-level selective checkpointing (``selective_ac_option = "op"``,
#: parallelize_llama.py @ 9dec370, still its policy in 0.2.x), which saves the block input, the outputs of the
#: 1st, 3rd, 5th, ... matrix product of a block (Q, V, the MLP's up/gate-1 and down projections), the attention
#: kernel's outputs and TP reduce-scatters, and recomputes everything else (K, O, the second up projection, every
#: norm and activation) during backward.
RecomputeModule = Literal["core_attn", "layernorm", "mlp_act", "mlp", "moe_act", "every_other_mm"]

#: Bytes per logit the loss holds at its peak, by ``Stack.cross_entropy``. fused: Megatron-core's vocab-parallel
#: cross-entropy, plain or --cross-entropy-loss-fusion (tensor_parallel/cross_entropy.py calculate_logits_max and
#: fusions/fused_cross_entropy.py @ core_r0.10.0): forward, the bf16 logits stay referenced by the model while
#: their fp32 copy becomes the softmax in place (2 + 4); backward, the fp32 gradient beside its bf16 cast (4 + 2).
#: unfused: PyTorch's uncompiled F.cross_entropy(logits.float()) at the backward's start: saved fp32 log-softmax +
#: the gradient arriving at it + the gradient it returns. A loss that holds less (FlashAttention's Triton
#: cross-entropy with inplace_backward keeps the bf16 logits only, 2) is counted as fused, over by 4.
LOSS_LOGIT_BYTES = {"fused": 6.0, "unfused": 12.0}

#: FP8 scaling recipes, named as the engines name them: Megatron-LM ``--fp8-recipe`` offers delayed, tensorwise,
#: blockwise and mxfp8, plus 'custom' (a user quantizer factory; not offered here) (TransformerConfig.fp8_recipe,
#: turned into flags by ArgumentGroupFactory, megatron/core/transformer/transformer_config.py @ d98e8a6; earlier
#: arguments.py _add_transformer_engine_args; TransformerEngine's
#: DelayedScaling, Float8CurrentScaling, Float8BlockScaling, MXFP8BlockScaling); torchtitan 0.2.2 offers
#: tensorwise and rowwise (``[quantize.linear.float8] recipe_name``, torchao Float8LinearConfig) and mxfp8
#: (``[quantize.linear.mx]``). mxfp8 needs Blackwell tensor cores (TransformerEngine MXFP8BlockScaling).
Fp8Recipe = Literal["delayed", "tensorwise", "rowwise", "blockwise", "mxfp8"]

PresetName = Literal["default", "megatron-core", "megatron-2022", "deepspeed", "torchtitan-fsdp2"]


#: Stack presets with no bf16 Adam moments: DeepSpeed's ds_config has no moment dtype (bf16_optimizer_states
#: asserts a bf16 master, runtime/bf16_optimizer.py @ edaa7221), and Megatron-LM of 2022 predates the
#: precision-aware optimizer (--use-precision-aware-optimizer, Megatron-core r0.10).
BF16_MOMENTS_UNSUPPORTED = {
    "deepspeed": "does not have (ds_config has no moment dtype; bf16_optimizer_states asserts a bf16 master)",
    "megatron-2022": "predates (Megatron-core r0.10 added it)",
}


class Stack(BaseModel):
    """Software-stack facts of the training engine (a preset plus overrides)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    preset: PresetName = Field(
        "default",
        description="Named bundle of the fields below (docs/parallel.md, 'Stacks'); fields override it.",
    )
    flash_attention: bool = Field(
        True,
        description="FlashAttention (Dao et al. 2022): no s x s score, softmax or dropout tensors are stored or "
        "moved; off: the materialised softmax of Megatron-LM 2021-22 (Korthikanti et al. 2022, Table 2).",
    )
    attention_kernel: Literal["auto", "flash-attention-2", "cudnn"] = Field(
        "auto",
        description="Which FlashAttention-class kernel: 'flash-attention-2' (Dao 2023; PyTorch SDPA's flash "
        "backend), 'cudnn' (cuDNN fused attention, TransformerEngine's FusedAttention), or 'auto' = "
        "TransformerEngine's choice: cuDNN on Hopper and newer, FlashAttention-2 before (Megatron-core, NeMo).",
    )
    tp_comm_overlap: bool = Field(
        True,
        description="TP all-gather/reduce-scatter overlapped with the adjacent GEMMs (Megatron-core "
        "--tp-comm-overlap, torchtitan async TP); needs sequence parallelism and TP inside one node.",
    )
    overlap_grad_reduce: bool = Field(
        True,
        description="Gradient reduce-scatter/all-reduce overlapped with the backward pass (Megatron "
        "--overlap-grad-reduce, DDP/FSDP buckets); off: the whole DP gradient traffic is exposed.",
    )
    overlap_param_gather: bool = Field(
        True,
        description="ZeRO-1/2: the all-gather of the updated bf16 parameters overlapped with the next forward "
        "pass (Megatron --overlap-param-gather); off: it runs after the optimizer step, fully exposed "
        "(DeepSpeed ZeRO-1/2 gathers there).",
    )
    pipeline_scatter_gather: bool = Field(
        False,
        description="Megatron-LM 2021-22's scatter/gather of pipeline sends across the TP ranks (Narayanan et "
        "al. 2021 §4.1; on unless --no-scatter-gather-tensors-in-pipeline): each rank sends 1/t of the "
        "activation even without sequence parallelism. Megatron-core no longer has it (with SP the sends are "
        "sharded anyway).",
    )
    hidden_dropout: float = Field(
        0.0, ge=0, lt=1, description="Dropout after attention and MLP; > 0 keeps two 1-byte masks per layer."
    )
    attention_dropout: float = Field(
        0.0,
        ge=0,
        lt=1,
        description="Dropout on attention probabilities; without FlashAttention > 0 keeps the mask and the "
        "dropped probabilities (Korthikanti et al. 2022 Table 2: 5as/h instead of 2as/h).",
    )
    selective_recompute: tuple[RecomputeModule, ...] = Field(
        ("layernorm", "mlp_act", "moe_act"),
        description="What recompute = 'selective' recomputes (Megatron-core --recompute-modules names; its own "
        "default is core_attn, the attention core of Korthikanti et al. 2022 §5).",
    )
    full_recompute_method: Literal["uniform", "block"] = Field(
        "uniform",
        description="recompute = 'full': 'uniform' checkpoints the input of every group of "
        "full_recompute_layers layers; 'block' recomputes only the first full_recompute_layers layers of each "
        "stage, or of each virtual chunk with vpp > 1 (Megatron --recompute-method).",
    )
    full_recompute_layers: int = Field(
        1,
        ge=1,
        description="Megatron --recompute-num-layers (layers per group, or per stage for 'block': per virtual chunk with vpp > 1).",
    )
    gradient_dtype: Literal["fp32", "bf16"] = Field(
        "fp32",
        description="Gradient buffer and reduction dtype: fp32 (Megatron's default with bf16, "
        "--accumulate-allreduce-grads-in-fp32) or bf16 (FSDP mixed precision 'pure', NeMo's H100 recipes).",
    )
    optimizer_state_dtype: Literal["fp32", "bf16"] = Field(
        "fp32",
        description="Dtype of Adam's first and second moments (m, v); the master weights stay fp32. fp32: 4 + 4 + "
        "4 bytes of optimizer state per parameter; bf16: 4 + 2 + 2, as DeepSeek-V3 trains (arXiv 2412.19437 "
        "§3.3.3, 'Low-Precision Optimizer States'); Megatron-LM --use-precision-aware-optimizer --exp-avg-dtype "
        "bf16 --exp-avg-sq-dtype bf16 (TransformerEngine FusedAdam, distributed optimizer only), which with bf16 "
        "weights or delayed fp8 keeps the master as its 16 low bits beside the bf16 weight: 2 + 2 + 2 at "
        "ZeRO-1/2 (fused_adam_master).",
    )
    fsdp_mixed_precision: bool = Field(
        False,
        description="PyTorch FSDP/FSDP2 mixed precision (torchtitan, Composer, fms-fsdp): under ZeRO-3 the "
        "sharded fp32 parameters are the optimizer's master copy and keep fp32 gradients, and bf16 weights "
        "exist only in the gathered layers (torch.distributed.fsdp MixedPrecisionPolicy: no extra "
        "high-precision copy). Off: a sharded bf16 copy beside the fp32 master (Megatron, DeepSpeed ZeRO-3). "
        "On, ZeRO-3 is also searched with pipeline stages (torchtitan: FSDP2 under PyTorch pipelining, the "
        "stage kept gathered all step); off, only when both parallel.zero: 3 and parallel.pp are pinned.",
    )
    autocast_fp32_weights: bool = Field(
        False,
        description="Mixed precision by torch.autocast over fp32 parameters (PyTorch Lightning, Hugging Face "
        "Trainer and plain DDP scripts; the FlashAttention training code): parameters and .grad are fp32 and "
        "are the optimizer's master copy (4 + 4 + 8 bytes per parameter, + 2 for the half-precision copies "
        "autocast caches during the forward), and every micro-batch casts each weight to half precision and "
        "adds its gradient back into the fp32 .grad: 24 HBM bytes per parameter per micro-batch, 30 with full "
        "recomputation (docs/parallel.md, Stacks). Off: half-precision weights beside an fp32 master "
        "(Megatron, DeepSpeed) or FSDP mixed precision (fsdp_mixed_precision).",
    )
    precision: Literal["bf16", "fp8"] = Field(
        "bf16",
        description="GEMM input precision of the linear layers (QKV, output projection, MLP, experts): bf16, or "
        "fp8 at the GPU's fp8 tensor-core peak with the casts of fp8_recipe (docs/parallel.md, 'FP8'). "
        "Attention core, norms, the output head and the optimizer stay bf16/fp32 in every recipe.",
    )
    fp8_recipe: Fp8Recipe = Field(
        "tensorwise",
        description="FP8 scaling recipe (precision fp8 only): tensorwise (dynamic per-tensor scale, both "
        "engines), delayed (TransformerEngine amax history), rowwise (torchao), blockwise (TransformerEngine "
        "1x128/128x128 blocks), mxfp8 (32-element blocks, Blackwell).",
    )
    fp8_weight_cache: bool = Field(
        True,
        description="fp8 only: each weight's fp8 copy (and its transpose) is made once per step and reused by every "
        "micro-batch (TransformerEngine under Megatron, is_first_microbatch); off: recast every micro-batch "
        "(torchao Float8Linear, torchtitan).",
    )
    fp8_param_gather: bool = Field(
        False,
        description="fp8 only: the linear layers' weights are kept in fp8 between steps, the optimizer's fp32 "
        "master cast straight into them (Megatron-LM --fp8-param-gather, NeMo fp8_params; TransformerEngine "
        "fp8_model_init): 1 byte per linear weight instead of bf16 plus an fp8 copy, and the parameter "
        "all-gather moves 1 byte per linear weight; the search tries ZeRO >= 1 only (Megatron requires the "
        "distributed optimizer with it). Not with fsdp_mixed_precision (FSDP's fp32 shards are "
        "the master; torchtitan gathers fp8 under ZeRO-3 on its own).",
    )
    cross_entropy: Literal["fused", "unfused"] = Field(
        "fused",
        description="How the loss holds the logits at its peak, bytes per logit (÷t with a vocab-parallel "
        "head). fused: 6, Megatron-core's vocab_parallel_cross_entropy: the bf16 logits beside their fp32 copy, "
        "which becomes the softmax in place (FlashAttention's in-place loss holds 2: over-counted). unfused: 12, PyTorch "
        "F.cross_entropy(logits.float()) uncompiled (torchtitan @ 9dec370: its saved fp32 log-softmax, the "
        "gradient arriving at it and the gradient it passes on); a compiled loss fuses it.",
    )
    fused_elementwise: bool = Field(
        True,
        description="Norms, rotary embedding, MLP activation and residual adds run as fused kernels, one HBM "
        "pass per op (Megatron-core / TransformerEngine fusions, flash-attn's fused training ops, "
        "torch.compile). Off: PyTorch eager, one kernel per primitive (torchtitan and FSDP without "
        "torch.compile: RMSNorm runs as 6 kernels and complex-number RoPE as 3, through fp32), timed with the "
        "bytes those kernels move (timing.ELEMENTWISE_OP_BYTES).",
    )
    distributed_optimizer: bool | None = Field(
        None,
        description="Whether the optimizer states are sharded: true for ZeRO >= 1 (Megatron "
        "--use-distributed-optimizer), false for ZeRO 0 only, unset to search the ZeRO stage.",
    )
    # What the engine can run at all: the search leaves out the rest (a pin still wins, and the exporter says
    # what the engine would do with it), so a preset never ranks first a layout its engine cannot start.
    zero_stages: tuple[Literal[0, 1, 2, 3], ...] | None = Field(
        None,
        description="The ZeRO stages the engine has; None: all four. torchtitan: 0 (DDP) and 3 (FSDP2), it has "
        "no ZeRO-1/2.",
    )
    context_parallel: bool = Field(
        True,
        description="The engine has ring-attention context parallelism (Megatron-core --context-parallel-size, "
        "torchtitan context_parallel_degree); off: CP 1 only (DeepSpeed shards sequences by heads, Ulysses, "
        "which runplan does not time).",
    )
    context_parallel_impl: Literal["transformer-engine", "pytorch"] = Field(
        "transformer-engine",
        description="How CP > 1 runs the ring (docs/parallel.md, CP). 'transformer-engine': Megatron-core's "
        "TransformerEngine CP attention, (c-1) p2p K/V exchanges of the kv/t heads forward and 2x backward, "
        "overlapped with the attention kernel. 'pytorch': PyTorch's context_parallel as torchtitan runs it "
        "(torch/distributed/tensor/experimental/_attention.py @ 0123248a): K/V repeated to all a/t query heads "
        "before SDPA (torchtitan llama/model.py L201-209 @ 9dec370, repeat_kv), the default 'allgather' rotate "
        "method (config_manager.py L365-367 @ 9dec370): one all-gather of the other c-1 shards per layer "
        "forward and one backward, plus c fp32 dK/dV sends (the dK/dV rotater is fixed to all-to-all, float32 "
        "accumulators; test/distributed/tensor/test_attention.py @ 01df9461 counts 1 all-gather forward, 1 + c "
        "backward), waited on at once under torch.compile (not overlapped), and its merges as separate "
        "elementwise kernels (PyTorch eager) or fused (fused_elementwise, torch.compile).",
    )
    kv_repeated_before_attention: bool = Field(
        False,
        description="K and V expanded to all a query heads before the attention kernel, so PyTorch's CP "
        "(context_parallel_impl 'pytorch') exchanges a/t heads per rank instead of kv/t: torchtitan's Llama "
        "until ff0829c (2026-01-27, 'GQA without kv repeats': repeat_kv, llama/model.py L201-209 @ 9dec370; "
        "since then SDPA enable_gqa, v0.2.2 llama3/model/model.py L201). Read by the PyTorch CP exchange only.",
    )
    interleaved_pipeline: bool = Field(
        True,
        description="The engine runs an interleaved pipeline schedule (v > 1: Megatron-core virtual stages, "
        "torchtitan Interleaved1F1B); off: v = 1 only (DeepSpeed's PipelineEngine runs plain 1F1B).",
    )

    @property
    def gradient_bytes(self) -> int:
        return 4 if self.gradient_dtype == "fp32" else 2

    @property
    def moment_bytes(self) -> int:
        """Bytes of each Adam moment per parameter (``optimizer_state_dtype``)."""
        return 4 if self.optimizer_state_dtype == "fp32" else 2

    @property
    def fused_adam_master(self) -> bool:
        """TransformerEngine's FusedAdam holds the fp32 master, as the 16 low bits beside each bf16 weight, wherever
        Megatron's distributed optimizer (ZeRO-1/2) runs these bf16 moments: with bf16 weights or delayed fp8.

        Megatron-LM @ d98e8a64: OptimizerConfig ``use_precision_aware_optimizer_no_fp8_or_ds_fp8`` (fp32 main
        params and no fp8 recipe, or delayed) makes get_megatron_optimizer pass FusedAdam ``master_weights=True``
        and ``store_param_remainders`` (OptimizerConfig default True, no command-line flag; off only with TE <
        2.1), and the distributed optimizer then keeps no fp32 main shard of its own (distrib_optimizer.py:
        "main params are held by FusedAdam"). TransformerEngine @ d0067d0 (optimizers/fused_adam.py) keeps an
        int16 remainder for each bf16 parameter. Other fp8 recipes keep Megatron's fp32 main shard; Megatron
        FSDP (ZeRO-3) sets FusedAdam's ``master_weights`` False (core/optimizer/__init__.py); ZeRO-0 refuses the
        precision-aware optimizer. Memory: memory.model_state_bytes; checkpoint: ops/checkpoint.py."""
        return self.optimizer_state_dtype == "bf16" and (
            self.precision == "bf16" or self.fp8_recipe == "delayed"
        )

    @model_serializer(mode="wrap")
    def _without_unused_recipe(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """A bf16 stack is written without fp8_recipe (it only means something with precision fp8)."""
        data: dict[str, Any] = handler(self)
        if self.precision != "fp8":
            data.pop("fp8_recipe", None)
        return data

    @field_validator("fp8_recipe")
    @classmethod
    def _recipe_needs_fp8(cls, recipe: str, info: ValidationInfo) -> str:
        """A recipe given for a bf16 stack would be silently ignored: say so instead (runs only when given;
        ``precision`` is declared before it, so it is in ``info.data``)."""
        precision = info.data.get("precision", "bf16")
        if precision != "fp8":
            raise ValueError(
                f"{recipe} applies only with precision fp8 (this stack is {precision}); "
                "set precision: fp8 (--precision fp8) or leave the recipe out"
            )
        return recipe

    @field_validator("fp8_param_gather")
    @classmethod
    def _param_gather_needs_fp8(cls, on: bool, info: ValidationInfo) -> bool:
        """fp8 weights without fp8 linear layers mean nothing, and FSDP mixed precision has no bf16 weights to
        replace (``precision`` and ``fsdp_mixed_precision`` are declared before it)."""
        precision = info.data.get("precision", "bf16")
        if on and precision != "fp8":
            raise ValueError(
                f"fp8_param_gather applies only with precision fp8 (this stack is {precision}); "
                "set precision: fp8 (--precision fp8) or leave it out"
            )
        if on and info.data.get("fsdp_mixed_precision"):
            raise ValueError(
                "fp8_param_gather (Megatron's fp8 weights) does not go with fsdp_mixed_precision (FSDP's fp32 "
                "shards are the master copy); drop one of them"
            )
        return on

    @field_validator("distributed_optimizer")
    @classmethod
    def _fp8_weights_need_sharded_optimizer(cls, sharded: bool | None, info: ValidationInfo) -> bool | None:
        """Megatron-LM asserts the distributed optimizer (or an FSDP) with --fp8-param-gather (validate_args,
        megatron/training/arguments.py), so the search tries ZeRO >= 1 only for fp8 weights, while False keeps
        ZeRO 0 only: nothing would be left to search (``fp8_param_gather`` is declared before this field)."""
        if sharded is False and info.data.get("fp8_param_gather"):
            raise ValueError(
                "false (ZeRO-0) does not go with fp8_param_gather: Megatron-LM keeps fp8 weights only with the "
                "distributed optimizer (validate_args); set distributed_optimizer: true or leave it out, or drop "
                "fp8_param_gather"
            )
        return sharded

    @field_validator("selective_recompute")
    @classmethod
    def _op_policy_alone(cls, modules: tuple[str, ...]) -> tuple[str, ...]:
        """``every_other_mm`` is torchtitan's policy for the whole block (memory._every_other_mm_bytes): the
        memory model ignores the per-module units beside it while the time model would rerun them (``mlp``:
        the whole MLP's GEMMs for no memory saved), so only ``moe_act`` (MoE layers, which it leaves alone)
        may go with it."""
        others = [m for m in modules if m not in ("every_other_mm", "moe_act")]
        if "every_other_mm" in modules and others:
            raise ValueError(
                f"every_other_mm (torchtitan's op-level policy for the whole block) does not combine with "
                f"{', '.join(others)}; use every_other_mm alone (or with moe_act), or the other modules without it"
            )
        return modules

    @model_validator(mode="after")
    def _autocast_keeps_fp32_gradients(self) -> Stack:
        """autocast_fp32_weights describes fp32 parameters with fp32 .grad: a bf16 gradient buffer or FSDP's
        mixed precision is another stack, and fp8 linears are TransformerEngine's or torchao's recipes."""
        if self.autocast_fp32_weights:
            clash = _those_set(
                ("gradient_dtype bf16", self.gradient_dtype != "fp32"),
                ("fsdp_mixed_precision", self.fsdp_mixed_precision),
                ("precision fp8", self.precision == "fp8"),
            )
            if clash:
                raise ValueError(
                    f"autocast_fp32_weights (fp32 parameters and .grad under torch.autocast) does not go with "
                    f"{', '.join(clash)}; drop one of them"
                )
        return self

    @model_validator(mode="after")
    def _bf16_moments_beside_an_fp32_master(self) -> Stack:
        """bf16 moments beside an fp32 master are Megatron's precision-aware optimizer (TransformerEngine FusedAdam);
        where the fp32 parameters are the master (FSDP mixed precision, autocast) the optimizer is torch.optim's
        AdamW, whose moments take the parameter's dtype (torchtitan 0.2.2's [optimizer] has no state dtype)."""
        if self.optimizer_state_dtype == "bf16":
            clash = _those_set(
                ("fsdp_mixed_precision", self.fsdp_mixed_precision),
                ("autocast_fp32_weights", self.autocast_fp32_weights),
            )
            if clash:
                raise ValueError(
                    f"optimizer_state_dtype bf16 (Megatron's precision-aware optimizer, beside an fp32 master) does "
                    f"not go with {', '.join(clash)} (torch AdamW keeps its moments in the fp32 parameters' dtype); "
                    "drop one of them"
                )
            if (
                self.distributed_optimizer is False
            ):  # Megatron asserts it (core/optimizer/__init__.py @ d98e8a64)
                raise ValueError(
                    "optimizer_state_dtype bf16 needs Megatron's distributed optimizer (its precision-aware "
                    "optimizer asserts it); set distributed_optimizer: true or leave it out"
                )
            if self.preset in BF16_MOMENTS_UNSUPPORTED:
                raise ValueError(
                    f"optimizer_state_dtype bf16 is Megatron-core's precision-aware optimizer, which preset "
                    f"{self.preset} {BF16_MOMENTS_UNSUPPORTED[self.preset]}; plan it with preset megatron-core"
                )
        return self

    @model_validator(mode="before")
    @classmethod
    def _preset_defaults(cls, value: Any) -> Any:
        """Fill the fields a preset sets and the input does not."""
        if isinstance(value, str):
            value = {"preset": value}
        if isinstance(value, dict) and "preset" in value:
            name = value["preset"]
            if not isinstance(name, str) or name not in PRESETS:  # a list is unhashable: no `in` on it
                return value  # the Literal check names the allowed presets
            return {**PRESETS[name], **value}
        return value


def _those_set(*settings: tuple[str, bool]) -> list[str]:
    """The names of the settings that are on, in order: what a validator lists as clashing."""
    return [name for name, on in settings if on]


def _load_presets() -> dict[str, dict[str, Any]]:
    """The shipped presets, ``configs/stacks.yaml`` (package data ``runplan/configs``): a mapping of preset name
    to the Stack fields it sets, each with the engine defaults it copies cited in the file."""
    from importlib import resources

    from runplan.yamlio import load_yaml_text

    text = resources.files("runplan").joinpath("configs", "stacks.yaml").read_text("utf-8")
    presets = load_yaml_text(text, "runplan/configs/stacks.yaml").data["presets"]
    return {
        name: {key: tuple(v) if isinstance(v, list) else v for key, v in (fields or {}).items()}
        for name, fields in presets.items()
    }


#: Engine defaults each preset copies (fields not named keep the Stack defaults above), from configs/stacks.yaml.
PRESETS: dict[str, dict[str, Any]] = _load_presets()


def resolve_stack(value: Stack | str | dict[str, Any] | None, *, where: str = "stack") -> Stack:
    """A Stack from a preset name, a mapping or a Stack; an unknown preset is a SpecError naming ``where``."""
    if isinstance(value, Stack):
        return value
    if isinstance(value, str) and value not in PRESETS:
        raise SpecError(
            f"unknown stack preset '{value}'", where=where, hint=f"use one of {', '.join(PRESETS)}"
        )
    return Stack.model_validate(value or {})
