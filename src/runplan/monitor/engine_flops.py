"""FLOPs per token as an engine counts them, on a plan's model shape, to explain the gap between the TFLOP/s an
engine prints and the plan's own count (PaLM model FLOPs, ``model.ModelShape.model_flops_per_token``).

Megatron-LM ``num_floating_point_operations`` (megatron/training/training.py @ d98e8a64, the ``transformer_flops``
path; BSHD, no multi-token prediction, no linear attention), per token:

    3 (forward, weight gradient, data gradient) × 2 (multiply-add) × [
        L × (h·(q + 2·kv) + q·h)                      QKV and output projections (q = a·d_h, kv = groups·d_h)
      + dense layers × h·F·(3 SwiGLU | 2)             MLP
      + MoE layers × h·F_e·(k + shared)·(3 | 2)       the k routed experts a token uses and the shared ones
      + h·V ]                                         logits (V as padded by --make-vocab-size-divisible-by × t)
    + 6 × L × s × q / 2 × 2                           QK^T and softmax·V, causal: half the score matrix

so, against the plan's count: attention at half (the plan's has no causal discount, PaLM App. B); no norm
weights, biases, QK-norm or router (the plan's 6 × active weights hold them); no recompute forward (Megatron-
DeepSpeed's ``TFLOPs`` adds it, Megatron-LM's does not). For MLA (``multi_latent_attention``) the projections are
Megatron's q/kv LoRA terms, which count the same weights as ``ModelShape.attention_params_per_layer`` (the LoRA
norms included, as Megatron's ``+ 1``), and the core term 6·s·a·(d_qk + d_v)/2.
"""

from __future__ import annotations

from runplan.model import ModelShape


def _megatron_projections(shape: ModelShape) -> int:
    """Weights of one layer's attention projections as Megatron counts them: GQA ``h·(q + k + v) + q·h``; MLA the
    LoRA terms, equal to runplan's attention weights (no bias: Megatron counts none)."""
    if shape.attention == "mla":
        return shape.attention_params_per_layer - (shape.d_model if shape.linear_bias else 0)
    q = shape.n_heads * shape.head_dim
    kv = shape.n_kv_heads * shape.head_dim
    return shape.d_model * (q + 2 * kv) + q * shape.d_model


def megatron_flops_per_token(shape: ModelShape, seq_len: int, padded_vocab: int | None = None) -> float:
    """Megatron-LM's training FLOPs per token for ``shape`` at ``seq_len`` (module docstring; ``padded_vocab``:
    the vocabulary as Megatron pads it, default the shape's, as runplan's export sets it unpadded)."""
    h = shape.d_model
    # gate, up and down (Megatron's swiglu factor; GeGLU has the same three)
    matrices = 3 if shape.gated else 2
    # multi-token prediction (--mtp-num-layers): each module one more block of the last layer's kind (MoE when
    # the model has MoE layers, which follow its dense ones), its 3 norms and 2h·h projection, and one more pass
    # through the logits (num_floating_point_operations @ d98e8a64)
    mtp = shape.mtp_layers
    dense, moe = (
        shape.dense_layers + (0 if shape.is_moe else mtp),
        shape.moe_layers + (mtp if shape.is_moe else 0),
    )
    weights = (
        (shape.n_layers + mtp) * _megatron_projections(shape)
        + dense * h * shape.ffn_hidden * matrices
        + moe * h * shape.expert_ffn_hidden * (shape.top_k + shape.n_shared_experts) * matrices
        + mtp * (3 * h + 2 * h * h)
        + h * (padded_vocab or shape.vocab_size) * (1 + mtp)
    )
    # Megatron's count has no window term: every layer's core over the full s, causal half
    core = 6.0 * (shape.n_layers + mtp) * seq_len * shape.n_heads * (shape.qk_dim + shape.value_dim) / 2
    return 6.0 * weights + core
