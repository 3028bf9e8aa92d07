"""Exports of a plan whose CP > 1 was timed with one engine's context parallelism (Stack.context_parallel_impl):
Megatron-core has only TransformerEngine's ring, so a plan timed as PyTorch's context_parallel is refused; a
torchtitan export of a plan timed as TransformerEngine's ring is valid but runs PyTorch's, so it warns."""

import pytest
from tests.export._plans import golden_plan, rebalanced

from runplan.errors import SpecError
from runplan.export import export_plan


def _with_stack(plan, **stack):
    return plan.model_copy(update={"inputs": {**plan.inputs, "stack": stack}})


def _cp2():
    """The 70B plan with c 2: d = 512 / (4·2·2) = 32 and m = 5,312 / 32 = 166."""
    plan = rebalanced(golden_plan("70b-512-h100"), cp=2)
    assert (plan.layout.best.dp, plan.layout.best.microbatches) == (32, 166)
    return plan


def test_megatron_refuses_pytorch_context_parallelism_in_one_line():
    plan = _cp2()
    with pytest.raises(SpecError, match="TransformerEngine's ring") as info:
        export_plan(_with_stack(plan, context_parallel_impl="pytorch"), "megatron")
    assert info.value.where == "stack.context_parallel_impl" and "\n" not in str(info.value)
    # CP 1: nothing of the implementation reaches Megatron
    export_plan(_with_stack(golden_plan("70b-512-h100"), context_parallel_impl="pytorch"), "megatron")


def test_torchtitan_warns_when_cp_was_timed_as_transformer_engine():
    plan = _cp2()
    needle = "context parallelism: torchtitan runs PyTorch's context_parallel"
    warned = export_plan(_with_stack(plan, context_parallel_impl="transformer-engine"), "torchtitan").warnings
    assert sum(needle in w for w in warned) == 1 and all("\n" not in w for w in warned)
    quiet = export_plan(_with_stack(plan, context_parallel_impl="pytorch"), "torchtitan").warnings
    assert not any(needle in w for w in quiet)
