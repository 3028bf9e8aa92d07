"""Exports write the plan's training stack as engine flags, and refuse what an engine cannot do (issue 12)."""

import tomllib

import pytest
from tests.export._plans import golden_plan, parse_script_args, rebalanced, with_layout

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


def test_default_stack_is_te_attention_with_tp_overlap_and_fp32_grads():
    args = _megatron_args(golden_plan("70b-512-h100"))
    assert _value(args, "--attention-backend") == ["auto"]  # TransformerEngine picks (cuDNN on Hopper)
    assert "--tp-comm-overlap" in args and "--grad-reduce-in-bf16" not in args


@pytest.mark.parametrize(("kernel", "backend"), [("flash-attention-2", "flash"), ("cudnn", "fused")])
def test_attention_kernel_becomes_megatron_attention_backend(kernel, backend):
    args = _megatron_args(_with_stack(golden_plan("70b-512-h100"), attention_kernel=kernel))
    assert _value(args, "--attention-backend") == [backend]


def test_torchtitan_warns_when_the_plan_timed_cudnn_attention():
    plan = golden_plan("70b-512-h100")  # H100, default stack: attention_kernel auto = cuDNN on Hopper
    assert any("cuDNN" in w for w in export_plan(plan, "torchtitan").warnings)
    fa2 = _with_stack(plan, attention_kernel="flash-attention-2")
    assert not any("cuDNN" in w for w in export_plan(fa2, "torchtitan").warnings)


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
    assert 'mixed_precision_reduce = "float32"' in bf16  # torchtitan's only choice (warned)


def _flat_70b(**changes):
    """The 70B plan without pipeline stages: p 1, v 1 and t 8 keep d = 512 / 8 = 64 and m = 83."""
    plan = rebalanced(golden_plan("70b-512-h100"), pp=1, vpp=1, tp=8, **changes)
    assert (plan.layout.best.dp, plan.layout.best.microbatches) == (64, 83)
    return plan


def _tp1_70b():
    """The 70B plan without tensor parallelism (no SP): t 1 and p 8 keep d = 512 / 8 = 64 and m = 83."""
    plan = rebalanced(golden_plan("70b-512-h100"), tp=1, pp=8, sequence_parallel=False)
    assert (plan.layout.best.dp, plan.layout.best.microbatches) == (64, 83)
    return plan


def test_megatron_runs_fsdp_mixed_precision_as_torch_fsdp2_and_refuses_it_with_pipelines():
    fsdp = _with_stack(_flat_70b(zero=3), fsdp_mixed_precision=True)
    args = _megatron_args(fsdp)
    assert "--use-torch-fsdp2" in args and "--no-gradient-accumulation-fusion" in args
    assert "--use-megatron-fsdp" not in args and _value(args, "--ckpt-format") == ["torch_dist"]
    assert "CUDA_DEVICE_MAX_CONNECTIONS=1" not in export_plan(fsdp, "megatron").text
    # without the stack fact, ZeRO-3 stays Megatron FSDP (bf16 shards beside the fp32 master)
    megatron_fsdp = _megatron_args(_with_stack(_flat_70b(zero=3)))
    assert "--use-megatron-fsdp" in megatron_fsdp and "--use-torch-fsdp2" not in megatron_fsdp
    piped = _with_stack(with_layout(golden_plan("70b-512-h100"), zero=3), fsdp_mixed_precision=True)
    with pytest.raises(SpecError, match="pipeline parallelism") as info:
        export_plan(piped, "megatron")
    assert info.value.where == "stack.fsdp_mixed_precision"
    # Megatron's validate_args: FSDP2 runs without expert parallelism only
    experts = _with_stack(
        with_layout(golden_plan("moe-mixtral-8x7b"), zero=3, pp=1, vpp=1, ep=8), fsdp_mixed_precision=True
    )
    with pytest.raises(SpecError, match="expert parallelism"):
        export_plan(experts, "megatron")


# ---------------------------------------------------------------- fp8 (stack precision) -----------------------
def _flat_toml(doc: dict, prefix: str = "") -> dict[str, dict]:
    """TOML tables by dotted name ([quantize.linear.float8] nests three deep in tomllib's output)."""
    out: dict[str, dict] = {}
    leaves = {k: v for k, v in doc.items() if not isinstance(v, dict)}
    if prefix:
        out[prefix] = leaves
    for key, value in doc.items():
        if isinstance(value, dict):
            out.update(_flat_toml(value, f"{prefix}.{key}" if prefix else key))
    return out


@pytest.mark.parametrize(
    ("recipe", "fmt"), [("tensorwise", "hybrid"), ("delayed", "hybrid"), ("blockwise", "e4m3")]
)
def test_megatron_fp8_flags_parse_with_the_checked_in_arguments(recipe, fmt):
    from tests.export.test_export_keys import megatron_args

    a = megatron_args(_with_stack(golden_plan("70b-512-h100"), precision="fp8", fp8_recipe=recipe))
    assert a.fp8 == fmt and a.fp8_recipe == recipe and a.bf16


def test_megatron_bf16_plan_has_no_fp8_flags_and_rowwise_is_refused():
    assert "--fp8-format" not in _megatron_args(golden_plan("70b-512-h100"))
    plan = _with_stack(golden_plan("70b-512-h100"), precision="fp8", fp8_recipe="rowwise")
    with pytest.raises(SpecError, match="no 'rowwise' fp8 recipe") as info:
        export_plan(plan, "megatron")
    assert info.value.where == "stack.fp8_recipe"


def test_torchtitan_fp8_keys_are_in_the_checked_in_job_config():
    import tomllib

    from runplan.export._common import engine_data

    sections = engine_data("torchtitan_keys")["sections"]
    plan = _with_stack(golden_plan("70b-512-h100"), precision="fp8", fp8_recipe="rowwise")
    tables = _flat_toml(tomllib.loads(export_plan(plan, "torchtitan").text))
    assert tables["model"]["converters"] == ["quantize.linear.float8"]
    assert tables["quantize.linear.float8"] == {"recipe_name": "rowwise", "filter_fqns": ["output"]}
    assert "rowwise" in sections["quantize.linear.float8"]["recipe_name"]["choices"]
    assert tables["compile"]["enable"] is True  # torchtitan's float8 needs torch.compile to be fast
    for name, values in tables.items():
        assert set(values) <= set(sections[name]), name


def test_torchtitan_tensorwise_under_fsdp_gathers_fp8_weights_and_refuses_delayed():
    import tomllib

    plan = with_layout(golden_plan("70b-512-h100"), zero=3)
    tables = _flat_toml(tomllib.loads(export_plan(_with_stack(plan, precision="fp8"), "torchtitan").text))
    # torchtitan asserts recipe_name and the fp8 all-gather are not both set
    assert tables["quantize.linear.float8"] == {
        "enable_fsdp_float8_all_gather": True,
        "precompute_float8_dynamic_scale_for_fsdp": True,
        "filter_fqns": ["output"],  # the head stays bf16 (the time model's assumption)
    }
    with pytest.raises(SpecError, match="no 'delayed' fp8 recipe") as info:
        export_plan(_with_stack(plan, precision="fp8", fp8_recipe="delayed"), "torchtitan")
    assert info.value.where == "stack.fp8_recipe"


def test_fp8_weights_are_megatrons_fp8_param_gather_and_refused_where_they_cannot_be():
    from tests.export.test_export_keys import megatron_args

    plan = _with_stack(
        golden_plan("70b-512-h100"), precision="fp8", fp8_recipe="delayed", fp8_param_gather=True
    )
    assert megatron_args(plan).fp8_param_gather  # parses with the checked-in Megatron-LM arguments
    assert "--fp8-param-gather" not in _megatron_args(_with_stack(plan, precision="fp8"))
    # Megatron's validate_args: fp8 weights only with the distributed optimizer or an FSDP
    with pytest.raises(SpecError, match="only with the distributed optimizer") as info:
        export_plan(with_layout(plan, zero=0), "megatron")
    assert info.value.where == "stack.fp8_param_gather" and "\n" not in str(info.value)
    with pytest.raises(SpecError, match="keeps no fp8 weights") as info:
        export_plan(_with_stack(plan, precision="fp8", fp8_param_gather=True), "torchtitan")
    assert info.value.where == "stack.fp8_param_gather"


def test_deepspeed_refuses_fp8_in_one_line():
    plan = _with_stack(golden_plan("70b-512-h100"), precision="fp8")
    with pytest.raises(SpecError, match="no fp8 training key") as info:
        export_plan(plan, "deepspeed")
    assert info.value.where == "stack.precision" and "\n" not in str(info.value)


def test_parameter_gather_overlap_follows_the_stack():
    plan = with_layout(golden_plan("70b-512-h100"), zero=1)
    assert "--overlap-param-gather" in _megatron_args(plan)
    assert "--overlap-param-gather" not in _megatron_args(_with_stack(plan, overlap_param_gather=False))
    flat = _flat_70b(zero=1)  # DeepSpeed's pipeline engine is refused with ZeRO >= 2 only
    assert any("parameter all-gather" in w for w in export_plan(flat, "deepspeed").warnings)
    quiet = export_plan(_with_stack(flat, preset="deepspeed"), "deepspeed").warnings
    assert not any("parameter all-gather" in w for w in quiet)
    # Megatron's validate_args: --overlap-param-gather needs --overlap-grad-reduce; without the reduction's
    # overlap the plan's window is empty, so the gather flag is left out (same step time either way)
    lone = _megatron_args(_with_stack(plan, overlap_grad_reduce=False))
    assert "--overlap-grad-reduce" not in lone and "--overlap-param-gather" not in lone


def test_deepspeed_warns_that_it_keeps_the_bf16_shard_fsdp_did_not_count():
    plan = _with_stack(_flat_70b(zero=3), fsdp_mixed_precision=True)
    warnings = export_plan(plan, "deepspeed").warnings
    assert any("DeepSpeed keeps a bf16 shard beside its fp32 master" in w for w in warnings)
    plain = _with_stack(_flat_70b(zero=3))
    assert not any("bf16 shard" in w for w in export_plan(plain, "deepspeed").warnings)


def test_torchtitan_warns_when_the_plan_cached_fp8_weights_torchao_recasts():
    plan = _with_stack(
        golden_plan("70b-512-h100"), precision="fp8"
    )  # default stack: the TransformerEngine cache
    assert any("torchao recasts each weight" in w for w in export_plan(plan, "torchtitan").warnings)
    recast = _with_stack(golden_plan("70b-512-h100"), precision="fp8", fp8_weight_cache=False)
    assert not any("torchao recasts" in w for w in export_plan(recast, "torchtitan").warnings)


def test_torchtitan_zero12_under_pipeline_stages_is_the_held_stage():
    # FSDP2 under PyTorch pipelining keeps the stage gathered and its gradients unsharded until the last
    # micro-batch (the plan's ZeRO-3 with stages): no per-micro-batch gathers, and ZeRO-2's sharded gradients
    # do not hold there; without stages the old reading (gathered from forward to backward, like ZeRO-2) stays
    base = golden_plan("405b-16k-h100-8k")
    assert base.layout.best.pp == 16 and base.layout.best.zero == 1

    def warning(plan) -> str:
        (found,) = [w for w in export_plan(plan, "torchtitan").warnings if w.startswith("ZeRO-")]
        return found

    zero1 = warning(base)
    assert "keeps the stage gathered and its gradients unsharded" in zero1
    assert "did not time" not in zero1 and "under-count" not in zero1
    assert "under-count" in warning(with_layout(base, zero=2))
    # p 1 (v 1): d = 16,384 / (8·2) = 1,024 and m = 2,048 / 1,024 = 2
    flat = rebalanced(base, pp=1, vpp=1)
    assert (flat.layout.best.dp, flat.layout.best.microbatches) == (1024, 2)
    assert "like ZeRO-2" in warning(flat)


@pytest.mark.parametrize("preset", ["torchtitan-fsdp2", "megatron-core"])
def test_torchtitan_reduces_in_float32_only(preset):
    # torchtitan (@ 9dec370 and 0.2.2) types mixed_precision_reduce as Literal["float32"]: a bf16 value is refused
    # at start-up, so the torchtitan preset reduces in fp32 and a bf16-gradient plan exports float32 with a warning
    import tomllib

    from runplan.export._common import engine_data
    from runplan.parallel.stack import Stack

    assert Stack(preset="torchtitan-fsdp2").gradient_dtype == "fp32"
    result = export_plan(_with_stack(golden_plan("70b-512-h100"), preset=preset), "torchtitan")
    value = tomllib.loads(result.text)["training"]["mixed_precision_reduce"]
    assert (
        value in engine_data("torchtitan_keys")["sections"]["training"]["mixed_precision_reduce"]["choices"]
    )
    bf16 = Stack(preset=preset).gradient_dtype == "bf16"
    assert any("reduces gradients in float32 only" in w for w in result.warnings) == bf16


def test_torchtitan_export_without_compile_warns_of_the_unfused_loss():
    # torchtitan compiles its loss only under [compile] (components ["model", "loss"]); without it
    # F.cross_entropy(pred.float()) holds 12 bytes per logit where a fused-loss plan counted 6
    # (stack.LOSS_LOGIT_BYTES): 6 · b · s/c · V/t more on the last stage
    # no async TP, eager elementwise kernels: nothing asks for [compile]
    plan = _with_stack(_tp1_70b(), fused_elementwise=False)
    lay = plan.layout.best
    assert (lay.cp, lay.micro_batch) == (1, 1)
    text_and_warnings = export_plan(plan, "torchtitan")
    assert "\n[compile]\n" not in text_and_warnings.text
    (loss,) = [w for w in text_and_warnings.warnings if w.startswith("loss:")]
    extra = 6 * lay.micro_batch * 4096 * 128256
    from runplan.export._common import fmt_bytes

    assert f"{fmt_bytes(extra)} more on the last stage" in loss
    assert not [
        w
        for w in export_plan(_with_stack(plan, preset="torchtitan-fsdp2"), "torchtitan").warnings
        if w.startswith("loss:")
    ]
    assert not [
        w for w in export_plan(golden_plan("70b-512-h100"), "torchtitan").warnings if w.startswith("loss:")
    ]


def test_fused_elementwise_turns_torchtitan_compile_on_and_megatron_warns_when_off():
    # the plan timed fused norms, activations and RoPE: torchtitan fuses them only under torch.compile
    plan = _tp1_70b()  # no async TP, bf16
    fused = export_plan(plan, "torchtitan").text
    assert "\n[compile]\n" in fused and "stack fused_elementwise" in fused
    eager = export_plan(_with_stack(plan, fused_elementwise=False), "torchtitan").text
    assert "\n[compile]\n" not in eager
    # the loss is compiled only when the plan counted it fused (torchtitan's preset counts it unfused)
    doc = tomllib.loads(
        export_plan(_with_stack(plan, preset="torchtitan-fsdp2", fused_elementwise=True), "torchtitan").text
    )
    assert doc["compile"] == {"enable": True, "components": ["model"]}
    assert tomllib.loads(fused)["compile"]["components"] == ["model", "loss"]
    # an eager plan that needs compile for async TP still gets it, with a warning that it will run faster
    async_tp = golden_plan("70b-512-h100")  # TP 4 with TP overlap: async TP
    warned_compile = export_plan(_with_stack(async_tp, fused_elementwise=False), "torchtitan").warnings
    assert [w for w in warned_compile if w.startswith("compile:")]
    assert not [w for w in export_plan(async_tp, "torchtitan").warnings if w.startswith("compile:")]
    # Megatron-core always fuses them: an eager plan over-states its step time, said in one warning
    warned = export_plan(_with_stack(plan, fused_elementwise=False), "megatron").warnings
    assert [w for w in warned if w.startswith("elementwise:")]
    assert not [w for w in export_plan(plan, "megatron").warnings if w.startswith("elementwise:")]


@pytest.mark.parametrize("engine", ["megatron", "torchtitan", "deepspeed"])
def test_no_engine_exports_autocast_over_fp32_weights(engine):
    """Megatron, DeepSpeed's bf16 mode and torchtitan's FSDP2 all keep half-precision weights beside an fp32
    master: a plan timed for torch.autocast over fp32 weights is refused in one line naming the stack key."""
    plan = _with_stack(golden_plan("70b-512-h100"), autocast_fp32_weights=True)
    with pytest.raises(SpecError, match="autocast over fp32 weights") as info:
        export_plan(plan, engine)
    assert info.value.where == "stack.autocast_fp32_weights" and "\n" not in str(info.value)
