"""bf16 Adam moments (stack optimizer_state_dtype: bf16, DeepSeek-V3 arXiv 2412.19437 §3.3.3) in each engine.

* Megatron-LM: ``--use-precision-aware-optimizer --exp-avg-dtype bf16 --exp-avg-sq-dtype bf16`` (arguments.py @
  d98e8a6: choices fp32, fp16, bf16, fp8). get_megatron_optimizer raises "--use-precision-aware-optimizer only
  supported with distributed optimizer" (megatron/core/optimizer/__init__.py @ d98e8a6): ZeRO-0 is refused;
  Megatron FSDP v1 turns the distributed optimizer on itself (and the Stack refuses bf16 moments with
  fsdp_mixed_precision, so --use-torch-fsdp2 never meets them). With bf16 weights
  TransformerEngine's FusedAdam keeps the fp32 master as 16 low bits (store_param_remainders, default True in
  OptimizerConfig, no flag), as the plan counts them (no warning); fp8 tensorwise keeps Megatron's fp32 master.
* torchtitan 0.2.2: its [optimizer] (config/job_config.py Optimizer) has no state dtype: refused.
* DeepSpeed: bf16.bf16_optimizer_states asserts bf16_master_weights_and_grads (runtime/config.py @ edaa722), a
  bf16 master, not the plan's fp32 one: refused.
"""

import pytest
from tests.export._plans import golden_plan, with_layout
from tests.export.test_export_keys import megatron_args

from runplan.errors import SpecError
from runplan.export import export_plan

REMAINDER_WARNING = "16 low bits"


def _bf16_moments(plan, **stack):
    return plan.model_copy(
        update={"inputs": {**plan.inputs, "stack": {"optimizer_state_dtype": "bf16", **stack}}}
    )


def test_megatron_writes_the_precision_aware_optimizer_with_bf16_moments():
    plan = with_layout(_bf16_moments(golden_plan("70b-512-h100")), zero=1)
    a = megatron_args(plan)
    assert a.use_precision_aware_optimizer is True
    assert (a.exp_avg_dtype, a.exp_avg_sq_dtype) == ("bf16", "bf16")
    assert a.use_distributed_optimizer is True
    result = export_plan(plan, "megatron")
    assert not any(REMAINDER_WARNING in w for w in result.warnings)  # the plan counts the remainders itself


def test_megatron_fp32_moments_write_none_of_the_flags():
    text = export_plan(with_layout(golden_plan("70b-512-h100"), zero=1), "megatron").text
    for flag in ("--use-precision-aware-optimizer", "--exp-avg-dtype", "--exp-avg-sq-dtype"):
        assert flag not in text


def test_megatron_fp8_tensorwise_keeps_its_own_fp32_master_no_remainder_warning():
    plan = with_layout(
        _bf16_moments(golden_plan("70b-512-h100"), precision="fp8", fp8_recipe="tensorwise"), zero=1
    )
    result = export_plan(plan, "megatron")
    assert "--exp-avg-sq-dtype bf16" in result.text
    assert not any(REMAINDER_WARNING in w for w in result.warnings)


def test_megatron_fsdp_v1_runs_it():
    text = export_plan(with_layout(_bf16_moments(golden_plan("70b-512-h100")), zero=3), "megatron").text
    assert "--use-megatron-fsdp" in text and "--use-precision-aware-optimizer" in text


def test_megatron_refuses_it_at_zero0():
    plan = with_layout(_bf16_moments(golden_plan("70b-512-h100")), zero=0)
    with pytest.raises(SpecError, match="distributed optimizer, not ZeRO-0") as err:
        export_plan(plan, "megatron")
    assert err.value.where == "stack.optimizer_state_dtype"
    assert "zero 1 or 2" in (err.value.hint or "")


@pytest.mark.parametrize(
    "engine, word", [("torchtitan", "no optimizer-state dtype"), ("deepspeed", "bf16 master")]
)
def test_torchtitan_and_deepspeed_refuse_it_at_the_stack_key(engine, word):
    plan = with_layout(_bf16_moments(golden_plan("70b-512-h100")), zero=1)
    with pytest.raises(SpecError, match=word) as err:
        export_plan(plan, engine)
    assert err.value.where == "stack.optimizer_state_dtype"
    assert "export to megatron" in (err.value.hint or "")
