"""Two MoE router facts the sizes do not carry: whether the k chosen gate weights are renormalised to add to 1
(config.json ``norm_topk_prob``; Mixtral always) and the load-balancing loss (``router_aux_loss_coef``, DeepSeek's
``aux_loss_alpha``/``seq_aux``). Configs below carry the published files' values (huggingface.co/<repo>
config.json); the catalog values are checked against the sources each entry names."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from runplan.catalog import shipped_catalog
from runplan.errors import SpecError
from runplan.hf_config import shape_from_config

# mistralai/Mixtral-8x7B-v0.1 (router_aux_loss_coef 0.02; no norm_topk_prob key)
MIXTRAL_8X7B = {
    "model_type": "mixtral", "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
    "num_hidden_layers": 32, "num_key_value_heads": 8, "vocab_size": 32000, "num_local_experts": 8,
    "num_experts_per_tok": 2, "rms_norm_eps": 1e-05, "rope_theta": 1e6, "router_aux_loss_coef": 0.02,
}  # fmt: skip
# Qwen/Qwen3-30B-A3B (norm_topk_prob true, router_aux_loss_coef 0.001)
QWEN3_30B_A3B = {
    "model_type": "qwen3_moe", "hidden_size": 2048, "intermediate_size": 6144, "moe_intermediate_size": 768,
    "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128, "num_hidden_layers": 48,
    "num_experts": 128, "num_experts_per_tok": 8, "decoder_sparse_step": 1, "mlp_only_layers": [],
    "vocab_size": 151936, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "norm_topk_prob": True,
    "router_aux_loss_coef": 0.001,
}  # fmt: skip
# deepseek-ai/DeepSeek-V2-Lite (norm_topk_prob false, aux_loss_alpha 0.001, seq_aux true)
DEEPSEEK_V2_LITE = {
    "model_type": "deepseek_v2", "hidden_size": 2048, "intermediate_size": 10944, "moe_intermediate_size": 1408,
    "num_attention_heads": 16, "num_key_value_heads": 16, "num_hidden_layers": 27, "vocab_size": 102400,
    "q_lora_rank": None, "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
    "v_head_dim": 128, "n_routed_experts": 64, "n_shared_experts": 2, "num_experts_per_tok": 6,
    "first_k_dense_replace": 1, "topk_method": "greedy", "scoring_func": "softmax", "norm_topk_prob": False,
    "aux_loss_alpha": 0.001, "seq_aux": True, "rms_norm_eps": 1e-06, "rope_theta": 10000,
}  # fmt: skip
# deepseek-ai/DeepSeek-V3 (norm_topk_prob true; aux_loss_alpha 0.001 and seq_aux true, unused by noaux_tc)
DEEPSEEK_V3 = {
    "model_type": "deepseek_v3", "hidden_size": 7168, "intermediate_size": 18432, "moe_intermediate_size": 2048,
    "num_attention_heads": 128, "num_key_value_heads": 128, "num_hidden_layers": 61, "vocab_size": 129280,
    "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
    "v_head_dim": 128, "n_routed_experts": 256, "n_shared_experts": 1, "num_experts_per_tok": 8,
    "first_k_dense_replace": 3, "scoring_func": "sigmoid", "topk_method": "noaux_tc", "n_group": 8,
    "topk_group": 4, "routed_scaling_factor": 2.5, "norm_topk_prob": True, "aux_loss_alpha": 0.001,
    "seq_aux": True, "rms_norm_eps": 1e-06, "rope_theta": 10000,
}  # fmt: skip


def _router(config: dict) -> tuple[bool, float | None, str]:
    shape = shape_from_config(config)
    return shape.router_topk_norm, shape.router_aux_loss_coef, shape.router_aux_loss_scope


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (
            MIXTRAL_8X7B,
            (True, 0.02, "micro_batch"),
        ),  # transformers' load_balancing_loss_func: the micro-batch
        (QWEN3_30B_A3B, (True, 0.001, "global_batch")),  # arXiv 2505.09388 §2: global-batch balance loss
        (DEEPSEEK_V2_LITE, (False, 0.001, "sequence")),
        # aux_loss_alpha 0.001 is not read: noaux_tc's MoEGate never trains (assert not self.training) and the
        # paper's alpha is 0.0001 (arXiv 2412.19437 §4.2), so the coefficient is left unknown
        (DEEPSEEK_V3, (True, None, "sequence")),
    ],
)
def test_published_configs_give_their_router(config, expected):
    assert _router(config) == expected


@pytest.mark.parametrize(
    ("config", "drop", "expected_norm"),
    [
        (MIXTRAL_8X7B, "norm_topk_prob", True),  # MixtralSparseMoeBlock always renormalises
        (QWEN3_30B_A3B, "norm_topk_prob", False),  # Qwen3MoeConfig(norm_topk_prob=False)
        (DEEPSEEK_V2_LITE, "norm_topk_prob", False),  # DeepseekV2Config(norm_topk_prob=False)
        (DEEPSEEK_V3, "norm_topk_prob", True),  # DeepseekV3Config(norm_topk_prob=True)
    ],
)
def test_a_left_out_norm_topk_prob_takes_the_family_default(config, drop, expected_norm):
    config = {k: v for k, v in config.items() if k != drop}
    assert shape_from_config(config).router_topk_norm is expected_norm


def test_mixtral_renormalises_even_when_the_key_says_false():
    # transformers' Mixtral has no norm_topk_prob: its block divides by the sum whatever a config carries
    assert shape_from_config(MIXTRAL_8X7B | {"norm_topk_prob": False}).router_topk_norm is True


def test_a_left_out_coefficient_is_unknown_and_seq_aux_false_is_the_micro_batch():
    no_coef = {k: v for k, v in QWEN3_30B_A3B.items() if k != "router_aux_loss_coef"}
    assert shape_from_config(no_coef).router_aux_loss_coef is None
    assert _router(DEEPSEEK_V2_LITE | {"seq_aux": False}) == (False, 0.001, "micro_batch")


def test_router_facts_change_no_parameter_count():
    base = shape_from_config(QWEN3_30B_A3B)
    other = base.model_copy(update={"router_topk_norm": False, "router_aux_loss_coef": 0.5})
    assert (other.total_params, other.active_params) == (base.total_params, base.active_params)
    assert base.total_params == 30_532_122_624  # the catalog's exact count (docs/catalog.md)


@pytest.mark.parametrize(
    ("config", "needle"),
    [
        (QWEN3_30B_A3B | {"norm_topk_prob": "true"}, "norm_topk_prob must be true or false"),
        (QWEN3_30B_A3B | {"router_aux_loss_coef": "0.001"}, "router_aux_loss_coef must be a number"),
        (QWEN3_30B_A3B | {"router_aux_loss_coef": -0.01}, "router_aux_loss_coef must be a number"),
        (DEEPSEEK_V2_LITE | {"aux_loss_alpha": True}, "aux_loss_alpha must be a number"),
        (DEEPSEEK_V3 | {"seq_aux": "yes"}, "seq_aux must be true or false"),
        # transformers divides a top-1 weight by itself: a gate of constant 1 the shape does not express
        (MIXTRAL_8X7B | {"num_experts_per_tok": 1}, "top-1 router whose weight is renormalised"),
        (QWEN3_30B_A3B | {"num_experts_per_tok": 1}, "top-1 router whose weight is renormalised"),
    ],
)
def test_bad_router_keys_are_one_line_errors_naming_the_key(config, needle):
    with pytest.raises(SpecError) as caught:
        shape_from_config(config)
    assert needle in caught.value.message and "\n" not in caught.value.message


def test_top1_without_renormalisation_is_read():
    # Qwen3MoE with norm_topk_prob false: the top-1 gate is the softmax probability (Switch Transformer's gate)
    one = QWEN3_30B_A3B | {"num_experts_per_tok": 1, "norm_topk_prob": False}
    assert shape_from_config(one).top_k == 1


def test_a_dense_model_has_no_balance_loss_and_a_negative_one_is_refused():
    dense = shipped_catalog().model("llama-3.1-8b").model_dump()
    with pytest.raises(ValidationError, match="router_aux_loss_coef need n_experts > 0"):
        type(shipped_catalog().model("llama-3.1-8b")).model_validate(dense | {"router_aux_loss_coef": 0.01})
    moe = shipped_catalog().model("qwen3-30b-a3b").model_dump()
    with pytest.raises(ValidationError, match="greater than or equal to 0"):
        type(shipped_catalog().model("qwen3-30b-a3b")).model_validate(moe | {"router_aux_loss_coef": -1.0})


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("mixtral-8x7b", (True, 0.02, "micro_batch")),  # config.json router_aux_loss_coef 0.02
        ("mixtral-8x22b", (True, 0.001, "micro_batch")),  # config.json router_aux_loss_coef 0.001
        ("qwen3-30b-a3b", (True, 0.001, "global_batch")),  # config.json; arXiv 2505.09388 §2
        ("deepseek-v3", (True, 1e-4, "sequence")),  # arXiv 2412.19437 §2.1.2 and §4.2: alpha = 0.0001
    ],
)
def test_shipped_moe_entries_carry_their_published_router(name, expected):
    shape = shipped_catalog().model(name)
    assert (shape.router_topk_norm, shape.router_aux_loss_coef, shape.router_aux_loss_scope) == expected
    assert "router_aux_loss_coef" in shape.source or "alpha 0.0001" in shape.source
