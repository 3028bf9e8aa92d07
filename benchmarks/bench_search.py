"""Speed of the vectorized search, as ratios against references measured in the same run.

Run: ``.venv/bin/python benchmarks/bench_search.py [--against REV]``. Prints, for 70B on 512 H100 and 405B on
16,384 H100:

* layouts/s of the vectorized search and of the pure-Python test oracle (tests/parallel/reference.py) on the
  same rows, and the speed-up;
* with ``--against REV`` (a git revision, e.g. the commit before a refactor), the layouts/s of that revision's
  search measured in the same run, in alternating subprocesses, and the ratio now / then;
  both sides run with glibc's mmap threshold pinned (``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_``):
  the grid's arrays (0.2-0.5 MB each) sit right at glibc's dynamic mmap threshold, which moves with the order
  in which earlier arrays were freed. Left to move, one process serves them from the heap and the next maps
  fresh pages for every temporary, and the 405B search takes 17 ms or 32 ms from the same source. Pinned, the
  comparison measures the code and not the allocator's history;
* the wall time of ``runplan parallelize --json`` (interpreter start-up included); where
  PYTHONDONTWRITEBYTECODE is set, also with bytecode cached, as an installed runplan runs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.parallel.reference import evaluate_layout  # noqa: E402
from tests.parallel.shapes import H100, LLAMA_70B, LLAMA_405B  # noqa: E402, F401 (eval of TARGETS)

from runplan.parallel.layout import ParallelRequest  # noqa: E402
from runplan.parallel.search import build_grid, choose_microbatches, search  # noqa: E402

TARGETS = {
    "70B on 512 H100": "ParallelRequest(model=LLAMA_70B, gpu=H100, n_gpus=512, seq_len=4096)",
    "405B on 16,384 H100": "ParallelRequest(model=LLAMA_405B, gpu=H100, n_gpus=16384, seq_len=8192)",
}

#: Timed in a fresh interpreter (no site hooks) against the source tree on sys.path[0]: best of 7 per target.
_TIMER = """
import json, sys, time
sys.path[:0] = [{src!r}, {repo!r}, *{site!r}]
from tests.parallel.shapes import H100, LLAMA_70B, LLAMA_405B
from runplan.parallel.layout import ParallelRequest
from runplan.parallel.search import search
out = {{}}
for name, text in {targets!r}.items():
    request = eval(text)
    search(request)
    best = float("inf")
    for _ in range(7):
        start = time.perf_counter()
        result = search(request)
        best = min(best, time.perf_counter() - start)
    out[name] = result.candidates / best
print(json.dumps(out))
"""


#: Large blocks from the heap, never returned: the same allocator behaviour for every subprocess (module doc).
_PINNED_MALLOC = {
    **os.environ,
    "MALLOC_MMAP_THRESHOLD_": str(256 * 2**20),
    "MALLOC_TRIM_THRESHOLD_": str(2**30),
}


def layouts_per_second(src: Path) -> dict[str, float]:
    import site

    code = _TIMER.format(src=str(src), repo=str(REPO), site=site.getsitepackages(), targets=TARGETS)
    # -S: no .pth files, so an editable install of this checkout cannot stand in for the revision's source
    done = subprocess.run(
        [sys.executable, "-S", "-c", code], capture_output=True, text=True, env=_PINNED_MALLOC
    )
    if done.returncode != 0:
        raise SystemExit(f"timing the search of {src} failed:\n{done.stderr}")
    return json.loads(done.stdout)


def against(revision: str, rounds: int = 5) -> None:
    """Layouts/s now and at ``revision``: ``rounds`` pairs of fresh subprocesses, alternating, and the median of
    each side's rates (on a shared machine one process can run far faster or slower than the next)."""
    # since configs/ moved to the top level, src/runplan/configs is a link to it: export both where it exists
    paths = ["src"]
    if subprocess.run(["git", "-C", str(REPO), "cat-file", "-e", f"{revision}:configs"]).returncode == 0:
        paths.append("configs")
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(
            ["git", "-C", str(REPO), "archive", revision, *paths], check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        samples: dict[str, dict[str, list[float]]] = {"now": {}, "then": {}}
        for _ in range(rounds):
            for side, src in (("now", REPO / "src"), ("then", Path(tmp) / "src")):
                for name, rate in layouts_per_second(src).items():
                    samples[side].setdefault(name, []).append(rate)
    now = {name: statistics.median(rates) for name, rates in samples["now"].items()}
    then = {name: statistics.median(rates) for name, rates in samples["then"].items()}
    for name in TARGETS:
        print(
            f"{name}: {now[name]:,.0f} layouts/s now, {then[name]:,.0f} at {revision}: "
            f"ratio {now[name] / then[name]:.3f}"
        )


def oracle_speedup(name: str, request: ParallelRequest, reference_rows: int = 2000) -> None:
    search(request)  # warm caches
    start = time.perf_counter()
    result = search(request)
    vectorized = time.perf_counter() - start
    grid, _ = build_grid(request)
    assert grid is not None
    low, high = result.batch_range_tokens
    m, _, _ = choose_microbatches(request, grid, low, high)
    grid = grid.replace(microbatches=m)
    rows = min(reference_rows, len(grid))
    start = time.perf_counter()
    for i in range(rows):
        evaluate_layout(request, grid.row(i))
    reference = (time.perf_counter() - start) / rows
    print(
        f"{name}: {result.candidates:,} layouts in {vectorized * 1e3:.1f} ms = "
        f"{result.candidates / vectorized:,.0f} layouts/s vectorized; reference loop {1 / reference:,.0f} "
        f"layouts/s ({rows} rows); speed-up {reference * result.candidates / vectorized:,.0f}x"
    )


def cli(args: list[str], env: dict[str, str] | None = None) -> float:
    exe = REPO / ".venv" / "bin" / "runplan"
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        subprocess.run([str(exe), *args, "--json"], check=True, capture_output=True, env=env)
        best = min(best, time.perf_counter() - start)
    return best


def cached_bytecode_env(folder: str) -> dict[str, str]:
    """The environment with bytecode caching on, into ``folder`` (not the checkout): with
    PYTHONDONTWRITEBYTECODE set and no __pycache__ under src/, every run compiles runplan's modules again
    (~0.1 s), which an installed wheel (compiled at install) never does."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPYCACHEPREFIX": folder}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", metavar="REV", help="also time the search of this git revision")
    options = parser.parse_args()
    for name, text in TARGETS.items():
        oracle_speedup(name, eval(text))
    if options.against:
        against(options.against)
    for args, target in (
        (["parallelize", "--model", "70b", "--gpus", "512"], 0.5),
        (["parallelize", "--model", "405b", "--gpus", "16384", "--seq-len", "8192"], 2.0),
    ):
        wall = cli(args)
        with tempfile.TemporaryDirectory() as folder:
            env = cached_bytecode_env(folder)
            # best of 3: the first run writes the cache, the others read it
            cached = cli(args, env) if os.environ.get("PYTHONDONTWRITEBYTECODE") else None
        print(
            f"runplan {' '.join(args)} --json: {wall:.3f} s wall, best of 3 (target < {target} s)"
            + (f"; {cached:.3f} s with bytecode cached (cached_bytecode_env)" if cached is not None else "")
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
