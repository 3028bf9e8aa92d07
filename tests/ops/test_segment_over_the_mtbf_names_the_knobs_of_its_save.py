"""The remedy for a segment (τ + δ) longer than the job MTBF names only knobs that shorten it (it used to say
"checkpoint more often" where the interval was already Daly's optimum, τ = M once δ ≥ 2M, Daly 2006).

* async saves (operations.host_staging, on by default): δ = save_fixed_seconds + bytes ÷ host link
  (checkpoint._async_blocking), so the remedy names host_link_bandwidth_bytes_per_s and save_fixed_seconds, not
  host_staging or the storage bandwidth (the write is off the critical path);
* synchronous saves: δ = fixed + bytes ÷ storage (checkpoint._sync_save): host_staging: true or faster storage;
* an async interval far above Young's √(2δM) was raised for the background write (checkpoint._interval_steps):
  checkpointing more often is not possible, so the remedy is faster storage or fewer nodes, said once (where
  τ ≥ M the async-saves durability warning of ops.operate says it).

Hand numbers: 64 nodes at 500 failures per 1,000 node-days: λ = 32 per day, M = 86,400 / 32 = 2,700 s.
"""

from __future__ import annotations

import pytest

from runplan.ops import OperationsSpec, ReliabilityRequest, assess_reliability


def _segment_warning(interval: float, save: float, *, host_staging: bool) -> str:
    spec = OperationsSpec(failures_per_1000_node_days=500.0, host_staging=host_staging)
    r = assess_reliability(
        ReliabilityRequest(
            n_nodes=64,
            useful_seconds=300_000.0,
            interval_seconds=interval,
            save_blocking_seconds=save,
            spec=spec,
        )
    )
    assert r.job_mtbf_seconds == pytest.approx(2_700.0)
    (warning,) = [w for w in r.warnings if "longer than the job MTBF" in w]
    return warning


def test_a_slow_async_save_names_the_host_link_and_the_fixed_cost():
    # δ = 9,880 s ≥ 2M: Daly's τ = M = 2,700 s (below Young's √(2 × 9,880 × 2,700) = 7,304 s)
    remedy = _segment_warning(2_700.0, 9_880.0, host_staging=True).split("; ", 1)[1]
    assert "host_link_bandwidth_bytes_per_s" in remedy and "save_fixed_seconds" in remedy
    assert "host_staging" not in remedy and "storage_write_bandwidth" not in remedy
    assert "checkpoint more often" not in remedy


def test_a_slow_sync_save_names_host_staging_and_storage():
    remedy = _segment_warning(2_700.0, 9_880.0, host_staging=False).split("; ", 1)[1]
    assert "host_staging: true" in remedy and "storage_write_bandwidth_bytes_per_s" in remedy
    assert "host_link" not in remedy and "checkpoint more often" not in remedy


def test_an_async_interval_raised_for_the_background_write_is_not_told_to_checkpoint_more_often():
    # δ = 2 s: Young √(2 × 2 × 2,700) = 103.9 s; τ = 2,699 s (< M, τ + δ > M) is 26× that: only the write raised it
    warning = _segment_warning(2_699.0, 2.0, host_staging=True)
    assert "checkpoint more often" not in warning
    assert "the interval is set by the background write: faster storage or fewer nodes" in warning


def test_where_the_durability_warning_names_the_remedy_it_is_not_repeated():
    # τ = 9,737 s ≥ M: the background write outlasts M and ops.operate's warning says faster storage or fewer nodes
    warning = _segment_warning(9_737.0, 2.0, host_staging=True)
    assert "the interval is set by the background write" in warning
    assert "fewer nodes" not in warning and "checkpoint more often" not in warning


def test_a_sync_interval_far_above_young_is_still_told_to_checkpoint_more_often():
    warning = _segment_warning(3_000.0, 30.0, host_staging=False)  # Young 402.5 s
    assert "checkpoint more often" in warning
