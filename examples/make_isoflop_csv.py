"""Write examples/isoflop_synthetic.csv: a small isoFLOP sweep drawn from a known law plus noise.

The generating law (total parameters, nats/token):

    L(N, D) = 1.85 + 520 / N^0.34 + 1600 / D^0.36

Four budgets a decade apart (1e18 .. 1e21 FLOPs), nine sizes per budget log-spaced over 1.5 decades around the
law's compute-optimal N (Hoffmann et al. 2022, Eq. 4), D = C / (6N). Each loss is multiplied by
exp(ε) with ε ~ Normal(0, 0.002) (about 0.2% noise, the seed-to-seed spread of small runs), numpy seed 20240607.
Values are written with 6 significant digits. Re-running the script rewrites the identical file; the tests
(tests/scaling/test_fit.py) check that and that `runplan fit` recovers the law.

Usage: python examples/make_isoflop_csv.py [OUT.csv]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

TRUE_LAW = {"E": 1.85, "A": 520.0, "B": 1600.0, "alpha": 0.34, "beta": 0.36}
BUDGETS = (1e18, 1e19, 1e20, 1e21)
SIZES_PER_BUDGET = 9
SPAN_DECADES = 1.5
NOISE_SIGMA = 0.002
SEED = 20240607


def make_rows() -> list[tuple[float, float, float, float]]:
    """(params, tokens, flops, loss) rows, deterministic for the fixed seed."""
    E, A, B, alpha, beta = (TRUE_LAW[k] for k in ("E", "A", "B", "alpha", "beta"))
    rng = np.random.default_rng(SEED)
    g = (alpha * A / (beta * B)) ** (1 / (alpha + beta))
    rows = []
    for c in BUDGETS:
        n_opt = g * (c / 6) ** (beta / (alpha + beta))
        for n in n_opt * np.logspace(-SPAN_DECADES / 2, SPAN_DECADES / 2, SIZES_PER_BUDGET):
            n = float(f"{n:.6g}")
            d = float(f"{c / (6 * n):.6g}")
            loss = (E + A / n**alpha + B / d**beta) * np.exp(rng.normal(0.0, NOISE_SIGMA))
            rows.append((n, d, c, float(f"{loss:.6g}")))
    return rows


def render() -> str:
    lines = ["params,tokens,flops,loss"]
    lines += [f"{n:.6g},{d:.6g},{c:.6g},{loss:.6g}" for n, d, c, loss in make_rows()]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> None:
    out = Path(argv[1]) if len(argv) > 1 else Path(__file__).with_name("isoflop_synthetic.csv")
    out.write_text(render(), encoding="utf-8")
    print(f"wrote {out} ({len(make_rows())} runs)")


if __name__ == "__main__":
    main(sys.argv)
