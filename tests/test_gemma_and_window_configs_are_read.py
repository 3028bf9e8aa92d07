"""Gemma, Gemma 2 and Gemma 3 text config.json files read into GeGLU, post-norm and sliding-window shapes; every
key of theirs read or ignored by name; Qwen's use_sliding_window refused (a split the shape cannot express)."""

import pytest

from runplan.errors import SpecError
from runplan.hf_config import shape_from_config

# google/gemma-2-9b config.json
GEMMA_2_9B = {
    "architectures": ["Gemma2ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
    "attn_logit_softcapping": 50.0, "bos_token_id": 2, "cache_implementation": "hybrid", "eos_token_id": 1,
    "final_logit_softcapping": 30.0, "head_dim": 256, "hidden_act": "gelu_pytorch_tanh",
    "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 3584, "initializer_range": 0.02,
    "intermediate_size": 14336, "max_position_embeddings": 8192, "model_type": "gemma2", "num_attention_heads": 16,
    "num_hidden_layers": 42, "num_key_value_heads": 8, "pad_token_id": 0, "query_pre_attn_scalar": 256,
    "rms_norm_eps": 1e-06, "rope_theta": 10000.0, "sliding_window": 4096, "sliding_window_size": 4096,
    "torch_dtype": "float32", "transformers_version": "4.42.0.dev0", "use_cache": True, "vocab_size": 256000,
}  # fmt: skip
# google/gemma-3-1b-pt config.json
GEMMA_3_1B = {
    "architectures": ["Gemma3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
    "attn_logit_softcapping": None, "bos_token_id": 2, "cache_implementation": "hybrid", "eos_token_id": 1,
    "final_logit_softcapping": None, "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh",
    "hidden_size": 1152, "initializer_range": 0.02, "intermediate_size": 6912, "max_position_embeddings": 32768,
    "model_type": "gemma3_text", "num_attention_heads": 4, "num_hidden_layers": 26, "num_key_value_heads": 1,
    "pad_token_id": 0, "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06, "rope_local_base_freq": 10000,
    "rope_scaling": None, "rope_theta": 1000000, "sliding_window": 512, "sliding_window_pattern": 6,
    "torch_dtype": "bfloat16", "transformers_version": "4.50.0.dev0", "use_cache": True, "vocab_size": 262144,
}  # fmt: skip
# google/gemma-7b config.json (Gemma 1: GeGLU, MHA of 16 heads of 256, no post-norms, no window)
GEMMA_7B = {
    "architectures": ["GemmaForCausalLM"], "attention_bias": False, "attention_dropout": 0.0, "bos_token_id": 2,
    "eos_token_id": 1, "head_dim": 256, "hidden_act": "gelu", "hidden_size": 3072, "initializer_range": 0.02,
    "intermediate_size": 24576, "max_position_embeddings": 8192, "model_type": "gemma", "num_attention_heads": 16,
    "num_hidden_layers": 28, "num_key_value_heads": 16, "pad_token_id": 0, "rms_norm_eps": 1e-06,
    "rope_scaling": None, "rope_theta": 10000.0, "torch_dtype": "bfloat16", "transformers_version": "4.38.0.dev0",
    "use_cache": True, "vocab_size": 256000,
}  # fmt: skip


def test_gemma_2_9b_config_is_read_exactly():
    shape = shape_from_config(GEMMA_2_9B)
    assert shape.total_params == 9_241_705_984  # the Hub's safetensors metadata
    assert (shape.mlp, shape.post_norms, shape.qk_norm, shape.tied_embeddings) == ("geglu", True, False, True)
    assert (shape.sliding_window, shape.global_every, shape.global_layers) == (4096, 2, 21)


def test_gemma_3_1b_config_is_read_exactly():
    shape = shape_from_config(GEMMA_3_1B)
    assert shape.total_params == 999_885_952  # the Hub's safetensors metadata
    assert (shape.sliding_window, shape.global_every, shape.global_layers) == (512, 6, 4)
    assert (shape.rope_theta, shape.rope_local_theta, shape.qk_norm) == (1e6, 1e4, True)


def test_gemma_3_linear_rope_scaling_and_layer_types():
    """Gemma 3 4B-27B scale the global layers' RoPE linearly by 8; transformers >= 4.53 writes layer_types."""
    types = ["full_attention" if (i + 1) % 6 == 0 else "sliding_attention" for i in range(26)]
    config = GEMMA_3_1B | {"rope_scaling": {"rope_type": "linear", "factor": 8.0}, "layer_types": types}
    shape = shape_from_config(config)
    assert shape.rope_scaling is not None and (shape.rope_scaling.type, shape.rope_scaling.factor) == (
        "linear",
        8,
    )
    assert shape.global_every == 6
    irregular = ["full_attention", *types[1:]]
    with pytest.raises(SpecError, match="global layers other than every k-th"):
        shape_from_config(GEMMA_3_1B | {"layer_types": irregular})
    every_layer_global = shape_from_config(GEMMA_3_1B | {"layer_types": ["full_attention"] * 26})
    assert every_layer_global.sliding_window == 0


def test_gemma_7b_config_is_read_exactly():
    # 8,537,680,896 (KerasNLP gemma_7b_en), as tests/test_model.py derives it by hand
    shape = shape_from_config(GEMMA_7B)
    assert shape.total_params == 8_537_680_896
    assert (shape.mlp, shape.post_norms, shape.sliding_window) == ("geglu", False, 0)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"altup_num_inputs": 4}, "key 'altup_num_inputs' is neither read nor known to change no count"),
        ({"attention_bias": True}, "attention_bias true is not modelled for gemma2"),
        ({"hidden_activation": "silu"}, "hidden_activation 'silu' is not a GeLU"),
        ({"use_bidirectional_attention": True}, "use_bidirectional_attention true"),
    ],
)
def test_gemma_configs_are_strict(change, message):
    with pytest.raises(SpecError, match=message):
        shape_from_config(GEMMA_2_9B | change)


def test_qwen_use_sliding_window_is_refused_and_its_unused_window_ignored():
    qwen2 = {
        "model_type": "qwen2", "hidden_size": 3584, "intermediate_size": 18944, "num_attention_heads": 28,
        "num_hidden_layers": 28, "num_key_value_heads": 4, "vocab_size": 152064, "sliding_window": 131072,
        "use_sliding_window": False, "max_window_layers": 28,
    }  # fmt: skip
    assert shape_from_config(qwen2).sliding_window == 0
    with pytest.raises(SpecError, match="use_sliding_window true"):
        shape_from_config(qwen2 | {"use_sliding_window": True})


def test_mixtral_null_window_is_none():
    mixtral = {
        "model_type": "mixtral", "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
        "num_hidden_layers": 32, "num_key_value_heads": 8, "vocab_size": 32000, "num_local_experts": 8,
        "num_experts_per_tok": 2, "sliding_window": None,
    }  # fmt: skip
    assert shape_from_config(mixtral).sliding_window == 0


def test_transformers_v5_rope_parameters_per_layer_type():
    """transformers v5 writes Gemma 3's two RoPE setups as rope_parameters keyed by layer type."""
    config = {k: v for k, v in GEMMA_3_1B.items() if k not in ("rope_theta", "rope_local_base_freq")}
    config["rope_parameters"] = {
        "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6},
        "sliding_attention": {"rope_type": "default", "rope_theta": 1e4},
    }
    shape = shape_from_config(config)
    assert (shape.rope_theta, shape.rope_local_theta) == (1e6, 1e4)
    assert shape.rope_scaling is not None and shape.rope_scaling.factor == 8.0


def test_a_null_gemma_window_is_no_window_as_for_mistral():
    # null was read as Gemma2Config's default 4,096 (a window the model does not have); Mistral's null is none
    shape = shape_from_config(GEMMA_2_9B | {"sliding_window": None})
    assert (shape.sliding_window, shape.global_every) == (0, 0)


def test_layer_types_that_are_not_names_are_one_line_naming_the_key():
    with pytest.raises(
        SpecError, match=r"layer_types must be a list of num_hidden_layers \(42\) names, got a list"
    ):
        shape_from_config(GEMMA_2_9B | {"layer_types": [{"kind": "full"}] * 42})


@pytest.mark.parametrize(
    ("config", "vocab"), [(GEMMA_3_1B, 262_208), (GEMMA_2_9B, 256_000), (GEMMA_7B, 256_000)]
)
def test_a_gemma_config_without_vocab_size_takes_the_class_default(config, vocab):
    # a Gemma 3 checkpoint's text_config can leave vocab_size to Gemma3TextConfig's 262,208; Gemma and Gemma 2
    # default to 256,000 (transformers configuration_gemma*.py): the vocabularies every release uses
    trimmed = {k: v for k, v in config.items() if k != "vocab_size"}
    assert shape_from_config(trimmed).vocab_size == vocab


def test_other_families_still_ask_for_vocab_size():
    with pytest.raises(SpecError, match="lacks 'vocab_size'"):
        shape_from_config({"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
                           "num_attention_heads": 32, "num_hidden_layers": 32})  # fmt: skip
