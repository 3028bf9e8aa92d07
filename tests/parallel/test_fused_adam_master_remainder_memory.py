"""bf16 Adam moments under Megatron's distributed optimizer (ZeRO-1/2) with bf16 weights or delayed fp8: the fp32
master is held by TransformerEngine's FusedAdam as its 16 low bits beside the bf16 weight, 2 + 2 + 2 = 6 bytes of
optimizer state per parameter instead of 4 + 2 + 2 = 8 (memory.model_state_bytes, Stack.fused_adam_master).

Sources, read at Megatron-LM d98e8a64 and TransformerEngine d0067d0:
* megatron/core/optimizer/optimizer_config.py: ``store_param_remainders: bool = True`` (no command-line flag);
  ``use_precision_aware_optimizer_no_fp8_or_ds_fp8`` is true with fp32 main params and no fp8 recipe or delayed.
* megatron/core/optimizer/__init__.py: then FusedAdam gets ``master_weights=True`` and ``store_param_remainders``
  (not for Megatron-FSDP v2; for Megatron FSDP v1 ``master_weights`` is set back to False); without the
  distributed optimizer the precision-aware optimizer raises (ZeRO-0).
* megatron/core/optimizer/distrib_optimizer.py: "When using precision-aware optimizer, main params are held by
  FusedAdam" (no fp32 main shard); other fp8 recipes keep it.
* transformer_engine/pytorch/optimizers/fused_adam.py: an int16 ``master_param`` state per bf16 parameter.

Hand derivation, Llama 2 7B (6,738,415,616 parameters, untied) on one stage, t = 1, p = 1, d = 8, ZeRO-1: the GPU
holds every parameter, its optimizer state is sharded over 8: fp32 moments 12·N/8 = 10,107,623,424 B; bf16 moments
beside an fp32 master 8·N/8 = 6,738,415,616 B; with FusedAdam's remainders 6·N/8 = 5,053,811,712 B.
"""

from __future__ import annotations

import pytest

from runplan import plan as plan_module
from runplan.catalog import shipped_catalog
from runplan.ops.checkpoint import FUSED_ADAM_MASTER_BYTES_PER_PARAM
from runplan.parallel.memory import MASTER_REMAINDER_BYTES, ShapeTerms, model_state_bytes, stage_params
from runplan.parallel.stack import Stack

N_7B = 6_738_415_616
BF16_MOMENTS = Stack(optimizer_state_dtype="bf16")


def _optimizer_bytes(stack: Stack, zero: int, *, d: int = 8) -> float:
    terms = ShapeTerms.from_shape(shipped_catalog().model("llama-2-7b"))
    dense, expert = stage_params(terms, 1, 1, 1, last=False)
    assert float(dense) == N_7B and float(expert) == 0.0  # one stage holds the whole model
    _, _, optimizer = model_state_bytes(
        dense,
        expert,
        zero,
        d,
        1,
        1,
        stack.gradient_bytes,
        moment_bytes=stack.moment_bytes,
        fused_adam_master=stack.fused_adam_master,
    )
    return float(optimizer)


def test_llama2_7b_zero1_d8_optimizer_bytes_by_hand():
    assert _optimizer_bytes(Stack(), 1) == 10_107_623_424
    assert _optimizer_bytes(BF16_MOMENTS, 1) == 5_053_811_712
    # the same stack where FusedAdam does not hold the master (fp8 tensorwise: Megatron's fp32 main shard)
    tensorwise = Stack(optimizer_state_dtype="bf16", precision="fp8", fp8_recipe="tensorwise")
    assert _optimizer_bytes(tensorwise, 1) == 6_738_415_616
    delayed = Stack(optimizer_state_dtype="bf16", precision="fp8", fp8_recipe="delayed")
    assert _optimizer_bytes(delayed, 1) == 5_053_811_712


@pytest.mark.parametrize(
    "zero, per_param",
    [(0, 8.0), (1, 6.0), (2, 6.0), (3, 8.0)],  # ZeRO-0: refused by Megatron; ZeRO-3: FSDP's own fp32 master
)
def test_remainders_only_under_the_distributed_optimizer(zero, per_param):
    shards = 1 if zero == 0 else 8
    assert _optimizer_bytes(BF16_MOMENTS, zero) == per_param * N_7B / shards


def test_stack_says_where_fused_adam_holds_the_master():
    assert BF16_MOMENTS.fused_adam_master
    assert not Stack().fused_adam_master  # fp32 moments: runplan writes no precision-aware optimizer
    for recipe, held in (("delayed", True), ("tensorwise", False), ("blockwise", False), ("mxfp8", False)):
        stack = Stack(optimizer_state_dtype="bf16", precision="fp8", fp8_recipe=recipe)
        assert stack.fused_adam_master is held, recipe


@pytest.mark.parametrize(
    "stack",
    [
        BF16_MOMENTS,
        Stack(),
        Stack(optimizer_state_dtype="bf16", precision="fp8", fp8_recipe="delayed"),
        Stack(optimizer_state_dtype="bf16", precision="fp8", fp8_recipe="tensorwise"),
    ],
)
def test_memory_and_checkpoint_agree_on_where_the_master_is_16_low_bits(stack):
    """The checkpoint saves FusedAdam's master as its int16 low bits exactly where the memory model holds them."""
    assert FUSED_ADAM_MASTER_BYTES_PER_PARAM["master_low_bits_int16"] == MASTER_REMAINDER_BYTES == 2.0
    for zero in (0, 1, 2, 3):
        saved_low_bits = plan_module._fused_adam_master(stack, zero)
        held = _optimizer_bytes(stack, zero, d=1)
        assert (
            held == N_7B * (MASTER_REMAINDER_BYTES if saved_low_bits else 4.0) + 2 * stack.moment_bytes * N_7B
        )


def test_parallelize_reports_the_remainder_optimizer_bytes():
    import json

    from typer.testing import CliRunner

    from runplan.cli.app import app

    args = ["parallelize", "--model", "llama-2-7b", "--gpus", "8", "--gpu", "h100-sxm", "--seq-len", "4096"]
    args += ["--tp", "1", "--pp", "1", "--zero", "1", "--mbs", "1", "--vpp", "1", "--recompute", "selective"]
    res = CliRunner().invoke(app, [*args, "--optimizer-state-dtype", "bf16", "--top", "1", "--json"])
    assert res.exit_code == 0, res.output
    best = json.loads(res.output)["layouts"][0]
    assert (best["tp"], best["pp"], best["dp"], best["zero"]) == (1, 1, 8, 1)
    assert best["memory_bytes"]["gradients"] == 4 * N_7B  # fp32 gradients, not sharded: the stage is N
    assert best["memory_bytes"]["optimizer"] == 5_053_811_712  # 6·N/8
