"""Failure model: Llama 3 calibration, the exact renewal formula against a Monte Carlo simulation, goodput."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runplan.ops import (
    LLAMA3_FAILURES_PER_1000_NODE_DAYS,
    OperationsSpec,
    ReliabilityRequest,
    assess_reliability,
    expected_segment_seconds,
    first_order_segment_seconds,
    job_mtbf_seconds,
)


def test_llama3_calibration():
    # 419 interruptions / (54 days × 2,048 nodes) × 1,000 = 3.789 per 1,000 node-days (docs/operations.md §3: ~3.8)
    assert pytest.approx(3.7887, abs=1e-4) == LLAMA3_FAILURES_PER_1000_NODE_DAYS
    # job MTBF on the 2,048 nodes: 54 days × 24 h / 419 = 3.093 h (~3.1 h)
    assert job_mtbf_seconds(LLAMA3_FAILURES_PER_1000_NODE_DAYS, 2048) / 3600 == pytest.approx(
        3.0931, abs=1e-3
    )
    # and 54 days on those nodes gives back the 419 interruptions (failure-free time, no saves)
    r = assess_reliability(
        ReliabilityRequest(
            n_nodes=2048,
            useful_seconds=54 * 86400.0,
            interval_seconds=54 * 86400.0,
            save_blocking_seconds=0.0,
        )
    )
    assert r.job_interruptions_per_day * 54 == pytest.approx(419)


def _simulate_segments(work, save, restart, mtbf, n, seed):
    """Monte Carlo of one segment n times: exponential failures, restart R after each, redo τ + δ."""
    rng = np.random.default_rng(seed)
    need = np.full(n, work + save)  # the first attempt needs no restart
    elapsed = np.zeros(n)
    failures = np.zeros(n)
    active = np.ones(n, dtype=bool)
    while active.any():
        idx = np.flatnonzero(active)
        to_failure = rng.exponential(mtbf, size=idx.size)
        ok = to_failure >= need[idx]
        elapsed[idx] += np.where(ok, need[idx], to_failure)
        failures[idx[~ok]] += 1
        need[idx[~ok]] = restart + work + save
        active[idx[ok]] = False
    return elapsed, failures


@pytest.mark.parametrize(
    ("work", "save", "restart", "mtbf"),
    [
        (3600.0, 60.0, 600.0, 11_135.0),  # Llama-3-like: 1 h segments, 3.09 h MTBF
        (5000.0, 300.0, 1200.0, 4000.0),  # segments longer than the MTBF: exact and first order differ a lot
    ],
)
def test_exact_formula_matches_monte_carlo(work, save, restart, mtbf):
    n = 200_000
    elapsed, failures = _simulate_segments(work, save, restart, mtbf, n, seed=1234)
    exact = float(expected_segment_seconds(work, save, restart, mtbf))
    sigma = elapsed.std() / np.sqrt(n)
    assert abs(elapsed.mean() - exact) < 3 * sigma
    assert elapsed.mean() == pytest.approx(exact, rel=0.02)
    # expected interruptions per segment = E[T] / M
    assert failures.mean() == pytest.approx(exact / mtbf, rel=0.03)


def test_first_order_is_close_only_when_segments_are_short():
    short = (600.0, 10.0, 300.0, 100_000.0)
    long = (5000.0, 300.0, 1200.0, 4000.0)
    assert float(first_order_segment_seconds(*short)) == pytest.approx(
        float(expected_segment_seconds(*short)), rel=1e-4
    )
    assert float(first_order_segment_seconds(*long)) < 0.8 * float(expected_segment_seconds(*long))


def test_run_totals_by_hand():
    # W = 100 τ exactly: elapsed = 100 · E[T]; goodput = W / elapsed
    tau, delta, m, r = 1800.0, 30.0, 20_000.0, 600.0
    spec = OperationsSpec(failures_per_1000_node_days=86_400 * 1000 / (m * 10), restart_seconds=r)
    out = assess_reliability(
        ReliabilityRequest(
            n_nodes=10, useful_seconds=100 * tau, interval_seconds=tau, save_blocking_seconds=delta, spec=spec
        )
    )
    assert out.job_mtbf_seconds == pytest.approx(m)
    seg = m * np.exp(r / m) * (np.exp((tau + delta) / m) - 1)  # = 1,974.7 s
    assert out.expected_segment_seconds == pytest.approx(seg)
    assert out.segments == 100
    assert out.expected_elapsed_seconds == pytest.approx(100 * seg)
    assert out.goodput == pytest.approx(100 * tau / (100 * seg))
    assert seg == pytest.approx(1974.70, abs=0.01) and out.goodput == pytest.approx(0.91153, abs=1e-5)
    assert out.expected_interruptions == pytest.approx(100 * seg / m)
    assert out.save_overhead_seconds == pytest.approx(100 * delta)
    assert out.effective_days == pytest.approx(100 * seg / 86400)


def test_partial_last_segment():
    out = assess_reliability(
        ReliabilityRequest(
            n_nodes=100, useful_seconds=2.5 * 3600, interval_seconds=3600, save_blocking_seconds=10
        )
    )
    m = out.job_mtbf_seconds
    want = 2 * expected_segment_seconds(3600, 10, 600, m) + expected_segment_seconds(1800, 10, 600, m)
    assert out.segments == 3
    assert out.expected_elapsed_seconds == pytest.approx(float(want))


@settings(max_examples=80, deadline=None)
@given(
    rate=st.floats(0.1, 50.0),
    factor=st.floats(1.01, 10.0),
    nodes=st.integers(1, 4096),
    tau=st.floats(60.0, 20_000.0),
    delta=st.floats(0.0, 600.0),
    days=st.floats(1.0, 100.0),
)
def test_goodput_in_unit_interval_and_falls_with_failure_rate(rate, factor, nodes, tau, delta, days):
    def run(r):
        spec = OperationsSpec(failures_per_1000_node_days=r)
        return assess_reliability(
            ReliabilityRequest(
                n_nodes=nodes,
                useful_seconds=days * 86400,
                interval_seconds=tau,
                save_blocking_seconds=delta,
                spec=spec,
            )
        )

    low, high = run(rate), run(rate * factor)
    for out in (low, high):
        assert 0 < out.goodput <= 1
        assert out.expected_elapsed_seconds >= out.useful_seconds
    assert high.goodput < low.goodput
    assert high.expected_interruptions > low.expected_interruptions
