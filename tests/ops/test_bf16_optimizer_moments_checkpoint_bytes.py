"""A checkpoint of a run with bf16 Adam moments holds the optimizer state as Megatron-LM's distributed optimizer
saves it (dp_reshardable, its default: DistributedOptimizer._get_main_param_and_optimizer_states,
megatron/core/optimizer/distrib_optimizer.py @ d98e8a6).

* Megatron keeps the fp32 master (fp8 recipes other than delayed): the moments as held, bf16 weights 2 + master
  4 + m 2 + v 2 = 10 B/param.
* TransformerEngine's FusedAdam keeps the master (bf16 weights, delayed fp8; ``fused_adam_master``): its
  get_unscaled_state upcasts bf16 moments to fp32 and returns the master as its int16 low 16 bits
  (store_param_remainders; transformer_engine/pytorch/optimizers/fused_adam.py @ d0067d0): 2 + 2 + 4 + 4 = 12.

Llama 3.1 70B, 70,553,706,496 parameters, TP 8, PP 4, DP 16, ZeRO-1 (512 GPUs).
"""

from __future__ import annotations

import pytest
from tests.planned import planned_json

from runplan.ops import CheckpointRequest, plan_checkpoints
from runplan.ops.checkpoint import CURSOR_BYTES_PER_REPLICA, RNG_BYTES_PER_RANK

PARAMS = 70_553_706_496
BOOKKEEPING = RNG_BYTES_PER_RANK * 512 + CURSOR_BYTES_PER_REPLICA * 16


def _plan(**kw):
    base = dict(
        total_params=PARAMS, tp=8, pp=4, dp=16, zero=1, step_seconds=8.0, tokens_per_step=4e6,
        total_steps=350_000, training_tokens=1.4e12, job_mtbf_seconds=356_323.0,
    )  # fmt: skip
    base.update(kw)
    return plan_checkpoints(CheckpointRequest(**base))


def test_fp32_moments_stay_14_bytes_per_param():
    c = _plan()
    assert [p.name for p in c.parts[:4]] == ["weights_bf16", "master_fp32", "adam_m_fp32", "adam_v_fp32"]
    assert c.total_bytes == pytest.approx(14 * PARAMS + BOOKKEEPING)


def test_bf16_moments_beside_megatrons_fp32_master_save_10_bytes_per_param():
    c = _plan(optimizer_state_dtype="bf16")
    parts = {p.name: p for p in c.parts}
    assert list(parts)[:4] == ["weights_bf16", "master_fp32", "adam_m_bf16", "adam_v_bf16"]
    # 10 B × 70,553,706,496 = 705,537,064,960 B
    assert c.total_bytes == pytest.approx(705_537_064_960 + BOOKKEEPING)
    assert c.bytes_per_param == pytest.approx(10.0, abs=1e-3)
    # a moment: 2 B × Ψ over t·p·d·c = 512 shards (ZeRO-1) = 275,600,416 B each
    assert parts["adam_m_bf16"].shards == 512
    assert parts["adam_m_bf16"].bytes_per_shard == pytest.approx(275_600_416)
    assert "10 B/param" in c.notes["total_bytes"]


def test_fused_adam_master_saves_low_bits_and_fp32_moments_12_bytes_per_param():
    c = _plan(optimizer_state_dtype="bf16", fused_adam_master=True)
    names = [p.name for p in c.parts[:4]]
    assert names == ["weights_bf16", "master_low_bits_int16", "adam_m_fp32", "adam_v_fp32"]
    assert c.total_bytes == pytest.approx(12 * PARAMS + BOOKKEEPING)
    # the master's low bits are optimizer state: sharded from ZeRO-1 on, 2 B × Ψ / 512
    low = c.parts[1]
    assert low.shards == 512 and low.bytes_per_shard == pytest.approx(2 * PARAMS / 512)


@pytest.mark.parametrize(
    "kw, word",
    [
        (dict(optimizer_state_dtype="bf16", fp32_master_weights=True, zero=3), "fp32_master_weights"),
        (dict(fused_adam_master=True), "fused_adam_master"),
        (dict(optimizer_state_dtype="fp16"), "optimizer_state_dtype"),
    ],
)
def test_contradictions_are_refused(kw, word):
    with pytest.raises(ValueError, match=word):
        _plan(**kw)


LLAMA_70B_ON_512 = "model: llama-3.1-70b\nbudget: {tokens: 1T}\ncluster: {gpu: h100-sxm, gpus: 512}\n"


def test_a_plan_with_bf16_moments_checkpoints_12_bytes_per_param(tmp_path):
    # bf16 weights: TransformerEngine's FusedAdam holds the master, Megatron saves bf16 weights 2 + master low bits 2
    # + moments upcast 4 + 4 = 12 B/param: 70,553,706,496 × 12 = 846,644,477,952 B + RNG state and data cursor
    data = planned_json(tmp_path, f"{LLAMA_70B_ON_512}stack: {{optimizer_state_dtype: bf16}}\n")
    assert data["checkpointing"]["bytes_per_param"] == pytest.approx(12, rel=1e-4)  # with RNG and cursor
    assert data["checkpointing"]["total_bytes"] == pytest.approx(70_553_706_496 * 12, rel=1e-5)
    assert (
        data["layout"]["best"]["zero"] >= 1
    )  # Megatron's precision-aware optimizer needs the distributed one


def test_under_megatron_fsdp_the_moments_are_saved_as_held(tmp_path):
    # ZeRO-3 (Megatron FSDP) turns FusedAdam's own master off and saves the bf16 moments as held
    # (core/optimizer/__init__.py, distrib_optimizer.py @ d98e8a64): 2 weights + 4 master + 2 + 2 = 10 B/param
    data = planned_json(
        tmp_path, f"{LLAMA_70B_ON_512}stack: {{optimizer_state_dtype: bf16}}\nparallel: {{zero: 3}}\n"
    )
    assert data["layout"]["best"]["zero"] == 3
    assert data["checkpointing"]["bytes_per_param"] == pytest.approx(10, rel=1e-4)
