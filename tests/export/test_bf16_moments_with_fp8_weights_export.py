"""bf16 Adam moments with delayed-scaling fp8 weights (--fp8-param-gather) do not step in TransformerEngine's FusedAdam,
read at TransformerEngine d0067d0: FusedAdam.step sends a delayed-scaling Float8Tensor weight to
``multi_tensor_adam_fp8`` (optimizers/fused_adam.py), whose NVTE_CHECKs want fp32 first and second moments and an fp32
master (common/multi_tensor/adam.cu); bf16 moments arrive as bf16 (``fuse_unscale``) and, the weight's nominal dtype
being bf16, the master as its int16 remainders. The Megatron export says so in one warning naming the fixes; other
recipes keep Megatron's fp32 main shard and run TE's plain kernel, which takes bf16 moments: no warning."""

from __future__ import annotations

import pytest
from tests.export._plans import golden_plan, with_layout

from runplan.export import export_plan

WORDS = "fused fp8 Adam kernel takes only fp32 moments"


def _export(**stack):
    plan = golden_plan("70b-512-h100")
    plan = plan.model_copy(
        update={"inputs": {**plan.inputs, "stack": {"optimizer_state_dtype": "bf16", **stack}}}
    )
    return export_plan(with_layout(plan, zero=1), "megatron")


def test_delayed_fp8_weights_with_bf16_moments_warn_with_the_fix():
    result = _export(precision="fp8", fp8_recipe="delayed", fp8_param_gather=True)
    assert "--fp8-param-gather" in result.text and "--exp-avg-dtype bf16" in result.text
    hits = [w for w in result.warnings if WORDS in w]
    assert len(hits) == 1 and "optimizer_state_dtype fp32" in hits[0] and "fp8_param_gather" in hits[0]


@pytest.mark.parametrize(
    "stack",
    [
        {
            "precision": "fp8",
            "fp8_recipe": "delayed",
        },  # bf16 weights, cast in the forward: TE's remainder kernel
        {
            "precision": "fp8",
            "fp8_recipe": "tensorwise",
            "fp8_param_gather": True,
        },  # Megatron's fp32 main shard
        {},
    ],
)
def test_no_such_warning_where_the_kernel_takes_bf16_moments(stack):
    assert not [w for w in _export(**stack).warnings if WORDS in w]
