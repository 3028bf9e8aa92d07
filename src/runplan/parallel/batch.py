"""Batch ceiling: DeepSeek's compute-optimal batch B_opt, the top of the batch range when the user gives none.

The code and the JSON call it ``critical_batch`` (kept for compatibility); it is not Kaplan et al.'s critical
batch B_crit (docs/scaling.md), and the text shown to users names it B_opt.

Law: DeepSeek LLM (Bi et al. 2024, arXiv 2401.02954, §3.1, Eq. 1 and Fig. 3): the near-optimal batch in tokens
is ``B_opt = 0.2920 · C^0.3271`` with ``C = M·D``, ``M`` the non-embedding FLOPs per token
``72·L·h² + 12·L·h·s`` for their shapes (generalised here exactly as 6 × active non-embedding parameters, a
multi-token-prediction module's active weights included, plus the attention score/value term
``6·L·s·a·(d_qk + d_v)`` with L counting the MTP layers, which equals 72·L·h² + 12·L·h·s for a 4h-MLP MHA
block; ``scaling.hyperparams.deepseek_flops_per_token``) and ``D`` the training tokens. When ``D`` is not given we assume Chinchilla's 20 tokens per parameter.

Leaves out: DeepSeek fitted the law on their data, tokenizer and LR schedule with compute up to ~3e20 FLOPs;
Zhang et al. 2024 (arXiv 2410.21676) find the (Kaplan) critical batch grows mainly with D, not N; the batch is usually
ramped up early in training (the schedule stage does that). We use B_opt as a ceiling, not a target.
"""

from __future__ import annotations

from runplan.model import ModelShape
from runplan.parallel.layout import CriticalBatch
from runplan.scaling.hyperparams import HyperparamLaw, deepseek_batch_tokens, deepseek_flops_per_token

CHINCHILLA_TOKENS_PER_PARAM = 20.0
LAW_NAME = "DeepSeek LLM (Bi et al. 2024, arXiv 2401.02954, Eq. 1): B_opt = 0.2920·C^0.3271 tokens, C = M·D"


def critical_batch(
    shape: ModelShape,
    seq_len: int,
    training_tokens: float | None = None,
    law: HyperparamLaw | None = None,
) -> CriticalBatch:
    """Batch ceiling (DeepSeek's B_opt, or ``law``'s: a plan's schedule.hyperparams) for ``shape`` trained on
    ``training_tokens`` (default 20 × total parameters), at DeepSeek's C = M·D either way."""
    assumed = training_tokens is None
    tokens = (
        CHINCHILLA_TOKENS_PER_PARAM * shape.total_params
        if training_tokens is None
        else float(training_tokens)
    )
    compute = deepseek_flops_per_token(shape, seq_len) * tokens
    return CriticalBatch(
        tokens=deepseek_batch_tokens(compute) if law is None else law.batch_tokens(compute),
        law=LAW_NAME
        if law is None
        else f"{law.name}: {law.batch_formula} tokens, C = M·D (schedule.hyperparams)",
        compute_flops=compute,
        training_tokens=tokens,
        assumed_training_tokens=assumed,
    )
