"""A job on part of a node is interrupted at its GPUs' share of the node's failure rate, not the whole node's.

Llama 3's 3.79 interruptions per 1,000 8-GPU node-days are mostly GPU faults (arXiv 2407.21783 Table 5), which is
why the default rate scales per GPU with the node size (docs/operations.md §3). By the same argument 4 GPUs of an
8-GPU node fail half as often as the node: before the fix they paid for 8 GPUs, and 8 GPUs of an NVL72 domain for
72. Hand numbers (r = 419 / (54 × 2,048) × 1,000 = 3.78870 per 1,000 8-GPU node-days):
* 4 of 8 GPUs: λ = 4/8 × 3.78870 / 1,000 = 1.89435e-3 per day, M = 86,400 / λ = 45,609,302 s (527.9 days), twice
  the whole node's 22,804,651 s.
* 8 of an NVL72 domain's 72 GPUs: the domain's rate 3.78870 × 72/8 = 34.0983, share 8/72: λ = 3.78870e-3 per day,
  M = 22,804,651 s, one 8-GPU node's (it was 22,804,651 / 9 = 2,533,850 s).
"""

from __future__ import annotations

import pytest

from runplan.ops import (
    OperationsRequest,
    ReliabilityRequest,
    ScheduleRequest,
    assess_reliability,
    daly_interval_seconds,
    operate,
    plan_schedule,
)

NODE_8_MTBF = 86_400 * 1_000 / (419 / (54 * 2_048) * 1_000)  # 22,804,651 s: one 8-GPU node (263.9 days)


def _operate(dp: int, gpus_per_node: int):
    schedule = plan_schedule(
        ScheduleRequest(training_tokens=2e10, compute_flops=1.2e20, seq_len=4096, dp=dp, micro_batch=1)
    )
    return operate(
        OperationsRequest(
            total_params=1_000_000_000,
            dp=dp,
            seq_len=4096,
            gpus_per_node=gpus_per_node,
            step_seconds=2.0,
            schedule=schedule,
        )
    )


def test_hand_values():
    assert round(NODE_8_MTBF) == 22_804_651
    assert round(2 * NODE_8_MTBF) == 45_609_302


def test_half_a_node_fails_half_as_often():
    ops = _operate(dp=4, gpus_per_node=8)
    rel, ck = ops.reliability, ops.checkpointing
    assert rel.n_nodes == 1
    assert rel.job_interruptions_per_day == pytest.approx(0.5 * 3.7887008 / 1000, rel=1e-6)
    assert rel.job_mtbf_seconds == pytest.approx(2 * NODE_8_MTBF, rel=1e-6)
    assert "4/8" in rel.notes["job_interruptions_per_day"]
    # the Daly interval and the goodput follow the job's own MTBF
    assert ck.job_mtbf_seconds == rel.job_mtbf_seconds
    assert ck.daly_interval_seconds == pytest.approx(
        daly_interval_seconds(ck.save_blocking_seconds, 2 * NODE_8_MTBF), rel=1e-9
    )


def test_eight_gpus_of_an_nvl72_domain_fail_as_one_8_gpu_node():
    ops = _operate(dp=8, gpus_per_node=72)
    assert ops.reliability.job_mtbf_seconds == pytest.approx(NODE_8_MTBF, rel=1e-6)
    assert ops.checkpointing.job_mtbf_seconds == pytest.approx(NODE_8_MTBF, rel=1e-6)
    assert "8/72" in ops.reliability.notes["job_interruptions_per_day"]


def test_goodput_uses_the_share():
    # the same job on the whole node and on half of it: fewer interruptions on half
    def rel(gpus):
        return assess_reliability(
            ReliabilityRequest(
                n_nodes=1,
                gpus=gpus,
                useful_seconds=1e7,
                interval_seconds=3_600.0,
                save_blocking_seconds=10.0,
                gpus_per_node=8,
            )
        )

    half, whole = rel(4), rel(8)
    assert half.job_mtbf_seconds == pytest.approx(2 * whole.job_mtbf_seconds)
    assert whole.job_mtbf_seconds == pytest.approx(NODE_8_MTBF, rel=1e-6)
    assert half.expected_interruptions == pytest.approx(half.expected_elapsed_seconds / (2 * NODE_8_MTBF))
    assert half.goodput > whole.goodput


def test_whole_nodes_are_unchanged():
    # 16 GPUs on 8-GPU nodes: 2 whole nodes, λ = 2 × 3.78870 / 1,000, M = 22,804,651 / 2
    ops = _operate(dp=16, gpus_per_node=8)
    assert ops.reliability.n_nodes == 2
    assert ops.reliability.job_mtbf_seconds == pytest.approx(NODE_8_MTBF / 2, rel=1e-6)


def test_a_job_within_one_node_is_one_node_in_words():
    from runplan.ops.checkpoint import CheckpointRequest, _n_nodes

    one = CheckpointRequest.model_construct(tp=4, pp=1, dp=1, cp=1, gpus_per_node=8, n_nodes=None)
    assert _n_nodes(one, 4).why == "⌈4 / 8⌉ = 1 node"  # was "1 nodes"
    assert _n_nodes(one, 16).why == "⌈16 / 8⌉ = 2 nodes"
