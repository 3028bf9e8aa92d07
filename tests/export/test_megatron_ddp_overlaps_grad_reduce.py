"""Megatron-LM's plain DDP (the plan's ZeRO-0, no ``--use-distributed-optimizer``) overlaps its gradient
all-reduce with the backward pass under ``--overlap-grad-reduce`` too: DistributedDataParallel buckets the
gradients and dispatches each bucket's all-reduce when its last gradient is ready, with or without the distributed
optimizer (megatron/core/distributed/distributed_data_parallel.py @ d98e8a64; validate_args asserts the
distributed optimizer only for ``--overlap-param-gather``). The plan's step time hides ZeRO-0's all-reduce 2·g·Ψ
under the last micro-batch's backward when ``stack.overlap_grad_reduce`` is on (parallel/timing.py), so the
export must ask for it; ``--overlap-param-gather`` stays out (ZeRO-0 gathers no parameters).
"""

from tests.export._plans import golden_plan, with_layout
from tests.export.test_export_keys import megatron_args

from runplan.export import export_plan


def _with_stack(plan, **stack):
    return plan.model_copy(update={"inputs": {**plan.inputs, "stack": stack}})


def test_zero0_export_overlaps_the_all_reduce_the_plan_timed_as_hidden():
    plan = with_layout(golden_plan("70b-512-h100"), zero=0)
    assert plan.inputs["stack"] is None or plan.inputs["stack"].get("overlap_grad_reduce", True)
    a = megatron_args(plan)  # parses with the checked-in Megatron-LM argument list
    assert a.overlap_grad_reduce is True
    assert a.overlap_param_gather is False and a.use_distributed_optimizer is False


def test_zero0_export_leaves_it_out_when_the_plan_timed_the_all_reduce_exposed():
    plan = _with_stack(with_layout(golden_plan("70b-512-h100"), zero=0), overlap_grad_reduce=False)
    assert "--overlap-grad-reduce" not in export_plan(plan, "megatron").text
