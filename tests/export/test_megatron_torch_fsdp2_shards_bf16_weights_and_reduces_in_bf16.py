"""Megatron's PyTorch FSDP2 path (``--use-torch-fsdp2``, the export of a ZeRO-3 plan with ``fsdp_mixed_precision``)
is not FSDP2 mixed precision as torchtitan runs it (Megatron-LM d98e8a64):

* ``get_model`` wraps the model in ``Float16Module`` (bf16 parameters) before ``torch_FSDP`` shards it
  (megatron/training/training.py), and ``TorchFullyShardedDataParallel`` calls ``fully_shard`` with no
  ``mp_policy`` (megatron/core/distributed/torch_fully_sharded_data_parallel.py): the shards are bf16 and the
  gradients are reduce-scattered in bf16, whatever ``--grad-reduce-in-bf16`` says
  (``TorchFullyShardedDataParallelConfig`` carries only ``reshard_after_forward``, training.py
  ``get_megatron_ddp_config``);
* the optimizer is ``Float16OptimizerWithFloat16Params`` (no distributed optimizer with FSDP2,
  megatron/core/optimizer/__init__.py), which clones an fp32 master of every bf16 shard
  (``param.detach().clone().float()``, megatron/core/optimizer/optimizer.py).

So the script must not say "fp32 shards are the master copy", and the export warns: 2 bytes per parameter more
than the plan's fp32 shards (a bf16 shard beside its fp32 master), and, for gradient_dtype fp32, bf16 reduction.
"""

from tests.export._plans import golden_plan, parse_script_args, rebalanced

from runplan.export import export_plan

LLAMA_31_70B_PARAMS = 70_553_706_496  # catalog llama-3.1-70b total (Meta's config.json shapes)


def _fsdp2_70b(**stack):
    """The 70B plan without pipeline stages as ZeRO-3 with FSDP mixed precision: t 8, d 64, c 1."""
    plan = rebalanced(golden_plan("70b-512-h100"), pp=1, vpp=1, tp=8, zero=3)
    assert (plan.layout.best.tp, plan.layout.best.dp, plan.layout.best.cp) == (8, 64, 1)
    return plan.model_copy(
        update={"inputs": {**plan.inputs, "stack": {"fsdp_mixed_precision": True, **stack}}}
    )


def _fsdp2_warning(result) -> str:
    found = [w for w in result.warnings if w.startswith("FSDP2:")]
    assert len(found) == 1, result.warnings
    return found[0]


def test_the_fsdp2_comment_does_not_call_the_shards_the_fp32_master():
    text = export_plan(_fsdp2_70b(), "megatron").text
    assert "--use-torch-fsdp2" in parse_script_args(text)
    line = next(line for line in text.splitlines() if "--use-torch-fsdp2" in line)
    assert "fp32 shards are the master" not in line
    assert "bf16" in line


def test_fsdp2_warns_of_the_bf16_shard_beside_the_fp32_master_and_the_bf16_reduction():
    plan = _fsdp2_70b()
    warning = _fsdp2_warning(export_plan(plan, "megatron"))
    # 2 bytes per parameter of the TP rank (all 80 layers, embedding and head ÷ t = 8), sharded over d·c = 64
    extra = 2 * LLAMA_31_70B_PARAMS / 8 / 64
    assert f"{extra / 1e9:.1f} GB per GPU" in warning
    # the plan's total plus that, against its limit: 80 GB × (1 − 0.05 headroom) = 76.0 GB
    total = float(plan.layout.best.memory_bytes.total) + extra
    assert f"({total / 1e9:.1f} GB against the plan's limit of 76.0 GB)" in warning
    assert "Float16OptimizerWithFloat16Params" in warning and "fully_shard" in warning
    assert "reduce-scattered in bf16" in warning and "gradient_dtype" in warning


def test_fsdp2_with_bf16_gradients_warns_of_the_master_only():
    warning = _fsdp2_warning(export_plan(_fsdp2_70b(gradient_dtype="bf16"), "megatron"))
    assert "reduce-scattered in bf16" not in warning
    assert "Float16OptimizerWithFloat16Params" in warning


def test_megatron_fsdp_without_fsdp_mixed_precision_gets_no_fsdp2_warning():
    plan = rebalanced(golden_plan("70b-512-h100"), pp=1, vpp=1, tp=8, zero=3)
    result = export_plan(plan, "megatron")
    assert "--use-megatron-fsdp" in parse_script_args(result.text)
    assert not [w for w in result.warnings if w.startswith("FSDP2:")]
