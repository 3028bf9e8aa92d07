"""Megatron's ``--recompute-method block --recompute-num-layers n`` recomputes the first n layers of each virtual
chunk (each chunk is its own TransformerBlock, core/recompute.py @ d98e8a64), so min(v·n, layers) of a stage
(parallel/memory.py ``activation_bytes``, commit d2070a6). When v·n reaches the stage's layers every block is
checkpointed on its own, which is torchtitan's full mode: no recompute warning (it was warned when n alone fell
short of the stage's layers)."""

import pytest
from tests.export._plans import golden_plan, rebalanced

from runplan.export import export_plan


def _block(layers: int, vpp: int):
    # 70b golden plan: p = 2, 40 layers on a stage; with v = 2 each virtual chunk holds 20. t 8 leaves
    # d = 512 / (8·2) = 32 and m = 5,312 / 32 = 166, a multiple of p as interleaving needs (the plan's m = 83 is odd)
    plan = rebalanced(golden_plan("70b-512-h100"), tp=8, recompute="full", vpp=vpp)
    assert (plan.layout.best.layers_per_stage, plan.layout.best.dp, plan.layout.best.microbatches) == (
        40,
        32,
        166,
    )
    stack = {
        **(plan.inputs.get("stack") or {}),
        "full_recompute_method": "block",
        "full_recompute_layers": layers,
    }
    return plan.model_copy(update={"inputs": {**plan.inputs, "stack": stack}})


def _recompute_warnings(plan) -> list[str]:
    return [w for w in export_plan(plan, "torchtitan").warnings if w.startswith("recompute:")]


@pytest.mark.parametrize("layers", [20, 21, 40])
def test_block_n_times_v_covering_the_stage_is_torchtitans_full_mode(layers: int):
    # 2 chunks x 20 = 40 layers recomputed: the same memory and time as uniform 1
    assert _recompute_warnings(_block(layers, vpp=2)) == []


@pytest.mark.parametrize("layers, vpp", [(19, 2), (20, 1), (39, 1)])
def test_block_n_times_v_short_of_the_stage_is_warned(layers: int, vpp: int):
    (warning,) = _recompute_warnings(_block(layers, vpp))
    assert f"block {layers}" in warning
