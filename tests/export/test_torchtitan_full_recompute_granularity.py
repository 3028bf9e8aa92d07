"""torchtitan 0.2.2's ``[activation_checkpoint] mode = "full"`` wraps every transformer block in its own
checkpoint (``_apply_full_ac`` on each block, distributed/activation_checkpoint.py @ 73a0e697): Megatron's
``--recompute-method uniform --recompute-num-layers 1``, the Stack default. A plan timed with another full
recompute (stack ``full_recompute_method``/``full_recompute_layers``: uniform over groups of n > 1 layers, or
block with v·n below the stage's layers, parallel/memory.py ``activation_bytes``) runs with other activation memory
and recompute time in torchtitan, which has no such setting: a warning names the stack keys (it was dropped
silently)."""

import pytest
from tests.export._plans import golden_plan, rebalanced

from runplan.export import export_plan


def _full(method: str, layers: int):
    # 40 layers per stage (p = 2), v = 4 (pinned: the plan's own layout has v = 1); t 8 leaves d = 512 / (8·2) = 32
    # and m = 5,312 / 32 = 166, a multiple of p as interleaving needs (the plan's m = 83 is odd)
    plan = rebalanced(golden_plan("70b-512-h100"), tp=8, recompute="full", vpp=4)
    assert (plan.layout.best.dp, plan.layout.best.microbatches, plan.layout.best.layers_per_stage) == (
        32,
        166,
        40,
    )
    stack = {
        **(plan.inputs.get("stack") or {}),
        "full_recompute_method": method,
        "full_recompute_layers": layers,
    }
    return plan.model_copy(update={"inputs": {**plan.inputs, "stack": stack}})


def _recompute_warnings(plan) -> list[str]:
    result = export_plan(plan, "torchtitan")
    assert 'mode = "full"' in result.text
    return [w for w in result.warnings if w.startswith("recompute:")]


@pytest.mark.parametrize("method, layers", [("uniform", 2), ("uniform", 4), ("block", 1), ("block", 9)])
def test_a_full_recompute_torchtitan_cannot_run_is_warned(method: str, layers: int):
    (warning,) = _recompute_warnings(_full(method, layers))
    assert f"{method} {layers}" in warning and "full_recompute_layers: 1" in warning and "\n" not in warning


@pytest.mark.parametrize("method, layers", [("uniform", 1), ("block", 10), ("block", 40), ("block", 80)])
def test_every_block_checkpointed_on_its_own_is_torchtitans_full_mode(method: str, layers: int):
    # block v·n >= the 40 layers of a stage (v = 4) recomputes every layer, as uniform 1 does
    assert _recompute_warnings(_full(method, layers)) == []
