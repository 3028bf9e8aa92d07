"""Compute-optimal batch size and learning rate: DeepSeek LLM's fits (Bi et al. 2024, arXiv 2401.02954, §3.1,
Eq. 1 and Fig. 3): B_opt = 0.2920·C^0.3271 tokens and η_opt = 0.3118·C^−0.1250, with C = M·D and M the
non-embedding training FLOPs per token (72·L·h² + 12·L·h·s for their shapes).

One home for both laws: the layout search uses B_opt as its batch ceiling, the schedule as its batch and LR.
Leaves out: DeepSeek fitted on their data, tokenizer and schedule with compute up to about 3e20 FLOPs; Zhang et
al. 2024 (arXiv 2410.21676) find the critical batch grows mainly with D, not N.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from runplan.errors import SpecError
from runplan.model import ModelShape

if TYPE_CHECKING:
    from runplan.scaling.laws import ParametricLaw

DEEPSEEK_BATCH_COEF = 0.2920
DEEPSEEK_BATCH_EXP = 0.3271
DEEPSEEK_LR_COEF = 0.3118
DEEPSEEK_LR_EXP = -0.1250

#: The largest compute at which the laws' numbers were used in a published run: DeepSeek LLM 67B (Table 2: 95
#: layers, h 8,192, s 4,096, 2T tokens; M = 72·95·8192² + 12·95·8192·4096 = 4.97e11 FLOPs/token, C = M·D =
#: 9.9e23), trained at the laws' batch (4,608 × 4,096 tokens; the law gives 20.6M) and peak LR (3.2e-4; the law
#: gives 3.1e-4). Beyond it nobody has checked the laws; the schedule warns.
DEEPSEEK_LARGEST_USE_FLOPS = 9.9e23


def deepseek_flops_per_token(shape: ModelShape, seq_len: int) -> float:
    """DeepSeek's M: 6 × active non-embedding parameters + the attention term 6·L·s·a·(d_qk + d_v).

    Equals 72·L·h² + 12·L·h·s for a 4h-MLP multi-head block; no output head, no causal discount. A
    multi-token-prediction module (DeepSeek-V3 §2.2) is non-embedding compute of every token: its active weights
    count beside its attention, which ``attention_flops_per_token`` already adds (its pass through the shared
    V·h head, like the main head, does not).
    """
    weights = shape.active_non_embedding_params + shape.mtp_active_params
    return 6.0 * weights + shape.attention_flops_per_token(seq_len)


def deepseek_batch_tokens(compute_flops: float) -> float:
    """B_opt = 0.2920·C^0.3271 tokens (DeepSeek LLM, §3.1, Eq. 1)."""
    return DEEPSEEK_BATCH_COEF * compute_flops**DEEPSEEK_BATCH_EXP


def deepseek_peak_lr(compute_flops: float) -> float:
    """η_opt = 0.3118·C^−0.1250 (DeepSeek LLM, §3.1, Eq. 1)."""
    return DEEPSEEK_LR_COEF * compute_flops**DEEPSEEK_LR_EXP


# ---- critical batch against loss (Kaplan et al. 2020) ---------------------------------------------------
#: Kaplan et al. 2020 (arXiv 2001.08361), §5.1 (Eq. 5.3, summarised as Eq. 1.4): B_crit(L) = B*/L^(1/α_B) with
#: B* ≈ 2e8 tokens and α_B ≈ 0.21, L in nats/token on their WebText2 data and GPT-2 tokenizer.
KAPLAN_CRITICAL_BATCH_TOKENS = 2e8
KAPLAN_CRITICAL_BATCH_EXP = 0.21


def kaplan_critical_batch_tokens(loss: float) -> float:
    """B_crit(L) = 2e8 / L^(1/0.21) tokens (Kaplan et al. 2020, §5.1): the batch beyond which more data per step
    buys little; it grows as the loss falls, which is why a run can start at a smaller batch."""
    if not loss > 0:
        raise ValueError(f"loss must be positive, got {loss!r}")
    return KAPLAN_CRITICAL_BATCH_TOKENS * loss ** (-1.0 / KAPLAN_CRITICAL_BATCH_EXP)


def loss_for_critical_batch(batch_tokens: float) -> float:
    """The loss at which B_crit(L) = ``batch_tokens``: L = (B*/B)^α_B (the inverse of the law above)."""
    return (KAPLAN_CRITICAL_BATCH_TOKENS / batch_tokens) ** KAPLAN_CRITICAL_BATCH_EXP


def critical_batch_ramp(
    law: ParametricLaw,
    params: float,
    training_tokens: float,
    main_batch_tokens: float,
    *,
    halvings: int = 3,
    max_token_fraction: float = 0.5,
) -> tuple[list[tuple[float, float]], list[str]]:
    """Batch-ramp stages that keep the batch at or below B_crit(L(t)): ``[(batch_fraction, token_fraction)]``
    in order, smallest batch first, and cautions.

    A stage at batch ``main/2^k`` runs until B_crit(L(t)) reaches ``main/2^(k−1)``, i.e. until the loss falls to
    L_k = (B*/(main/2^(k−1)))^α_B; L(t) is the parametric law's loss of this model after t tokens, so the
    boundary is t_k = law.tokens_for_loss(params, L_k) (closed form). The first stage starts at token 0. Stages
    are cut so that together they cover under ``max_token_fraction`` of the run (ScheduleSpec's limit).
    Leaves out: L(t) from a law of fully trained models stands in for the loss mid-run (a WSD run's stable
    phase sits above it), and B* was fitted on Kaplan's data and tokenizer, so compare batches, not losses,
    across corpora.
    """
    warnings: list[str] = []
    bounds = []
    for k in range(halvings, 0, -1):
        target = loss_for_critical_batch(main_batch_tokens / 2 ** (k - 1))
        end = float(law.tokens_for_loss(params, target))
        bounds.append((2.0**-k, min(end, training_tokens)))
    stages: list[tuple[float, float]] = []
    start = 0.0
    limit = max_token_fraction * training_tokens
    for fraction, end in bounds:
        end = min(end, limit * (1 - 1e-9))
        if end > start:
            stages.append((fraction, (end - start) / training_tokens))
            start = end
    if start >= limit * (1 - 1e-6):
        warnings.append(
            f"B_crit(L) stays below the main batch of {main_batch_tokens:.3g} tokens for over "
            f"{max_token_fraction:.0%} of the run: the ramp was cut there (the main batch is above Kaplan et al. "
            "2020's critical batch for most of training)"
        )
    return stages, warnings


# ---- your own batch/LR law (`runplan fit --hyperparams -o`) -------------------------------------------


class HyperparamLaw(BaseModel):
    """B_opt = k_B·C^e_B tokens and η_opt = k_η·C^e_η, as fitted (the file `runplan fit --hyperparams -o` writes)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="Short name, e.g. 'hyperparams:sweep.csv'.")
    batch_coef: float = Field(gt=0, description="k_B (tokens).")
    batch_exp: float = Field(description="e_B.")
    lr_coef: float = Field(gt=0, description="k_η.")
    lr_exp: float = Field(description="e_η.")
    flops_min: float = Field(gt=0, description="Smallest budget fitted.")
    flops_max: float = Field(gt=0, description="Largest budget fitted.")
    source: str = Field(description="Method and CSV.")

    @property
    def batch_formula(self) -> str:
        """``B_opt = k_B·C^e_B`` with the fitted numbers, as every reason that names the law writes it."""
        return f"B_opt = {self.batch_coef:.4g}·C^{self.batch_exp:.4g}"

    @property
    def lr_formula(self) -> str:
        """``η_opt = k_η·C^e_η`` with the fitted numbers."""
        return f"η_opt = {self.lr_coef:.4g}·C^{self.lr_exp:.4g}"

    def batch_tokens(self, compute_flops: float) -> float:
        """B_opt = k_B·C^e_B tokens (DeepSeek LLM §3.1 form, your coefficients)."""
        return self.batch_coef * compute_flops**self.batch_exp

    def peak_lr(self, compute_flops: float) -> float:
        """η_opt = k_η·C^e_η (DeepSeek LLM §3.1 form, your coefficients)."""
        return self.lr_coef * compute_flops**self.lr_exp


def load_hyperparam_law(path: str | Path) -> HyperparamLaw:
    """Read a law written by `runplan fit --hyperparams -o`; a bad file is a one-line SpecError."""
    from pydantic import ValidationError

    from runplan.validation import spec_error_from_validation
    from runplan.yamlio import load_yaml_file

    loaded = load_yaml_file(path)
    if not isinstance(loaded.data, dict):
        raise SpecError(
            "a hyperparameter law must be a mapping (batch_coef, batch_exp, ...)", source=str(path)
        )
    try:
        return HyperparamLaw.model_validate(loaded.data)
    except ValidationError as error:
        raise spec_error_from_validation(error, HyperparamLaw, loaded) from None
