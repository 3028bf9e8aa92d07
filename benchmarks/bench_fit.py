"""Time the parametric (Approach 3) fit with bootstrap, and the isoFLOP (Approach 2) fit.

Usage: python benchmarks/bench_fit.py [--bootstrap 100] [--starts 16] [--all-starts]
Data: ../shared/data/chinchilla (240 points after dropping the 5 highest losses, as Besiroglu et al.) when
present, and examples/isoflop_synthetic.csv. Prints wall seconds per stage and the fitted α, β, E.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from runplan.scaling.fit import fit_isoflop, fit_parametric, read_runs

REPO = Path(__file__).resolve().parents[1]


def bench(name: str, runs, bootstrap: int, starts: int | None) -> None:
    t0 = time.perf_counter()
    fit = fit_parametric(runs, starts=starts, bootstrap=0)
    t1 = time.perf_counter()
    boot = fit_parametric(runs, starts=starts, bootstrap=bootstrap)
    t2 = time.perf_counter()
    law = fit.law
    print(
        f"{name}: {runs.size} runs; fit ({'all 4500' if starts is None else starts} starts) {t1 - t0:.2f} s; "
        f"fit + {bootstrap} bootstrap resamples {t2 - t1:.2f} s ({(t2 - t1 - (t1 - t0)) / max(bootstrap, 1):.3f}"
        f" s/resample); E {law.E:.4f} A {law.A:.1f} B {law.B:.1f} alpha {law.alpha:.4f} beta {law.beta:.4f}; "
        f"alpha 10-90%: [{boot.alpha.low:.4f}, {boot.alpha.high:.4f}]"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bootstrap", type=int, default=100)
    parser.add_argument("--starts", type=int, default=16)
    parser.add_argument("--all-starts", action="store_true", help="L-BFGS from all 4,500 grid points")
    args = parser.parse_args()
    starts = None if args.all_starts else args.starts
    chinchilla = REPO.parent / "shared" / "data" / "chinchilla" / "svg_extracted_data.csv"
    if chinchilla.exists():
        runs = read_runs(chinchilla, params_col="Model Size", flops_col="Training FLOP").drop_highest_loss(5)
        bench("chinchilla", runs, args.bootstrap, starts)
    else:
        print(f"skipping chinchilla: {chinchilla} not found")
    runs = read_runs(REPO / "examples" / "isoflop_synthetic.csv")
    bench("synthetic", runs, args.bootstrap, starts)
    t0 = time.perf_counter()
    iso = fit_isoflop(runs, bootstrap=1000)
    print(
        f"synthetic isoFLOP: {len(iso.budgets)} budgets, 1000 bootstrap resamples {time.perf_counter() - t0:.2f} s;"
        f" a = {iso.a.value:.4f} [{iso.a.low:.4f}, {iso.a.high:.4f}]"
    )


if __name__ == "__main__":
    main()
