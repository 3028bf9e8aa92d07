"""The Megatron export builds the catalog's MoE routers as Megatron-core routes (megatron/core/transformer/moe/
moe_utils.py topk_routing_with_score_function and TransformerConfig.__post_init__ @ d98e8a64): top-k, expert
width, shared experts and dense layers for Mixtral 8x7B, Qwen3-30B-A3B and DeepSeek-V3, a router Megatron
starts for top-1 softmax, fp32 routing where Megatron asks for it, and DeepSeek-V3's balancing loss trained."""

from __future__ import annotations

import pytest
from tests.export._plans import golden_plan, parse_script_args
from tests.export.test_export_keys import megatron_args
from tests.export.test_torchtitan_moe_flavors import _plan_file

from runplan.export import export_plan


def _plan(folder, name: str, model: str, gpus: int, pin: str):
    from runplan.cli.common import plan_from_file

    return plan_from_file(str(_plan_file(folder, name, model, gpus, pin)))[2]


@pytest.fixture(scope="module")
def deepseek(tmp_path_factory):
    return _plan(tmp_path_factory.mktemp("v3"), "dsv3", "deepseek-v3", 2048, "cp: 1")


@pytest.fixture(scope="module")
def qwen(tmp_path_factory):
    return _plan(tmp_path_factory.mktemp("q3"), "qwen3", "qwen3-30b-a3b", 256, "pp: 1")


def _with_top_k(plan, top_k: int):
    shape = plan.model.shape.model_copy(update={"top_k": top_k})
    return plan.model_copy(update={"model": plan.model.model_copy(update={"shape": shape})})


def test_deepseek_v3_router_is_megatrons_sigmoid_group_limited_router(deepseek):
    a = megatron_args(deepseek)
    # arXiv 2412.19437 §2.1.2 and config.json: 256 routed + 1 shared expert of 2048, 8 per token from 4 of 8
    # groups, sigmoid scores normalised over the 8 and scaled by 2.5, expert-bias balancing, first 3 layers dense
    assert (a.num_experts, a.moe_router_topk, a.moe_ffn_hidden_size) == (256, 8, 2048)
    assert a.moe_shared_expert_intermediate_size == 2048 and a.ffn_hidden_size == 18432
    assert a.moe_layer_freq == "([0]*3+[1]*58)"
    assert (a.moe_router_num_groups, a.moe_router_group_topk) == (8, 4)
    assert a.moe_router_score_function == "sigmoid" and a.moe_router_enable_expert_bias
    assert a.moe_router_topk_scaling_factor == 2.5


def test_qwen3_30b_a3b_router_renormalises_its_top_8_as_megatrons_default(qwen):
    a = megatron_args(qwen)
    assert (a.num_experts, a.moe_router_topk, a.moe_ffn_hidden_size) == (128, 8, 768)
    assert a.moe_shared_expert_intermediate_size is None and a.moe_layer_freq is None
    # softmax over the top-k logits = softmax over all then renormalised over the top k (norm_topk_prob true)
    assert "--moe-router-pre-softmax" not in parse_script_args(export_plan(qwen, "megatron").text)


@pytest.mark.parametrize(("fixture", "experts"), [("deepseek", 256), ("qwen", 128)])
def test_megatron_routes_in_fp32_from_32_experts(fixture, experts, request):
    # TransformerConfig.__post_init__ warns "Using a large number of experts (e.g. >=32) without fp32 routing"
    a = megatron_args(request.getfixturevalue(fixture))
    assert a.num_experts == experts and a.moe_router_dtype == "fp32"
    assert megatron_args(golden_plan("moe-mixtral-8x7b")).moe_router_dtype is None  # 8 experts


def test_megatron_top1_softmax_router_takes_the_softmax_before_the_top1():
    # Megatron raises "Please use --moe-router-pre-softmax when topk is 1" (softmax over one logit is a
    # constant 1 with no gradient); top-2 keeps Mixtral's softmax over the top-k. A top-1 gate is its softmax
    # probability over all experts (ModelShape.router_topk_norm applies to k > 1), which is exactly what the
    # pre-softmax router computes, so nothing is left to warn about
    plan = _with_top_k(golden_plan("moe-mixtral-8x7b"), 1)
    a = megatron_args(plan)
    assert a.moe_router_topk == 1 and a.moe_router_pre_softmax
    assert not any(w.startswith("router:") for w in export_plan(plan, "megatron").warnings)
    assert not megatron_args(golden_plan("moe-mixtral-8x7b")).moe_router_pre_softmax


def test_megatron_trains_deepseek_v3s_sequence_wise_balance_loss(deepseek):
    # the expert bias alone is not DeepSeek-V3's recipe: §2.1.2 adds a sequence-wise balance loss with
    # alpha = 0.0001 (§4.2), Megatron's seq_aux_loss; Megatron's --moe-aux-loss-coeff defaults to 0
    a = megatron_args(deepseek)
    assert a.moe_router_load_balancing_type == ["seq_aux_loss"] and a.moe_aux_loss_coeff == [1e-4]
    assert a.moe_router_enable_expert_bias
    assert not [w for w in export_plan(deepseek, "megatron").warnings if w.startswith("load balancing")]
