"""Speed of `runplan monitor` on a 1,000,000-step log (issue 13: ≤ 5 s on 2 cores), JSONL and CSV.

Run: ``.venv/bin/python benchmarks/bench_monitor.py``. Writes the seeded logs of ``tests/monitor/generate.py``
(a spike injected at step 3,000; every metric at every step, a canary every 100) to a temporary directory,
then times reading and analysing each in this process and as a whole ``runplan monitor --json`` command
(interpreter start-up included), and prints each time as a fraction of the 5 s budget, with the CPU seconds
spent (wall time on a machine shared with other jobs overstates the cost; CPU time does not).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.monitor.generate import series, write  # noqa: E402

from runplan.monitor.analyse import analyse, checkpoints_for  # noqa: E402
from runplan.monitor.readers import read_logs  # noqa: E402
from runplan.monitor.thresholds import Thresholds  # noqa: E402

STEPS = 1_000_000
BUDGET_SECONDS = 5.0


def bench(fmt: str, directory: Path) -> None:
    path = write(fmt, series("spike", steps=STEPS, seed=1), directory / f"run.{fmt}", interval=1)
    start, cpu_start = time.perf_counter(), _cpu()
    log = read_logs([path])
    read = time.perf_counter() - start
    report = analyse(log, Thresholds(), checkpoints_for(log, 1000, None))
    total, cpu = time.perf_counter() - start, _cpu() - cpu_start
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "runplan", "monitor", str(path), "--json"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    command = time.perf_counter() - start
    found = [e.kind for e in report.events if e.action != "none"]
    print(
        f"{fmt}: {STEPS:,} steps ({path.stat().st_size / 1e6:.0f} MB) read in {read:.2f} s, read + analysed in "
        f"{total:.2f} s = {total / BUDGET_SECONDS:.2f} of the {BUDGET_SECONDS:g} s budget ({cpu:.2f} CPU s over "
        f"all processes: on an otherwise idle machine the wall time is about that ÷ the cores used); whole command "
        f"{command:.2f} s = {command / BUDGET_SECONDS:.2f}; events needing action: {found}"
    )


def _cpu() -> float:
    """CPU seconds of this process and its finished children (the forked JSONL parsers)."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def main() -> None:
    with tempfile.TemporaryDirectory() as directory:
        for fmt in ("jsonl", "csv"):
            bench(fmt, Path(directory))


if __name__ == "__main__":
    main()
