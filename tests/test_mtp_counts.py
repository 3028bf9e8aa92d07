"""Multi-token prediction (DeepSeek-V3, arXiv 2412.19437 §2.2) is counted beside the main model: the module's
parameters by hand (projection, norms, one MoE block with MLA), the main model's 671B unchanged, the FLOPs per
token with and without the module, and the weights Megatron places on the last pipeline stage."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from runplan.catalog import shipped_catalog
from runplan.model import ModelShape
from runplan.parallel.memory import ShapeTerms, stage_params

V3 = shipped_catalog().model("deepseek-v3")
NO_MTP = V3.model_copy(update={"mtp_layers": 0, "mtp_loss_weight": None})

H, V, HEADS = 7168, 129280, 128
# one DeepSeek-V3 MoE block (config.json): MLA q through rank 1536 (+ its RMSNorm) to 128 x (128 + 64), joint KV
# down-projection 512 + 64 (+ RMSNorm 512), KV up 512 -> 128 x (128 + 128), output 128 x 128 -> h
MLA = (H * 1536 + 1536 + 1536 * HEADS * 192) + (H * 576 + 512 + 512 * HEADS * 256) + HEADS * 128 * H
EXPERT = 3 * H * 2048  # SwiGLU expert of 2048
ROUTER = H * 256 + 256  # gate + the 256 e_score_correction_bias
BLOCK = MLA + 2 * H + ROUTER + EXPERT + 256 * EXPERT  # two RMSNorms, router, shared + 256 routed experts
MODULE = 2 * H * H + 3 * H + BLOCK  # eh_proj (2h -> h, no bias) + hnorm, enorm, final norm before the head


def test_deepseek_v3_mtp_module_is_counted_by_hand():
    assert MLA == 187_107_328 and BLOCK == 11_507_286_272
    assert V3.mtp_layers == 1 and V3.mtp_params == MODULE == 11_610_068_224
    # the paper's 671B main model stays total_params (the catalog's checkpoint count); the module is apart
    assert V3.total_params == NO_MTP.total_params == 671_026_419_200
    assert V3.mtp_routed_expert_params == 256 * EXPERT


def test_hugging_face_checkpoint_total_is_the_main_model_plus_the_module():
    """The checkpoint stores the MTP layer with its own embedding and head copies (DeepSeek README_WEIGHTS: 11.5B
    unique + 0.9B embedding + 0.9B head); Hugging Face lists 685B (671B + 14B): 684.49B here, 0.07% below."""
    checkpoint = V3.total_params + V3.mtp_params + 2 * V * H
    assert checkpoint == 684_489_845_504
    assert abs(checkpoint / 685e9 - 1) < 1e-3
    assert abs(BLOCK / 11.5e9 - 1) < 1e-3  # README_WEIGHTS' 11.5B unique: the block, 0.06% off


def test_flops_per_token_add_one_block_the_projection_and_the_second_head():
    s = 4096
    attention = 6 * s * HEADS * (192 + 128)  # score and value products of one layer, forward + backward
    without = NO_MTP.model_flops_per_token(s)
    assert without == 6 * NO_MTP.matmul_params_per_token() + 61 * attention == 281_158_321_152
    active = 2 * H * H + 3 * H + MLA + 2 * H + ROUTER + EXPERT + 8 * EXPERT  # 8 routed experts of 256
    assert V3.mtp_active_params == active == 688_100_608
    extra = 6 * (active + V * H) + attention  # the block and projection, its own V·h logits, its attention
    assert V3.model_flops_per_token(s) - without == extra == 10_695_310_848
    assert V3.model_flops_per_token(s, causal=True) - NO_MTP.model_flops_per_token(s, causal=True) == (
        6 * (active + V * H) + attention / 2
    )


def test_dense_model_mtp_module_is_a_dense_block():
    llama = shipped_catalog().model("llama-3.1-8b")
    h, kv = 4096, 8 * 128
    block = h * (h + 2 * kv) + h * h + 3 * h * 14336 + 2 * h
    with_mtp = llama.model_copy(update={"mtp_layers": 2})
    assert with_mtp.mtp_params == 2 * (2 * h * h + 3 * h + block) == 503_357_440
    assert with_mtp.mtp_routed_expert_params == 0 and with_mtp.total_params == llama.total_params


def test_without_mtp_nothing_changes():
    mixtral = shipped_catalog().model("mixtral-8x7b")
    assert mixtral.mtp_layers == 0 and mixtral.mtp_params == mixtral.mtp_active_params == 0
    # Mixtral 8x7B: 46,702,792,704 parameters (catalog, tests/test_model.py)
    assert mixtral.total_params == 46_702_792_704


def test_loss_weight_without_modules_is_refused():
    with pytest.raises(ValidationError, match="mtp_loss_weight needs mtp_layers"):
        ModelShape.model_validate({**NO_MTP.model_dump(), "mtp_loss_weight": 0.3})


def test_mtp_weights_sit_on_the_last_pipeline_stage_with_an_embedding_copy():
    """Megatron-LM (multi_token_prediction.py, gpt_model.py @ d98e8a6): the modules on the last stage, which
    also builds the embedding when p > 1; with p = 1 the one stage holds them once (no copy)."""
    terms, plain = ShapeTerms.from_shape(V3), ShapeTerms.from_shape(NO_MTP)
    t, e = 2, 8
    dense_last, experts_last = stage_params(terms, t, 8, e, last=True)
    dense_plain, experts_plain = stage_params(plain, t, 8, e, last=True)
    assert dense_last - dense_plain == pytest.approx((MODULE - 256 * EXPERT + V * H) / t)
    assert experts_last - experts_plain == pytest.approx(256 * EXPERT / (t * e))
    first = stage_params(terms, t, 8, e, last=False)
    assert np.allclose(first, stage_params(plain, t, 8, e, last=False))
    single = stage_params(terms, 1, 1, 1, last=False)[0] - stage_params(plain, 1, 1, 1, last=False)[0]
    assert single == pytest.approx(MODULE - 256 * EXPERT)


def test_the_plan_says_how_the_mtp_module_enters_its_counts(tmp_path):
    # 6 × 38,240,398,080 matmul params + 6 × (61 + 1) layers × 4,096 × 128 heads × (192 + 128) = 291,853,632,000
    from tests.planned import planned_json

    body = "model: deepseek-v3\nbudget: {tokens: 14.8T}\ncluster: {gpu: h100-sxm, gpus: 2048}\n"
    model = planned_json(tmp_path, body)["model"]
    assert model["flops_per_token"] == 6 * 38_240_398_080 + 6 * 62 * 4096 * 128 * 320
    assert "the 1 multi-token-prediction module(s) add 11,610,068,224 more" in model["notes"]["total_params"]
    assert (
        "with 1 MTP module(s) (DeepSeek-V3 §2.2) L counts their blocks too"
        in model["notes"]["flops_per_token"]
    )


def test_mtp_with_a_sliding_window_is_refused():
    from runplan.catalog import shipped_catalog

    gemma = shipped_catalog().model("gemma-2-9b").model_dump()
    with pytest.raises(ValueError, match="mtp_layers with sliding_window is not modelled"):
        type(shipped_catalog().model("gemma-2-9b")).model_validate(gemma | {"mtp_layers": 1})
