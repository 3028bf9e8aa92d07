"""A mixture-of-experts run logs its router every step: balance loss, expert load violation, dropped tokens, z-loss.

What a DeepSeek-V3 or Mixtral operator watches besides the loss: Megatron-LM tracks load_balancing_loss,
seq_load_balancing_loss, global_load_balancing_loss and z_loss (megatron/training/training.py @ d98e8a6); the
load imbalance is DeepSeek's MaxVio (Wang et al. 2024, arXiv 2408.15664, §4.1); dropped tokens exist once a
capacity factor is set (Fedus et al. 2022, Switch Transformer §2.2); the z-loss is ST-MoE's (Zoph et al. 2022,
arXiv 2202.08906, §3.1). A dense run logs none of them.
"""

from __future__ import annotations

from tests.ops.test_ops_monitoring_cost import _monitoring

from runplan.ops import (
    OperationsRequest,
    ScheduleRequest,
    operate,
    plan_schedule,
)

MOE_METRICS = {
    "moe_load_balancing_loss",
    "moe_expert_load_max_violation",
    "moe_dropped_token_fraction",
    "moe_router_z_loss",
}


def test_moe_run_logs_the_router_metrics_with_their_sources():
    metrics = {m.name: m.why for m in _monitoring(moe=True).per_step_metrics}
    assert set(metrics) >= MOE_METRICS
    # each one names where it comes from
    assert "2408.15664" in metrics["moe_expert_load_max_violation"]
    assert "(max_i load_i − mean load) / mean load" in metrics["moe_expert_load_max_violation"]
    assert "Switch" in metrics["moe_load_balancing_loss"] and "Megatron" in metrics["moe_load_balancing_loss"]
    assert "capacity" in metrics["moe_dropped_token_fraction"]
    assert "2202.08906" in metrics["moe_router_z_loss"]
    # the dense metrics are still there, first
    assert next(iter(metrics)) == "loss" and len(metrics) == 8 + 4


def test_dense_run_logs_no_router_metrics():
    names = {m.name for m in _monitoring().per_step_metrics}
    assert not names & MOE_METRICS and len(names) == 8


def test_operate_turns_them_on_for_routed_experts():
    schedule = plan_schedule_small()
    common = dict(total_params=46_702_792_704, dp=16, seq_len=4096, step_seconds=8.0, schedule=schedule)
    moe = operate(OperationsRequest(**common, ep=8, expert_params=45_097_156_608))
    dense = operate(OperationsRequest(**common))
    assert {m.name for m in moe.monitoring.per_step_metrics} >= MOE_METRICS
    assert not MOE_METRICS & {m.name for m in dense.monitoring.per_step_metrics}


def plan_schedule_small():
    return plan_schedule(
        ScheduleRequest(training_tokens=1e11, compute_flops=7.7e21, seq_len=4096, dp=16, micro_batch=1)
    )
