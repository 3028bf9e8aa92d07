"""With ``milestone_weights_only: true`` and no milestone inside the run, the retention recipe keeps the final
checkpoint's weights permanently (checkpoint._procedure: "keep the final checkpoint permanently (bf16 weights
only)"): a copy beside the rolling set, so the peak storage counts it, both in the upper bound and in the cap at
what the run writes. Before, a one-save plan printed one checkpoint (the cap) and a long one the rolling set alone.

Hand numbers (test_storage_never_exceeds_the_checkpoints_a_run_writes): 1e9 parameters, checkpoint 14 B/param +
RNG 10,072 B + cursor 1,024 B = 14,000,011,096 B; weights-only milestone 2 B/param bf16 = 2e9 B; interval 715 steps.
"""

from __future__ import annotations

from runplan.ops import CheckpointRequest, OperationsSpec, plan_checkpoints

SIZE = 14 * 1_000_000_000 + 10_072 + 1_024
WEIGHTS = 2 * 1_000_000_000


def _plan(total_steps: int, weights_only: bool = True, **spec):
    return plan_checkpoints(
        CheckpointRequest(
            total_params=1_000_000_000,
            gpus_per_node=1,
            step_seconds=10.0,
            tokens_per_step=1e6,
            total_steps=total_steps,
            training_tokens=total_steps * 1e6,
            job_mtbf_seconds=1e7,
            spec=OperationsSpec(host_staging=False, milestone_weights_only=weights_only, **spec),
        )
    )


def test_a_one_save_run_counts_the_final_weights_beside_its_checkpoint():
    c = _plan(50)  # one save (the 715-step interval outlasts 50 steps), no milestone
    assert c.checkpoints_per_run == 1 and c.milestones == 0
    assert "keep the final checkpoint permanently (bf16 weights only)" in c.retention_procedure[-1]
    assert c.storage_bytes == SIZE + WEIGHTS


def test_a_long_run_with_milestones_past_its_end_counts_them_in_the_bound():
    # 100,000 steps, 140 saves; a milestone every 1e12 tokens = 1e6 steps: none in the run. Rolling (3 + 1) × SIZE,
    # no rollback points (2 × 715 ≥ 300 steps back), plus the final weights
    c = _plan(100_000, milestone_every_tokens=1e12)
    assert c.checkpoints_per_run == 140 and c.milestones == 0 and c.rollback_generations == 0
    assert c.storage_bytes == 4 * SIZE + WEIGHTS


def test_full_milestones_add_nothing_when_the_final_checkpoint_is_kept():
    # without weights-only the kept final checkpoint is the last rolling generation itself
    assert _plan(50, weights_only=False).storage_bytes == SIZE
