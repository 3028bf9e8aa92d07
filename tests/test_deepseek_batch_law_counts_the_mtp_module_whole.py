"""DeepSeek LLM's M (non-embedding FLOPs per token, Bi et al. 2024 §3.1), which sets C = M·D for the batch and LR
laws, counts a multi-token-prediction module (DeepSeek-V3 §2.2) whole: its attention and its active weights, as the
model's FLOPs per token and step time do (docs/catalog.md). It counted the module's attention (model.py
``attention_flops_per_token`` adds the MTP layers) but not its 688 M active weights: M = 276.60e9 for DeepSeek-V3
at 4,096 tokens instead of 280.73e9 (C 1.5% low on every DeepSeek-V3 plan)."""

from __future__ import annotations

from runplan.catalog import shipped_catalog
from runplan.scaling.hyperparams import deepseek_flops_per_token

V3 = shipped_catalog().model("deepseek-v3")
NO_MTP = V3.model_copy(update={"mtp_layers": 0, "mtp_loss_weight": None})
S = 4096
LAYER_ATTENTION = 6 * S * 128 * (192 + 128)  # score and value products of one MLA layer: 1,006,632,960
ACTIVE_NON_EMBEDDING = 37_552_297_472 - 2 * 129_280 * 7_168  # active 37.55 B less the untied V·h pair
# projection, norms, MLA block, router, shared + 8 routed experts (tests/test_mtp_counts.py)
MTP_ACTIVE = 688_100_608


def test_without_mtp_m_is_the_main_models():
    assert ACTIVE_NON_EMBEDDING == 35_698_939_392
    assert (
        deepseek_flops_per_token(NO_MTP, S)
        == 6 * ACTIVE_NON_EMBEDDING + 61 * LAYER_ATTENTION
        == 275_598_246_912
    )


def test_mtp_module_adds_its_weights_and_its_attention():
    expected = 6 * (ACTIVE_NON_EMBEDDING + MTP_ACTIVE) + 62 * LAYER_ATTENTION
    assert expected == 280_733_483_520
    assert deepseek_flops_per_token(V3, S) == expected
    # the module's share of M is its share of the model FLOPs outside the two V·h heads
    assert deepseek_flops_per_token(V3, S) - deepseek_flops_per_token(NO_MTP, S) == (
        V3.model_flops_per_token(S) - NO_MTP.model_flops_per_token(S) - 6 * 129_280 * 7_168
    )
