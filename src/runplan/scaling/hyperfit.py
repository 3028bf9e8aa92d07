"""Fit the compute-optimal batch size and learning rate to your own proxy sweep, as DeepSeek LLM did.

Bi et al. 2024 (DeepSeek LLM, arXiv 2401.02954, §3.1, Fig. 3): at each of several small compute budgets C, train
a grid of (batch size, learning rate); the runs whose loss is within 0.25% of that budget's minimum are
"near-optimal"; least squares of ln B = ln k_B + e_B·ln C and ln η = ln k_η + e_η·ln C over the near-optimal
runs give B_opt = k_B·C^e_B and η_opt = k_η·C^e_η (theirs: 0.2920·C^0.3271 tokens, 0.3118·C^−0.1250).
Intervals: bootstrap, resampling runs within each budget and repeating the selection and the fit.
C is whatever the CSV's ``flops`` column holds (DeepSeek: non-embedding FLOPs per token × tokens, M·D); the
law must be used with the same C. Budgets are grouped as in ``runplan fit`` (exact, or from the data).
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from runplan.errors import SpecError
from runplan.scaling.fit import (
    BUDGET_WINDOW_DECADES,
    EXTRAPOLATION_FACTOR,
    Runs,
    _check_at_flops,
    _parse_rows,
    group_budgets,
    read_csv_text,
    refuse_shared_column,
)
from runplan.scaling.hyperparams import DEEPSEEK_LARGEST_USE_FLOPS, HyperparamLaw, load_hyperparam_law
from runplan.scaling.laws import Interval, interval_of

#: A batch column whose largest value is below this many tokens (one 4k sequence) counts sequences, most likely:
#: DeepSeek LLM §3.1's smallest budget, 1e17 FLOPs, has B_opt = 0.2920·(1e17)^0.3271 = 1.06e5 tokens.
SEQUENCES_NOT_TOKENS_BELOW = 4096

#: DeepSeek LLM §3.1: a run is near-optimal when its loss is within 0.25% of the budget's minimum.
NEAR_OPTIMAL_TOLERANCE = 0.0025


class HyperparamRuns(BaseModel):
    """Proxy runs with their hyperparameters: C, learning rate, batch (tokens), final loss, CSV line."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    flops: np.ndarray = Field(description="C per run.")
    lr: np.ndarray = Field(description="Peak learning rate per run.")
    batch: np.ndarray = Field(description="Global batch in tokens per run.")
    loss: np.ndarray = Field(description="Final loss per run.")
    lines: np.ndarray = Field(description="CSV line of each run.")
    source: str = Field("<runs>", description="Where the runs came from.")


def read_hyperparam_runs(
    path: str | Path,
    *,
    flops_col: str = "flops",
    lr_col: str = "lr",
    batch_col: str = "batch",
    loss_col: str = "loss",
) -> HyperparamRuns:
    """Read a hyperparameter sweep CSV (header row; columns flops, lr, batch in tokens, loss); every bad cell is
    a one-line SpecError naming its row and column."""
    text, source = read_csv_text(path)
    reader = csv.reader(text.splitlines())
    header = [h.strip() for h in next(reader, [])]
    roles = {"--flops-col": flops_col, "--lr-col": lr_col, "--batch-col": batch_col, "--loss-col": loss_col}
    refuse_shared_column(roles, source)
    columns = []
    for name in (flops_col, lr_col, batch_col, loss_col):
        if name not in header:
            raise SpecError(
                f"missing column '{name}'",
                source=source,
                hint=f"columns are {', '.join(header) or 'none'}; a hyperparameter sweep needs flops, lr, batch "
                "(tokens) and loss (name other columns with --flops-col, --lr-col, --batch-col, --loss-col)",
            )
        columns.append((name, header.index(name)))
    rows, lines = [], []
    for row in reader:
        if "".join(row).strip():
            rows.append(row)
            lines.append(reader.line_num)
    if not rows:
        raise SpecError("no runs after the header row", source=source)
    values = _parse_rows(rows, lines, columns, source, loss_col)
    return HyperparamRuns(
        flops=values[flops_col],
        lr=values[lr_col],
        batch=values[batch_col],
        loss=values[loss_col],
        lines=np.array(lines),
        source=source,
    )


class HyperparamBudget(BaseModel):
    """One budget of the sweep: its best run and how many runs are near-optimal."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    flops: float = Field(description="Budget C (geometric mean of the group's C).")
    runs: int = Field(description="Runs at this budget.")
    near_optimal: int = Field(description="Runs within the tolerance of the minimum loss.")
    best_loss: float = Field(description="Lowest loss at this budget.")
    best_lr: float = Field(description="Learning rate of the lowest-loss run.")
    best_batch: float = Field(description="Batch (tokens) of the lowest-loss run.")
    lines: list[int] = Field(description="CSV lines of the budget's runs.")


class HyperparamFit(BaseModel):
    """B_opt = k_B·C^e_B and η_opt = k_η·C^e_η with bootstrap intervals (keys in docs/scaling.md)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: str = Field(description="CSV fitted.")
    budgets: list[HyperparamBudget] = Field(description="Budgets used.")
    batch_coef: Interval = Field(description="k_B in B_opt = k_B·C^e_B (tokens).")
    batch_exp: Interval = Field(description="e_B.")
    lr_coef: Interval = Field(description="k_η in η_opt = k_η·C^e_η.")
    lr_exp: Interval = Field(description="e_η.")
    at_flops: float = Field(description="Budget the optimum below is evaluated at.")
    batch_opt: Interval = Field(description="B_opt at at_flops (tokens).")
    lr_opt: Interval = Field(description="η_opt at at_flops.")
    tolerance: float = Field(description="Near-optimal: loss ≤ (1 + tolerance) × the budget's minimum.")
    grouping: str = Field(description="How runs were grouped into budgets.")
    bootstrap: int = Field(description="Bootstrap resamples requested.")
    percentiles: tuple[float, float] = Field(description="Percentiles of the intervals.")
    warnings: list[str] = Field(
        default_factory=list,
        description="Cautions: few budgets, optimum at a grid edge, at_flops over 10× outside the C fitted.",
    )

    def law(self) -> HyperparamLaw:
        """The point estimates as a law to use in a plan (same C as the CSV's flops column)."""
        flops = [b.flops for b in self.budgets]
        return HyperparamLaw(
            name=f"hyperparams:{Path(self.source).name}",
            batch_coef=self.batch_coef.value,
            batch_exp=self.batch_exp.value,
            lr_coef=self.lr_coef.value,
            lr_exp=self.lr_exp.value,
            flops_min=min(flops),
            flops_max=max(flops),
            source=f"runplan fit --hyperparams (DeepSeek LLM §3.1 method, tolerance {self.tolerance:g}) of "
            f"{self.source}",
        )


def _near_optimal_fit(
    log_c: np.ndarray,
    log_b: np.ndarray,
    log_lr: np.ndarray,
    loss: np.ndarray,
    groups: list[np.ndarray],
    tol: float,
) -> tuple[float, float, float, float]:
    """(ln k_B, e_B, ln k_η, e_η) from least squares over the near-optimal runs of every budget."""
    chosen = np.concatenate([idx[loss[idx] <= loss[idx].min() * (1 + tol)] for idx in groups])
    x = log_c[chosen]
    if np.unique(x).size < 2:
        return (math.nan,) * 4
    design = np.stack([np.ones_like(x), x], axis=1)
    (kb, eb), *_ = np.linalg.lstsq(design, log_b[chosen], rcond=None)
    (kl, el), *_ = np.linalg.lstsq(design, log_lr[chosen], rcond=None)
    return float(kb), float(eb), float(kl), float(el)


def fit_hyperparams(
    runs: HyperparamRuns,
    *,
    tolerance: float = NEAR_OPTIMAL_TOLERANCE,
    bootstrap: int = 0,
    percentiles: tuple[float, float] = (10, 90),
    at_flops: float | None = None,
    bin_decades: float | None = None,
    seed: int = 0,
) -> HyperparamFit:
    """DeepSeek LLM §3.1 on ``runs`` (see the module docstring); at least 2 budgets of 3+ (batch, lr) settings."""
    _check_at_flops(at_flops)  # --flops: a positive, bounded budget, as the law fit holds it
    groups, grouping, left_out = _budget_groups(runs, bin_decades)
    log_c, log_b, log_lr = np.log(runs.flops), np.log(runs.batch), np.log(runs.lr)
    kb, eb, kl, el = _near_optimal_fit(log_c, log_b, log_lr, runs.loss, groups, tolerance)
    samples = np.full((bootstrap, 4), np.nan)
    rng = np.random.default_rng(seed)
    for i in range(bootstrap):
        picks = [rng.choice(idx, idx.size, replace=True) for idx in groups]
        order = np.concatenate(picks)
        remap = np.split(np.arange(order.size), np.cumsum([p.size for p in picks])[:-1])
        samples[i] = _near_optimal_fit(
            log_c[order], log_b[order], log_lr[order], runs.loss[order], remap, tolerance
        )
    at = float(at_flops) if at_flops is not None else float(runs.flops.max())
    boot = samples if bootstrap else None

    def col(j: int) -> np.ndarray | None:
        return None if boot is None else boot[:, j]

    def at_c(k: np.ndarray | float, e: np.ndarray | float) -> np.ndarray | float:
        return np.exp(np.asarray(k) + np.asarray(e) * math.log(at))

    budgets = [_budget(runs, idx, tolerance) for idx in groups]
    fit = HyperparamFit(
        source=runs.source,
        budgets=budgets,
        batch_coef=interval_of(math.exp(kb), None if boot is None else np.exp(boot[:, 0]), percentiles),
        batch_exp=interval_of(eb, col(1), percentiles),
        lr_coef=interval_of(math.exp(kl), None if boot is None else np.exp(boot[:, 2]), percentiles),
        lr_exp=interval_of(el, col(3), percentiles),
        at_flops=at,
        batch_opt=interval_of(
            float(at_c(kb, eb)), None if boot is None else at_c(boot[:, 0], boot[:, 1]), percentiles
        ),
        lr_opt=interval_of(
            float(at_c(kl, el)), None if boot is None else at_c(boot[:, 2], boot[:, 3]), percentiles
        ),
        tolerance=tolerance,
        grouping=grouping,
        bootstrap=bootstrap,
        percentiles=percentiles,
    )
    warnings = (
        left_out + _warnings(fit, runs, groups) + _extrapolation(at, runs.flops[np.concatenate(groups)])
    )
    return fit.model_copy(update={"warnings": warnings})


def _extrapolation(at: float, fitted: np.ndarray) -> list[str]:
    """A caution when B_opt and η_opt are reported more than EXTRAPOLATION_FACTOR (10×) beyond the C of the runs
    fitted, as `runplan fit` warns of Approaches 2 and 3 (scaling/fit.py ``_extrapolation_warning``). A caution,
    not an error: DeepSeek LLM used its own law, fitted at budgets up to about 3e20 FLOPs, at C ≈ 9.9e23 for its
    67B model (Bi et al. 2024 §3.1, Table 2; ``DEEPSEEK_LARGEST_USE_FLOPS``)."""
    largest, smallest = float(fitted.max()), float(fitted.min())
    if at > EXTRAPOLATION_FACTOR * largest:
        where = f"{at / largest:.3g}× the largest budget ({largest:.3g})"
    elif at < smallest / EXTRAPOLATION_FACTOR:
        where = f"{smallest / at:.3g}× below the smallest budget ({smallest:.3g})"
    else:
        return []
    return [
        f"B_opt and η_opt are reported at C = {at:.3g}, {where}: an extrapolation of the fitted power laws (a "
        "caution: DeepSeek LLM used its own, fitted at budgets up to about 3e+20 FLOPs, at C ≈ "
        f"{DEEPSEEK_LARGEST_USE_FLOPS:.2g} for its 67B model, Bi et al. 2024 §3.1)"
    ]


def _budget_groups(
    runs: HyperparamRuns, bin_decades: float | None
) -> tuple[list[np.ndarray], str, list[str]]:
    """The runs of each budget (grouped as ``runplan fit`` groups them), the grouping, and what was left out, in
    words: a budget of fewer than 3 distinct (batch, lr) settings, runs near no budget. Fewer than 2 budgets
    left is a SpecError naming those."""
    # group_budgets counts distinct sizes per budget; here a "size" is a distinct (batch, lr) setting
    _, setting = np.unique(np.stack([runs.batch, runs.lr], axis=1), axis=0, return_inverse=True)
    setting = setting.ravel()
    grouped = Runs(
        params=setting + 1.0,
        tokens=np.ones_like(runs.flops),
        flops=runs.flops,
        loss=runs.loss,
        lines=runs.lines,
        source=runs.source,
    )
    groups, grouping, dropped, ungrouped = group_budgets(grouped, bin_decades)
    left_out = []
    for budget in dropped:
        settings = np.unique(setting[np.isin(runs.lines, budget.lines)]).size
        shown = ", ".join(str(x) for x in budget.lines[:6]) + (", ..." if len(budget.lines) > 6 else "")
        left_out.append(
            f"budget {budget.flops:.3g} ({budget.runs} runs, lines {shown}) left out: {settings} distinct "
            "(batch, lr) setting(s), and a budget needs 3 or more"
        )
    if ungrouped:
        left_out.append(
            f"{ungrouped} of {runs.flops.size} runs left out: their C is more than {BUDGET_WINDOW_DECADES:g} "
            "decade from every budget (--bin-decades groups budgets otherwise)"
        )
    if len(groups) < 2:
        raise SpecError(
            f"a hyperparameter fit needs at least 2 budgets with 3+ distinct (batch, lr) settings, found "
            f"{len(groups)} ({grouping})" + "".join(f"; {line}" for line in left_out),
            source=runs.source,
            hint="sweep batch and learning rate at 3 or more compute budgets, as DeepSeek LLM §3.1 did",
        )
    return groups, grouping, left_out


def _budget(runs: HyperparamRuns, idx: np.ndarray, tolerance: float) -> HyperparamBudget:
    best = idx[int(np.argmin(runs.loss[idx]))]
    return HyperparamBudget(
        flops=float(np.exp(np.mean(np.log(runs.flops[idx])))),
        runs=int(idx.size),
        near_optimal=int(np.sum(runs.loss[idx] <= runs.loss[idx].min() * (1 + tolerance))),
        best_loss=float(runs.loss[best]),
        best_lr=float(runs.lr[best]),
        best_batch=float(runs.batch[best]),
        lines=[int(v) for v in runs.lines[idx]],
    )


def _warnings(fit: HyperparamFit, runs: HyperparamRuns, groups: list[np.ndarray]) -> list[str]:
    """Few budgets; a budget whose best run sits at the edge of its swept lr or batch (the grid did not bracket
    the optimum, so the fitted law is pulled toward the grid); a budget that did not sweep lr or batch at all (the
    fit then returns the value chosen, as if it were the optimum)."""
    out = []
    if len(fit.budgets) < 3:
        out.append(
            f"the exponents rest on {len(fit.budgets)} budgets: add budgets (DeepSeek LLM §3.1 used 8, "
            "1e17 to 2e19 FLOPs)"
        )
    if runs.batch.max() < SEQUENCES_NOT_TOKENS_BELOW:
        out.append(
            f"every batch is below {SEQUENCES_NOT_TOKENS_BELOW:,} tokens (largest {runs.batch.max():.4g}): if "
            "the column counts sequences, multiply by the sequence length; B_opt is in tokens (DeepSeek LLM §3.1)"
        )
    for budget, idx in zip(fit.budgets, groups, strict=True):
        edges, fixed = [], []
        for name, values, best in (
            ("lr", runs.lr[idx], budget.best_lr),
            ("batch", runs.batch[idx], budget.best_batch),
        ):
            if np.unique(values).size == 1:
                fixed.append(f"{name} {best:.3g}")
            elif best in (values.min(), values.max()):
                edges.append(
                    f"{name} {best:.3g} is the {'smallest' if best == values.min() else 'largest'} swept"
                )
        if edges:
            out.append(
                f"budget {budget.flops:.3g}: the best run's "
                + " and ".join(edges)
                + ": widen the grid so the optimum is bracketed"
            )
        if fixed:
            out.append(
                f"budget {budget.flops:.3g}: every run has {' and '.join(fixed)}, so the fit takes it as given, "
                "not found by the loss: sweep it at this budget too"
            )
    return out


__all__ = [
    "NEAR_OPTIMAL_TOLERANCE",
    "HyperparamBudget",
    "HyperparamFit",
    "HyperparamLaw",
    "HyperparamRuns",
    "fit_hyperparams",
    "load_hyperparam_law",
    "read_hyperparam_runs",
]
