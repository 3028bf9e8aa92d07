"""Time `runplan fit`'s work (Approach 3 with bootstrap, plus Approach 2) and print the ratio issue 16 bounds.

Usage: python benchmarks/bench_fit.py [--bootstrap 100] [--starts 16] [--all-starts]
Data: ../shared/data/chinchilla (all 245 points, default flags, as `runplan fit` reads them) and
../shared/data/beyond_chinchilla (Sardana et al. 2024's runs) when present; examples/isoflop_synthetic.csv; and a
1,000-run CSV drawn from the synthetic example's law. Prints wall seconds per fit and each fit's time as a ratio
of the Chinchilla fit's (issue 16: within 2× for any CSV of up to 1,000 runs).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

# as `runplan fit` does (runplan.cli.fit.single_threaded_blas): one BLAS thread, set before numpy loads
if "OMP_NUM_THREADS" not in os.environ:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

from runplan.errors import SpecError
from runplan.scaling.fit import Runs, fit_isoflop, fit_parametric, read_runs, runs_from_arrays

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"


def fit_seconds(runs: Runs, bootstrap: int, starts: int | None) -> tuple[float, str]:
    """Wall seconds of what `runplan fit FILE --bootstrap N` computes: Approach 2 and Approach 3 with intervals."""
    t0 = time.perf_counter()
    try:
        iso = fit_isoflop(runs, bootstrap=bootstrap)
        a2 = f"a = {iso.a.value:.3f} on {len(iso.budgets)} budgets"
    except SpecError as error:  # as `runplan fit` does in method "both": report and go on
        a2 = f"Approach 2 skipped ({error.message})"
    fit = fit_parametric(runs, starts=starts, bootstrap=bootstrap)
    law = fit.law
    seconds = time.perf_counter() - t0
    return seconds, f"{a2}; E {law.E:.4f} alpha {law.alpha:.4f} beta {law.beta:.4f}"


def synthetic_runs(count: int, seed: int = 0) -> Runs:
    """``count`` runs from L = 1.85 + 520/N^0.34 + 1600/D^0.36 (examples/make_isoflop_csv.py) with 0.2% noise."""
    rng = np.random.default_rng(seed)
    budgets = np.geomspace(1e18, 1e21, 8)
    flops = rng.choice(budgets, count) * np.exp(rng.normal(0, 0.05, count))
    params = np.exp(rng.uniform(np.log(2e7), np.log(2e10), count))
    tokens = flops / (6 * params)
    loss = (1.85 + 520 / params**0.34 + 1600 / tokens**0.36) * np.exp(rng.normal(0, 0.002, count))
    return runs_from_arrays(params, loss, tokens=tokens, source="<1,000 synthetic runs>")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bootstrap", type=int, default=100)
    parser.add_argument("--starts", type=int, default=16)
    parser.add_argument("--all-starts", action="store_true", help="L-BFGS from all 4,500 grid points")
    parser.add_argument(
        "--data", type=Path, default=DATA, help="the shared data folder (default ../shared/data)"
    )
    args = parser.parse_args()
    starts = None if args.all_starts else args.starts
    cases: list[tuple[str, Runs]] = []
    chinchilla = args.data / "chinchilla" / "svg_extracted_data.csv"
    if chinchilla.exists():
        cases.append(
            ("chinchilla", read_runs(chinchilla, params_col="Model Size", flops_col="Training FLOP"))
        )
    beyond = args.data / "beyond_chinchilla" / "trainingresults.csv"
    if beyond.exists():
        runs = read_runs(beyond, params_col="Parameters", tokens_col="Tokens", loss_col="Smoothed Loss")
        cases.append(("beyond_chinchilla", runs))
    cases.append(("synthetic example", read_runs(REPO / "examples" / "isoflop_synthetic.csv")))
    cases.append(("synthetic 1,000", synthetic_runs(1000)))
    if not chinchilla.exists():
        print(f"{chinchilla} not found (--data DIR): ratios are to the first fit below, not to Chinchilla")
    reference = None
    for name, runs in cases:
        seconds, what = fit_seconds(runs, args.bootstrap, starts)
        reference = reference or (name, seconds)
        print(
            f"{name}: {runs.size} runs, fit + {args.bootstrap} bootstrap resamples {seconds:.2f} s "
            f"({seconds / reference[1]:.2f}× the {reference[0]} fit); {what}"
        )


if __name__ == "__main__":
    main()
