"""The largest inputs runplan's bounds accept, each timed in a fresh process: wall seconds and peak memory.

Run: ``.venv/bin/python benchmarks/bench_limits.py [--quick]``. Issue 17 asks that any accepted input finish in
at most 10 s and 2 GB; each line prints the case, the exit code, the seconds, the peak resident memory (the
child's own ``ru_maxrss`` from ``os.wait4``) and "ok" or "OVER". Inputs are generated in a temporary directory
(at most the monitor log caps: 64 MB for text logs, 200 MB for JSONL and CSV) and removed afterwards.
``--quick`` skips the largest files (the 50 MB CSV and the two logs). The opt-in slow choices the docs name are not run: ``fit --starts all`` and
``fit --bootstrap`` above a few hundred (docs/scaling.md gives their minutes).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "src"))

from runplan.cli.fit import MAX_STARTS  # noqa: E402
from runplan.fileio import MAX_NAME_BYTES  # noqa: E402
from runplan.monitor.readers import MAX_LOG_BYTES, MAX_TEXT_LOG_BYTES  # noqa: E402
from runplan.parallel.layout import MAX_TOP  # noqa: E402
from runplan.scaling.fit import MAX_CSV_BYTES  # noqa: E402
from runplan.yamlio import MAX_DEPTH, MAX_FILE_BYTES, MAX_NODES  # noqa: E402

MAX_SECONDS = 10.0
MAX_PEAK_BYTES = 2e9
PLAN70 = REPO / "examples" / "70b-512-h100.yaml"


#: Runs the command from a small interpreter, so the child's peak RSS is its own: a child forked straight from
#: this script would start at this script's RSS (the generated CSV and log arrays) and report that.
_LAUNCHER = """
import os, subprocess, sys, time
start = time.perf_counter()
proc = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
_, status, usage = os.wait4(proc.pid, 0)
print(os.waitstatus_to_exitcode(status), time.perf_counter() - start, usage.ru_maxrss * 1024)
"""


def measure(args: list[str]) -> tuple[int, float, float]:
    """(exit code, wall seconds, peak RSS bytes) of ``runplan ARGS`` in a fresh interpreter."""
    done = subprocess.run(
        [sys.executable, "-c", _LAUNCHER, sys.executable, "-m", "runplan", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    code, seconds, peak = done.stdout.split()
    return int(code), float(seconds), float(peak)


def _plan_of_size(folder: Path) -> Path:
    """The 70B example padded with comments to just under the YAML cap."""
    body = PLAN70.read_text()
    pad = "# " + "x" * 97 + "\n"
    path = folder / "big-plan.yaml"
    path.write_text(body + pad * ((MAX_FILE_BYTES - len(body.encode()) - 1) // len(pad)))
    return path


def _alias_plan(folder: Path) -> Path:
    """Anchors that expand to just under MAX_NODES nodes (refused afterwards as unknown keys: the walk is the
    cost being measured)."""
    fan = 10
    levels = 1
    while fan ** (levels + 1) < MAX_NODES * 0.9:
        levels += 1
    lines = ["schema_version: 1", "a0: &a0 [" + ", ".join(["x"] * fan) + "]"]
    lines += [f"a{k}: &a{k} [" + ", ".join([f"*a{k - 1}"] * fan) + "]" for k in range(1, levels)]
    path = folder / "aliases.yaml"
    path.write_text("\n".join(lines) + "\ncluster: {gpus: 8}\n")
    return path


def _deep_plan(folder: Path) -> Path:
    path = folder / "deep.yaml"
    path.write_text("schema_version: 1\nx: " + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1) + "\n")
    return path


def _big_csv(folder: Path) -> Path:
    """Random proxy runs filling MAX_CSV_BYTES."""
    rng = np.random.default_rng(7)
    rows = int(MAX_CSV_BYTES / 32)
    n = 10 ** rng.uniform(7, 10, rows)
    d = 10 ** rng.uniform(8, 11, rows)
    loss = (1.8 + 400 / n**0.34 + 410 / d**0.28) * np.exp(rng.normal(0, 0.01, rows))
    path = folder / "big.csv"
    np.savetxt(
        path,
        np.column_stack([n, d, loss]),
        fmt="%.6g",
        delimiter=",",
        header="params,tokens,loss",
        comments="",
    )
    while path.stat().st_size > MAX_CSV_BYTES:  # trim to the cap
        lines = path.read_bytes().splitlines(keepends=True)
        path.write_bytes(b"".join(lines[: int(len(lines) * 0.97)]))
    return path


def _big_log(folder: Path, fmt: str, cap: int, line_bytes: int) -> Path:
    """A log in ``fmt`` just under ``cap`` bytes (tests/monitor/generate.py's format, ~line_bytes a step)."""
    from tests.monitor.generate import series, write

    steps = int(cap / line_bytes)
    path = write(fmt, series("healthy", steps=steps), folder / f"big.{fmt}", interval=1)
    while path.stat().st_size > cap:
        lines = path.read_bytes().splitlines(keepends=True)
        path.write_bytes(b"".join(lines[: int(len(lines) * 0.97)]))
    return path


def _grid_plan(folder: Path) -> Path:
    """A shape and cluster whose layout grid has 1,573,392 rows, near the 2M bound (a grid's size moves in
    jumps with the divisor counts of the GPUs, layers and heads)."""
    path = folder / "grid.yaml"
    path.write_text(
        "schema_version: 1\nmodel:\n  shape: {n_layers: 5040, d_model: 12288, n_heads: 96, n_kv_heads: 96, "
        "head_dim: 128, ffn_hidden: 1024, mlp: swiglu, vocab_size: 32000, tied_embeddings: false, norm: rmsnorm}\n"
        "budget: {tokens: 1T}\ncluster: {gpus: 8648640}\n"
    )
    return path


def cases(folder: Path, quick: bool) -> list[tuple[str, list[str]]]:
    out = [
        (f"plan file of {MAX_FILE_BYTES // 1000} kB", ["plan", str(_plan_of_size(folder)), "--json"]),
        (f"YAML aliases to ~{MAX_NODES:,} nodes", ["plan", str(_alias_plan(folder))]),
        (f"YAML nested {MAX_DEPTH - 1} deep", ["plan", str(_deep_plan(folder))]),
        ("layout grid of 1.57M rows", ["parallelize", str(_grid_plan(folder)), "--json"]),
        (
            f"parallelize --top {MAX_TOP}",
            ["parallelize", "--model", "70b", "--gpus", "512", "--top", str(MAX_TOP)],
        ),
        (
            f"fit --starts {MAX_STARTS}",
            [
                "fit",
                str(REPO / "examples" / "isoflop_synthetic.csv"),
                "--starts",
                str(MAX_STARTS),
                "--bootstrap",
                "0",
            ],
        ),
        ("fit defaults (100 resamples)", ["fit", str(REPO / "examples" / "isoflop_synthetic.csv")]),
        (
            f"-o name of {MAX_NAME_BYTES} bytes",
            ["plan", str(PLAN70), "-o", str(folder / ("n" * MAX_NAME_BYTES))],
        ),
    ]
    if not quick:
        out.append(
            (
                f"fit CSV of {MAX_CSV_BYTES // 1_000_000} MB",
                ["fit", str(_big_csv(folder)), "--method", "parametric"],
            )
        )
        megatron = _big_log(folder, "megatron", MAX_TEXT_LOG_BYTES, 335)
        jsonl = _big_log(folder, "jsonl", MAX_LOG_BYTES, 190)
        out.append(
            (
                f"monitor Megatron log of {MAX_TEXT_LOG_BYTES // 1_000_000} MB",
                ["monitor", str(megatron), "--json"],
            )
        )
        out.append(
            (f"monitor JSONL log of {MAX_LOG_BYTES // 1_000_000} MB", ["monitor", str(jsonl), "--json"])
        )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="skip the 50 MB CSV and the two large logs")
    options = parser.parse_args()
    over = 0
    with tempfile.TemporaryDirectory(prefix="runplan-limits-") as tmp:
        for label, args in cases(Path(tmp), options.quick):
            code, seconds, peak = measure(args)
            ok = seconds <= MAX_SECONDS and peak <= MAX_PEAK_BYTES
            over += not ok
            print(
                f"{label:<36} exit {code}  {seconds:6.2f} s  {peak / 1e6:7.0f} MB  {'ok' if ok else 'OVER'}"
            )
    print(f"limits: {MAX_SECONDS:g} s and {MAX_PEAK_BYTES / 1e9:g} GB per run; {over} case(s) over")
    return 1 if over else 0


if __name__ == "__main__":
    raise SystemExit(main())
