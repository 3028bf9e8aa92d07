"""Compute-optimal batch size and learning rate: DeepSeek LLM's fits (Bi et al. 2024, arXiv 2401.02954, §3.1,
Eq. 1 and Fig. 3): B_opt = 0.2920·C^0.3271 tokens and η_opt = 0.3118·C^−0.1250, with C = M·D and M the
non-embedding training FLOPs per token (72·L·h² + 12·L·h·s for their shapes).

One home for both laws: the layout search uses B_opt as its batch ceiling, the schedule as its batch and LR.
Leaves out: DeepSeek fitted on their data, tokenizer and schedule with compute up to about 3e20 FLOPs; Zhang et
al. 2024 (arXiv 2410.21676) find the critical batch grows mainly with D, not N.
"""

from __future__ import annotations

from runplan.model import ModelShape

DEEPSEEK_BATCH_COEF = 0.2920
DEEPSEEK_BATCH_EXP = 0.3271
DEEPSEEK_LR_COEF = 0.3118
DEEPSEEK_LR_EXP = -0.1250


def deepseek_flops_per_token(shape: ModelShape, seq_len: int) -> float:
    """DeepSeek's M: 6 × active non-embedding parameters + the attention term 6·L·s·a·(d_qk + d_v).

    Equals 72·L·h² + 12·L·h·s for a 4h-MLP multi-head block; no output head, no causal discount.
    """
    return 6.0 * shape.active_non_embedding_params + shape.attention_flops_per_token(seq_len)


def deepseek_batch_tokens(compute_flops: float) -> float:
    """B_opt = 0.2920·C^0.3271 tokens (DeepSeek LLM, §3.1, Eq. 1)."""
    return DEEPSEEK_BATCH_COEF * compute_flops**DEEPSEEK_BATCH_EXP


def deepseek_peak_lr(compute_flops: float) -> float:
    """η_opt = 0.3118·C^−0.1250 (DeepSeek LLM, §3.1, Eq. 1)."""
    return DEEPSEEK_LR_COEF * compute_flops**DEEPSEEK_LR_EXP
