"""Design the proxy isoFLOP sweep to run before a big training run (`runplan sweep`).

For a main budget C, each proxy budget is C_p = fraction × C (default 1%), and lower budgets follow a decade
apart (``budgets`` of them) so that Hoffmann et al. 2022's Approach 2 can fit exponents. Per budget, ``sizes``
model sizes are log-spaced over ``span_decades`` around the law's compute-optimal N at that budget (Eq. 4);
sizes sit on one lattice in log10 N (step span/(sizes−1)) so budgets share sizes. Each run gets a concrete
shape (runplan.architect.shape_for_params), tokens D = C_p/(6·N) (N in the law's parameter count), its
FLOPs and, with a GPU, GPU-hours at the given MFU on the shape's model FLOPs (PaLM convention, attention included).

With a WSD schedule (Hägele et al. 2024, arXiv 2405.18392; MiniCPM, arXiv 2404.06395) one stable run per size
serves every budget: a cooldown branch over the last ``cooldown_fraction`` of each budget's tokens gives that
budget's final loss, so a size trained to tokens D_1 < … < D_m costs (1 − f)·D_m + f·Σ D_k tokens instead of
Σ D_k, and one training run from scratch instead of m. Leaves out: a cooldown branch's loss equals a
cosine-schedule run's only approximately (Hägele et al. report it matches or beats it).
"""

from __future__ import annotations

import csv
import io
import math

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from runplan.defaults import DEFAULT_MFU, DEFAULT_SEQ_LEN, DEFAULT_VOCAB_SIZE, MAX_SEQ_LEN, MAX_VOCAB_SIZE
from runplan.errors import SpecError
from runplan.hardware import GpuSpec
from runplan.scaling.laws import ParametricLaw
from runplan.units import SECONDS_PER_HOUR


class SweepRun(BaseModel):
    """One proxy run (with WSD: one cooldown branch of a stable trunk)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    run: str = Field(description="Run id, e.g. 'c2e+21-n4.1e+09'.")
    budget_flops: float = Field(description="The isoFLOP budget C_p this run belongs to.")
    params: float = Field(description="N in the law's parameter count.")
    total_params: int = Field(description="Total parameters of the shape.")
    non_embedding_params: int = Field(description="Non-embedding parameters of the shape.")
    n_layers: int = Field(description="Layers.")
    d_model: int = Field(description="Hidden size.")
    n_heads: int = Field(description="Query heads.")
    n_kv_heads: int = Field(description="KV heads.")
    ffn_hidden: int = Field(description="FFN inner size.")
    tokens: int = Field(description="Training tokens D = C_p/(6N), rounded.")
    flops: float = Field(description="6·N·D.")
    model_flops: float = Field(description="Shape-aware training FLOPs (PaLM model FLOPs per token × D).")
    predicted_loss: float = Field(description="The law's L(N, D), for orientation only.")
    gpu_hours: float | None = Field(
        None,
        description="model_flops / (peak × MFU) / 3600 (WSD: this branch's "
        "share: its cooldown, and the trunk for the longest).",
    )
    trunk: str | None = Field(None, description="WSD: the stable run this branch cools down from.")
    cooldown_start_tokens: int | None = Field(
        None, description="WSD: tokens at which the cooldown branch starts."
    )


class Sweep(BaseModel):
    """A proxy sweep: its runs, what it costs, and what WSD saves (JSON keys in docs/scaling.md)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    main_flops: float = Field(description="Budget of the main run.")
    law: str = Field(description="Law used to centre the sizes.")
    param_count: str = Field(description="Which parameter count `params` is.")
    fraction: float = Field(description="Largest proxy budget / main budget.")
    budgets: list[float] = Field(description="Proxy budgets C_p, largest first.")
    sizes_per_budget: int = Field(description="Model sizes per budget.")
    seq_len: int = Field(description="Sequence length for the shape-aware FLOPs.")
    runs: list[SweepRun] = Field(description="The runs (WSD: cooldown branches).")
    wsd: bool = Field(description="Whether runs share WSD trunks.")
    cooldown_fraction: float | None = Field(None, description="WSD cooldown share of each branch's tokens.")
    training_runs: int = Field(description="Trainings from scratch (WSD: trunks).")
    runs_saved: int = Field(0, description="Trainings from scratch WSD saves against independent runs.")
    total_flops: float = Field(description="Proxy FLOPs (6ND basis; WSD: trunks + cooldowns).")
    independent_flops: float = Field(description="Proxy FLOPs if every run were trained from scratch.")
    total_fraction: float = Field(description="total_flops / main_flops.")
    gpu: str | None = Field(None, description="GPU for the hours.")
    mfu: float | None = Field(None, description="MFU assumed.")
    gpu_hours: float | None = Field(None, description="Total proxy GPU-hours.")
    cost_usd: float | None = Field(None, description="gpu_hours × price per GPU-hour.")
    warnings: list[str] = Field(default_factory=list, description="Cautions and remarks.")

    def to_csv(self) -> str:
        """CSV for `runplan fit` (columns params, tokens, flops, loss; loss left empty to fill in).

        ``flops`` is the isoFLOP budget C_p (so runs group exactly); tokens are rounded, so 6·N·D differs
        from it by under a part per million.
        """
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        columns = [
            "run",
            "params",
            "tokens",
            "flops",
            "loss",
            "total_params",
            "non_embedding_params",
            "n_layers",
            "d_model",
            "n_heads",
            "n_kv_heads",
            "ffn_hidden",
            "predicted_loss",
            "gpu_hours",
            "trunk",
            "cooldown_start_tokens",
        ]
        writer.writerow(columns)
        for r in self.runs:
            writer.writerow(
                [
                    r.run,
                    f"{r.params:.0f}",
                    r.tokens,
                    f"{r.budget_flops:.6e}",
                    "",
                    r.total_params,
                    r.non_embedding_params,
                    r.n_layers,
                    r.d_model,
                    r.n_heads,
                    r.n_kv_heads,
                    r.ffn_hidden,
                    f"{r.predicted_loss:.4f}",
                    "" if r.gpu_hours is None else f"{r.gpu_hours:.1f}",
                    r.trunk or "",
                    "" if r.cooldown_start_tokens is None else r.cooldown_start_tokens,
                ]
            )
        return out.getvalue()


def _shape(target: float, law: ParametricLaw, vocab_size: int):
    from runplan.architect import shape_for_params

    try:
        return shape_for_params(target, vocab_size=vocab_size, count=law.param_count)
    except SpecError as error:
        raise SpecError(
            f"no proxy shape for {target:.3g} parameters: {error.message}",
            where="--fraction",
            hint="raise --fraction, narrow --span, or lower --vocab-size (embeddings dominate small models)",
        ) from None


def design_sweep(
    flops: float,
    law: ParametricLaw,
    *,
    fraction: float = 0.01,
    sizes: int = 7,
    budgets: int = 1,
    gpu: GpuSpec | None = None,
    mfu: float = DEFAULT_MFU,
    wsd: bool = False,
    span_decades: float = 1.0,
    budget_spacing_decades: float = 1.0,
    cooldown_fraction: float = 0.2,
    seq_len: int = DEFAULT_SEQ_LEN,
    vocab_size: int = DEFAULT_VOCAB_SIZE,
    price_per_gpu_hour: float | None = None,
) -> Sweep:
    """The proxy sweep for a main budget ``flops`` (see the module docstring)."""
    from runplan.scaling.allocate import checked_compute_optimal
    from runplan.scaling.budget import MIN_MFU, check_training_flops

    check_training_flops(flops, where="--flops")
    if not 1 <= seq_len <= MAX_SEQ_LEN:
        raise SpecError(
            f"must be a positive number of tokens up to {MAX_SEQ_LEN:.0e}, got {float(seq_len):.4g}",
            where="--seq-len",
            hint="e.g. 4096",
        )
    if not 1 <= vocab_size <= MAX_VOCAB_SIZE:
        raise SpecError(
            f"must be positive and at most {MAX_VOCAB_SIZE:.0e}, got {float(vocab_size):.4g}",
            where="--vocab-size",
            hint="e.g. 128256",
        )
    if not 0 < fraction < 1:
        raise SpecError(f"fraction must be in (0, 1), got {fraction:g}", where="--fraction", hint="e.g. 0.01")
    if not 3 <= sizes <= 15:
        raise SpecError(
            f"need 3 to 15 sizes per budget, got {sizes}",
            where="--sizes",
            hint="a parabola needs 3; 5 to 7 is usual",
        )
    if not 1 <= budgets <= 6:
        raise SpecError(f"need 1 to 6 budgets, got {budgets}", where="--budgets")
    if not 0 < span_decades <= 3:
        raise SpecError(f"span must be in (0, 3] decades, got {span_decades:g}", where="--span")
    if not 0 < cooldown_fraction < 1:
        raise SpecError(f"cooldown fraction must be in (0, 1), got {cooldown_fraction:g}", where="--cooldown")
    if not MIN_MFU <= mfu <= 1:
        raise SpecError(f"MFU must be in [{MIN_MFU:g}, 1], got {mfu:g}", where="--mfu")

    step = span_decades / (sizes - 1)  # decades between neighbouring sizes
    budget_list = [fraction * flops / 10 ** (k * budget_spacing_decades) for k in range(budgets)]
    pairs: list[tuple[float, float]] = []  # (budget, target N on the shared lattice)
    for c_p in budget_list:
        n_opt, _ = checked_compute_optimal(law, c_p)  # SpecError for a law that over/underflows
        centre = round(math.log10(n_opt) / step)
        half = (sizes - 1) / 2
        for j in range(sizes):
            pairs.append((c_p, 10 ** (step * (centre - half + j))))
    shapes = {target: _shape(target, law, vocab_size) for target in sorted({t for _, t in pairs})}
    peak = gpu.bf16_flops * mfu if gpu is not None else None

    runs: list[SweepRun] = []
    by_size: dict[float, list[int]] = {}
    for c_p, target in pairs:
        shape = shapes[target]
        n = shape.total_params if law.param_count == "total" else shape.non_embedding_params
        tokens = max(1, round(c_p / (6.0 * n)))
        model_flops = shape.model_flops_per_token(seq_len) * tokens
        by_size.setdefault(target, []).append(len(runs))
        runs.append(
            SweepRun(
                run=f"c{c_p:.2g}-n{n:.2g}",
                budget_flops=c_p,
                params=float(n),
                total_params=shape.total_params,
                non_embedding_params=shape.non_embedding_params,
                n_layers=shape.n_layers,
                d_model=shape.d_model,
                n_heads=shape.n_heads,
                n_kv_heads=shape.n_kv_heads,
                ffn_hidden=shape.ffn_hidden,
                tokens=tokens,
                flops=6.0 * n * tokens,
                model_flops=model_flops,
                predicted_loss=law.loss(n, tokens),
                gpu_hours=model_flops / peak / SECONDS_PER_HOUR if peak else None,
            )
        )

    independent = sum(r.flops for r in runs)
    notes: list[str] = []
    training_runs, total, total_model = len(runs), independent, sum(r.model_flops for r in runs)
    if wsd:
        f = cooldown_fraction
        total = total_model = 0.0
        for target, indices in by_size.items():
            longest = max(indices, key=lambda i: runs[i].tokens)
            trunk_id = f"trunk-n{runs[longest].params:.2g}"
            stable_tokens = (1 - f) * runs[longest].tokens
            per_token_model = runs[longest].model_flops / runs[longest].tokens
            for i in indices:
                r = runs[i]
                own_tokens = f * r.tokens + (stable_tokens if i == longest else 0.0)
                total += 6.0 * r.params * own_tokens
                total_model += per_token_model * own_tokens
                runs[i] = r.model_copy(
                    update={
                        "trunk": trunk_id,
                        "cooldown_start_tokens": round((1 - f) * r.tokens),
                        "gpu_hours": per_token_model * own_tokens / peak / SECONDS_PER_HOUR if peak else None,
                    }
                )
            del target
        training_runs = len(by_size)
        if budgets == 1:
            notes.append(
                "with one budget every size has one run, so WSD saves nothing; --budgets 3 lets each "
                "stable run serve three budgets through cooldown branches"
            )
    if budgets == 1:
        notes.append(
            "one budget gives the compute-optimal size at that budget only; --budgets 3 lets "
            "Approach 2 fit the exponents a and b"
        )
    if runs:
        biggest = max(r.params for r in runs)
        if note := law.extrapolation_note(biggest, max(r.tokens for r in runs)):
            notes.append(note)
    gpu_hours = total_model / peak / SECONDS_PER_HOUR if peak else None
    return Sweep(
        main_flops=flops,
        law=law.name,
        param_count=law.param_count,
        fraction=fraction,
        budgets=budget_list,
        sizes_per_budget=sizes,
        seq_len=seq_len,
        runs=runs,
        wsd=wsd,
        cooldown_fraction=cooldown_fraction if wsd else None,
        training_runs=training_runs,
        runs_saved=len(runs) - training_runs,
        total_flops=total,
        independent_flops=independent,
        total_fraction=total / flops,
        gpu=gpu.name if gpu else None,
        mfu=mfu if gpu else None,
        gpu_hours=gpu_hours,
        cost_usd=gpu_hours * price_per_gpu_hour if gpu_hours is not None and price_per_gpu_hour else None,
        warnings=notes,
    )


__all__ = ["Sweep", "SweepRun", "design_sweep"]
_ = np  # numpy is used by the law's vectorized loss
