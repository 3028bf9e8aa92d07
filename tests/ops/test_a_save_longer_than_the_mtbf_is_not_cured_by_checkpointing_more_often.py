"""When a segment (τ + δ) outlasts the job MTBF because the save itself is slow, the advice is a faster save or fewer
nodes, not "checkpoint more often": the interval is already Daly's optimum (Daly 2006: τ = M once δ ≥ 2M), and a
shorter one adds saves of the same δ. "checkpoint more often" stays for an interval well above Young's optimum
√(2δM), which only a hand-made request can have.

Hand numbers: 64 nodes at 500 failures per 1,000 node-days: λ = 64 × 0.5 = 32 per day, M = 86,400 / 32 = 2,700 s.
"""

from __future__ import annotations

import pytest

from runplan.ops import OperationsSpec, ReliabilityRequest, assess_reliability

SPEC = OperationsSpec(failures_per_1000_node_days=500.0)


def _segment_warning(interval: float, save: float, spec: OperationsSpec = SPEC) -> str:
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


def test_a_slow_save_is_told_to_save_faster():
    # δ = 9,880 s ≥ 2M = 5,400 s: Daly's τ = M = 2,700 s; the segment is 12,580 s, and the save alone outlasts M
    warning = _segment_warning(2_700.0, 9_880.0)
    assert "checkpoint more often" not in warning
    # async (host_staging, the default): δ = save_fixed_seconds + bytes ÷ host link
    assert "host_link_bandwidth_bytes_per_s" in warning and "save_fixed_seconds" in warning


def test_an_interval_far_above_young_is_told_to_checkpoint_more_often():
    # δ = 30 s: Young √(2 × 30 × 2,700) = 402.5 s; an interval of 3,000 s is 7.5× that
    warning = _segment_warning(3_000.0, 30.0, SPEC.model_copy(update={"host_staging": False}))  # sync
    assert "checkpoint more often" in warning
