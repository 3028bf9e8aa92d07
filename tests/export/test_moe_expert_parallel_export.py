"""How each exporter lays out an MoE plan's expert parallelism, checked against the engine's own rules:
torchtitan 0.2.2 builds the experts' mesh (pp, dp_replicate, efsdp, ep, etp) with
efsdp = dp_shard·cp·tp/(etp·ep) and defaults etp to 1 (distributed/parallel_dims.py, config/job_config.py), while
the plan splits each expert over the TP ranks (ETP = TP: parallel/memory.py divides the experts by t·e);
Megatron-core's default ETP is TP (megatron/training/arguments.py: expert_tensor_parallel_size = tensor size)."""

import tomllib

import pytest
from tests.export._plans import golden_plan, parse_script_args, rebalanced

from runplan.errors import SpecError
from runplan.export import export_plan


def _mixtral(**layout):
    # 256 GPUs: t 1, c 1, d 256, e 8, ZeRO-1 (pinned: the plan's own layout has c = 2, d = 128); d = 256 / (t·c)
    # and m = 3,072 / d unless given: t 2 is d 128, m 24; c 8 is d 32, m 96
    return rebalanced(golden_plan("moe-mixtral-8x7b"), **{"cp": 1, **layout})


def _torchtitan_efsdp(par: dict) -> float:
    """torchtitan 0.2.2 ParallelDims.build_mesh: the experts' FSDP degree (must be a whole number >= 1)."""
    etp = par.get("expert_tensor_parallel_degree", 1)
    fsdp = par["data_parallel_shard_degree"] * par["context_parallel_degree"]
    return fsdp * par["tensor_parallel_degree"] / (etp * par["expert_parallel_degree"])


def test_torchtitan_splits_each_expert_over_tp_as_planned():
    # without expert_tensor_parallel_degree torchtitan used ETP 1: whole experts on every TP rank, t times the
    # expert weights, gradients and optimizer state the plan counted
    plan = _mixtral(tp=2, dp=128, sequence_parallel=True)
    par = tomllib.loads(export_plan(plan, "torchtitan").text)["parallelism"]
    assert par["expert_parallel_degree"] == 8 and par["expert_tensor_parallel_degree"] == 2
    # the experts' data-parallel group is the plan's d·c/e = 128/8
    assert _torchtitan_efsdp(par) == 16


def test_torchtitan_writes_no_expert_tp_without_tp():
    par = tomllib.loads(export_plan(_mixtral(), "torchtitan").text)["parallelism"]
    assert "expert_tensor_parallel_degree" not in par and _torchtitan_efsdp(par) == 256 / 8


def test_torchtitan_refuses_expert_parallelism_over_ddp_replicas():
    # ZeRO-0 exports DDP (dp_shard 1): efsdp = 1·1·1/(1·8) is no mesh; torchtitan stops at start-up
    with pytest.raises(SpecError, match="ep = 8 does not divide cp = 1") as info:
        export_plan(_mixtral(zero=0), "torchtitan")
    assert info.value.where == "parallel.zero" and "\n" not in str(info.value)
    assert "parallel.zero: 3" in info.value.hint


def test_torchtitan_takes_expert_parallelism_from_context_ranks_under_ddp():
    par = tomllib.loads(export_plan(_mixtral(zero=0, cp=8, dp=32), "torchtitan").text)["parallelism"]
    assert par["data_parallel_replicate_degree"] == 32 and _torchtitan_efsdp(par) == 1


def test_megatron_leaves_expert_tp_at_its_default_of_tp():
    args = parse_script_args(export_plan(_mixtral(tp=2, dp=128, sequence_parallel=True), "megatron").text)
    assert args[args.index("--expert-model-parallel-size") + 1] == "8"
    assert args[args.index("--tensor-model-parallel-size") + 1] == "2"
    assert "--expert-tensor-parallel-size" not in args  # None -> tensor_model_parallel_size
    for flag, value in (
        ("--num-experts", "8"),
        ("--moe-router-topk", "2"),
        ("--moe-ffn-hidden-size", "14336"),
    ):
        assert args[args.index(flag) + 1] == value
    assert "--moe-grouped-gemm" in args


def test_deepspeed_names_the_moe_layer_arguments_the_plan_needs():
    # deepspeed.moe.layer.MoE (v0.19.5) defaults: k=1, drop_tokens=True at capacity_factor 1.0, experts not split
    # over TP; the export said only "set ep_size=8", which builds top-1 experts that drop tokens
    plan = _mixtral(tp=2, dp=128, sequence_parallel=True)
    (warning,) = [w for w in export_plan(plan, "deepspeed").warnings if w.startswith("expert parallel:")]
    assert (
        "MoE(num_experts=8, ep_size=8, k=2, drop_tokens=False, enable_expert_tensor_parallelism=True)"
        in warning
    )
    assert "experts whole on each of the 2 TP ranks" in warning


def test_deepspeed_says_its_native_moe_layer_stops_under_zero3():
    # DeepSpeed runtime/engine.py (v0.19.5) _validate_zero3_moe_compatibility raises for deepspeed.moe.layer.MoE
    # under ZeRO-3; the export told the user to build exactly that layer
    (zero1,) = [w for w in export_plan(_mixtral(), "deepspeed").warnings if w.startswith("expert parallel:")]
    assert zero1.startswith(
        "expert parallel: build the experts as deepspeed.moe.layer.MoE(num_experts=8, ep_size=8, k=2, "
        "drop_tokens=False) in the model code"
    )
    (zero3,) = [
        w for w in export_plan(_mixtral(zero=3), "deepspeed").warnings if w.startswith("expert parallel:")
    ]
    assert (
        "not supported with ZeRO Stage 3" in zero3 and "AutoEP" in zero3 and "parallel.zero: 1 or 2" in zero3
    )


def _with_stack(plan, **stack):
    return plan.model_copy(update={"inputs": {**plan.inputs, "stack": stack}})


def test_megatron_refuses_delayed_fp8_with_the_moe_selective_recompute():
    # Megatron-core @ 000c4ac2 TransformerConfig: "Delayed scaling does not support moe_act and layernorm
    # recompute for fp8" (ValueError at start-up); the export wrote --fp8-recipe delayed with
    # --recompute-modules layernorm moe_act
    plan = _mixtral(recompute="selective")
    with pytest.raises(SpecError, match="layernorm and moe_act") as info:
        export_plan(_with_stack(plan, precision="fp8", fp8_recipe="delayed"), "megatron")
    assert info.value.where == "stack.fp8_recipe" and "\n" not in str(info.value)
    args = parse_script_args(
        export_plan(_with_stack(plan, precision="fp8", fp8_recipe="tensorwise"), "megatron").text
    )
    assert args[args.index("--fp8-recipe") + 1] == "tensorwise" and "moe_act" in args
