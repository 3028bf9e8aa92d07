"""From a parameter count to a transformer shape, and from user text (``70b``, ``llama-3-8b``) to a shape.

``shape_for_params`` generates a decoder of **one family, Llama 3** (pre-norm RMSNorm, RoPE, no biases,
untied embeddings, SwiGLU MLP, grouped-query attention), with the rules written down here with their sources.
Published values below come from the Llama 3 reference parameters (``params.json`` / torchtitan's llama3
flavors: 8B dim 4096, 32 layers, 32 heads, 8 KV heads, ffn_dim_multiplier 1.3, multiple_of 1024; 70B 8192,
80, 64, 8, 1.3, 4096; 405B 16384, 126, 128, 8, 1.2, 4096; Llama 3.2 1B: 2048, 16, 32 heads of 64, 8 KV,
multiple_of 256) and are checked against configs/models.yaml by tests/test_architect.py.

* **Vocabulary**: Llama 3's 128,256 tokens by default. The caller may pass another tokenizer's size (a plan's
  ``training.vocab_size``, a sweep's ``--vocab-size``); only the embedding rows change, the layer rules stay
  Llama 3's. A default shape therefore never mixes families (issue 15: Llama 2's FFN 11008 with Llama 3's
  vocabulary is gone, the FFN rule is Llama 3's).
* **Head dim** d_h = 64 for h ≤ 2560 (GPT-3 Table 2.1 up to 1.3B, Llama 3.2 1B: 2048 = 32 × 64), else 128
  (every Llama 2/3 model from 7B); a = h / d_h query heads.
* **Head count** a has no prime factor above 7, and from 16 heads on it is a multiple of 8, so tensor
  parallelism of 2, 4 or 8 splits the 8 KV heads and the query heads evenly (184 = 8·23 heads is excluded).
  Published: Llama 3 32/64/128, GPT-3 175B 96, Mixtral 8x22B 48 query heads.
  Hence the width grid: h = 128..896 step 128 (2..14 heads of 64), 1024, 1536, 2048, 2560 (16, 24, 32, 40
  heads of 64), then h = 128·a for a = 8·m, m ∈ {3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 15, 16, 18, 20, 21, 24, 25,
  27, 28, 30, 32} (3072 … 32768: 4096, 5120, 8192, 12288 and 16384 are on it; 1280 and 1792, 20 and 28
  heads of 64, are not).
* **KV heads**: multi-head attention below 16 query heads; from 16 on, 8 KV heads (every Llama 3 model,
  Llama 2 70B; Ainslie et al. 2023, GQA).
* **FFN** (SwiGLU): Llama 3's rule F = multiple_of · ⌈⌊multiplier · ⌊8h/3⌋⌋ / multiple_of⌉ with multiplier
  1.3 below h = 16384 and 1.2 from 16384 (8B/70B vs 405B) and multiple_of 256 for h ≤ 2560 (Llama 3.2),
  1024 above (8B): 4096 → 14336, 8192 → 28672, 16384 → 53248, the published sizes (Llama 3.2 1B's
  multiplier 1.5 is not used: 2048 → 7168 where it has 8192). ``mlp="gelu"`` keeps
  F = 4h (Vaswani et al. 2017, GPT-3) for callers that ask for a two-matrix MLP.
* **Depth** L: a multiple of 4 up to 64 and of 8 above, with no prime factor above 7, L ≤ 256: 4, 8, 12,
  16, 20, 24, 28, 32, 36, 40, 48, 56, 60, 64, 72, 80, 96, 112, 120, 128, 144, 160, 168, 192, 200, 216, 224,
  240, 256. So a pipeline of 2 or 4 stages (8 above 64 layers) splits the layers evenly; never 59, 61 or 89.
  Published depths on it: GPT-3 12/24/32/40/96, Llama 32/40/80, Qwen2.5 24/28/36/48/64/80, Gopher and
  Chinchilla 80. Llama 3 405B's 126 = 2·3²·7 is the one published Llama depth off it (it is not a multiple of
  4); the rule is ours, chosen so that runplan's layout search (L % pp == 0) keeps pp = 4 or 8 open.
* **Aspect ratio** h/L is steered toward r*(h) = min(128, 32·(h/512)^(2/3)), a smooth curve through
  published shapes: GPT-3 Table 2.1 (125M: 768/12 = 64, 1.3B: 2048/24 = 85, 6.7B+: 128), Llama 2/3 (7B/8B:
  4096/32 = 128, 70B: 8192/80 = 102, 405B: 16384/126 = 130), Qwen2.5 (0.5B: 896/24 = 37, 1.5B: 1536/28 =
  55). The curve is ours; Kaplan et al. 2020 (§3.1, Fig. 5) found loss changes by only a few percent for h/L
  between about 20 and 200 at fixed non-embedding parameters, so a factor of 1.5 either way costs little,
  while Levine et al. 2020 argue the best depth grows only logarithmically with width, hence r* rising with h.

**How a target is hit.** Every (h, L) on the two grids is a candidate with an exact parameter count (built
as a ``ModelShape``). Sorted by count, a *ladder* of rungs is chosen by dynamic programming (a cheapest path
from the smallest to the largest candidate): consecutive rungs at most 15% apart unless the grid itself has
a wider gap; every candidate whose h/L is within a factor 1.5 of r*(h) is a rung (each rung earns a small
reward), and where none is, the bridging candidates minimise the summed squared log-excess of h/L beyond
that factor. The answer is the rung nearest the target in log space. Hence: deterministic; monotone (a
larger target never gives a smaller model); within ``TOLERANCE`` = 7.5% of the target from 1e8 (total,
V = 128256) or 2e7 (non-embedding) up to 2e12 parameters: √1.15 − 1 = 7.2% between rungs, 7.46% measured at
2.3e7 non-embedding where the grid's own gap is 15.5% (tests/test_architect.py scans a dense grid; the
typical miss is 2-3%). The old ladder, on every depth and a finer width grid, was within 2.7%: the wider
bound is the price of buildable depths and head counts. Left out: tied embeddings (small Llama 3.2 models
tie them), MoE layouts.
"""

from __future__ import annotations

import bisect
import functools
import math
import re
from typing import TYPE_CHECKING, Literal

from runplan.defaults import DEFAULT_VOCAB_SIZE
from runplan.errors import SpecError
from runplan.model import ModelShape
from runplan.units import format_si

if TYPE_CHECKING:
    from runplan.catalog import Catalog

#: Widest step between rungs the ladder allows where the grid has candidates (module docstring).
_LADDER_STEP = 1.15
#: Guaranteed distance from the target, measured (tests/test_architect.py): √1.15 − 1 = 7.2%, plus margin.
TOLERANCE = 0.075
#: Aspect ratios within this factor of r*(h) cost nothing; beyond, the squared log-excess is the cost.
_ASPECT_BAND = 1.5
#: Reward per rung (negative cost), so that every free candidate becomes a rung.
_RUNG_REWARD = 1e-3
_LAYERS_MAX = 256
_SMOOTH_PRIMES = (2, 3, 5, 7)


def is_7_smooth(n: int) -> bool:
    """True when ``n`` ≥ 1 has no prime factor above 7 (1, 2, …, 126 = 2·3²·7; not 59, 88 = 8·11, 184 = 8·23)."""
    if n < 1:
        return False
    for prime in _SMOOTH_PRIMES:
        while n % prime == 0:
            n //= prime
    return n == 1


def candidate_depths() -> list[int]:
    """L: multiples of 4 up to 64 and of 8 above, up to 256, with no prime factor above 7."""
    return [n for n in range(4, _LAYERS_MAX + 1, 4) if is_7_smooth(n) and (n <= 64 or n % 8 == 0)]


def candidate_widths() -> list[int]:
    """d_model grid: 128..896 step 128, 1024, 1536, 2048, 2560 (heads of 64), then 128·8·m for 7-smooth m ≥ 3."""
    small = [*range(128, 1024, 128), 1024, 1536, 2048, 2560]
    large = [128 * 8 * m for m in range(3, 33) if is_7_smooth(m)]
    return small + large


def target_aspect_ratio(d_model: int | float) -> float:
    """r*(h) = min(128, 32·(h/512)^(2/3)): the width/depth ratio the generator steers toward."""
    return min(128.0, 32.0 * (d_model / 512.0) ** (2.0 / 3.0))


def head_dim_for(d_model: int) -> int:
    """64 up to h = 2560 (GPT-3 small models, Llama 3.2 1B), 128 above (Llama 2/3)."""
    return 64 if d_model <= 2560 else 128


def kv_heads_for(n_heads: int) -> int:
    """MHA below 16 heads; else 8 KV heads (Llama 3, Llama 2 70B; the width grid keeps 8 | a)."""
    return n_heads if n_heads < 16 else 8


def ffn_multiple_of(d_model: int) -> int:
    """Llama's ``multiple_of``: 256 up to h = 2560 (Llama 3.2), 1024 above (Llama 3 8B)."""
    return 256 if d_model <= 2560 else 1024


def ffn_for(d_model: int, mlp: Literal["swiglu", "gelu"]) -> int:
    """SwiGLU: Llama 3's FeedForward size (multiplier 1.3, 1.2 from h = 16384); GeLU: 4h (module doc)."""
    if mlp == "gelu":
        return 4 * d_model
    multiplier_tenths = 13 if d_model < 16384 else 12  # 8B/70B: 1.3; 405B: 1.2
    hidden = (8 * d_model // 3) * multiplier_tenths // 10  # int(multiplier · int(2·4h/3)), exact
    multiple = ffn_multiple_of(d_model)
    return multiple * -(-hidden // multiple)


def _build_shape(
    d_model: int, n_layers: int, vocab_size: int, mlp: Literal["swiglu", "gelu"], name: str | None = None
) -> ModelShape:
    head_dim = head_dim_for(d_model)
    n_heads = d_model // head_dim
    return ModelShape(
        name=name,
        n_layers=n_layers,
        d_model=d_model,
        n_heads=n_heads,
        n_kv_heads=kv_heads_for(n_heads),
        head_dim=head_dim,
        ffn_hidden=ffn_for(d_model, mlp),
        mlp=mlp,
        vocab_size=vocab_size,
        tied_embeddings=False,
        norm="rmsnorm",
        source="generated by runplan.architect.shape_for_params (Llama 3 rules, docs/catalog.md)",
    )


def _candidates(
    vocab_size: int, count: str, mlp: Literal["swiglu", "gelu"]
) -> tuple[list[int], list[int], list[int]]:
    """Every (params, d_model, n_layers) on the grids, sorted by params (ties: narrower, then shallower)."""
    rows: list[tuple[int, int, int]] = []
    depths = candidate_depths()
    for h in candidate_widths():
        # Exact counts from ModelShape itself: blocks grow linearly in L; the final norm and embeddings do not.
        one, two = (_build_shape(h, n, vocab_size, mlp) for n in (1, 2))
        counted = (
            (one.total_params, two.total_params)
            if count == "total"
            else (one.non_embedding_params, two.non_embedding_params)
        )
        per_layer = counted[1] - counted[0]
        rows.extend((counted[0] + (n - 1) * per_layer, h, n) for n in depths)
    rows.sort()
    return [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]


@functools.lru_cache(maxsize=32)
def _ladder(vocab_size: int, count: str, mlp: Literal["swiglu", "gelu"]) -> tuple[tuple[int, int, int], ...]:
    """The rungs (params, d_model, n_layers), ascending: a cheapest path over the sorted candidates whose
    steps stay within ``_LADDER_STEP`` (see the module docstring)."""
    params, widths, depths = _candidates(vocab_size, count, mlp)
    band = math.log(_ASPECT_BAND)
    costs = [
        max(0.0, abs(math.log(h / n / target_aspect_ratio(h))) - band) ** 2 - _RUNG_REWARD
        for h, n in zip(widths, depths, strict=True)
    ]
    best = [costs[0]]
    previous = [-1]
    for j in range(1, len(params)):
        lo = min(bisect.bisect_left(params, params[j] / _LADDER_STEP), j - 1)
        k = min(range(lo, j), key=lambda i: (best[i], i))  # a grid gap wider than a step: j - 1
        best.append(best[k] + costs[j])
        previous.append(k)
    path = [len(params) - 1]
    while previous[path[-1]] >= 0:
        path.append(previous[path[-1]])
    return tuple((params[i], widths[i], depths[i]) for i in reversed(path))


def generated_size_range(count: Literal["total", "non_embedding"] = "total") -> tuple[float, float]:
    """Targets the ladder is tested to hit within ``TOLERANCE`` (module docstring; V = 128256 for total)."""
    return (1e8 if count == "total" else 2e7), 2e12


def shape_for_params(
    target_params: float,
    *,
    vocab_size: int = DEFAULT_VOCAB_SIZE,
    count: Literal["total", "non_embedding"] = "total",
    mlp: Literal["swiglu", "gelu"] = "swiglu",
) -> ModelShape:
    """A generated Llama 3-style shape whose ``count`` parameters are nearest ``target_params``.

    Rules and sources are in the module docstring (and docs/catalog.md). Deterministic and monotone in
    ``target_params``; within ``TOLERANCE`` (7.5%) of it for targets from 2e7 (non-embedding) or 1e8 (total,
    V = 128256) up to 2e12. Raises ``SpecError`` for a target outside the ladder or farther than
    ``TOLERANCE`` from its nearest rung.
    """
    if count not in ("total", "non_embedding"):
        raise SpecError(
            f"unknown parameter count {count!r}", where="count", hint="use 'total' or 'non_embedding'"
        )
    if mlp not in ("swiglu", "gelu"):
        raise SpecError(f"unknown MLP kind {mlp!r}", where="mlp", hint="use 'swiglu' or 'gelu'")
    try:  # numpy scalars welcome; booleans and strings are not
        target = float(target_params) if not isinstance(target_params, bool | str) else math.nan
    except (TypeError, ValueError):
        target = math.nan
    if not (math.isfinite(target) and target > 0):
        raise SpecError(f"target parameter count must be a positive finite number, got {target_params!r}")
    if vocab_size <= 0:
        raise SpecError(f"vocab_size must be positive, got {vocab_size}", where="vocab_size")
    rungs = _ladder(int(vocab_size), count, mlp)
    values = [r[0] for r in rungs]
    i = bisect.bisect_left(values, target)
    candidates = [j for j in (i - 1, i) if 0 <= j < len(rungs)]
    best = min(candidates, key=lambda j: (abs(math.log(values[j] / target)), j))
    params, d_model, n_layers = rungs[best]
    if abs(params / target - 1.0) > TOLERANCE:
        what = "total" if count == "total" else "non-embedding"
        raise SpecError(
            f"cannot generate a shape with {target:.3g} {what} parameters "
            f"(nearest: {params:.3g}, d_model {d_model}, {n_layers} layers)",
            hint=(
                "the embeddings alone are larger; count non-embedding parameters or use a smaller vocabulary"
                if count == "total" and target < params
                else "pick a size between {} and {} {} parameters".format(
                    *map(format_si, generated_size_range(count)), what
                )
            ),
        )
    return _build_shape(d_model, n_layers, int(vocab_size), mlp)


# ---- user text → shape ---------------------------------------------------------------------------
_SIZE_RE = re.compile(
    r"^\s*\d[\d_]*\.?\d*(e[+-]?\d+)?\s*[kmbgt]?\s*$|^\s*\.\d+(e[+-]?\d+)?\s*[kmbgt]?\s*$", re.IGNORECASE
)


def is_size_shorthand(text: str) -> bool:
    """True for ``7b``, ``70B``, ``1.3e9``, ``405b``: a number, optionally with a k/M/B/G/T suffix."""
    return bool(_SIZE_RE.match(text))


def resolve_model(
    text: str, catalog: Catalog, *, default_family: str = "llama-3.1", where: str | None = "model"
) -> tuple[ModelShape, str]:
    """A catalog name, or a size (``70b``) resolved to the nearest preset of ``default_family`` within 10%
    of its total parameters, else to ``shape_for_params`` (with that family's vocabulary, 128256 if the
    family has no preset). Returns the shape and a one-line explanation; ``where`` names the flag or key
    in errors (unknown names raise SpecError with a did-you-mean).
    """
    from runplan.units import format_si, parse_number

    text = text.strip()
    from runplan.hf_config import is_config_path, load_config_shape

    if is_config_path(text):  # a local Hugging Face config.json
        shape = load_config_shape(text, where=where)
        return shape, (
            f"{text} → {shape.name} ({format_si(shape.total_params)} parameters, Hugging Face config.json)"
        )
    if not is_size_shorthand(text):
        shape = catalog.model(text, where=where)  # raises SpecError with a did-you-mean
        return shape, f"{text} → {shape.name} ({format_si(shape.total_params)} parameters, catalog preset)"
    target = parse_number(text, where=where)
    if target < 1e6:
        raise SpecError(
            f"model size {text!r} is {target:g} parameters",
            where=where,
            hint="write a size with a suffix, e.g. 7b, 70B, 1.3e9",
        )
    family = [m for m in catalog.models if catalog.family_of(m.name or "") == default_family]
    best = min(family, key=lambda m: (abs(m.total_params / target - 1.0), m.name), default=None)
    if best is not None and abs(best.total_params / target - 1.0) <= 0.10:
        return best, (
            f"{text} → {best.name} ({format_si(best.total_params)} parameters, within 10% of "
            f"{format_si(target)})"
        )
    try:
        shape = shape_for_params(
            target, vocab_size=best.vocab_size if best is not None else DEFAULT_VOCAB_SIZE
        )
    except SpecError as error:
        raise SpecError(error.message, where=where, hint=error.hint) from None
    shape = shape.model_copy(update={"name": f"generated-{text.lower()}"})
    return shape, (
        f"{text} → generated shape: {shape.n_layers} layers, d_model {shape.d_model}, "
        f"{shape.n_heads} heads ({shape.n_kv_heads} KV), FFN {shape.ffn_hidden}, "
        f"{format_si(shape.total_params)} parameters (no {default_family} preset within 10%)"
    )
