"""Where a published run's predicted step time goes: the time terms of named rows of published_runs.yaml.

Run: ``.venv/bin/python benchmarks/breakdown.py megatron-readme-32b-384gpu [more ids] [--calibration FILE]``.
Prints, per row, the layout evaluated (as benchmarks/validate.py completes it), the predicted and measured
tokens/s per GPU, the error on step time (predicted / measured − 1) and every non-zero term of
``runplan.parallel.layout.TimeSeconds``. Use it to see which term a miss sits in before changing the model.
"""

from __future__ import annotations

import argparse

from validate import calibrated_efficiency, load_published

from runplan.calibrate.calibration import load_calibration, shipped_calibration
from runplan.calibrate.fit import complete_layout
from runplan.parallel.grid import LayoutGrid
from runplan.parallel.layout import TimeSeconds
from runplan.parallel.search import evaluate


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("ids", nargs="+", help="row ids of benchmarks/published_runs.yaml")
    parser.add_argument("--calibration", help="calibration file (default: the shipped one)")
    args = parser.parse_args(argv)
    cal = load_calibration(args.calibration) if args.calibration else shipped_calibration()
    _, prepared = load_published()
    by_id = {p.id: p for p in prepared}
    unknown = [i for i in args.ids if i not in by_id]
    if unknown:
        parser.error(f"not a usable row id: {', '.join(unknown)}")
    for p in (by_id[i] for i in args.ids):
        eff = calibrated_efficiency(p, cal)
        layout = complete_layout(p, eff)
        ev = evaluate(p.request, LayoutGrid.of([layout]), eff)
        predicted = float(ev.tokens_per_second[0]) / p.request.n_gpus
        error = f"{p.measured_tps / predicted - 1:+.1%}" if p.measured_tps else "(speedup row)"
        print(f"{p.id}: {layout.one_line()}")
        print(
            f"  tokens/s per GPU predicted {predicted:,.0f}, measured {p.measured_tps or 0:,.0f}; step error {error}"
        )
        print(f"  step {float(ev.step_seconds[0]):.4f} s =")
        for name in TimeSeconds.model_fields:
            seconds = float(getattr(ev.time, name)[0])
            if seconds:
                print(f"    {name:22s} {seconds:10.4f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
