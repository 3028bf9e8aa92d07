"""Speed of `runplan calibrate`'s inner loop, as a ratio against the full evaluation measured in the same run.

Run: ``.venv/bin/python benchmarks/bench_calibrate.py [--rounds 20]``. A fit predicts every measured run thousands
of times (each residual and each finite-difference Jacobian column evaluates all of them), so its cost is
the cost of one pass over the runs. This times one pass over every run of ``benchmarks/published_runs.yaml``
at the shipped constants two ways, alternating, best of ``--rounds``:

* the fit's path, ``runplan.calibrate.fit.predicted_tps`` (time model only; cached one-row grids and shape terms);
* the reference, ``runplan.calibrate.fit.predict`` (the full ``search.evaluate``: memory and time, a fresh grid);

checks both give the same tokens/s on every run, and prints the ratio.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import yaml

from runplan.calibrate.calibration import shipped_calibration
from runplan.calibrate.fit import complete_layout, predict, predicted_tps, prepare, with_kernel
from runplan.calibrate.measured import MeasuredFile
from runplan.calibrate.published import measured_document
from runplan.catalog import load_catalog

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    rounds = parser.parse_args().rounds
    data = yaml.safe_load((REPO / "benchmarks" / "published_runs.yaml").read_text())
    prepared = prepare(MeasuredFile.model_validate(measured_document(data)), load_catalog([]))
    shipped = shipped_calibration()
    cases = []
    for p in prepared:
        eff = shipped.families[p.family].efficiency
        if p.run.attention_kernel:
            eff = with_kernel(eff, shipped.attention_kernels[p.run.attention_kernel])
        cases.append((p, complete_layout(p, eff), eff))
    for p, layout, eff in cases:
        assert predicted_tps(p, layout, eff) == predict(p, layout, eff)[0], p.id
    best = {"fit path": float("inf"), "full evaluation": float("inf")}
    for _ in range(rounds):
        for name, one in (("fit path", predicted_tps), ("full evaluation", lambda *a: predict(*a)[0])):
            start = time.perf_counter()
            for case in cases:
                one(*case)
            best[name] = min(best[name], time.perf_counter() - start)
    fast, full = best["fit path"], best["full evaluation"]
    print(
        f"one pass over {len(cases)} published runs, best of {rounds}: fit path {1e3 * fast:.1f} ms, "
        f"full evaluation {1e3 * full:.1f} ms; speed-up {full / fast:.2f}x (same tokens/s on every run)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
