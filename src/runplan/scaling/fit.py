"""Fit scaling laws to proxy runs: Hoffmann et al. 2022 Approach 2 (isoFLOP parabolas) and Approach 3 (parametric).

* **Approach 2** (Hoffmann §3.2): group runs by budget C, fit a parabola of loss against ln N per budget, take its
  vertex as N_opt(C), D_opt = C/(6·N_opt); then least squares of ln N_opt = ln k + a·ln C (and the same for D).
  Intervals: bootstrap resampling runs within each budget. Leaves out: the parabola is a local (Taylor)
  approximation of the isoFLOP curve, which biases the vertex when the sampled N range is wide or asymmetric.
* **Approach 3** (Hoffmann §3.3 and App. D.2; Besiroglu et al. 2024, arXiv 2404.10102, §2): minimise
  Σ Huber_δ(LSE(a − α·ln N, b − β·ln D, e) − ln L) with δ = 1e-3 over θ = (a, b, e, α, β), A = e^a, B = e^b,
  E = e^e, by L-BFGS from a grid of starts (α, β ∈ {0, 0.5, …, 2}, e ∈ {−1, −0.5, …, 1}, a, b ∈ {0, 5, …, 25}).
  The Huber terms are summed (Besiroglu et al.: a mean made Hoffmann's L-BFGS stop early). The grid is first
  evaluated in one vectorized pass; L-BFGS then starts from the ``starts`` best grid points (all 4,500 with
  ``starts=None``); the loss and its analytic gradient are vectorized numpy (scipy ``minimize(jac=True)``).
  Intervals: nonparametric bootstrap (resample runs with replacement; Besiroglu et al. use 4,000 resamples,
  Hoffmann resampled 80% of points 100 times), reported as percentiles (default 10th/90th, as Hoffmann).
"""

from __future__ import annotations

import csv
import math
import time
import warnings
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from runplan.errors import Infeasible, SpecError
from runplan.scaling.laws import FittedRange, Interval, ParametricLaw, interval_of

HUBER_DELTA = 1e-3
MAX_CSV_BYTES = 50_000_000
#: Approach 3 fits at most this many runs: above it, a seeded random subsample. A sweep has tens to hundreds
#: of runs (Hoffmann et al. 2022 fit ~400); a CSV of 1e6 rows is almost always a training log (one row per
#: step), and five coefficients are pinned long before 5,000 points, while time and memory grow linearly.
MAX_FIT_RUNS = 5_000
#: Elements per temporary array in the vectorized grid evaluation (starts × runs), about 32 MB of float64.
_GRID_CHUNK_ELEMENTS = 1 << 22


# ==== reading runs ===============================================================================
class Runs(BaseModel):
    """Proxy runs read from a CSV: N, D, C = 6ND (or as given), final loss, and each run's CSV line."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    params: Any = Field(description="N per run (numpy array).")
    tokens: Any = Field(description="D per run (numpy array).")
    flops: Any = Field(description="C per run (numpy array).")
    loss: Any = Field(description="Final loss per run (numpy array).")
    lines: Any = Field(description="CSV line number of each run (numpy array).")
    source: str = Field("<runs>", description="Where the runs came from.")

    @property
    def size(self) -> int:
        return int(self.params.size)

    def subset(self, mask: np.ndarray) -> Runs:
        return Runs(
            params=self.params[mask],
            tokens=self.tokens[mask],
            flops=self.flops[mask],
            loss=self.loss[mask],
            lines=self.lines[mask],
            source=self.source,
        )

    def drop_highest_loss(self, count: int) -> Runs:
        """Drop the ``count`` highest-loss runs (Besiroglu et al. drop 5 from the Chinchilla points)."""
        if count < 0:
            raise SpecError(f"must not be negative, got {count}", where="fit.drop_highest")
        if count == 0:
            return self
        if count >= self.size:
            raise SpecError(f"cannot drop {count} of {self.size} runs", where="fit.drop_highest")
        keep = np.argsort(self.loss, kind="stable")[: self.size - count]
        return self.subset(np.sort(keep))


def runs_from_arrays(
    params: Sequence[float],
    loss: Sequence[float],
    *,
    tokens: Sequence[float] | None = None,
    flops: Sequence[float] | None = None,
    source: str = "<arrays>",
) -> Runs:
    """Runs from arrays; give tokens or flops (the other follows from C = 6ND)."""
    n = np.asarray(params, dtype=float)
    if tokens is None and flops is None:
        raise SpecError("give tokens or flops", where=source)
    d = np.asarray(tokens, dtype=float) if tokens is not None else np.asarray(flops, dtype=float) / (6 * n)
    c = np.asarray(flops, dtype=float) if flops is not None else 6.0 * n * d
    return Runs(
        params=n,
        tokens=d,
        flops=c,
        loss=np.asarray(loss, dtype=float),
        lines=np.arange(2, n.size + 2),
        source=source,
    )


def read_runs(
    path: str | Path,
    *,
    params_col: str = "params",
    tokens_col: str = "tokens",
    flops_col: str = "flops",
    loss_col: str = "loss",
    named: Collection[str] = (),
) -> Runs:
    """Read proxy runs from a CSV with a header row; every bad cell is a one-line SpecError naming row and column.

    Needs the params and loss columns and at least one of tokens and flops (the other is derived with
    C = 6·N·D). Other columns are ignored (a `runplan sweep` CSV reads back as is once its losses are filled in).
    ``named``: the column flags the user gave; a typed ``--tokens-col``/``--flops-col`` column must exist, else
    the fit would silently derive it from the other one, and an optional column left at its default name gives
    way to a typed flag claiming that name.
    """
    text, source = read_csv_text(path)
    reader = csv.reader(text.splitlines())
    header = next(reader, None)
    if not header:
        raise SpecError("empty file: expected a header row such as 'params,tokens,loss'", source=source)
    roles = {
        "--params-col": params_col,
        "--tokens-col": tokens_col,
        "--flops-col": flops_col,
        "--loss-col": loss_col,
    }
    # an optional column left at its default gives way to a typed flag that claims its name (`--loss-col flops`:
    # that CSV's flops column is its loss, D comes from tokens); a required one cannot (params and loss)
    claimed = {roles[flag] for flag in named if flag in roles}
    dropped = {f for f in ("--tokens-col", "--flops-col") if f not in named and roles[f] in claimed}
    refuse_shared_column({f: c for f, c in roles.items() if f not in dropped}, source)
    index = _column_index([h.strip() for h in header], (params_col, tokens_col, flops_col, loss_col), source)
    i_n = _need(index, params_col, "--params-col", source)
    i_l = _need(index, loss_col, "--loss-col", source)
    i_d, i_c = (
        None if flag in dropped else _need(index, col, flag, source) if flag in named else index.get(col)
        for flag, col in (("--tokens-col", tokens_col), ("--flops-col", flops_col))
    )
    if i_d is None and i_c is None:
        given = next((f for f in named if f in roles and roles[f] in {tokens_col, flops_col} & claimed), None)
        raise SpecError(
            f"missing column '{tokens_col}' or '{flops_col}' (one of them is needed)"
            + (f"; '{roles[given]}' is the column {given} names" if given is not None and dropped else ""),
            source=source,
            hint=f"columns are {', '.join(index)}; name yours with --tokens-col or --flops-col",
        )
    columns = [(params_col, i_n), (loss_col, i_l)]
    columns += [(tokens_col, i_d)] if i_d is not None else []
    columns += [(flops_col, i_c)] if i_c is not None else []
    bulk = _bulk_parse(text, len(header), columns)
    if bulk is not None:
        values_np, lines = bulk
    else:
        values_np, lines = _parse_records(reader, text, header, columns, source, loss_col)
    n = values_np[params_col]
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        d = values_np[tokens_col] if i_d is not None else values_np[flops_col] / (6.0 * n)
        c = values_np[flops_col] if i_c is not None else 6.0 * n * d
    bad = ~(np.isfinite(d) & np.isfinite(c) & (d > 0) & (c > 0))
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        derived = flops_col if i_c is None else tokens_col
        raise SpecError(
            f"the derived {derived} (C = 6·N·D) is not a finite positive number",
            source=source,
            where=f"row {k + 1} (line {lines[k]})",
            hint="check the magnitudes of params, tokens and flops",
        )
    _check_magnitudes(c, values_np[loss_col], lines, source, flops_col if i_c is not None else None, loss_col)
    return Runs(params=n, tokens=d, flops=c, loss=values_np[loss_col], lines=np.array(lines), source=source)


#: A proxy's final loss above this many nats per token is not a language-model loss: a uniform guess over a
#: 256k-token vocabulary is ln(256,000) = 12.5 nats (18 bits); a perplexity or a sum over a sequence is larger.
MAX_LOSS_NATS = 20.0


def _check_magnitudes(
    flops: np.ndarray,
    loss: np.ndarray,
    lines: Sequence[int],
    source: str,
    flops_col: str | None,
    loss_col: str,
) -> None:
    """A SpecError at the first run past any trainable budget (MAX_TRAINING_FLOPS, as every budget is checked)
    or with a loss no language model has (MAX_LOSS_NATS): one such row moved Approach 3's constants and put the
    fit's report budget at 1e40 (a row 1e9,1e40,2.5), or turned Approach 2's exponent a into 2.15 (a loss 1e6)."""
    from runplan.scaling.budget import MAX_TRAINING_FLOPS

    for bad, name, message, hint in (
        (
            flops > MAX_TRAINING_FLOPS,
            flops_col or "tokens",
            f"C = {{:.3g}} FLOPs (6·N·D) is beyond any trainable run (limit {MAX_TRAINING_FLOPS:.0e})",
            "check the exponent: a proxy run is about 1e17 to 1e22 FLOPs",
        ),
        (
            loss > MAX_LOSS_NATS,
            loss_col,
            f"loss {{:.4g}} is above {MAX_LOSS_NATS:g} nats per token (a uniform guess over 256k tokens is 12.5)",
            "give the final loss in nats per token, not a perplexity or a sum over the sequence",
        ),
    ):
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            value = float((flops if name != loss_col else loss)[k])
            raise SpecError(
                message.format(value),
                source=source,
                where=f"row {k + 1} (line {lines[k]}), column '{name}'",
                hint=hint,
            )


def read_csv_text(path: str | Path) -> tuple[str, str]:
    """The text of a CSV of at most MAX_CSV_BYTES (a regular file, read by :func:`runplan.fileio.read_text`,
    whatever size it reports), and its name for messages; a one-line SpecError otherwise."""
    from runplan.fileio import read_text

    return read_text(path, MAX_CSV_BYTES, encoding="utf-8-sig"), str(path)


def _column_index(header: list[str], wanted: tuple[str, ...], source: str) -> dict[str, int]:
    """Column name → position (first occurrence); a wanted column named twice is a SpecError."""
    index: dict[str, int] = {}
    for i, name in enumerate(header):
        if name in index and name in wanted:
            raise SpecError(
                f"column '{name}' appears twice (columns {index[name] + 1} and {i + 1})",
                source=source,
                where="line 1",
                hint="rename or remove one of them",
            )
        index.setdefault(name, i)
    return index


def refuse_shared_column(roles: dict[str, str], source: str) -> None:
    """A SpecError when one column is named for two roles (flag → column): ``--params-col loss`` fitted the loss
    against itself and ended "infeasible: no law with positive exponents"; ``--hyperparams --lr-col batch`` raised
    an IndexError."""
    seen: dict[str, str] = {}
    for flag, column in roles.items():
        if column in seen:
            raise SpecError(
                f"{seen[column]} and {flag} both name column '{column}'",
                source=source,
                hint="each quantity needs its own column",
            )
        seen[column] = flag


def _need(index: dict[str, int], column: str, flag: str, source: str) -> int:
    if column in index:
        return index[column]
    import difflib

    header = list(index)
    close = difflib.get_close_matches(column, header, n=1)
    hint = (
        f"did you mean '{close[0]}'? (or pass {flag} {close[0]})"
        if close
        else f"columns are {', '.join(header)}; name yours with {flag}"
    )
    raise SpecError(f"missing column '{column}'", source=source, hint=hint)


def _parse_records(
    reader: Any, text: str, header: list[str], columns: list[tuple[str, int]], source: str, loss_col: str
) -> tuple[dict[str, np.ndarray], list[int]]:
    """Record by record (Python's csv module): quoted fields, blank lines, and a one-line error naming the first
    bad row, line and column."""
    rows, lines = _records(reader, text)
    if not rows:
        raise SpecError("no runs after the header row", source=source)
    for number, (row, line) in enumerate(zip(rows, lines, strict=True), start=1):
        # a cell too many or too few shifts every later column, and which one is extra or missing is a guess:
        # refuse both, saying the count (a short row's missing cell is not "empty", it is not there)
        if len(row) != len(header):
            raise SpecError(
                f"{len(row)} values for the header's {len(header)} columns",
                source=source,
                where=f"row {number} (line {line})",
                hint="remove the extra value, or quote a value that contains a comma"
                if len(row) > len(header)
                else "add the missing value: every run needs one in each column",
            )
    values_np = _fast_parse(rows, columns)
    if values_np is None:
        values_np = _parse_rows(rows, lines, columns, source, loss_col)
    return values_np, lines


def _bulk_parse(
    text: str, width: int, columns: list[tuple[str, int]]
) -> tuple[dict[str, np.ndarray], list[int]] | None:
    """numpy's C reader for the plain case (no quotes, no carriage returns or blank lines, every row as wide as the
    header, every used cell a positive finite number): a 50 MB CSV in about a second instead of four. None sends
    the caller to the record-by-record reader, which also names the first bad cell."""
    import io

    body = text.split("\n", 1)[1] if "\n" in text else ""
    body = body.removesuffix("\n")
    if not body or '"' in body or "\r" in body or "\n\n" in body:
        return None
    rows = body.count("\n") + 1
    if body.count(",") != (width - 1) * rows:  # a row too wide or too narrow: the record reader says which
        return None
    used = [i for _, i in columns]
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            table = np.loadtxt(io.StringIO(body), delimiter=",", usecols=used, ndmin=2, comments=None)
    except ValueError:
        return None
    if table.shape != (rows, len(columns)) or not bool(np.all(np.isfinite(table) & (table > 0))):
        return None
    values = {name: table[:, k].copy() for k, (name, _) in enumerate(columns)}
    return values, list(range(2, rows + 2))


def _records(reader: Any, text: str) -> tuple[list[list[str]], list[int]]:
    """Non-blank records after the header and the CSV line each starts on (a quoted field may span lines)."""
    all_rows = list(reader)
    if reader.line_num == len(all_rows) + 1:  # one line per record: line = index + 2
        keep = [i for i, r in enumerate(all_rows) if "".join(r).strip()]
        return [all_rows[i] for i in keep], [i + 2 for i in keep]
    rows, lines = [], []
    recount = csv.reader(text.splitlines())
    next(recount, None)
    for row_values in recount:
        if "".join(row_values).strip():
            rows.append(row_values)
            lines.append(recount.line_num)
    return rows, lines


def _fast_parse(rows: list[list[str]], columns: list[tuple[str, int]]) -> dict[str, np.ndarray] | None:
    """Vectorized parse when every cell is a positive finite number; None sends the caller to the cell-by-cell
    parse, which names the first bad cell."""
    width = max(i for _, i in columns) + 1
    if not all(len(r) >= width for r in rows):
        return None
    try:
        with np.errstate(all="ignore"):
            values = {name: np.array([r[i] for r in rows], dtype=float) for name, i in columns}
    except ValueError:
        return None
    if all(bool(np.all(np.isfinite(v) & (v > 0))) for v in values.values()):
        return values
    return None


def _parse_rows(
    rows: list[list[str]], row_lines: list[int], columns: list[tuple[str, int]], source: str, loss_col: str
) -> dict[str, np.ndarray]:
    """Cell-by-cell parse: the first bad cell is a SpecError naming its row, line and column."""
    values: dict[str, list[float]] = {name: [] for name, _ in columns}
    for row, (row_values, line) in enumerate(zip(rows, row_lines, strict=True), start=1):
        for name, i in columns:
            where = f"row {row} (line {line}), column '{name}'"
            # a short row (from a reader that does not check widths first, --hyperparams'): the cell is absent
            if i >= len(row_values):
                raise SpecError(
                    f"{len(row_values)} values, none for column {i + 1}",
                    source=source,
                    where=where,
                    hint="add the missing value: every run needs one in each column",
                )
            cell = row_values[i].strip()
            if cell == "":
                fix = "fill in the measured final loss" if name == loss_col else "every run needs a value"
                raise SpecError("empty value", source=source, where=where, hint=fix)
            try:
                number = float(cell)
            except ValueError:
                raise SpecError(
                    f"not a number: {cell!r}",
                    source=source,
                    where=where,
                    hint="write a plain number, e.g. 7e9 or 3e-4 (CSV cells take no suffix such as 7B)",
                ) from None
            if not math.isfinite(number) or number <= 0:
                raise SpecError(
                    f"must be a positive finite number, got {cell!r}",
                    source=source,
                    where=where,
                    hint="fix the cell, or delete the row if that run failed",
                )
            values[name].append(number)
    return {name: np.array(v, dtype=float) for name, v in values.items()}


# ==== intervals ==================================================================================
def _interval(value: float, samples: np.ndarray | None, percentiles: tuple[float, float]) -> Interval:
    return interval_of(value, samples, percentiles)


def _check_at_flops(at_flops: float | None) -> None:
    if at_flops is not None and not (math.isfinite(at_flops) and at_flops > 0):
        raise SpecError(
            f"must be a positive number of FLOPs, got {at_flops:g}", where="fit.flops", hint="e.g. 2e23"
        )
    if at_flops is not None:  # the bound allocate and sweep hold a budget to
        from runplan.scaling.budget import check_training_flops

        check_training_flops(at_flops, where="fit.flops")


# ==== Approach 3: parametric fit =================================================================
def start_grid(kind: Literal["full", "coarse"] = "full") -> np.ndarray:
    """Starting points θ = (a, b, e, α, β) of Hoffmann App. D.2: 6·6·5·5·5 = 4,500 (``coarse``: 3·3·3·3·3)."""
    if kind == "full":
        alphas = betas = np.arange(0.0, 2.01, 0.5)
        es = np.arange(-1.0, 1.01, 0.5)
        as_ = bs = np.arange(0.0, 25.01, 5.0)
    else:
        alphas = betas = np.array([0.0, 0.5, 1.0])
        es = np.array([-1.0, 0.0, 1.0])
        as_ = bs = np.array([0.0, 10.0, 20.0])
    mesh = np.meshgrid(as_, bs, es, alphas, betas, indexing="ij")
    return np.stack([m.ravel() for m in mesh], axis=1)


def _huber(r: np.ndarray, delta: float) -> np.ndarray:
    abs_r = np.abs(r)
    return np.where(abs_r <= delta, 0.5 * r * r, delta * (abs_r - 0.5 * delta))


def huber_objective(
    theta: np.ndarray,
    log_n: np.ndarray,
    log_d: np.ndarray,
    log_loss: np.ndarray,
    weights: np.ndarray | None = None,
    delta: float = HUBER_DELTA,
) -> tuple[float, np.ndarray]:
    """Σ w·Huber_δ(LSE(a − α ln N, b − β ln D, e) − ln L) and its analytic gradient in θ = (a, b, e, α, β).

    With s_i the softmax weights of the three LSE terms and ψ = clip(r, −δ, δ) the Huber derivative:
    ∂/∂a = Σ wψs₁, ∂/∂b = Σ wψs₂, ∂/∂e = Σ wψs₃, ∂/∂α = −Σ wψs₁ ln N, ∂/∂β = −Σ wψs₂ ln D.
    """
    a, b, e, alpha, beta = theta
    t1 = a - alpha * log_n
    t2 = b - beta * log_d
    t3 = np.full_like(t1, e)
    m = np.maximum(np.maximum(t1, t2), t3)
    w1, w2, w3 = np.exp(t1 - m), np.exp(t2 - m), np.exp(t3 - m)
    total = w1 + w2 + w3
    r = m + np.log(total) - log_loss
    psi = np.clip(r, -delta, delta)
    if weights is not None:
        psi = psi * weights
        value = float(np.dot(weights, _huber(r, delta)))
    else:
        value = float(np.sum(_huber(r, delta)))
    p1, p2, p3 = psi * w1 / total, psi * w2 / total, psi * w3 / total
    grad = np.array([p1.sum(), p2.sum(), p3.sum(), -np.dot(p1, log_n), -np.dot(p2, log_d)])
    return value, grad


def _grid_objective(
    starts: np.ndarray,
    log_n: np.ndarray,
    log_d: np.ndarray,
    log_loss: np.ndarray,
    weights: np.ndarray | None,
    delta: float,
) -> np.ndarray:
    """The Huber objective at every start at once: (S, 5) starts × (n,) runs → (S,), in chunks."""
    out = np.empty(starts.shape[0])
    chunk = max(1, min(1024, _GRID_CHUNK_ELEMENTS // max(1, log_n.size)))
    for lo in range(0, starts.shape[0], chunk):
        s = starts[lo : lo + chunk]
        t1 = s[:, 0:1] - s[:, 3:4] * log_n
        t2 = s[:, 1:2] - s[:, 4:5] * log_d
        lse = np.logaddexp(np.logaddexp(t1, t2), s[:, 2:3])
        h = _huber(lse - log_loss, delta)
        out[lo : lo + chunk] = h @ weights if weights is not None else h.sum(axis=1)
    return out


def _lbfgs(theta0: np.ndarray, args: tuple) -> tuple[np.ndarray, float, bool]:
    from scipy.optimize import minimize

    result = minimize(
        huber_objective,
        theta0,
        args=args,
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": 2000, "ftol": 1e-13, "gtol": 1e-10, "maxcor": 20},
    )
    return result.x, float(result.fun), bool(result.success)


def _best_fit(
    log_n: np.ndarray,
    log_d: np.ndarray,
    log_loss: np.ndarray,
    weights: np.ndarray | None,
    starts: np.ndarray,
    n_starts: int | None,
    delta: float,
    extra_starts: Sequence[np.ndarray] = (),
) -> tuple[np.ndarray | None, float, int, int]:
    """L-BFGS from the ``n_starts`` best grid points (all with None) plus ``extra_starts``; the lowest wins."""
    chosen = starts
    if n_starts == 0:
        chosen = starts[:0]
    elif n_starts is not None and n_starts < starts.shape[0]:
        scores = _grid_objective(starts, log_n, log_d, log_loss, weights, delta)
        chosen = starts[np.argsort(scores, kind="stable")[:n_starts]]
    candidates = [*extra_starts, *chosen]
    best_theta: np.ndarray | None = None
    best_value, converged = math.inf, 0
    args = (log_n, log_d, log_loss, weights, delta)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        for theta0 in candidates:
            theta, value, ok = _lbfgs(np.asarray(theta0, dtype=float), args)
            if not (math.isfinite(value) and np.all(np.isfinite(theta))):
                continue
            converged += ok
            if value < best_value:
                best_theta, best_value = theta, value
    return best_theta, best_value, converged, len(candidates)


class ParametricFit(BaseModel):
    """Approach 3 result: the fitted law, its bootstrap intervals, and how the fit went."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    law: ParametricLaw = Field(description="Fitted law (E, A, B, α, β).")
    objective: float = Field(description="Summed Huber loss at the optimum.")
    runs: int = Field(description="Runs fitted.")
    starts: int = Field(description="L-BFGS starts tried.")
    converged_starts: int = Field(description="Starts where L-BFGS reported convergence.")
    E: Interval = Field(description="E with bootstrap percentiles.")
    A: Interval = Field(description="A with bootstrap percentiles.")
    B: Interval = Field(description="B with bootstrap percentiles.")
    alpha: Interval = Field(description="α with bootstrap percentiles.")
    beta: Interval = Field(description="β with bootstrap percentiles.")
    at_flops: float = Field(description="Budget the optimum below is evaluated at.")
    params_opt: Interval = Field(description="Compute-optimal N at at_flops.")
    tokens_opt: Interval = Field(description="Compute-optimal D at at_flops.")
    tokens_per_param: Interval = Field(description="Compute-optimal D/N at at_flops.")
    bootstrap: int = Field(description="Bootstrap resamples requested.")
    bootstrap_failed: int = Field(0, description="Resamples where no start gave a finite fit.")
    percentiles: tuple[float, float] = Field(description="Percentiles of the intervals.")
    seconds: float = Field(description="Wall time of the fit and bootstrap.")
    warnings: list[str] = Field(
        default_factory=list,
        description="Cautions: a subsampled CSV, an ill-conditioned fit, wide intervals.",
    )


def _theta_to_coefficients(theta: np.ndarray) -> tuple[float, float, float, float, float]:
    a, b, e, alpha, beta = (float(x) for x in theta)
    return math.exp(e), math.exp(a), math.exp(b), alpha, beta


#: Fewest distinct values of N and of D that separate A/N^α (and B/D^β) from E: two points fix a line, not
#: a curve with an offset, so with two sizes any α fits as well as another.
MIN_DISTINCT_SIZES = 3
#: Row-wise C / (6·N·D) beyond which a flops column is not the training compute of that N and D: 6·N·D leaves
#: out attention (Kaplan et al. 2020 §2.1: under 10% at 2k context for models over ~1B) and embeddings, so up
#: to 2x either way is a different counting convention; beyond, a wrong column or unit.
MAX_FLOPS_RATIO = 2.0


def _check_identifiable(runs: Runs) -> None:
    """A SpecError when the runs cannot determine the five parameters: fewer than 5 distinct (N, D) points,
    or fewer than MIN_DISTINCT_SIZES distinct N or D (all runs at one model size say nothing about α)."""
    order = np.lexsort(
        (runs.tokens, runs.params)
    )  # distinct (N, D) pairs: np.unique over rows took 2.5 s on 50 MB
    n, d = runs.params[order], runs.tokens[order]
    points = 1 + int(np.count_nonzero((n[1:] != n[:-1]) | (d[1:] != d[:-1]))) if runs.size else 0
    sizes, lengths = np.unique(runs.params).size, np.unique(runs.tokens).size
    if points < 5 or sizes < MIN_DISTINCT_SIZES or lengths < MIN_DISTINCT_SIZES:
        raise SpecError(
            f"{runs.size} runs at {points} distinct (N, D) point(s), {sizes} distinct N and {lengths} distinct D: "
            f"a 5-parameter law needs 5 or more points and at least {MIN_DISTINCT_SIZES} values of each "
            "(otherwise E, A, α and B, β trade off freely and any law fits)",
            source=runs.source,
            hint="add runs at other model sizes and token counts (an isoFLOP sweep: `runplan sweep`)",
        )


#: Below these medians a column is almost surely in other units (millions or billions of parameters, PF-days):
#: LLM proxy sweeps start near 1e7 parameters (Hoffmann et al. 2022 Fig. 3's isoFLOP points start at 57M) and
#: 1e8 tokens; Kaplan et al. 2020 went down to 768 non-embedding parameters, but not for a median run.
MIN_PLAUSIBLE_PARAMS = 1e5
MIN_PLAUSIBLE_TOKENS = 1e6


def magnitude_warnings(runs: Runs) -> list[str]:
    """Cautions for N or D too small to be counts: a column in millions, billions or PF-days fits silently
    into a law that means nothing."""
    out = []
    for what, values, low in (
        ("parameters N", runs.params, MIN_PLAUSIBLE_PARAMS),
        ("tokens D", runs.tokens, MIN_PLAUSIBLE_TOKENS),
    ):
        median = float(np.median(values))
        if median < low:
            out.append(
                f"{what}: the median run has {median:.3g}, below {low:.0e}: is the column in millions or billions "
                "(or the FLOPs in PF-days)? runplan reads plain counts (write 7e9, not 7)"
            )
    return out + _rising_loss_warning(runs)


#: One-sided significance level of the rising-loss caution: the conventional 5% (Fisher), so a handful of runs
#: over a narrow span of compute, whose sign of trend is noise, are not warned.
RISING_LOSS_P_VALUE = 0.05


def _rising_loss_warning(runs: Runs) -> list[str]:
    """A caution when the loss rises with compute: Pearson r of ln L on ln C above 0, significant at
    :data:`RISING_LOSS_P_VALUE` (one-sided t-test on r, scipy.stats.pearsonr): an accuracy or a score in the loss
    column. Real losses fall: r = −0.90 on the Chinchilla points, −0.94 on Sardana et al.'s runs
    (tests/scaling/test_fit_warns_when_loss_rises_with_compute.py); Approach 3 fitted such a column silently."""
    from scipy.stats import pearsonr

    log_c, log_l = np.log(runs.flops), np.log(runs.loss)
    if runs.size < 3 or np.ptp(log_c) == 0 or np.ptp(log_l) == 0:
        return []
    test = pearsonr(log_c, log_l, alternative="greater")
    r, p = float(test.statistic), float(test.pvalue)
    if not (r > 0 and p < RISING_LOSS_P_VALUE):
        return []
    return [
        f"the loss rises with compute (r = {r:+.2f} between ln L and ln C; real losses fall): is the loss "
        "column an accuracy or a score? give the final loss in nats per token"
    ]


def duplicate_warnings(runs: Runs) -> list[str]:
    """A caution for rows that repeat an earlier row exactly (N, D and loss): a pasted-twice row weighs double
    in the fit and in every bootstrap resample. Replicate seeds (same N and D, another loss) are fine."""
    # one stable lexsort (a Python dict took 3.5 s on a 50 MB CSV, np.unique over rows 4 s): equal rows end up
    # adjacent, each group in file order, so a group's first member is the earliest row
    order = np.lexsort((runs.loss, runs.tokens, runs.params))
    n, d, loss = runs.params[order], runs.tokens[order], runs.loss[order]
    repeat = (n[1:] == n[:-1]) & (d[1:] == d[:-1]) & (loss[1:] == loss[:-1])
    if not repeat.any():
        return []
    group_start = np.maximum.accumulate(np.where(np.concatenate([[False], repeat]), 0, np.arange(order.size)))
    copies = np.flatnonzero(np.concatenate([[False], repeat]))  # positions in sorted order
    k = copies[np.argmin(order[copies])]  # the copy that comes first in the file
    line, first = int(runs.lines[order[k]]), int(runs.lines[order[group_start[k]]])
    who = f"line {line} and {copies.size - 1} more repeat" if copies.size > 1 else f"line {line} repeats"
    return [
        f"{who} an earlier row exactly (line {first}: the same N, D and loss): each copy "
        "counts again in the fit and the bootstrap; delete repeated rows (seeds of one size differ in loss)"
    ]


def flops_warnings(runs: Runs) -> list[str]:
    """A caution when a flops column disagrees with 6·N·D beyond MAX_FLOPS_RATIO in some row: Approach 2
    groups runs into budgets by C, Approach 3 fits N and D, so the two would fit different data."""
    with np.errstate(all="ignore"):
        ratio = runs.flops / (6.0 * runs.params * runs.tokens)
    off = np.flatnonzero((ratio > MAX_FLOPS_RATIO) | (ratio < 1.0 / MAX_FLOPS_RATIO))
    if off.size == 0:
        return []
    k = int(off[np.argmax(np.abs(np.log(ratio[off])))])
    return [
        f"{off.size} of {runs.size} rows have a flops value more than {MAX_FLOPS_RATIO:g}x from 6·N·D (Kaplan et "
        f"al. 2020 §2.1; worst: line {int(runs.lines[k])}, C / 6ND = {ratio[k]:.3g}): Approach 2 groups budgets "
        "by that column while Approach 3 fits N and D; check the column's units and that N is the parameter "
        "count C was computed with (a runplan sweep CSV computed it from its 'params' column), or leave it out "
        "so C is derived as 6·N·D"
    ]


def fit_parametric(
    runs: Runs,
    *,
    starts: int | None = 16,
    grid: Literal["full", "coarse"] = "full",
    bootstrap: int = 0,
    bootstrap_starts: int = 0,
    percentiles: tuple[float, float] = (10, 90),
    at_flops: float | None = None,
    delta: float = HUBER_DELTA,
    seed: int = 0,
    name: str | None = None,
    param_count: Literal["total", "non_embedding"] = "total",
    progress: Callable[[int], None] | None = None,
) -> ParametricFit:
    """Approach 3 on ``runs`` (see the module docstring); raises Infeasible when the fit does not converge.

    ``starts``: L-BFGS runs from that many best grid points (None: from all of them). Each bootstrap resample
    restarts from the full-data optimum, plus the ``bootstrap_starts`` best grid points under its weights
    (default 0: the resampled optimum lies near the full-data one; raise it to guard against a jump to another
    basin, at about 0.1-0.4 s per start).
    ``progress(i)`` is called after each resample.
    """
    t0 = time.perf_counter()
    if runs.size < 5:
        raise SpecError(f"a 5-parameter law needs at least 5 runs, got {runs.size}", source=runs.source)
    _check_identifiable(runs)
    _check_at_flops(at_flops)
    runs, warnings = _subsample(runs, seed)
    logs = (np.log(runs.params), np.log(runs.tokens), np.log(runs.loss))
    grid_points = start_grid(grid)
    theta, value, converged, tried = _best_fit(*logs, None, grid_points, starts, delta)
    law = _fitted_law(runs, theta, tried, delta, name, param_count)
    at = float(at_flops) if at_flops is not None else float(runs.flops.max())
    samples, failed = _bootstrap(logs, theta, grid_points, bootstrap, bootstrap_starts, delta, seed, progress)

    def column(j: int) -> np.ndarray | None:
        return None if samples is None else samples[:, j]

    if samples is not None:
        finite = samples[np.all(np.isfinite(samples), axis=1)]
        law = law.model_copy(
            update={"resamples": [tuple(float(x) for x in row) for row in finite], "percentiles": percentiles}
        )
    n_opt, d_opt = law.compute_optimal(at)
    opt_samples = _optimum_samples(samples, at)
    fit = ParametricFit(
        law=law,
        objective=value,
        runs=runs.size,
        starts=tried,
        converged_starts=converged,
        E=_interval(law.E, column(0), percentiles),
        A=_interval(law.A, column(1), percentiles),
        B=_interval(law.B, column(2), percentiles),
        alpha=_interval(law.alpha, column(3), percentiles),
        beta=_interval(law.beta, column(4), percentiles),
        at_flops=at,
        params_opt=_interval(n_opt, opt_samples[0], percentiles),
        tokens_opt=_interval(d_opt, opt_samples[1], percentiles),
        tokens_per_param=_interval(d_opt / n_opt, opt_samples[2], percentiles),
        bootstrap=bootstrap,
        bootstrap_failed=failed,
        percentiles=percentiles,
        seconds=time.perf_counter() - t0,
    )
    warnings = warnings + few_runs_warnings(runs) + one_budget_warnings(runs)
    warnings += parametric_warnings(fit, runs.flops)
    return fit.model_copy(update={"warnings": warnings})


#: Runs per fitted parameter below which Approach 3's residuals say little: 5 runs interpolate the 5 constants
#: exactly (a Huber objective of 3e-16 printed as a fit); Hoffmann et al. fit over 400 runs.
MIN_RUNS_PER_PARAMETER = 2


def few_runs_warnings(runs: Runs) -> list[str]:
    """A caution when Approach 3 has fewer than MIN_RUNS_PER_PARAMETER runs per constant: with 5 runs the law
    passes through every run, whatever the noise, and nothing in the fit shows how wrong it is."""
    if runs.size >= MIN_RUNS_PER_PARAMETER * 5:
        return []
    spare = runs.size - 5
    return [
        f"Approach 3 fits 5 constants to {runs.size} runs ({spare} to spare): "
        + (
            "the law passes through every run, so its residuals show nothing"
            if spare == 0
            else "its residuals show little"
        )
        + f"; add runs (at least {MIN_RUNS_PER_PARAMETER * 5}; Hoffmann et al. 2022 fit over 400)"
    ]


#: Runs whose compute 6·N·D spans less than this (decades, a factor of 2) lie on one isoFLOP curve.
ONE_BUDGET_DECADES = 0.3


def one_budget_span(runs: Runs) -> float | None:
    """The decades 6·N·D spans when that is under ONE_BUDGET_DECADES (every run on one isoFLOP curve), else
    None."""
    span = float(np.ptp(np.log10(6.0 * runs.params * runs.tokens)))
    return span if span < ONE_BUDGET_DECADES else None


def one_budget_warnings(runs: Runs) -> list[str]:
    """Approach 3 on runs of a single compute budget: along one isoFLOP curve D = C/(6N), so N and D move
    together and E, A, B, α, β trade against each other (Hoffmann et al. 2022 §3.3 fit runs of many budgets);
    the bootstrap restarts from the same optimum, so its intervals stay narrow around a wrong law."""
    span = one_budget_span(runs)
    if span is None:
        return []
    return [
        f"Approach 3 on one compute budget: 6·N·D spans only {span:.2g} decade, so N and D are tied (D = C/6N) and "
        "E, A, B, α and β cannot be told apart, however narrow their intervals; do not use this law: fit "
        "runs of several budgets (runplan sweep --budgets 3)"
    ]


def unusable_reason(fit: ParametricFit, runs: Runs) -> str | None:
    """Why Approach 3's law must not be used, or None: the runs lie on one compute budget (the law is not
    identifiable, :func:`one_budget_warnings`), or its compute-optimal N or D at the reported budget is not a
    finite positive number (what :func:`runplan.scaling.allocate.unusable_law` refuses when the law is used).
    `runplan fit` writes no law file from such a fit and prints no optimum from it."""
    span = one_budget_span(runs)
    if span is not None:
        return (
            f"the {runs.size} runs of {runs.source} lie on one compute budget (6·N·D spans {span:.2g} decade), "
            "so N and D are tied (D = C/6N) and Approach 3 cannot tell E, A, B, α and β apart"
        )
    n_opt, d_opt = fit.params_opt.value, fit.tokens_opt.value
    if not all(math.isfinite(x) and x > 0 for x in (n_opt, d_opt)):
        from runplan.scaling.allocate import unusable_law

        return unusable_law(fit.law, fit.at_flops).message
    return _flat_reason(fit.law, runs)


#: Approach 3's law is flat over its runs when its predictions span at most this fraction of the span of the
#: loss column: A/N^α and B/D^β are then ~0 at every run (an accuracy near chance in the loss column stopped at a
#: start point with α 1.5, β 2, where both are below 1e-12), so α, β and the optimum are not determined.
FLAT_FRACTION = 0.01


def _flat_reason(law: ParametricLaw, runs: Runs) -> str | None:
    """Why a law that predicts the same loss for every run is unusable, or None (see FLAT_FRACTION)."""
    predicted = np.asarray(law.loss(runs.params, runs.tokens), dtype=float)
    spread, seen = float(np.ptp(predicted)), float(np.ptp(runs.loss))
    # a loss column that is constant spans 0: a floor of a millionth of the mean loss absorbs rounding (1e-16)
    if spread > max(FLAT_FRACTION * seen, 1e-6 * float(np.mean(runs.loss))):
        return None
    rising = _rising_loss_warning(runs)  # the likely cause, said with the refusal (no report is printed)
    return (
        f"the fitted law is flat over the runs: it predicts losses spanning {spread:.2g} where the loss column "
        f"spans {seen:.2g} (E {law.E:.4g}; A/N^α and B/D^β near 0 at every run), so α, β and the optimum are "
        "not determined; the loss column should fall with N and D (a loss, not an accuracy or a score)"
        + (f"; {rising[0]}" if rising else "")
    )


def _subsample(runs: Runs, seed: int) -> tuple[Runs, list[str]]:
    """At most MAX_FIT_RUNS runs (a seeded random subsample above it), and the warning that says so."""
    if runs.size <= MAX_FIT_RUNS:
        return runs, []
    keep = np.sort(np.random.default_rng(seed).choice(runs.size, MAX_FIT_RUNS, replace=False))
    warning = (
        f"{runs.size:,} rows: fitted a random subsample of {MAX_FIT_RUNS:,} (seed {seed}); a scaling-law "
        "fit wants one row per run with its final loss (is this a training log?)"
    )
    return runs.subset(keep), [warning]


def _fitted_law(
    runs: Runs,
    theta: np.ndarray | None,
    tried: int,
    delta: float,
    name: str | None,
    param_count: Literal["total", "non_embedding"],
) -> ParametricLaw:
    """The law at the full-data optimum θ; Infeasible when no start converged or an exponent is not positive."""
    if theta is None:
        raise Infeasible(
            f"parametric fit of {runs.source} did not converge from any of {tried} starts "
            "(every L-BFGS run overflowed or returned NaN)",
            suggestions=["check the loss column is in nats/token", "add runs over a wider N, D range"],
        )
    E, A, B, alpha, beta = _theta_to_coefficients(theta)
    if not (alpha > 0 and beta > 0) or not all(math.isfinite(x) for x in (E, A, B)):
        raise Infeasible(
            f"parametric fit of {runs.source} ended at α = {alpha:.3g}, β = {beta:.3g}, "
            f"E = {E:.3g}: the runs do not determine a law with positive exponents",
            suggestions=["vary both N and D over at least a decade each", "drop diverged or unfinished runs"],
        )
    return ParametricLaw(
        name=name or f"fit:{Path(runs.source).name}",
        E=E,
        A=A,
        B=B,
        alpha=alpha,
        beta=beta,
        param_count=param_count,
        source=f"runplan fit (Approach 3, Huber δ={delta:g}) of {runs.source}",
        fitted_range=FittedRange(
            params_min=float(runs.params.min()),
            params_max=float(runs.params.max()),
            tokens_min=float(runs.tokens.min()),
            tokens_max=float(runs.tokens.max()),
        ),
    )


def _bootstrap(
    logs: tuple[np.ndarray, np.ndarray, np.ndarray],
    theta: np.ndarray | None,
    grid_points: np.ndarray,
    bootstrap: int,
    bootstrap_starts: int,
    delta: float,
    seed: int,
    progress: Callable[[int], None] | None,
) -> tuple[np.ndarray | None, int]:
    """(bootstrap × 5) coefficients (E, A, B, α, β), NaN rows where no start converged, and their count."""
    if bootstrap <= 0 or theta is None:
        return None, 0
    size = logs[0].size
    rng = np.random.default_rng(seed)
    samples = np.full((bootstrap, 5), np.nan)
    failed = 0
    for i in range(bootstrap):
        weights = rng.multinomial(size, np.full(size, 1.0 / size)).astype(float)
        boot_theta, _, _, _ = _best_fit(
            *logs, weights, grid_points, bootstrap_starts, delta, extra_starts=[theta]
        )
        if boot_theta is None:
            failed += 1
        else:
            samples[i] = _theta_to_coefficients(boot_theta)
        if progress is not None:
            progress(i + 1)
    return samples, failed


def _optimum_samples(samples: np.ndarray | None, at: float) -> tuple[np.ndarray | None, ...]:
    """Compute-optimal N, D and D/N at ``at`` under each resample (Hoffmann Eq. 4), or Nones without any."""
    if samples is None:
        return (None, None, None)
    ok = np.all(np.isfinite(samples), axis=1) & (samples[:, 3] > 0) & (samples[:, 4] > 0)
    s = samples[ok]
    g = (s[:, 3] * s[:, 1] / (s[:, 4] * s[:, 2])) ** (1.0 / (s[:, 3] + s[:, 4]))
    n_s = g * (at / 6.0) ** (s[:, 4] / (s[:, 3] + s[:, 4]))
    d_s = at / 6.0 / n_s
    return (n_s, d_s, d_s / n_s)


#: Approach 3 is called ill-conditioned when the bootstrap interval of E spans more than this factor, or that
#: of the optimal tokens per parameter more than TOKENS_PER_PARAM_SPREAD: the data then trade E against the
#: A and B terms (Besiroglu et al. 2024 report E to ±0.03 on 240 Chinchilla points; runplan's 80% interval
#: there spans ×1.06).
E_SPREAD = 1.5
TOKENS_PER_PARAM_SPREAD = 4.0


def parametric_warnings(fit: ParametricFit, flops: np.ndarray) -> list[str]:
    """Cautions for Approach 3: ill-conditioned (E and D/N poorly determined), wide intervals, extrapolation."""
    out = []
    e, tpp = fit.E, fit.tokens_per_param
    if e.low is not None and e.high is not None and tpp.low is not None and tpp.high is not None:
        e_spread = e.high / e.low if e.low > 0 else math.inf
        tpp_spread = tpp.high / tpp.low if tpp.low > 0 else math.inf
        if e_spread > E_SPREAD or tpp_spread > TOKENS_PER_PARAM_SPREAD:
            out.append(
                f"Approach 3 is ill-conditioned: E {e.value:.3g} [{e.low:.3g}, {e.high:.3g}], tokens per "
                f"parameter {tpp.value:.3g} [{tpp.low:.3g}, {tpp.high:.3g}]: the runs cannot tell the "
                "irreducible loss from the N and D terms; vary N and D each over a decade or more at several "
                "budgets"
            )
    out += _wide_warnings("Approach 3", fit.params_opt, fit.tokens_per_param, fit.at_flops)
    out += _extrapolation_warning(fit.at_flops, float(flops.max()), float(flops.min()))
    return out


# ==== Approach 2: isoFLOP parabolas ==============================================================
#: Automatic grouping of scattered budgets: the peaks of a Gaussian kernel density of log10 C with this
#: bandwidth (decades) are the budgets. 0.05 decade (12% in C) is below the spacing of any published isoFLOP
#: design (Hoffmann et al. 2022, Fig. 3: 6e18, 1e19, 3e19, ... 3e21, i.e. 0.2 to 0.5 decade apart) and above
#: the scatter of a budget's runs in the Chinchilla points as extracted (about ±0.03 decade).
BUDGET_BANDWIDTH_DECADES = 0.05
#: A run joins the nearest budget peak only within this distance (decades): a run 40% off a budget in C is
#: not on that budget's isoFLOP curve, and putting it there would bias the parabola's vertex.
BUDGET_WINDOW_DECADES = 0.15
#: Fewer budgets than this and the exponent a is a line through too few points to check its fit: warned.
MIN_TRUSTED_BUDGETS = 4
#: An interval on the optimal N wider than this factor (high/low) is warned about: the runs do not pin it.
WIDE_INTERVAL_FACTOR = 2.0


class IsoflopBudget(BaseModel):
    """One isoFLOP group: its parabola's vertex."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    flops: float = Field(description="Budget C (geometric mean of the group's C when binned).")
    runs: int = Field(description="Runs in the group.")
    params_opt: float = Field(description="N at the parabola's vertex.")
    tokens_opt: float = Field(description="C / (6·N_opt).")
    loss_opt: float = Field(description="Loss at the vertex.")
    curvature: float = Field(description="Second-order coefficient of loss in ln N (> 0).")
    params_min: float = Field(description="Smallest N in the group.")
    params_max: float = Field(description="Largest N in the group.")
    coefficients: tuple[float, float, float] = Field(description="Parabola c0 + c1·x + c2·x², x = ln N.")
    lines: list[int] = Field(description="CSV lines of the group's runs.")


class DroppedBudget(BaseModel):
    """A budget group left out of Approach 2, and why."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    flops: float = Field(description="Budget C (geometric mean of the group's C).")
    runs: int = Field(description="Runs in the group.")
    lines: list[int] = Field(description="CSV lines of the group's runs.")
    kind: Literal["too_few_sizes", "no_minimum", "minimum_outside"] = Field(description="Why, as a key.")
    reason: str = Field(description="Why it was left out, in words.")

    def describe(self) -> str:
        shown = ", ".join(str(x) for x in self.lines[:6]) + (", ..." if len(self.lines) > 6 else "")
        return f"budget {self.flops:.3g} FLOPs ({self.runs} runs, lines {shown}): {self.reason}"


class IsoflopFit(BaseModel):
    """Approach 2 result: N_opt = k·C^a and D_opt = k'·C^b across budgets, with bootstrap intervals."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    budgets: list[IsoflopBudget] = Field(description="One entry per isoFLOP budget used.")
    dropped_budgets: list[DroppedBudget] = Field(
        default_factory=list, description="Budgets left out: too few sizes, no minimum, vertex outside."
    )
    a: Interval = Field(description="Exponent of N_opt ∝ C^a.")
    b: Interval = Field(description="Exponent of D_opt ∝ C^b.")
    k_params: float = Field(description="k in N_opt = k·C^a.")
    k_tokens: float = Field(description="k' in D_opt = k'·C^b.")
    at_flops: float = Field(description="Budget the optimum below is evaluated at.")
    params_opt: Interval = Field(description="N_opt at at_flops.")
    tokens_opt: Interval = Field(description="D_opt at at_flops.")
    tokens_per_param: Interval = Field(description="D_opt/N_opt at at_flops.")
    grouping: str = Field(description="How runs were grouped into budgets.")
    ungrouped_runs: int = Field(0, description="Runs farther than the window from every budget (left out).")
    bootstrap: int = Field(description="Bootstrap resamples requested.")
    bootstrap_failed: int = Field(0, description="Resamples dropped (a parabola without a minimum).")
    percentiles: tuple[float, float] = Field(description="Percentiles of the intervals.")
    warnings: list[str] = Field(
        default_factory=list, description="Cautions: dropped budgets, few budgets, wide intervals."
    )


def density_budgets(log10_flops: np.ndarray) -> np.ndarray:
    """Budget label per run (−1: none) from the peaks of the kernel density of log10 C.

    Gaussian kernel of bandwidth :data:`BUDGET_BANDWIDTH_DECADES` evaluated on a grid a tenth of it apart; each
    local maximum is a budget; each run joins its nearest peak if within :data:`BUDGET_WINDOW_DECADES`.
    """
    h = BUDGET_BANDWIDTH_DECADES
    grid = np.arange(log10_flops.min() - 3 * h, log10_flops.max() + 3 * h, h / 10)
    density = np.zeros(grid.size)
    for lo in range(0, log10_flops.size, 256):  # (grid × 256) at a time: bounded memory for large CSVs
        chunk = log10_flops[lo : lo + 256]
        density += np.exp(-0.5 * ((grid[:, None] - chunk[None, :]) / h) ** 2).sum(axis=1)
    inner = density[1:-1]
    peaks = grid[1:-1][(inner > density[:-2]) & (inner >= density[2:])]
    distance = np.abs(log10_flops[:, None] - peaks[None, :])
    nearest = distance.argmin(axis=1)
    within = distance[np.arange(log10_flops.size), nearest] <= BUDGET_WINDOW_DECADES
    return np.where(within, nearest, -1)


def _budget_keys(runs: Runs, bin_decades: float | None) -> tuple[np.ndarray, str]:
    """A group key per run (NaN: in no group) and a one-line description of the grouping."""
    log_c = np.log10(runs.flops)
    if bin_decades is None and np.unique(runs.flops).size <= runs.size / 3:
        bin_decades = 0.0  # a designed sweep: every budget repeats exactly
    if bin_decades is None:
        labels = density_budgets(log_c)
        keys = np.where(labels >= 0, labels, np.nan).astype(float)
        grouping = (
            f"budgets from the data: peaks of the log10 C density (bandwidth {BUDGET_BANDWIDTH_DECADES:g} "
            f"decade), runs within ±{BUDGET_WINDOW_DECADES:g} decade of a peak"
        )
        return keys, grouping
    if bin_decades == 0:
        return runs.flops.astype(float), "exact budgets"
    return np.round(log_c / bin_decades), f"bins of {bin_decades:g} decade in log10 C"


def group_budgets(
    runs: Runs, bin_decades: float | None = None
) -> tuple[list[np.ndarray], str, list[DroppedBudget], int]:
    """Index arrays of runs per budget, the grouping used, the groups dropped for < 3 sizes, runs in none.

    ``bin_decades`` None: exact C values when they repeat (a designed sweep), else budgets from the data
    (:func:`density_budgets`); 0: exact values; w > 0: bins of width w decades (bin k: round(log10 C / w) = k).
    """
    keys, grouping = _budget_keys(runs, bin_decades)
    groups: list[np.ndarray] = []
    dropped: list[DroppedBudget] = []
    for key in np.unique(keys[np.isfinite(keys)]):
        idx = np.flatnonzero(keys == key)
        n_distinct = np.unique(runs.params[idx]).size
        if n_distinct < 3:
            reason = f"{n_distinct} distinct size(s); a parabola needs at least 3"
            dropped.append(_dropped(runs, idx, "too_few_sizes", reason))
            continue
        groups.append(idx)
    return groups, grouping, dropped, int(np.sum(~np.isfinite(keys)))


DropKind = Literal["too_few_sizes", "no_minimum", "minimum_outside"]


def _dropped(runs: Runs, idx: np.ndarray, kind: DropKind, reason: str) -> DroppedBudget:
    return DroppedBudget(
        flops=float(np.exp(np.mean(np.log(runs.flops[idx])))),
        runs=int(idx.size),
        lines=[int(v) for v in runs.lines[idx]],
        kind=kind,
        reason=reason,
    )


def _weighted_parabolas(x: np.ndarray, y: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Batched weighted least squares of y = c0 + c1·x + c2·x²: weights (R, n) → coefficients (R, 3).

    Solved in centred, scaled u = (x − m)/s for conditioning, then mapped back to x; a resample with fewer than
    3 distinct x (singular normal equations) gives NaN.
    """
    m, s = float(x.mean()), float(x.std()) or 1.0
    u = (x - m) / s
    powers = np.stack([np.ones_like(u), u, u * u], axis=1)  # (n, 3)
    gram = np.einsum("rn,ni,nj->rij", weights, powers, powers)
    rhs = np.einsum("rn,ni,n->ri", weights, powers, y)
    distinct = np.array([np.unique(x[w > 0]).size for w in weights])
    ok = distinct >= 3
    gram[~ok] = np.eye(3)
    q = np.linalg.solve(gram, rhs[..., None])[..., 0]
    q0, q1, q2 = q[:, 0], q[:, 1] / s, q[:, 2] / s**2  # y = q0 + q1·(x − m) + q2·(x − m)²
    coefficients = np.stack([q0 - q1 * m + q2 * m * m, q1 - 2 * q2 * m, q2], axis=1)
    coefficients[~ok] = np.nan
    return coefficients


def _power_law(log_c: np.ndarray, log_y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Least squares of log y = log k + e·log C per row: (R, m) → slopes (R,), intercepts (R,).

    NaN entries (a resampled budget without a vertex) are left out of their row; a row with fewer than 2
    distinct finite points gives NaN.
    """
    ok = np.isfinite(log_y) & np.isfinite(log_c)
    w = ok.astype(float)
    count = w.sum(axis=-1, keepdims=True)
    with np.errstate(all="ignore"):
        c = np.where(ok, log_c, 0.0)
        y = np.where(ok, log_y, 0.0)
        mc = (w * c).sum(axis=-1, keepdims=True) / count
        my = (w * y).sum(axis=-1, keepdims=True) / count
        spread = (w * (c - mc) ** 2).sum(axis=-1)
        slope = (w * (c - mc) * (y - my)).sum(axis=-1) / np.where(spread > 0, spread, np.nan)
    return slope, my[..., 0] - slope * mc[..., 0]


def _fit_budget(
    runs: Runs, idx: np.ndarray, weights: np.ndarray
) -> tuple[IsoflopBudget, np.ndarray] | DroppedBudget:
    """One budget's parabola on the full data (row 0 of ``weights``) and its resamples: the budget and the vertex
    ln N per replicate, or the DroppedBudget saying why it cannot give a vertex."""
    x = np.log(runs.params[idx])
    coefficients = _weighted_parabolas(x, runs.loss[idx], weights)
    c0, c1, c2 = coefficients[0]
    # a curvature within rounding of zero (losses exactly on a line in log N) is no minimum: its vertex would be
    # a number of the solver's rounding, and which side of zero it lands on varies between numpy builds
    rounding = 1e-9 * (float(np.ptp(runs.loss[idx])) + 1e-12) / max(float(np.ptp(x)), 1e-12) ** 2
    if not (c2 > rounding):
        return _dropped(runs, idx, "no_minimum", "loss does not curve upward in log N (no minimum)")
    with np.errstate(all="ignore"):
        vertex = np.where(coefficients[:, 2] > 0, -coefficients[:, 1] / (2 * coefficients[:, 2]), np.nan)
    n_min, n_max = float(runs.params[idx].min()), float(runs.params[idx].max())
    n_opt = math.exp(min(float(vertex[0]), 709.0))
    if not n_min <= n_opt <= n_max:
        outside = f"the minimum N = {n_opt:.3g} lies outside the sampled {n_min:.3g}..{n_max:.3g}"
        return _dropped(runs, idx, "minimum_outside", outside)
    budget = float(np.exp(np.mean(np.log(runs.flops[idx]))))
    fitted = IsoflopBudget(
        flops=budget,
        runs=int(idx.size),
        params_opt=n_opt,
        tokens_opt=budget / (6 * n_opt),
        loss_opt=float(c0 + c1 * vertex[0] + c2 * vertex[0] ** 2),
        curvature=float(c2),
        params_min=n_min,
        params_max=n_max,
        coefficients=(float(c0), float(c1), float(c2)),
        lines=[int(v) for v in runs.lines[idx]],
    )
    return fitted, vertex


def fit_isoflop(
    runs: Runs,
    *,
    bin_decades: float | None = None,
    bootstrap: int = 0,
    percentiles: tuple[float, float] = (10, 90),
    at_flops: float | None = None,
    seed: int = 0,
) -> IsoflopFit:
    """Approach 2 on ``runs`` (see the module docstring). Bootstrap resamples runs within each budget.

    Budgets with fewer than 3 sizes, without a minimum (loss not convex in ln N) or whose minimum lies outside
    the sampled sizes are dropped and named in ``warnings``; fewer than 2 usable budgets is a SpecError.
    """
    _check_at_flops(at_flops)
    groups, grouping, dropped, ungrouped = group_budgets(runs, bin_decades)
    rng = np.random.default_rng(seed)
    replicates = 1 + bootstrap
    budgets, vertices = [], []
    for idx in groups:
        weights = np.ones((replicates, idx.size))
        if bootstrap:
            weights[1:] = rng.multinomial(idx.size, np.full(idx.size, 1.0 / idx.size), size=bootstrap)
        result = _fit_budget(runs, idx, weights)
        if isinstance(result, DroppedBudget):
            dropped.append(result)
            continue
        fitted, vertex = result
        budgets.append(fitted)
        vertices.append(vertex)
    if len(budgets) < 2:
        why = "; ".join(d.describe() for d in dropped[:4])
        raise SpecError(
            f"isoFLOP fit needs at least 2 budgets with 3+ model sizes around a minimum, found {len(budgets)}"
            + (f" ({grouping}); dropped {why}" if why else f" ({grouping})"),
            source=runs.source,
            hint="add runs at smaller and larger N around each budget's best, group budgets differently "
            "(fit.bin_decades), or fit Approach 3 alone (fit.method parametric)"
            if dropped or len(budgets) + len(dropped) > 1
            else "run proxies at more compute budgets (runplan sweep --budgets 3): one budget gives one "
            "optimum, and an exponent needs two",
        )
    log_c = np.tile(np.log([b.flops for b in budgets]), (replicates, 1))
    log_n_opt = np.stack(vertices, axis=1)
    log_d_opt = log_c - math.log(6.0) - log_n_opt
    a, log_k = _power_law(log_c, log_n_opt)
    b, log_k_d = _power_law(log_c, log_d_opt)
    at = float(at_flops) if at_flops is not None else float(runs.flops.max())
    n_at = np.exp(log_k + a * math.log(at))
    d_at = np.exp(log_k_d + b * math.log(at))

    def interval(values: np.ndarray) -> Interval:
        return _interval(float(values[0]), values[1:] if bootstrap else None, percentiles)

    fit = IsoflopFit(
        budgets=budgets,
        dropped_budgets=dropped,
        a=interval(a),
        b=interval(b),
        k_params=float(np.exp(log_k[0])),
        k_tokens=float(np.exp(log_k_d[0])),
        at_flops=at,
        params_opt=interval(n_at),
        tokens_opt=interval(d_at),
        tokens_per_param=interval(d_at / n_at),
        grouping=grouping,
        ungrouped_runs=ungrouped,
        bootstrap=bootstrap,
        bootstrap_failed=int(np.sum(~np.isfinite(a[1:]))) if bootstrap else 0,
        percentiles=percentiles,
    )
    return fit.model_copy(update={"warnings": isoflop_warnings(fit, runs)})


def isoflop_warnings(fit: IsoflopFit, runs: Runs) -> list[str]:
    """Cautions a reader of Approach 2 needs: what was left out, how few budgets, how wide the intervals."""
    out = []
    few = [d for d in fit.dropped_budgets if d.kind == "too_few_sizes"]
    named = [d for d in fit.dropped_budgets if d.kind != "too_few_sizes"]
    out += [f"dropped {d.describe()}" for d in named]
    if few:
        shown = ", ".join(f"{d.flops:.3g}" for d in few[:8]) + (", ..." if len(few) > 8 else "")
        out.append(f"left out {len(few)} budget group(s) with fewer than 3 distinct sizes (C = {shown})")
    if fit.ungrouped_runs:
        out.append(
            f"{fit.ungrouped_runs} of {runs.size} runs lie more than {BUDGET_WINDOW_DECADES:g} decade from "
            "every budget and are not in Approach 2 (Approach 3 uses them)"
        )
    exact = sum(b.runs == 3 for b in fit.budgets)
    if exact:
        out.append(
            f"{exact} of {len(fit.budgets)} budgets have only 3 runs: a parabola through 3 points fits them "
            "exactly, so nothing checks its vertex (Hoffmann et al. 2022 sampled about 9 sizes per budget)"
        )
    if len(fit.budgets) < MIN_TRUSTED_BUDGETS:
        span = f"{fit.a.low:.3g}, {fit.a.high:.3g}" if fit.a.low is not None else "no bootstrap"
        out.append(
            f"the exponent a = {fit.a.value:.3g} [{span}] rests on {len(fit.budgets)} budgets: a line through "
            f"so few points cannot show a bad fit; add budgets (Hoffmann et al. 2022 used 9)"
        )
    out += _wide_warnings("Approach 2", fit.params_opt, fit.tokens_per_param, fit.at_flops)
    out += _extrapolation_warning(fit.at_flops, float(runs.flops.max()), float(runs.flops.min()))
    return out


def _wide_warnings(method: str, params_opt: Interval, tokens_per_param: Interval, at: float) -> list[str]:
    if params_opt.low is None or params_opt.high is None or not params_opt.low > 0:
        return []
    factor = params_opt.high / params_opt.low
    if factor <= WIDE_INTERVAL_FACTOR:
        return []
    return [
        f"{method}: the optimal N at C = {at:.3g} spans {params_opt.low:.3g}..{params_opt.high:.3g} "
        f"(×{factor:.3g}) and tokens per parameter {tokens_per_param.low:.3g}..{tokens_per_param.high:.3g}: "
        "the runs do not pin the optimum; add runs or budgets before trusting it"
    ]


#: Reporting the optimum at more than this multiple of the largest run's compute, or below the smallest run's
#: divided by it, is warned as extrapolation (a 1e10-FLOP optimum from 1e18..1e21 runs was printed unwarned).
EXTRAPOLATION_FACTOR = 10.0


def _extrapolation_warning(at: float, largest: float, smallest: float | None = None) -> list[str]:
    if at > EXTRAPOLATION_FACTOR * largest:
        where = f"{at / largest:.3g}× the largest run ({largest:.3g})"
    elif smallest is not None and at < smallest / EXTRAPOLATION_FACTOR:
        where = f"{smallest / at:.3g}× below the smallest run ({smallest:.3g})"
    else:
        return []
    return [f"the optimum is reported at C = {at:.3g}, {where}: an extrapolation of the fitted power laws"]


# ==== both, and the law file =====================================================================
class FitReport(BaseModel):
    """What `runplan fit` prints: either or both approaches (JSON keys in docs/scaling.md)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: str = Field(description="CSV fitted.")
    runs: int = Field(description="Runs used (after dropping).")
    dropped: int = Field(0, description="Highest-loss runs dropped.")
    param_count: Literal["total", "non_embedding"] = Field(
        description="Which parameter count the CSV's N is."
    )
    parametric: ParametricFit | None = Field(None, description="Approach 3 result.")
    isoflop: IsoflopFit | None = Field(None, description="Approach 2 result.")
    isoflop_error: str | None = Field(None, description="Why Approach 2 was skipped (method both).")
    warnings: list[str] = Field(
        default_factory=list, description="Cautions about the input (parameter count)."
    )


#: The columns `runplan sweep -o` writes with each proxy's parameter counts, beside ``params``, the N in the
#: sweep law's count from which it computed ``tokens`` = C/(6N) and ``flops`` = C (runplan.scaling.sweep).
NON_EMBEDDING_COLUMN = "non_embedding_params"
TOTAL_COLUMN = "total_params"
COUNT_COLUMNS: dict[Literal["total", "non_embedding"], str] = {
    "total": TOTAL_COLUMN,
    "non_embedding": NON_EMBEDDING_COLUMN,
}


def choose_param_count(
    path: str | Path, params_col: str, param_count: str | None
) -> tuple[str, Literal["total", "non_embedding"], list[str]]:
    """Which column is N and which count it is: (column, count, warnings).

    Kaplan et al. 2020 (§2.1) fit on non-embedding parameters, which gives cleaner power laws at small N;
    Chinchilla counted embeddings. Either way C = 6·N·D must use the law's own N (docs/scaling.md), so the N
    fitted is the N the flops column was computed from. A `runplan sweep` CSV says which: its ``params``
    column repeats ``total_params`` or ``non_embedding_params`` (the sweep law's count), and its ``tokens``
    and ``flops`` were computed from it; fitting the other count against those budgets shifts every small
    model (a 103M-total proxy has 38M non-embedding parameters) and no longer recovers the sweep's own law.
    An explicit ``param_count`` is taken as given (on a sweep CSV, N is then that count's column). Otherwise
    a CSV with only a ``non_embedding_params`` column is fitted on it; without one N is taken as total, with a
    warning, since a CSV of totals fitted as non-embedding (or the reverse) shifts every small model.
    """
    header = _header(path) if params_col == "params" else []
    if param_count in COUNT_COLUMNS:
        count: Literal["total", "non_embedding"] = "total" if param_count == "total" else "non_embedding"
        column = COUNT_COLUMNS[count]
        return (column if column in header else params_col), count, []
    repeated = _count_params_repeats(path, header)
    if repeated is not None:
        return params_col, repeated, []
    if NON_EMBEDDING_COLUMN in header:
        return NON_EMBEDDING_COLUMN, "non_embedding", []
    return (
        params_col,
        "total",
        [
            f"N ('{params_col}') is taken as total parameters, embeddings included (Chinchilla's convention); "
            f"add a '{NON_EMBEDDING_COLUMN}' column (runplan sweep writes one) to fit on non-embedding "
            "parameters (Kaplan et al. 2020), or state which count N is (fit.param_count)"
        ],
    )


def _count_params_repeats(path: str | Path, header: list[str]) -> Literal["total", "non_embedding"] | None:
    """The count column whose every value ``params`` repeats (a `runplan sweep` CSV), else None."""
    if not {"params", TOTAL_COLUMN, NON_EMBEDDING_COLUMN} <= set(header):
        return None
    text, _ = read_csv_text(path)
    reader = csv.reader(text.splitlines())
    next(reader, None)
    rows = [r for r in reader if "".join(r).strip()]  # blank records are skipped, as read_runs does
    i_n = header.index("params")
    for count, column in COUNT_COLUMNS.items():
        i_c = header.index(column)
        try:
            same = all(math.isclose(float(r[i_n]), float(r[i_c]), rel_tol=1e-9) for r in rows)
        except (IndexError, ValueError):
            return None  # a short row or a non-numeric cell: read_runs names it
        if rows and same:
            return count
    return None


def _header(path: str | Path) -> list[str]:
    try:
        text, _ = read_csv_text(path)
    except SpecError:
        return []  # read_runs names the problem
    return [h.strip() for h in next(csv.reader(text.splitlines()[:1]), [])]


def law_file_dict(fit: ParametricFit) -> dict[str, Any]:
    """The law YAML `runplan fit -o` writes: ParametricLaw fields plus a ``fit:`` section for people."""
    data = fit.law.to_yaml_dict()
    data["fit"] = {
        "method": "Hoffmann et al. 2022 Approach 3, Huber delta 1e-3 summed, L-BFGS",
        "runs": fit.runs,
        "objective": fit.objective,
        "bootstrap": fit.bootstrap,
        "percentiles": list(fit.percentiles),
        "intervals": {
            key: [getattr(fit, key).low, getattr(fit, key).high] for key in ("E", "A", "B", "alpha", "beta")
        },
    }
    return data


def write_law_file(fit: ParametricFit, path: str | Path) -> None:
    import yaml

    from runplan.fileio import write_file

    text = yaml.safe_dump(law_file_dict(fit), sort_keys=False, allow_unicode=True)
    write_file(path, text, where="fit.output")


def plot_fits(report: FitReport, runs: Runs, path: str | Path) -> None:
    """isoFLOP curves with their parabolas and minima, and the N_opt(C) line (needs matplotlib)."""
    from runplan.report.plots import pyplot

    plt = pyplot("fit.plot")
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5))
    iso = report.isoflop
    # one colour scale for the runs and the parabolas: log10 C, shown by a colour bar and each budget's legend line
    log_c = np.log10(runs.flops)
    colour = plt.Normalize(vmin=float(log_c.min()), vmax=max(float(log_c.max()), float(log_c.min()) + 1e-9))
    points = left.scatter(runs.params, runs.loss, s=10, c=log_c, cmap="viridis", norm=colour)
    fig.colorbar(points, ax=left, label="log10 of training compute C (FLOPs)")
    left.set_xscale("log")
    left.set_xlabel("parameters N (count)")
    left.set_ylabel("final loss (nats/token)")
    left.set_title("isoFLOP profiles")
    if iso is not None:
        for budget in iso.budgets:
            x = np.linspace(math.log(budget.params_min), math.log(budget.params_max), 100)
            c0, c1, c2 = budget.coefficients
            line = plt.get_cmap("viridis")(colour(math.log10(budget.flops)))
            label = f"{budget.flops:.3g} FLOPs".replace("e+", "e")  # 6e+18 → 6e18
            left.plot(np.exp(x), c0 + c1 * x + c2 * x * x, lw=1, color=line, label=label)
            left.plot(budget.params_opt, budget.loss_opt, "k*", ms=8)
        left.legend(title="isoFLOP budget C", fontsize=7, title_fontsize=7)
    if report.parametric is not None:
        law = report.parametric.law
        c = np.geomspace(runs.flops.min(), max(runs.flops.max(), report.parametric.at_flops), 50)
        right.plot(c, law.compute_optimal(c)[0], label=f"Approach 3: a = {law.a:.3f}")
    if iso is not None:
        c_b = np.array([b.flops for b in iso.budgets])
        right.scatter(c_b, [b.params_opt for b in iso.budgets], c="k", marker="*", label="isoFLOP minima")
        c = np.geomspace(c_b.min(), max(c_b.max(), iso.at_flops), 50)
        right.plot(c, iso.k_params * c**iso.a.value, "--", label=f"Approach 2: a = {iso.a.value:.3f}")
    right.set_xscale("log")
    right.set_yscale("log")
    from runplan.report.plots import quiet_minor_log_ticks

    quiet_minor_log_ticks(left)
    quiet_minor_log_ticks(right)
    right.set_xlabel("training compute C (FLOPs)")
    right.set_ylabel("compute-optimal N (parameters)")
    right.legend()
    fig.tight_layout()
    from runplan.fileio import save_figure

    try:
        save_figure(fig, path, where="fit.plot", dpi=120)
    finally:
        plt.close(fig)


__all__ = [
    "DroppedBudget",
    "FitReport",
    "Interval",
    "IsoflopBudget",
    "IsoflopFit",
    "ParametricFit",
    "Runs",
    "choose_param_count",
    "density_budgets",
    "fit_isoflop",
    "fit_parametric",
    "flops_warnings",
    "group_budgets",
    "huber_objective",
    "law_file_dict",
    "plot_fits",
    "read_runs",
    "refuse_shared_column",
    "runs_from_arrays",
    "start_grid",
    "write_law_file",
]
