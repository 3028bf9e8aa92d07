"""The exports build the router the model has: Megatron-LM (moe_utils.topk_routing_with_score_function @
d98e8a64) renormalises a softmax router's top-k unless --moe-router-pre-softmax and always renormalises sigmoid
scores when k > 1, so a sigmoid router that does not is refused; the balance loss becomes
--moe-router-load-balancing-type (aux_loss / seq_aux_loss / global_aux_loss) with --moe-aux-loss-coeff;
torchtitan 0.2.2 compares route_norm with its flavor and, having no auxiliary loss, says so."""

from __future__ import annotations

import pytest
from tests.export._plans import golden_plan
from tests.export.test_export_keys import megatron_args
from tests.export.test_megatron_moe_router_export import _plan

from runplan.errors import SpecError
from runplan.export import export_plan


@pytest.fixture(scope="module")
def qwen(tmp_path_factory):
    return _plan(tmp_path_factory.mktemp("q3n"), "qwen3", "qwen3-30b-a3b", 256, "pp: 1")


@pytest.fixture(scope="module")
def deepseek(tmp_path_factory):
    return _plan(tmp_path_factory.mktemp("v3n"), "dsv3", "deepseek-v3", 2048, "cp: 1")


def _with(plan, **router):
    shape = plan.model.shape.model_copy(update=router)
    return plan.model_copy(update={"model": plan.model.model_copy(update={"shape": shape})})


def _balance_warnings(plan, target="megatron"):
    return [w for w in export_plan(plan, target).warnings if w.startswith("load balancing")]


def test_mixtral_trains_its_config_balance_loss_per_micro_batch():
    # Mixtral-8x7B-v0.1 config.json router_aux_loss_coef 0.02, transformers' micro-batch loss = Megatron aux_loss
    plan = golden_plan("moe-mixtral-8x7b")
    a = megatron_args(plan)
    assert a.moe_router_load_balancing_type == ["aux_loss"] and a.moe_aux_loss_coeff == [0.02]
    assert not a.moe_router_pre_softmax and not _balance_warnings(plan)


def test_qwen3_balances_over_the_global_batch(qwen):
    # config.json router_aux_loss_coef 0.001; arXiv 2505.09388 §2: global-batch load balancing loss
    a = megatron_args(qwen)
    assert a.moe_router_load_balancing_type == ["global_aux_loss"] and a.moe_aux_loss_coeff == [0.001]
    assert not a.moe_router_pre_softmax and not _balance_warnings(qwen)


def test_a_softmax_router_that_keeps_its_probabilities_takes_the_softmax_first(qwen):
    # DeepSeek-V2's norm_topk_prob false: softmax over all 128 experts, the top 8 kept as they are
    a = megatron_args(_with(qwen, router_topk_norm=False))
    assert a.moe_router_pre_softmax and a.moe_router_topk == 8 and a.moe_router_score_function == "softmax"


def test_a_sigmoid_router_that_keeps_its_scores_is_refused_by_megatron_only(deepseek):
    plan = _with(deepseek, router_topk_norm=False)
    with pytest.raises(SpecError) as caught:
        export_plan(plan, "megatron")
    assert caught.value.where == "model" and "router_topk_norm" in caught.value.message
    assert "\n" not in caught.value.message
    # torchtitan's route_norm expresses it: the 671B flavor's route_norm = True is named as the difference
    warnings = export_plan(plan, "torchtitan").warnings
    assert any(w.startswith("architecture:") and "router_topk_norm = True" in w for w in warnings)
    # top-1 sigmoid: Megatron keeps the score (no division when k = 1), as the shape means
    one = _with(deepseek, router_topk_norm=False, top_k=1, router_groups=0, router_group_topk=0)
    assert megatron_args(one).moe_router_topk == 1


@pytest.mark.parametrize(("expert_bias", "needle"), [(False, "Mixtral 8x7B release"), (True, "seq_aux_loss")])
def test_an_unpublished_coefficient_keeps_the_warning(deepseek, expert_bias, needle):
    plan = _with(golden_plan("moe-mixtral-8x7b"), router_aux_loss_coef=None)
    if expert_bias:
        plan = _with(deepseek, router_aux_loss_coef=None)
    a = megatron_args(plan)
    assert a.moe_aux_loss_coeff == 0.0 and a.moe_router_load_balancing_type == "aux_loss"  # Megatron defaults
    (warning,) = _balance_warnings(plan)
    assert needle in warning


def test_torchtitan_says_it_has_no_auxiliary_loss(deepseek):
    (mixtral,) = [
        w for w in export_plan(golden_plan("moe-mixtral-8x7b"), "torchtitan").warnings if "auxiliary" in w
    ]
    assert "balance loss per micro-batch of coefficient 0.02" in mixtral and "expert bias" not in mixtral
    (v3,) = [w for w in export_plan(deepseek, "torchtitan").warnings if "no auxiliary load-balancing" in w]
    assert "balance loss per sequence of coefficient 0.0001" in v3 and "only the expert bias balances" in v3
    no_coef = _with(deepseek, router_aux_loss_coef=None)
    assert not [w for w in export_plan(no_coef, "torchtitan").warnings if "no auxiliary load-balancing" in w]
