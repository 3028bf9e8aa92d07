"""`runplan monitor` without a plan uses the thresholds a plan would print by default (one set of numbers)."""

from runplan.monitor.thresholds import Thresholds
from runplan.ops.monitoring import MonitoringSpec

#: Thresholds field -> the plan file's monitoring key it mirrors
SHARED = {
    "grad_norm_factor": "grad_norm_factor",
    "grad_norm_window_steps": "grad_norm_window_steps",
    "spike_fraction": "spike_recovery_fraction",
    "spike_recovery_steps": "spike_recovery_steps",
    "canary_sigma": "canary_sigma",
    "canary_window_steps": "canary_window_steps",
    "rollback_margin_steps": "rollback_margin_steps",
    "skip_batches_min": "skip_batches_min",
    "skip_batches_max": "skip_batches_max",
}


def test_monitor_defaults_are_the_plan_defaults():
    plan, monitor = MonitoringSpec(), Thresholds()
    assert {name: getattr(monitor, name) for name in SHARED} == {
        name: getattr(plan, key) for name, key in SHARED.items()
    }
