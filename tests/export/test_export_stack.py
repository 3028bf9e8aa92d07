"""Exports write the plan's training stack as engine flags, and refuse what an engine cannot do (issue 12)."""

import pytest
from tests.export._plans import golden_plan, parse_script_args, with_layout

from runplan.errors import SpecError
from runplan.export import export_plan


def _with_stack(plan, **stack):
    return plan.model_copy(update={"inputs": {**plan.inputs, "stack": stack}})


def _megatron_args(plan) -> list[str]:
    return parse_script_args(export_plan(plan, "megatron").text)


def _value(args: list[str], flag: str) -> list[str]:
    i = args.index(flag)
    out = []
    for item in args[i + 1 :]:
        if item.startswith("--"):
            break
        out.append(item)
    return out


def test_megatron_2022_stack_becomes_unfused_attention_dropout_and_core_attn():
    plan = _with_stack(golden_plan("70b-512-h100"), preset="megatron-2022")
    args = _megatron_args(plan)
    assert _value(args, "--attention-backend") == ["unfused"]
    assert _value(args, "--attention-dropout") == ["0.1"] and _value(args, "--hidden-dropout") == ["0.1"]
    assert _value(args, "--recompute-modules") == ["core_attn"]  # the plan's best layout is selective
    assert "--tp-comm-overlap" not in args  # the stack does not overlap TP


def test_default_stack_is_flash_with_tp_overlap_and_fp32_grads():
    args = _megatron_args(golden_plan("70b-512-h100"))
    assert _value(args, "--attention-backend") == ["flash"]
    assert "--tp-comm-overlap" in args and "--grad-reduce-in-bf16" not in args


def test_megatron_core_stack_reduces_in_bf16():
    args = _megatron_args(_with_stack(golden_plan("70b-512-h100"), preset="megatron-core"))
    assert "--grad-reduce-in-bf16" in args and "--overlap-grad-reduce" in args


def test_full_recompute_method_and_layers_come_from_the_stack():
    plan = with_layout(golden_plan("70b-512-h100"), recompute="full")
    args = _megatron_args(_with_stack(plan, full_recompute_method="block", full_recompute_layers=4))
    assert _value(args, "--recompute-method") == ["block"] and _value(args, "--recompute-num-layers") == ["4"]


def test_megatron_refuses_pipeline_scatter_gather_without_sp_in_one_line():
    plan = with_layout(golden_plan("70b-512-h100"), sequence_parallel=False)
    with pytest.raises(SpecError, match="scatter pipeline sends") as info:
        export_plan(_with_stack(plan, preset="megatron-2022"), "megatron")
    assert info.value.where == "stack.pipeline_scatter_gather"


def test_torchtitan_refuses_dropout_and_follows_tp_overlap():
    plan = golden_plan("70b-512-h100")
    with pytest.raises(SpecError, match="no dropout") as info:
        export_plan(_with_stack(plan, hidden_dropout=0.1), "torchtitan")
    assert info.value.where == "stack.hidden_dropout"
    text = export_plan(_with_stack(plan, tp_comm_overlap=False), "torchtitan").text
    assert "enable_async_tensor_parallel" not in text
    assert "enable_async_tensor_parallel = true" in export_plan(plan, "torchtitan").text
    bf16 = export_plan(_with_stack(plan, gradient_dtype="bf16"), "torchtitan").text
    assert 'mixed_precision_reduce = "bfloat16"' in bf16


def test_megatron_runs_fsdp_mixed_precision_as_torch_fsdp2_and_refuses_it_with_pipelines():
    fsdp = _with_stack(
        with_layout(golden_plan("70b-512-h100"), zero=3, pp=1, vpp=1), fsdp_mixed_precision=True
    )
    args = _megatron_args(fsdp)
    assert "--use-torch-fsdp2" in args and "--no-gradient-accumulation-fusion" in args
    assert "--use-megatron-fsdp" not in args and _value(args, "--ckpt-format") == ["torch_dist"]
    assert "CUDA_DEVICE_MAX_CONNECTIONS=1" not in export_plan(fsdp, "megatron").text
    # without the stack fact, ZeRO-3 stays Megatron FSDP (bf16 shards beside the fp32 master)
    megatron_fsdp = _megatron_args(_with_stack(with_layout(golden_plan("70b-512-h100"), zero=3, pp=1, vpp=1)))
    assert "--use-megatron-fsdp" in megatron_fsdp and "--use-torch-fsdp2" not in megatron_fsdp
    piped = _with_stack(with_layout(golden_plan("70b-512-h100"), zero=3), fsdp_mixed_precision=True)
    with pytest.raises(SpecError, match="pipeline parallelism") as info:
        export_plan(piped, "megatron")
    assert info.value.where == "stack.fsdp_mixed_precision"
