"""Stacks whose fp32 parameters are the optimizer's master copy save 12 B/param, not 14.

PyTorch FSDP2 mixed precision (torchtitan) keeps the sharded parameters in fp32 and casts to bf16 only in the
gathered layers, and torch.autocast runs over fp32 parameters: neither keeps a bf16 weight copy, so a resumable
checkpoint is the fp32 weights (4) and Adam's two moments (4 + 4). torchtitan's DCP checkpointer saves the model
state dict (those fp32 shards) and the optimizer state (torchtitan components/checkpointer/dcp.py @ b5bcd76; its
model-only export defaults to float32, base.py ``export_dtype``). Megatron and DeepSpeed keep bf16 weights
beside an fp32 master: 14 B/param (tests/ops/test_ops_checkpoint.py).
"""

from __future__ import annotations

import pytest
from tests.ops.test_ops_checkpoint import _request as checkpoint_request

from runplan.ops import OperationsSpec, plan_checkpoints
from runplan.ops.checkpoint import CURSOR_BYTES_PER_REPLICA, RNG_BYTES_PER_RANK


def _request(**kw):
    """The 70B request of tests/ops/test_ops_checkpoint.py at ZeRO-3 with the fp32 parameters as the master."""
    return checkpoint_request(**({"zero": 3, "fp32_master_weights": True} | kw))


def test_fsdp2_zero3_saves_fp32_weights_and_two_moments():
    c = plan_checkpoints(_request())
    parts = {p.name: p for p in c.parts}
    assert list(parts) == ["weights_fp32", "adam_m_fp32", "adam_v_fp32", "rng_states", "dataloader_cursor"]
    # 4 + 4 + 4 = 12 B × 70e9 = 840 GB, plus 512 RNG states and 16 cursors
    assert c.total_bytes == pytest.approx(840e9 + RNG_BYTES_PER_RANK * 512 + CURSOR_BYTES_PER_REPLICA * 16)
    assert c.bytes_per_param == pytest.approx(12.0, abs=1e-3)
    # ZeRO-3: the fp32 weights are sharded over all 512 ranks like the moments: 280e9 / 512 = 546.875 MB
    assert parts["weights_fp32"].shards == 512
    assert parts["weights_fp32"].bytes_per_shard == pytest.approx(546_875_000)
    assert c.held_bytes_per_gpu == pytest.approx(3 * 546_875_000)


def test_autocast_zero1_replicates_the_fp32_weights_over_replicas():
    c = plan_checkpoints(_request(zero=1))
    parts = {p.name: p for p in c.parts}
    assert parts["weights_fp32"].shards == 32  # t·p
    assert parts["weights_fp32"].bytes_per_shard == pytest.approx(280e9 / 32)


def test_weights_only_milestone_is_the_fp32_weights():
    c = plan_checkpoints(_request(spec=OperationsSpec(milestone_weights_only=True)))
    assert c.milestone_bytes == pytest.approx(280e9)  # 4 B × 70e9
    assert "4 B/param fp32 weights" in c.notes["milestone_bytes"]


def test_megatron_default_keeps_14_bytes():
    c = plan_checkpoints(_request(fp32_master_weights=False, zero=1))
    assert c.bytes_per_param == pytest.approx(14.0, abs=1e-3)
    assert "14 B/param" in c.notes["total_bytes"]
