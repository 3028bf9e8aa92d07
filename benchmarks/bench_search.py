"""Speed of the vectorized search against the pure-Python reference loop, measured in the same run.

Run: ``.venv/bin/python benchmarks/bench_search.py``. Prints layouts/s for both and the wall time of
``runplan parallelize --json`` (including interpreter start-up) for the two targets of issue 4.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.parallel.shapes import H100, LLAMA_70B, LLAMA_405B  # noqa: E402

from runplan.parallel.layout import RECOMPUTE_NAMES, ParallelRequest  # noqa: E402
from runplan.parallel.reference import Layout, evaluate_layout  # noqa: E402
from runplan.parallel.search import search  # noqa: E402


def bench(name: str, request: ParallelRequest, reference_rows: int = 2000) -> None:
    search(request)  # warm caches
    start = time.perf_counter()
    result = search(request)
    vectorized = time.perf_counter() - start
    from runplan.parallel.search import build_grid, choose_microbatches

    grid, _ = build_grid(request)
    low, high = result.batch_range_tokens
    grid["m"], _, _ = choose_microbatches(request, grid, low, high)
    rows = min(reference_rows, len(grid["t"]))
    start = time.perf_counter()
    for i in range(rows):
        evaluate_layout(
            request,
            Layout(
                int(grid["t"][i]),
                int(grid["p"][i]),
                int(grid["d"][i]),
                int(grid["e"][i]),
                int(grid["c"][i]),
                int(grid["zero"][i]),
                int(grid["b"][i]),
                int(grid["m"][i]),
                int(grid["v"][i]),
                RECOMPUTE_NAMES[int(grid["rc"][i])],
                bool(grid["sp"][i]),
            ),
        )
    reference = (time.perf_counter() - start) / rows
    print(
        f"{name}: {result.candidates:,} layouts in {vectorized * 1e3:.1f} ms = "
        f"{result.candidates / vectorized:,.0f} layouts/s vectorized; reference loop {1 / reference:,.0f} "
        f"layouts/s ({rows} rows); speed-up {reference * result.candidates / vectorized:,.0f}x"
    )


def cli(args: list[str]) -> float:
    exe = REPO / ".venv" / "bin" / "runplan"
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        subprocess.run([str(exe), *args, "--json"], check=True, capture_output=True)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> int:
    bench("70B on 512 H100", ParallelRequest(model=LLAMA_70B, gpu=H100, n_gpus=512, seq_len=4096))
    bench("405B on 16,384 H100", ParallelRequest(model=LLAMA_405B, gpu=H100, n_gpus=16384, seq_len=8192))
    for args, target in (
        (["parallelize", "--model", "70b", "--gpus", "512"], 0.5),
        (["parallelize", "--model", "405b", "--gpus", "16384", "--seq-len", "8192"], 2.0),
    ):
        wall = cli(args)
        print(f"runplan {' '.join(args)} --json: {wall:.3f} s wall, best of 3 (target < {target} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
