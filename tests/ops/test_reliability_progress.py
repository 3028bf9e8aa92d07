"""A run whose segment never completes between failures is infeasible, without a floating-point warning."""

from __future__ import annotations

import math

import numpy as np
import pytest

from runplan.errors import Infeasible


def test_a_segment_that_never_completes_is_infeasible():
    from runplan.ops import OperationsSpec, ReliabilityRequest, _ensure_progress, assess_reliability

    spec = OperationsSpec(failures_per_1000_node_days=1000, restart_seconds=604800, save_fixed_seconds=86400)
    with np.errstate(all="raise"):  # the overflow is handled, not warned about
        reliability = assess_reliability(
            ReliabilityRequest(
                n_nodes=2048,
                useful_seconds=1e7,
                interval_seconds=86400,
                save_blocking_seconds=86400,
                spec=spec,
            )
        )
    assert not math.isfinite(reliability.expected_elapsed_seconds)
    with pytest.raises(Infeasible, match="goodput ≈ 0"):
        _ensure_progress(reliability)
