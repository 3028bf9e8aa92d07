"""The default failure rate is Llama 3's per 8-GPU node: nodes of another size scale it per GPU."""

from __future__ import annotations

import pytest
from tests.ops._run70b import operations_70b

from runplan.ops import (
    LLAMA3_FAILURES_PER_1000_NODE_DAYS,
    OperationsSpec,
    ReliabilityRequest,
    assess_reliability,
    default_failure_rate,
    failure_rate_for,
)


def test_default_rate_scales_with_gpus_per_node():
    # 3.7887 per 8-GPU node; a 72-GPU NVLink domain counted as a node: 3.7887 × 72 / 8 = 34.10
    assert default_failure_rate(8) == LLAMA3_FAILURES_PER_1000_NODE_DAYS
    assert default_failure_rate(72) == pytest.approx(34.098, rel=1e-4)
    assert default_failure_rate(4) == pytest.approx(1.8944, rel=1e-4)


def test_a_rate_from_the_plan_file_is_kept_as_given():
    spec = OperationsSpec(failures_per_1000_node_days=5.0)
    assert failure_rate_for(spec, 72) == (5.0, "plan file, operations.failures_per_1000_node_days")
    # set to exactly the default value: still the user's, not scaled
    spec = OperationsSpec(failures_per_1000_node_days=LLAMA3_FAILURES_PER_1000_NODE_DAYS)
    assert failure_rate_for(spec, 72)[0] == LLAMA3_FAILURES_PER_1000_NODE_DAYS


def test_same_gpus_same_mtbf_whatever_the_node_size():
    # 16,416 GPUs as 228 nodes of 72 (GB200 NVL72) or 2,052 nodes of 8: the same GPUs fail as often, so
    # M = 86,400 × 1,000 / (2,052 × 3.7887) = 11,113 s either way. Before the fix the 72-GPU nodes gave
    # M = 86,400 × 1,000 / (228 × 3.7887) = 100,020 s (27.8 h), 9× too long, and ~50 instead of ~470
    # interruptions on the 405B example.
    def mtbf(nodes, gpn):
        return assess_reliability(
            ReliabilityRequest(
                n_nodes=nodes,
                useful_seconds=1e6,
                interval_seconds=300.0,
                save_blocking_seconds=2.0,
                gpus_per_node=gpn,
            )
        ).job_mtbf_seconds

    assert mtbf(228, 72) == pytest.approx(86_400 * 1000 / (2_052 * LLAMA3_FAILURES_PER_1000_NODE_DAYS))
    assert mtbf(228, 72) == pytest.approx(mtbf(2_052, 8))
    assert mtbf(228, 72) == pytest.approx(11_113, rel=1e-4)


def test_operate_uses_the_scaled_rate_for_checkpoints_and_goodput():
    ops = operations_70b(gpus_per_node=4)
    # 512 GPUs on 4-GPU nodes: 128 nodes at 3.7887 × 4/8 = 1.8944 → M = 86,400 × 1,000 / (128 × 1.8944) =
    # 356,323 s, the same as 64 nodes of 8 (docs/operations.md §2)
    rel = ops.reliability
    assert rel.n_nodes == 128
    assert rel.failures_per_1000_node_days == pytest.approx(1.8944, rel=1e-4)
    assert rel.job_mtbf_seconds == pytest.approx(356_323, rel=1e-5)
    assert ops.checkpointing.job_mtbf_seconds == rel.job_mtbf_seconds
    assert "× 4/8 GPUs per node" in rel.notes["failures_per_1000_node_days"]
