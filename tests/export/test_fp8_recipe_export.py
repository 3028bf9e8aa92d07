"""Each fp8 recipe of the plan's stack becomes the engine's own recipe, with the settings the plan's time model
was checked under, or a one-line refusal where the engine has no such recipe.

Megatron-LM's ``--fp8-amax-history-len`` / ``--fp8-amax-compute-algo`` default to 1 / 'most_recent'
(megatron/training/arguments.py @ 000c4ac2 _add_transformer_engine_args; TransformerConfig.fp8_amax_history_len,
fp8_amax_compute_algo @ d98e8a64), while TransformerEngine's DelayedScaling, the recipe the plan's 'delayed'
names, defaults to 1024 / 'max' (transformer_engine/common/recipe/__init__.py @ d0067d0d), and the NVIDIA
recipes whose fp8 step times the time model is checked against set 1024 / max (benchmarks/published_runs.yaml,
dgxc rows; NeMo bf16_with_fp8_mixed, nemo/collections/llm/recipes/precision/mixed_precision.py @ 8cfedd72).
"""

import tomllib

import pytest
from tests.export._plans import golden_plan
from tests.export.test_export_keys import megatron_args

from runplan.errors import SpecError
from runplan.export import export_plan


def _fp8(plan, recipe: str, **stack):
    return plan.model_copy(
        update={"inputs": {**plan.inputs, "stack": {"precision": "fp8", "fp8_recipe": recipe, **stack}}}
    )


def test_megatron_delayed_scaling_keeps_transformer_engines_amax_history_of_1024_max():
    a = megatron_args(_fp8(golden_plan("70b-512-h100"), "delayed"))
    assert a.fp8_recipe == "delayed" and a.fp8 == "hybrid"
    # without the flags Megatron builds DelayedScaling(amax_history_len=1, amax_compute_algo='most_recent')
    assert a.fp8_amax_history_len == 1024 and a.fp8_amax_compute_algo == "max"


@pytest.mark.parametrize("recipe", ["tensorwise", "blockwise", "mxfp8"])
def test_megatron_current_and_block_scaling_write_no_amax_history(recipe):
    # Float8CurrentScaling, Float8BlockScaling and MXFP8BlockScaling take no history (fp8_utils.get_fp8_recipe)
    text = export_plan(_fp8(golden_plan("70b-512-h100"), recipe), "megatron").text
    assert "--fp8-amax-history-len" not in text and "--fp8-amax-compute-algo" not in text


def test_megatron_mxfp8_parses_as_transformer_engines_mxfp8_block_scaling_in_e4m3():
    a = megatron_args(_fp8(golden_plan("70b-512-h100"), "mxfp8"))
    # MXFP8BlockScaling's own default format is E4M3 (transformer_engine/common/recipe/__init__.py)
    assert a.fp8_recipe == "mxfp8" and a.fp8 == "e4m3"


#: recipe -> where each engine refuses it (None: exported). Megatron-LM --fp8-recipe choices: tensorwise,
#: delayed, mxfp8, blockwise, custom (arguments.py @ 000c4ac2; TransformerConfig.fp8_recipe @ d98e8a64);
#: torchtitan 0.2.2: Float8Linear.recipe_name tensorwise, rowwise, rowwise_with_gw_hp and MXLinear
#: (config/job_config.py @ v0.2.2); DeepSpeed's ds_config has no fp8 key (fp8 only through TransformerEngine in
#: model code, tests/unit/runtime/half_precision/test_fp8.py).
REFUSED = {
    "delayed": {"megatron": None, "torchtitan": "stack.fp8_recipe", "deepspeed": "stack.precision"},
    "tensorwise": {"megatron": None, "torchtitan": None, "deepspeed": "stack.precision"},
    "rowwise": {"megatron": "stack.fp8_recipe", "torchtitan": None, "deepspeed": "stack.precision"},
    "blockwise": {"megatron": None, "torchtitan": "stack.fp8_recipe", "deepspeed": "stack.precision"},
    "mxfp8": {"megatron": None, "torchtitan": None, "deepspeed": "stack.precision"},
}


@pytest.mark.parametrize("target", ["megatron", "torchtitan", "deepspeed"])
@pytest.mark.parametrize("recipe", sorted(REFUSED))
def test_each_fp8_recipe_is_the_engines_own_or_refused_in_one_line(recipe, target):
    plan = _fp8(golden_plan("2e23-7b-overtrained"), recipe)  # t = 1: torchtitan's mxfp8 refuses TP
    where = REFUSED[recipe][target]
    if where is None and target == "megatron":
        assert megatron_args(plan).fp8_recipe == recipe
        return
    if where is None:  # torchtitan: the converter and recipe torchao runs
        doc = tomllib.loads(export_plan(plan, target).text)
        if recipe == "mxfp8":
            assert doc["model"]["converters"] == ["quantize.linear.mx"]
        else:
            assert doc["model"]["converters"] == ["quantize.linear.float8"]
            assert doc["quantize"]["linear"]["float8"]["recipe_name"] == recipe
        return
    with pytest.raises(SpecError) as info:
        export_plan(plan, target)
    assert info.value.where == where and "\n" not in str(info.value)
