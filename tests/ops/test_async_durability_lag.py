"""Async saves: a failure during the background write rolls back one checkpoint further; the plan warns with
elapsed' = elapsed / (1 − L/M) when that is over 0.1% of the run, checked by simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from tests.ops._run70b import operations_70b

from runplan.ops import (
    expected_segment_seconds,
)


def _simulate(work, tau, lag, mtbf, rng):
    """Wall clock of one run: saves every τ of work (δ = 0, R = 0), each durable ``lag`` s after it starts;
    a failure resumes from the newest durable checkpoint."""
    t, progress, durable, pending = 0.0, 0.0, 0.0, None
    next_fail = rng.exponential(mtbf)
    while progress < work - 1e-9:
        end_work = min(work, (math.floor(progress / tau + 1e-9) + 1) * tau)
        t_end = t + end_work - progress
        if pending and pending[1] <= min(t_end, next_fail):
            durable, pending = max(durable, pending[0]), None
        if next_fail < t_end:
            t, progress, pending = next_fail, durable, None
            next_fail = t + rng.exponential(mtbf)
            continue
        t, progress = t_end, end_work
        if pending:
            durable = max(durable, pending[0])
        pending = (progress, t + lag)
    return t


def test_lag_correction_matches_simulation():
    # 200 segments of τ = 1,000 s, L = 800 s, M = 20,000 s: the renewal formula alone gives 205,084 s; with the
    # lag, 205,084 / (1 − 800/20,000) = 213,630 s. 300 seeded runs: 213.2k ± 0.25k s.
    work, tau, lag, mtbf = 200_000.0, 1_000.0, 800.0, 20_000.0
    rng = np.random.default_rng(0)
    runs = np.array([_simulate(work, tau, lag, mtbf, rng) for _ in range(300)])
    base = 200 * float(expected_segment_seconds(tau, 0.0, 0.0, mtbf))
    corrected = base / (1 - lag / mtbf)
    sem = runs.std() / math.sqrt(len(runs))
    assert abs(runs.mean() - corrected) < 4 * sem
    assert runs.mean() - base > 10 * sem  # the formula without the lag is clearly short


def test_slow_storage_warns_with_the_corrected_goodput():
    ops = operations_70b(storage_write_bandwidth_bytes_per_s=1e8)
    ck, r = ops.checkpointing, ops.reliability
    # 70e9 × 14 B = 980 GB at 100 MB/s: the background write takes 9,800 s (the interval is raised to it)
    assert ck.background_write_seconds == pytest.approx(ck.total_bytes / 1e8)
    elapsed = r.expected_elapsed_seconds / (1 - ck.background_write_seconds / r.job_mtbf_seconds)
    lag = [w for w in ops.warnings if w.startswith("async saves")]
    assert len(lag) == 1
    assert f"goodput ≈ {r.useful_seconds / elapsed:.1%} instead of {r.goodput:.1%}" in lag[0]


def test_fast_storage_and_sync_saves_do_not_warn():
    # default 2 TB/s: the write is 0.49 s, far below 0.1% of the run; synchronous saves have no lag at all
    assert not any(w.startswith("async saves") for w in operations_70b().warnings)
    slow_sync = operations_70b(storage_write_bandwidth_bytes_per_s=1e8, host_staging=False)
    assert not any(w.startswith("async saves") for w in slow_sync.warnings)


def test_a_write_longer_than_the_mtbf_is_called_out():
    # 980 GB at 100 MB/s = 9,800 s of background write against M = 3,600 s (64 nodes at 375 per 1,000
    # node-days: 86,400 × 1,000 / (64 × 375) = 3,600 s)
    ops = operations_70b(storage_write_bandwidth_bytes_per_s=1e8, failures_per_1000_node_days=375)
    assert ops.reliability.job_mtbf_seconds == pytest.approx(3_600)
    assert any(w.startswith("async saves: the background write") and "outlasts" in w for w in ops.warnings)
