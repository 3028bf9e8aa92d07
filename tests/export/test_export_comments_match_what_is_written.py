"""What the exporters say about their output matches what they write.

* torchtitan's ``mixed_precision_reduce`` is FSDP's reduce dtype (MixedPrecisionPolicy.reduce_dtype): on its DDP
  path (``maybe_enable_amp``'s torch.autocast, t = p = c = 1, dp_shard 1) no FSDP runs, DDP all-reduces the fp32
  parameters' .grad, so the comment must not say FSDP reduces in it.
* megatron.py's module docstring: full recompute is the stack's method and layer count (``_recompute_args``), not
  always uniform 1; the ramp bullet names #4411 (commit 532ad926), after which --rampup-batch-size is ignored, and
  the warning with the --step-batch-size-schedule (``_step_schedule_warning``).
"""

from tests.export._plans import golden_plan, with_layout

from runplan.export import export_plan, megatron


def _reduce_line(plan) -> str:
    (line,) = [
        x for x in export_plan(plan, "torchtitan").text.splitlines() if x.startswith("mixed_precision_reduce")
    ]
    return line


def test_the_ddp_path_does_not_call_mixed_precision_reduce_fsdps():
    # t = p = c = 1: autocast under DDP (pinned: the plan's own layout has c = 2)
    plan = with_layout(golden_plan("moe-mixtral-8x7b"), zero=0, ep=1, cp=1, dp=256, microbatches=12)
    line = _reduce_line(plan)
    assert "FSDP reduces" not in line and "DDP" in line


def test_the_fsdp_path_keeps_the_fsdp_comment():
    assert "the dtype FSDP reduces gradients in" in _reduce_line(golden_plan("moe-mixtral-8x7b"))


def test_megatron_docstring_full_recompute_is_the_stacks_method_and_count():
    doc = " ".join((megatron.__doc__ or "").split())
    assert "full_recompute_method" in doc and "full_recompute_layers" in doc
    assert "--recompute-method uniform --recompute-num-layers 1``." not in doc


def test_megatron_docstring_ramp_names_4411_and_the_step_schedule_warning():
    doc = " ".join((megatron.__doc__ or "").split())
    ramp = doc.split("* batch:", 1)[1].split("* LR:", 1)[0]
    assert "#4411" in ramp and "--step-batch-size-schedule" in ramp
