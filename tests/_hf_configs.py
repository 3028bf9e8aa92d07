"""Hugging Face config.json contents the tests write to disk (model files a user passes as `--model PATH`)."""

from __future__ import annotations

# meta-llama/Llama-3.1-8B config.json (the keys a shape needs)
LLAMA_31_8B = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "tie_word_embeddings": False,
    "rms_norm_eps": 1e-05,
    "rope_theta": 500000.0,
    "hidden_act": "silu",
}
