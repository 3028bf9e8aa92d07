"""Parametric scaling laws: L(N, D) = E + A/N^α + B/D^β and what follows from them in closed form.

Sources (see docs/scaling.md):

* Hoffmann et al. 2022, "Training Compute-Optimal Large Language Models" (arXiv 2203.15556): the law, Eq. 2;
  the compute-optimal frontier under C = 6·N·D, Eq. 4; the fitted coefficients, Eq. 10.
* Besiroglu et al. 2024, "Chinchilla Scaling: A replication attempt" (arXiv 2404.10102): a refit of the same law.

Letters as in the papers: N parameters (``param_count`` says which count), D training tokens, C training FLOPs
with C = 6·N·D (forward 2ND + backward 4ND; attention FLOPs and embeddings' share left out), L loss in
nats/token on the authors' data and tokenizer. Laws do not transfer across data sets or tokenizers.
"""

from __future__ import annotations

import functools
import math
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from runplan.errors import SpecError
from runplan.scaling import DEFAULT_LAW
from runplan.units import PositiveNumber

#: Expert expansion rate a shipped MoE law was fitted at: Krajewski et al. 2024 (arXiv 2402.07871) fit Eq. 5 at
#: 64 experts' worth of parameters per FFN (configs/laws.yaml note); a user's own MoE law states none.
SHIPPED_MOE_EXPANSION = {"krajewski2024-moe": 64}


class FittedRange(BaseModel):
    """The N and D ranges a law was fitted on; outside them the law extrapolates."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    params_min: PositiveNumber = Field(description="Smallest parameter count in the fitted runs.")
    params_max: PositiveNumber = Field(description="Largest parameter count in the fitted runs.")
    tokens_min: PositiveNumber = Field(description="Fewest training tokens in the fitted runs.")
    tokens_max: PositiveNumber = Field(description="Most training tokens in the fitted runs.")

    @model_validator(mode="after")
    def _ordered(self) -> FittedRange:
        """A minimum above its maximum is a typo (swapped or mistyped): every allocation would then warn that it
        extrapolates "203× above the fitted 1e+09..1e+08". Equal bounds (runs at one size) are a range."""
        for what in ("params", "tokens"):
            low, high = getattr(self, f"{what}_min"), getattr(self, f"{what}_max")
            if low > high:
                raise ValueError(
                    f"{what}_min {low:.3g} is above {what}_max {high:.3g}; swap them (min is the smallest "
                    "value in the fitted runs)"
                )
        return self


class Interval(BaseModel):
    """A point estimate with bootstrap percentiles."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    value: float = Field(description="Estimate on the full data.")
    low: float | None = Field(None, description="Lower bootstrap percentile.")
    high: float | None = Field(None, description="Upper bootstrap percentile.")
    std: float | None = Field(
        None, description="Bootstrap spread as a standard deviation: interquartile range / 1.349 (robust)."
    )


#: Interquartile range of a normal distribution in standard deviations (2 × 0.6745): the bootstrap spread is
#: reported as IQR / 1.349, the SD for a normal spread, which a few extreme replicates (an isoFLOP parabola whose
#: resampled vertex lands at N ~ 1e66) cannot inflate as they do the sample SD.
IQR_PER_STD = 1.349


def interval_of(value: float, samples: Any, percentiles: tuple[float, float]) -> Interval:
    """``value`` with the ``percentiles`` and standard deviation of the finite ``samples`` (none: bare value)."""
    if samples is None:
        return Interval(value=float(value))
    samples = np.asarray(samples, dtype=float)
    samples = samples[np.isfinite(samples)]
    if samples.size < 2:
        return Interval(value=float(value))
    low, high = np.percentile(samples, percentiles)
    q1, q3 = np.percentile(samples, (25, 75))
    return Interval(value=float(value), low=float(low), high=float(high), std=float((q3 - q1) / IQR_PER_STD))


class ParametricLaw(BaseModel):
    """L(N, D) = E + A/N^α + B/D^β (Hoffmann et al. 2022, Eq. 2)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="Short name, e.g. 'besiroglu2024' or 'fit:runs.csv'.")
    E: PositiveNumber = Field(description="Irreducible loss E (nats/token).")
    A: PositiveNumber = Field(description="Parameter-term coefficient A.")
    B: PositiveNumber = Field(description="Data-term coefficient B.")
    alpha: PositiveNumber = Field(description="Parameter exponent α.")
    beta: PositiveNumber = Field(description="Data exponent β.")
    param_count: Literal["total", "non_embedding"] = Field(
        "total",
        description="Which parameter count N the law was fitted on (Chinchilla: total, with embeddings).",
    )
    fitted_range: FittedRange | None = Field(
        None, description="N and D ranges of the runs the law was fitted on."
    )
    source: str | None = Field(None, description="Paper and equation/table, or the CSV a fit came from.")
    note: str | None = Field(None, description="Caveats for this law.")
    granularity_coef: PositiveNumber | None = Field(
        None,
        description="MoE laws: g in A(G) = A + g/G^γ (Krajewski et al. 2024, Eq. 5); N counts every expert.",
    )
    granularity_exp: PositiveNumber | None = Field(
        None, description="MoE laws: γ in A(G) = A + g/G^γ, G = dense FFN width / expert FFN width."
    )
    resamples: list[tuple[float, float, float, float, float]] | None = Field(
        None,
        description="Bootstrap refits (E, A, B, alpha, beta) from `runplan fit`: allocate and plan repeat the "
        "allocation under each to give intervals.",
    )
    percentiles: tuple[float, float] | None = Field(
        None, description="Percentiles the intervals report (with resamples; default 10th and 90th)."
    )

    @property
    def is_moe_law(self) -> bool:
        """Whether the law was fitted on mixture-of-experts models (it has a granularity term)."""
        return self.granularity_coef is not None and self.granularity_exp is not None

    @property
    def moe_origin(self) -> str:
        """What a MoE law was fitted on, for messages: "mixture-of-experts models (N counts every expert, 64×
        expert expansion)"; the expansion only where the law's source states it (SHIPPED_MOE_EXPANSION)."""
        expansion = SHIPPED_MOE_EXPANSION.get(self.name)
        return "mixture-of-experts models (N counts every expert" + (
            f", {expansion}× expert expansion)" if expansion else ")"
        )

    def for_moe(self, total_params: float, active_params: float, granularity: float) -> ParametricLaw:
        """This law as a law in *active* parameters for one MoE architecture, so that C = 6·N_active·D holds.

        A MoE law gives L = E + A(G)/N_total^α + B/D^β (Krajewski et al. 2024, Eq. 5: A(G) = A + g/G^γ). For
        a fixed architecture N_total = ρ·N_active with ρ = ``total_params / active_params``, so
        A(G)/N_total^α = (A(G)·ρ^(−α))/N_active^α: the same Chinchilla form with A' = A(G)·ρ^(−α), and every
        closed form (Hoffmann et al. 2022, Eq. 4) then splits the compute actually spent. A dense law (no
        granularity term) is taken with N = active parameters (ρ = 1): experts beyond the active ones earn no
        credit, a conservative reading. Both counts are in the law's ``param_count``.
        """
        if not self.is_moe_law:
            return self
        ratio = total_params / active_params
        a_of_g = self.A + (self.granularity_coef or 0.0) / granularity ** (self.granularity_exp or 0.0)
        r = self.fitted_range
        scaled = (
            r.model_copy(update={"params_min": r.params_min / ratio, "params_max": r.params_max / ratio})
            if r is not None
            else None
        )
        return self.model_copy(
            update={
                "name": f"{self.name} (MoE, N = active parameters)",
                "A": a_of_g * ratio ** (-self.alpha),
                "granularity_coef": None,
                "granularity_exp": None,
                "fitted_range": scaled,
                "note": f"{self.name} at granularity G = {granularity:.3g} and total/active = {ratio:.4g}: "
                f"A' = (A + g/G^γ)·(total/active)^(−α) = {a_of_g:.4g} × {ratio:.4g}^(−{self.alpha:g}); "
                "N and C = 6·N·D count active parameters",
                "resamples": None,
            }
        )

    def resampled_laws(self) -> list[ParametricLaw]:
        """One law per bootstrap resample with positive, finite coefficients (empty without resamples)."""
        out = []
        for E, A, B, alpha, beta in self.resamples or []:
            if all(math.isfinite(x) and x > 0 for x in (E, A, B, alpha, beta)):
                out.append(
                    self.model_copy(
                        update={"E": E, "A": A, "B": B, "alpha": alpha, "beta": beta, "resamples": None}
                    )
                )
        return out

    # ---- loss ------------------------------------------------------------------------------------
    def loss(self, N: Any, D: Any) -> Any:
        """L(N, D) = E + A/N^α + B/D^β, numpy-vectorized (Hoffmann et al. 2022, Eq. 2)."""
        N = np.asarray(N, dtype=float)
        D = np.asarray(D, dtype=float)
        out = self.E + self.A * N ** (-self.alpha) + self.B * D ** (-self.beta)
        return float(out) if out.ndim == 0 else out

    # ---- compute-optimal frontier (C = 6ND) ------------------------------------------------------
    @property
    def G(self) -> float:
        """G = (αA/(βB))^(1/(α+β)) of Hoffmann et al. 2022, Eq. 4."""
        return (self.alpha * self.A / (self.beta * self.B)) ** (1.0 / (self.alpha + self.beta))

    @property
    def a(self) -> float:
        """N_opt ∝ C^a with a = β/(α+β) (Hoffmann Eq. 4)."""
        return self.beta / (self.alpha + self.beta)

    @property
    def b(self) -> float:
        """D_opt ∝ C^b with b = α/(α+β) (Hoffmann Eq. 4)."""
        return self.alpha / (self.alpha + self.beta)

    def compute_optimal(self, flops: Any) -> tuple[Any, Any]:
        """(N_opt, D_opt) minimising L(N, D) subject to 6·N·D = C (Hoffmann et al. 2022, Eq. 4).

        N_opt = G·(C/6)^a, D_opt = G⁻¹·(C/6)^b. E does not move the optimum. Leaves out everything but
        C = 6ND: attention FLOPs, embeddings' cheaper gradient, data repetition.
        """
        c6 = np.asarray(flops, dtype=float) / 6.0
        n_opt = self.G * c6**self.a
        d_opt = c6 / n_opt
        if n_opt.ndim == 0:
            return float(n_opt), float(d_opt)
        return n_opt, d_opt

    def _frontier_coefficient(self) -> float:
        """K with L_opt(C) − E = K·(C/6)^(−αβ/(α+β)) along the compute-optimal frontier.

        Substituting Eq. 4 into Eq. 2: A/N_opt^α = A·G^(−α)·(C/6)^(−αβ/(α+β)) and
        B/D_opt^β = B·G^β·(C/6)^(−αβ/(α+β)), so K = A·G^(−α) + B·G^β.
        """
        G = self.G
        return self.A * G ** (-self.alpha) + self.B * G**self.beta

    def compute_optimal_loss(self, flops: Any) -> Any:
        """Loss of the compute-optimal model at budget C: E + K·(C/6)^(−αβ/(α+β))."""
        exponent = self.alpha * self.beta / (self.alpha + self.beta)
        out = self.E + self._frontier_coefficient() * (np.asarray(flops, dtype=float) / 6.0) ** (-exponent)
        return float(out) if np.ndim(out) == 0 else out

    def flops_for_loss(self, loss: float) -> float:
        """Smallest C whose compute-optimal model reaches ``loss`` (inverse of :meth:`compute_optimal_loss`).

        C = 6·(K/(ℓ − E))^((α+β)/(αβ)); infinite when ℓ ≤ E.
        """
        if loss <= self.E:
            return math.inf
        exponent = (self.alpha + self.beta) / (self.alpha * self.beta)
        return 6.0 * (self._frontier_coefficient() / (loss - self.E)) ** exponent

    def tokens_for_loss(self, N: Any, loss: float) -> Any:
        """D with L(N, D) = ℓ: D = (B/(ℓ − E − A/N^α))^(1/β); inf where N alone cannot reach ℓ."""
        N = np.asarray(N, dtype=float)
        room = loss - self.E - self.A * N ** (-self.alpha)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.where(room > 0, (self.B / np.where(room > 0, room, 1.0)) ** (1.0 / self.beta), np.inf)
        return float(out) if out.ndim == 0 else out

    def min_params_for_loss(self, loss: float) -> float:
        """N below which ℓ is out of reach with any amount of data: A/N^α = ℓ − E."""
        if loss <= self.E:
            return math.inf
        return (self.A / (loss - self.E)) ** (1.0 / self.alpha)

    def extrapolation_note(self, N: float, D: float) -> str | None:
        """A one-line warning when (N, D) lies outside the law's fitted range (None inside or unknown), with how
        far outside: beyond 10× a power law fitted over two decades is a guess, and the note says so."""
        r = self.fitted_range
        if r is None:
            return None
        parts, worst = [], 1.0
        for letter, value, low, high in (
            ("N", N, r.params_min, r.params_max),
            ("D", D, r.tokens_min, r.tokens_max),
        ):
            if high * 1.0001 < value or low * 0.9999 > value:
                factor = value / high if value > high else low / value
                side = "above" if value > high else "below"
                parts.append(f"{letter} = {value:.3g}, {factor:.3g}× {side} the fitted {low:.3g}..{high:.3g}")
                worst = max(worst, factor)
        if not parts:
            return None
        far = "; far outside its data, so treat the loss as a rough guess" if worst > 10 else ""
        return f"law '{self.name}' extrapolates: " + "; ".join(parts) + far

    def to_yaml_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


class LawSpec(BaseModel):
    """Which law to use: a shipped law by ``name``, a law ``file`` written by `runplan fit`, or inline E/A/B/α/β."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str | None = Field(
        None,
        description="A shipped law: hoffmann2022, hoffmann2022-unrounded, besiroglu2024, krajewski2024-moe (MoE).",
    )
    file: str | None = Field(
        None, description="Path to a law YAML file written by `runplan fit -o law.yaml`."
    )
    E: PositiveNumber | None = Field(None, description="Inline law: irreducible loss E.")
    A: PositiveNumber | None = Field(None, description="Inline law: parameter-term coefficient A.")
    B: PositiveNumber | None = Field(None, description="Inline law: data-term coefficient B.")
    alpha: PositiveNumber | None = Field(None, description="Inline law: parameter exponent α.")
    beta: PositiveNumber | None = Field(None, description="Inline law: data exponent β.")
    param_count: Literal["total", "non_embedding"] | None = Field(
        None, description="Inline law: which parameter count N it uses (default total)."
    )

    @field_validator("file")
    @classmethod
    def _file_named(cls, value: str | None) -> str | None:
        """A blank ``file`` resolved to the plan's own folder ("DIR: is a directory", no key named)."""
        if value is not None and not value.strip():
            raise ValueError(
                "empty path (give a law YAML written by `runplan fit -o law.yaml`, or use name:)"
            )
        return value

    @model_validator(mode="after")
    def _one_form(self) -> LawSpec:
        inline = [self.E, self.A, self.B, self.alpha, self.beta]
        forms = (self.name is not None) + (self.file is not None) + any(v is not None for v in inline)
        if forms != 1:
            raise ValueError("give exactly one of: name, file, or all of E, A, B, alpha, beta")
        if any(v is not None for v in inline) and not all(v is not None for v in inline):
            raise ValueError("an inline law needs all of E, A, B, alpha, beta")
        if self.param_count is not None and not all(v is not None for v in inline):
            raise ValueError(
                "param_count goes with an inline law (shipped laws and law files state their own)"
            )
        return self


@functools.cache
def shipped_laws() -> dict[str, ParametricLaw]:
    """The laws in configs/laws.yaml, by name."""
    from runplan.yamlio import load_yaml_text

    text = resources.files("runplan").joinpath("configs/laws.yaml").read_text(encoding="utf-8")
    loaded = load_yaml_text(text, "configs/laws.yaml")
    laws: dict[str, ParametricLaw] = {}
    for index, entry in enumerate(loaded.data["laws"]):
        law = _validate_law(entry, loaded, prefix=("laws", index))
        laws[law.name] = law
    return laws


def _validate_law(data: Any, loaded: Any, prefix: tuple[Any, ...] = ()) -> ParametricLaw:
    from runplan.validation import spec_error_from_validation

    if not isinstance(data, dict):
        raise SpecError("a law must be a mapping of E, A, B, alpha, beta, ...", source=loaded.source)
    try:
        return ParametricLaw.model_validate(data)
    except ValidationError as error:
        raise spec_error_from_validation(error, ParametricLaw, loaded, prefix=prefix) from None


def load_law_file(path: str | Path) -> ParametricLaw:
    """Read a law YAML (as written by `runplan fit -o`): the ParametricLaw fields plus an optional ``fit:``
    section (fit diagnostics for people; ignored here)."""
    from runplan.yamlio import load_yaml_file

    loaded = load_yaml_file(path)
    data = loaded.data
    if isinstance(data, dict) and not _LAW_KEYS & set(data):
        raise _not_a_law(data, loaded)
    if isinstance(data, dict):
        data = {k: v for k, v in data.items() if k != "fit"}
        data.setdefault("name", Path(path).stem)
    return _validate_law(data, loaded)


#: The coefficients every law file states; a YAML mapping with none of them is some other file.
_LAW_KEYS = {"E", "A", "B", "alpha", "beta"}


def _not_a_law(data: dict[Any, Any], loaded: Any) -> SpecError:
    """A YAML mapping without a law's coefficients given as a law: the shipped list (configs/laws.yaml, a
    ``laws:`` list) or a plan file (``schema_version:``) is said as such, not as "unknown key 'laws' (did you
    mean 'beta'?)", which names a key the file should not have."""
    entries = data.get("laws")
    if isinstance(entries, list):
        names = [str(e.get("name")) for e in entries if isinstance(e, dict) and e.get("name")]
        what = "a list of laws (the layout of configs/laws.yaml" + (
            f": {', '.join(names)})" if names else ")"
        )
    elif "schema_version" in data or "budget" in data:
        what = "a plan file"
    else:
        what = "a mapping without E, A, B, alpha or beta at its top level"
    return SpecError(
        f"{what}, not one law",
        source=loaded.source,
        hint="give a law YAML written by `runplan fit -o law.yaml` (E, A, B, alpha, beta at its top level), or a "
        "shipped law's name (--law besiroglu2024; in a plan, law: {name: besiroglu2024})",
    )


def get_shipped_law(name: str, *, where: str | None = None) -> ParametricLaw:
    """A shipped law by name (case-insensitive); a miss says which names exist."""
    import difflib

    laws = shipped_laws()
    key = name.strip().lower()
    if key in laws:
        return laws[key]
    close = difflib.get_close_matches(key, list(laws), n=1, cutoff=0.5)
    hint = f"did you mean '{close[0]}'?" if close else "shipped laws: " + ", ".join(laws)
    raise SpecError(f"unknown law '{name}'", where=where, hint=hint)


def resolve_law(spec: LawSpec | None) -> ParametricLaw:
    """The ParametricLaw a LawSpec names (None: the default law, :data:`DEFAULT_LAW`)."""
    if spec is None:
        return shipped_laws()[DEFAULT_LAW]
    if spec.name is not None:
        return get_shipped_law(spec.name, where="law.name")
    if spec.file is not None:
        return load_law_file(spec.file)
    return ParametricLaw(
        name="inline",
        E=spec.E,
        A=spec.A,
        B=spec.B,
        alpha=spec.alpha,
        beta=spec.beta,
        param_count=spec.param_count or "total",
        source="given inline",
    )


def law_from_flag(text: str | None) -> ParametricLaw:
    """``--law NAME|FILE``: a shipped law name, else a path to a law YAML file."""
    if text is None:
        return resolve_law(None)
    if text.strip().lower() in shipped_laws():
        return get_shipped_law(text, where="law")
    if not text.strip():  # Path("") is the current directory: "--law ''" read "." and named no flag
        raise SpecError("empty law name", where="law", hint="shipped laws: " + ", ".join(shipped_laws()))
    from runplan.fileio import check_name

    check_name(text, "law")  # Path.exists() raises on a name over 255 bytes
    path = Path(text)
    if path.is_dir():
        raise SpecError(
            f"'{text}' is a directory", where="law", hint="give a law YAML written by `runplan fit -o`"
        )
    if path.suffix.lower() in (".yaml", ".yml") or path.exists():
        if not path.exists():
            raise SpecError(f"law file '{text}' not found", where="law")
        return load_law_file(path)
    return get_shipped_law(text, where="law")


__all__ = [
    "DEFAULT_LAW",
    "FittedRange",
    "Interval",
    "LawSpec",
    "ParametricLaw",
    "get_shipped_law",
    "interval_of",
    "law_from_flag",
    "load_law_file",
    "resolve_law",
    "shipped_laws",
]
