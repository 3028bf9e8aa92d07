"""The detectors' thresholds: the plan's monitoring section when a plan is given, else these defaults.

| threshold | default | source |
|---|---|---|
| grad-norm alert | 5 × its rolling mean over 1,000 steps | docs/operations.md §4 (monitoring) (runplan's plan, `monitoring.grad_norm_factor`, `grad_norm_window_steps`) |
| grad-norm pause | 100 × the same mean | issue 13: "pause and inspect the data at 100×"; BLOOM-176B's first spike reached 960 against a 0.24 level (tr11 chronicles) |
| loss spike | loss above its pre-spike mean by more than 5% and by more than 4 noise σ | the same 5% that ends a spike (below); 4σ (σ from successive differences of the 100 steps before) is runplan's choice so that a small-batch run's jitter alone does not fire: a 4σ excursion happens once in ~30,000 Gaussian points |
| spike over | back within 5% of the pre-spike mean | docs/operations.md §4 (monitoring) (`monitoring.spike_recovery_fraction`) |
| divergence | not back within 200 steps | docs/operations.md §4 (monitoring) (`monitoring.spike_recovery_steps`) |
| pre-spike mean | mean loss of the 100 steps before the spike | PaLM (Chowdhery et al. 2022, arXiv 2204.02311) §5.1 restarts "about 100 steps before the spike started": the same 100 steps are the reference |
| rollback | newest checkpoint ≥ 100 steps before the spike; skip 200-500 batches | PaLM §5.1 (`monitoring.rollback_margin_steps`, `skip_batches_min/max`) |
| recovery confirmed | 3 consecutive logged points back within 5% | runplan's choice: one point back inside a spike is not a recovery (BLOOM 31217 is back within 5% between 31216 and 31219) |
| canary drift | above mean + 2σ of its 500-step window, 4 evaluations in a row | docs/operations.md §4 (monitoring) (`monitoring.canary_sigma`, `canary_window_steps`); σ is the noise of x − mean, σ_noise·√(1 + 1/n), with σ_noise from second differences over ≥ 50 evaluations (a falling canary's trend and curve cancel there); 4 in a row is runplan's choice: one 2σ excursion happens on 1 evaluation in 44, and a noisy window mean makes neighbours fail together, so 3 in a row still fired about once per 10,000 clean evaluations in the seeded generator |
| slow step / straggler | step time > 3% above the trailing mean of 100 steps (at least 10 logged points) and > 4 noise σ | runplan's choice: 3× the ~1% step-time jitter of BLOOM's log (105.16-106.25 s); BLOOM's straggler was a 5% drop (tr11 chronicles) |
| loss-scale collapse | fp16 loss scale fallen below its running maximum, to ≤ 1 or to 2¹⁰ below that maximum; a constant scale (bf16's 1.0) never fires | OPT (Zhang et al. 2022, arXiv 2205.01068) §2.5: divergences came with "the dynamic loss scalar crashing to 0"; Megatron's and DeepSpeed's minimum loss scale is 1; dynamic scalers only lower the scale on overflow (Megatron's `DynamicGradScaler` halves it), and Megatron logs bf16's absent scaler as a constant 1.0 |
| replica disagreement | a replica's grad norm > 25% from the replicas' median, 3 logged points in a row | runplan's choice: replicas see equal batches from one distribution, so their norms agree within sampling noise (a few %); Gemini (Gemini Team 2023, arXiv 2312.11805) §3 and Llama 3 (arXiv 2407.21783) Table 5 name silent data corruption on one host as a failure to find this way |
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runplan.ops.monitoring import Monitoring, MonitoringSpec


@dataclass(frozen=True)
class Thresholds:
    grad_norm_factor: float = 5.0
    grad_norm_pause_factor: float = 100.0
    grad_norm_window_steps: int = 1000
    spike_fraction: float = 0.05
    spike_sigma: float = 4.0
    spike_recovery_steps: int = 200
    pre_spike_window_steps: int = 100
    confirm_points: int = 3
    canary_sigma: float = 2.0
    canary_window_steps: int = 500
    canary_points_in_a_row: int = 4
    slow_fraction: float = 0.03
    slow_sigma: float = 4.0
    throughput_window_steps: int = 100
    loss_scale_floor: float = 1.0
    loss_scale_drop_factor: float = 1024.0
    replica_fraction: float = 0.25
    rollback_margin_steps: int = 100
    skip_batches_min: int = 200
    skip_batches_max: int = 500
    source: str = "defaults"


def from_plan(monitoring: Monitoring | MonitoringSpec) -> Thresholds:
    """Thresholds from a plan's monitoring section (the numbers the plan printed for this run), or from a plan
    file's ``monitoring:`` keys where the plan cannot be built (the same names)."""
    return Thresholds(
        grad_norm_factor=monitoring.grad_norm_factor,
        grad_norm_window_steps=monitoring.grad_norm_window_steps,
        spike_fraction=monitoring.spike_recovery_fraction,
        spike_recovery_steps=monitoring.spike_recovery_steps,
        canary_sigma=monitoring.canary_sigma,
        canary_window_steps=monitoring.canary_window_steps,
        rollback_margin_steps=monitoring.rollback_margin_steps,
        skip_batches_min=monitoring.skip_batches_min,
        skip_batches_max=monitoring.skip_batches_max,
        source="plan",
    )
