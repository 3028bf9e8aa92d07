"""Expert parallelism in the checkpoint stage: a routed expert's weights live only on its EP rank.

Hand-derived for Mixtral 8x7B (catalog: 46,702,792,704 parameters; 32 MoE layers × 8 experts × 3·4,096·14,336
= 45,097,156,608 routed-expert parameters, so 1,605,636,096 dense ones) on the layout `runplan plan
examples/moe-mixtral-8x7b.yaml` chooses, TP1 PP1 DP128 CP2 EP8 ZeRO-1. Megatron-Core shards the expert layers
over t·e (expert tensor parallel = t) and replicates them over the d·c/e expert-data-parallel ranks; the
distributed optimizer shards dense state over d·c and expert state over d·c/e, i.e. everything over t·p·d·c
(megatron/core/parallel_state.py; runplan/parallel/memory.py `stage_params`, `model_state_bytes`).
"""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from runplan.ops import CheckpointRequest, OperationsSpec, plan_checkpoints
from runplan.ops.checkpoint import CURSOR_BYTES_PER_REPLICA, RNG_BYTES_PER_RANK

TOTAL = 46_702_792_704
EXPERTS = 32 * 8 * 3 * 4_096 * 14_336  # 45,097,156,608
DENSE = TOTAL - EXPERTS  # 1,605,636,096
PER_GPU_PARAMS = DENSE + EXPERTS // 8  # 1,605,636,096 + 5,637,144,576 = 7,242,780,672


def _request(**kw):
    base = dict(
        total_params=TOTAL,
        expert_params=EXPERTS,
        tp=1,
        pp=1,
        dp=128,
        cp=2,
        ep=8,
        zero=1,
        step_seconds=8.039,
        tokens_per_step=12_582_912,
        total_steps=161_330,
        training_tokens=2e12,
        job_mtbf_seconds=712_645.0,
    )
    base.update(kw)
    return CheckpointRequest(**base)


def test_mixtral_ep8_holds_an_eighth_of_the_experts_per_gpu():
    c = plan_checkpoints(_request())
    parts = {p.name: p for p in c.parts}
    assert EXPERTS == 45_097_156_608 and PER_GPU_PARAMS == 7_242_780_672
    # the checkpoint still holds every expert: 14 B × total parameters
    assert c.bytes_per_param == pytest.approx(14.0, abs=1e-3)
    assert parts["weights_bf16"].bytes == 2 * TOTAL
    # bf16 weights: dense part whole on every GPU, experts split 8 ways: 2 × 7,242,780,672 = 14.49 GB per GPU
    # (not 2 × 46.7e9 = 93.4 GB: that was the whole model on one GPU)
    assert parts["weights_bf16"].shards == 8
    assert parts["weights_bf16"].bytes_per_shard == pytest.approx(14_485_561_344)
    # ZeRO-1: every optimizer tensor split over t·p·d·c = 256 ranks: 4 × 46,702,792,704 / 256
    assert parts["master_fp32"].shards == 256
    assert parts["master_fp32"].bytes_per_shard == pytest.approx(729_731_136)
    # held per GPU: 14,485,561,344 + 3 × 729,731,136 = 16,674,754,752 B
    assert c.held_bytes_per_gpu == pytest.approx(16_674_754_752)
    # a fully parallel save still writes an equal share of the total
    assert c.written_bytes_per_rank == pytest.approx(c.total_bytes / 256)


def test_zero0_not_fully_parallel_ep_rank_writes_dense_plus_its_experts():
    spec = OperationsSpec(fully_parallel_save=False)
    c = plan_checkpoints(_request(zero=0, spec=spec))
    parts = {p.name: p for p in c.parts}
    # ZeRO-0: master and moments replicated like the weights: 4 B × 7,242,780,672 on each of 8 distinct ranks
    assert parts["master_fp32"].shards == 8
    assert parts["master_fp32"].bytes_per_shard == pytest.approx(4 * PER_GPU_PARAMS)
    # the first expert replica's ranks write their whole state: 14 × 7,242,780,672 + RNG + cursor
    assert c.written_bytes_per_rank == pytest.approx(
        14 * PER_GPU_PARAMS + RNG_BYTES_PER_RANK + CURSOR_BYTES_PER_REPLICA
    )
    # upper bound per node (t·p = 1): rank 0 writes all of it, the node's 7 others (EP ranks 1-7 of the first
    # expert replica, EP innermost after TP and CP) their eighth of the experts in all four parts and their RNG
    others = 7 * (14 * EXPERTS / 8 + RNG_BYTES_PER_RANK)
    assert c.written_bytes_per_node == pytest.approx(c.written_bytes_per_rank + others)


def test_dense_model_unchanged_by_the_new_fields():
    dense = dict(expert_params=0, ep=1)
    c = plan_checkpoints(_request(**dense))
    parts = {p.name: p for p in c.parts}
    assert parts["weights_bf16"].shards == 1
    assert parts["weights_bf16"].bytes_per_shard == pytest.approx(2 * TOTAL)


@pytest.mark.parametrize(
    ("kw", "field"),
    [
        (dict(ep=3), "ep"),  # 3 does not divide d·c = 256
        (dict(expert_params=TOTAL + 1), "expert_params"),
        (dict(ep=8, expert_params=0), "expert_params"),  # EP with nothing to divide
    ],
)
def test_bad_expert_layout_is_refused_naming_the_field(kw, field):
    with pytest.raises(ValidationError, match=field):
        _request(**kw)
