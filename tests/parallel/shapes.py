"""Inline specs for the solver tests (no catalog files)."""

from runplan.hardware import GpuSpec
from runplan.model import ModelShape

H100 = GpuSpec(
    name="h100-sxm",
    hbm_bytes=80e9,
    bf16_flops=989e12,
    fp8_flops=1979e12,  # H100 SXM datasheet, dense
    hbm_bandwidth_bytes_per_s=3.35e12,
    intra_node_bandwidth_bytes_per_s=450e9,
    inter_node_bandwidth_bytes_per_s=50e9,
    gpus_per_node=8,
    tdp_watts=700,
)


def _llama_style(
    name: str, n_layers: int, d_model: int, n_heads: int, ffn_hidden: int, **extra
) -> ModelShape:
    """Llama 3 style block (GQA with 8 KV heads, head dim 128, SwiGLU, RMSNorm, untied 128,256 vocabulary)."""
    fields = dict(
        n_kv_heads=8, head_dim=128, mlp="swiglu", vocab_size=128256, tied_embeddings=False, norm="rmsnorm"
    )
    fields.update(extra)
    return ModelShape(
        name=name, n_layers=n_layers, d_model=d_model, n_heads=n_heads, ffn_hidden=ffn_hidden, **fields
    )


# published shapes (Meta's and Mistral's config.json files, as in configs/models.yaml)
LLAMA_70B = _llama_style("llama-3.1-70b", 80, 8192, 64, 28672)
LLAMA_8B = _llama_style("llama-3.1-8b", 32, 4096, 32, 14336)
LLAMA_405B = _llama_style("llama-3.1-405b", 126, 16384, 128, 53248)
#: a small Qwen3-style block: per-head q/k RMSNorm (the elementwise count's qk_norm branch)
QK_NORM = _llama_style("tiny-qk-norm", 8, 1024, 16, 2816, vocab_size=32000, qk_norm=True)
MIXTRAL = _llama_style(
    "mixtral-8x7b", 32, 4096, 32, 14336, vocab_size=32000, n_experts=8, top_k=2, expert_ffn_hidden=14336
)
GPT_SMALL = ModelShape(
    name="gpt-small",
    n_layers=12,
    d_model=768,
    n_heads=12,
    n_kv_heads=12,
    head_dim=64,
    ffn_hidden=3072,
    mlp="gelu",
    vocab_size=50304,
    tied_embeddings=True,
    norm="layernorm",
    linear_bias=True,
    learned_positions=1024,
)
TINY_MOE = ModelShape(
    name="tiny-moe",
    n_layers=8,
    d_model=1024,
    n_heads=16,
    n_kv_heads=4,
    head_dim=64,
    ffn_hidden=2816,
    mlp="swiglu",
    vocab_size=32000,
    tied_embeddings=True,
    norm="rmsnorm",
    n_experts=8,
    top_k=2,
    expert_ffn_hidden=1024,
    n_shared_experts=1,
    n_dense_layers=1,
)
#: GPT-3 175B (Brown et al. 2020 Table 2.1): 96 layers, h 12288, 96 heads, F = 4h, GeLU, s 2048.
GPT3 = ModelShape(
    name="gpt3-175b",
    n_layers=96,
    d_model=12288,
    n_heads=96,
    n_kv_heads=96,
    head_dim=128,
    ffn_hidden=4 * 12288,
    mlp="gelu",
    vocab_size=51200,
    tied_embeddings=True,
    norm="layernorm",
    linear_bias=True,
    learned_positions=2048,
)
