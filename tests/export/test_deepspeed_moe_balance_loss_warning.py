"""The DeepSpeed export's expert-parallel warning says how to train the model's balance loss with DeepSpeed's MoE
layer, and builds the plan's deterministic top-2.

DeepSpeed (deepspeedai/DeepSpeed @ edaa7221, v0.19.6): ``deepspeed.moe.layer.MoE.forward`` returns (output, l_aux,
exp_counts), and the user adds l_aux to the loss. ``deepspeed/moe/sharded_moe.py`` computes l_aux from the tokens
the layer is given (``input[0].reshape(-1, d_model)``: this rank's micro-batch), with no reduction over ranks or
micro-batches: ``top1gating`` E·Σ me·ce, ``top2gating`` E²·mean(me·ce) with ce from the first choice (``mask1``)
only, ``topkgating`` E²·mean(me·ce)/k over every choice. ``MoE(top2_2nd_expert_sampling=True)`` (the default) adds
Gumbel noise to the logits before it picks the second expert.
"""

from __future__ import annotations

import pytest
from tests.export._plans import golden_plan, with_layout

from runplan.export import export_plan


def _with(plan, **shape_fields):
    shape = plan.model.shape.model_copy(update=shape_fields)
    return plan.model_copy(update={"model": plan.model.model_copy(update={"shape": shape})})


def _expert_warning(plan) -> str:
    (line,) = [w for w in export_plan(plan, "deepspeed").warnings if w.startswith("expert parallel")]
    return line


def test_mixtral_warning_names_its_coefficient_and_deepspeeds_micro_batch_loss():
    # Mixtral-8x7B-v0.1 config.json router_aux_loss_coef 0.02, a micro-batch loss: DeepSpeed's own scope
    line = _expert_warning(golden_plan("moe-mixtral-8x7b"))
    assert "\n" not in line
    assert (
        "balance loss: add 0.02 (router_aux_loss_coef) x the l_aux each MoE layer returns (MoE.forward's second "
        "output) to the loss; DeepSpeed's gate counts each micro-batch's tokens on its rank and, at k=2, each "
        "token's first choice only (moe/sharded_moe.py top2gating)"
    ) in line
    assert "per sequence" not in line and "global batch" not in line


def test_top2_layer_turns_off_the_sampled_second_expert():
    # the plan's top-2 is deterministic (Mixtral: Softmax(TopK(x W_g))); DeepSpeed samples the second by default
    line = _expert_warning(golden_plan("moe-mixtral-8x7b"))
    assert "k=2, drop_tokens=False) in the model code (and top2_2nd_expert_sampling=False);" in line
    assert "a Gumbel-sampled second expert" in line


@pytest.mark.parametrize(
    ("scope", "words"), [("sequence", "per sequence"), ("global_batch", "over the global batch")]
)
def test_a_sequence_or_global_batch_loss_is_not_what_deepspeed_computes(scope, words):
    plan = _with(golden_plan("moe-mixtral-8x7b"), router_aux_loss_coef=1e-4, router_aux_loss_scope=scope)
    line = _expert_warning(plan)
    assert (
        f"balance loss: the model's is {words} (router_aux_loss_scope), DeepSpeed's l_aux (MoE.forward's second "
        "output) each micro-batch's on its rank (moe/sharded_moe.py): compute the model's loss in the model code "
        "and add 0.0001 x it to the loss"
    ) in line
    assert "add 0.0001 (router_aux_loss_coef) x the l_aux" not in line


def test_no_published_coefficient_is_said():
    line = _expert_warning(_with(golden_plan("moe-mixtral-8x7b"), router_aux_loss_coef=None))
    assert (
        "balance loss: the model publishes no coefficient (router_aux_loss_coef): the l_aux each MoE layer "
        "returns (MoE.forward's second output) counts only if the training script adds it to the loss, times a "
        "coefficient it chooses"
    ) in line


def test_top1_and_topk_layers_count_every_choice():
    # top1gating has one choice; topkgating (k > 2) counts all k (mask over top_idx): no first-choice clause,
    # and no second expert to sample
    for k in (1, 4):
        line = _expert_warning(_with(golden_plan("moe-mixtral-8x7b"), top_k=k))
        assert "first choice only" not in line and "top2_2nd_expert_sampling" not in line
        assert "add 0.02 (router_aux_loss_coef) x the l_aux" in line


def test_zero3_warning_keeps_to_autoep():
    # ZeRO-3 cannot run the native layer: the warning points to AutoEP, whose l_aux clause would not apply
    line = _expert_warning(with_layout(golden_plan("moe-mixtral-8x7b"), zero=3))
    assert "AutoEP" in line and "l_aux" not in line
