"""Under precision fp8 the multi-token-prediction module's linear layers carry an fp8 copy (or, with fp8 weights, are
held in fp8) on the stage that holds the module, the last (memory.mtp_linear_params, fp8_weight_copy_bytes).

Megatron-LM @ d98e8a64, megatron/core/transformer/multi_token_prediction.py: the TE backend builds ``eh_proj`` as
its column-parallel linear and the block from the decoder's layer spec, inside ``get_fp8_context(config,
is_init=True)`` (fp8_model_init with --fp8-param-gather, core/fp8_utils.py), and ``_proj_and_transformer_layer``
runs both under ``get_fp8_context(config)`` when ``config.fp8``.

Hand derivation, DeepSeek-V3 (h 7168, one MTP module, tests/test_mtp_counts.py for the block), t = 1, e = 64:
* dense linears of the module: eh_proj 2·7168² = 102,760,448; MLA's projections 187,107,328 (the count every
  decoder layer's attention uses, its two latent RMSNorms' 2,048 weights included: stage_linear_params); the shared
  expert 3·7168·2048 = 44,040,192; 333,907,968 in all (not the router, the norms or the embedding copy);
* routed experts: 256·44,040,192 = 11,274,289,152, 176,160,768 per GPU at EP 64;
* ZeRO-1: 333,907,968 + 176,160,768 = 510,068,736 bytes (1 each) more on the last stage than without MTP.
"""

from __future__ import annotations

import numpy as np
import pytest

from runplan.catalog import shipped_catalog
from runplan.parallel.grid import LayoutGrid
from runplan.parallel.layout import Layout
from runplan.parallel.memory import ShapeTerms, fp8_weight_copy_bytes, memory_breakdown, mtp_linear_params
from runplan.parallel.stack import Stack

V3 = shipped_catalog().model("deepseek-v3")
WITH = ShapeTerms.from_shape(V3)
WITHOUT = ShapeTerms.from_shape(V3.model_copy(update={"mtp_layers": 0, "mtp_loss_weight": None}))
MTP_DENSE_LINEAR = 2 * 7168**2 + 187_107_328 + 3 * 7168 * 2048
MTP_EXPERT_LINEAR = 256 * 3 * 7168 * 2048
MTP_FP8_BYTES_EP64 = 510_068_736
#: one stage (it holds the MTP module) on 2048 GPUs, EP 64, ZeRO-1
ONE_STAGE_EP64 = Layout(
    tp=1,
    pp=1,
    dp=2048,
    ep=64,
    cp=1,
    zero=1,
    micro_batch=1,
    microbatches=64,
    vpp=1,
    recompute="full",
    sequence_parallel=False,
)


def test_mtp_linear_parameters_by_hand():
    assert MTP_DENSE_LINEAR == 333_907_968 and MTP_EXPERT_LINEAR == 11_274_289_152
    dense, expert = mtp_linear_params(WITH, 1, 16, 64, last=True)
    assert (float(dense), float(expert)) == (MTP_DENSE_LINEAR, MTP_EXPERT_LINEAR / 64)
    assert [float(x) for x in mtp_linear_params(WITH, 1, 16, 64, last=False)] == [0.0, 0.0]
    assert [float(x) for x in mtp_linear_params(WITHOUT, 1, 16, 64, last=True)] == [0.0, 0.0]


def test_deepseek_v3_ep64_last_stage_holds_the_mtp_fp8_copy():
    def copy(terms, p, zero, *, last):
        return float(
            fp8_weight_copy_bytes(terms, 1, p, 64, zero, 2048 // (16 if p == 16 else 1), 1, last=last)
        )

    assert copy(WITH, 16, 1, last=True) - copy(WITHOUT, 16, 1, last=True) == MTP_FP8_BYTES_EP64
    assert copy(WITH, 16, 1, last=False) == copy(WITHOUT, 16, 1, last=False)  # the first stage has no MTP
    # one stage holds everything, the module too (it is the first and the last)
    assert copy(WITH, 1, 1, last=False) - copy(WITHOUT, 1, 1, last=False) == MTP_FP8_BYTES_EP64
    # ZeRO-3 shards the copy like the weights: dense over d·c = 2048, experts over d·c/e = 32
    sharded = MTP_DENSE_LINEAR / 2048 + MTP_EXPERT_LINEAR / 2048
    assert copy(WITH, 1, 3, last=False) - copy(WITHOUT, 1, 3, last=False) == pytest.approx(sharded, rel=1e-12)


@pytest.mark.parametrize("param_gather, sign", [(False, 1), (True, -1)])
def test_last_stage_weights_term(param_gather, sign):
    """One stage (p = 1, d = 2048) holds the module: its weights term gains the module's bf16 weights plus the
    1-byte copy, or with fp8 weights 1 byte instead of 2 per MTP linear weight (510,068,736 fewer bytes)."""
    stack = Stack(precision="fp8", fp8_recipe="delayed", fp8_param_gather=param_gather)
    grid = LayoutGrid.of([ONE_STAGE_EP64])

    def weights(terms):
        memory = memory_breakdown(terms, grid, seq_len=4096, reserve_bytes=3e9, stack=stack)[0]
        return float(np.asarray(memory.weights)[0])

    bf16_mtp = 2.0 * (WITH.mtp_layers * WITH.mtp_dense_params + WITH.mtp_expert_params / 64)
    assert weights(WITH) - weights(WITHOUT) == pytest.approx(bf16_mtp + sign * MTP_FP8_BYTES_EP64, rel=1e-12)


def test_fp8_weight_gather_moves_the_mtp_linears_in_one_byte():
    """With fp8 weights every parameter all-gather moves the linear weights in 1 byte, the last stage's MTP linears
    included (timing._data_parallel_seconds). Without grad-reduce overlap the DP term is the whole traffic ÷ the
    bandwidth, so turning fp8 weights on takes off ring_dense·dense + ring_expert·expert linear bytes once per step
    (ZeRO-1); with p = 1, d = 2048, e = 64: rings 2047/2048 and 31/32, the MTP module adding 333,907,968 dense and
    176,160,768 expert linears per GPU to the stage's."""
    from runplan.parallel.memory import stage_linear_params
    from runplan.parallel.timing import default_efficiency, step_time

    gpu = shipped_catalog().gpu("h100-sxm")
    grid = LayoutGrid.of([ONE_STAGE_EP64])

    def saved_seconds(terms):
        def dp(gather):
            stack = Stack(
                precision="fp8", fp8_recipe="delayed", fp8_param_gather=gather, overlap_grad_reduce=False
            )
            times, _ = step_time(
                terms,
                grid,
                seq_len=4096,
                gpu=gpu,
                node_size=8,
                n_gpus=2048,
                eff=default_efficiency(gpu),
                stack=stack,
            )
            return float(np.asarray(times.data_parallel)[0])

        return dp(False) - dp(True)

    dense, expert = (float(x) for x in stage_linear_params(WITHOUT, 1, 1, 64))
    ring_dense, ring_expert = 2047 / 2048, 31 / 32
    without = ring_dense * dense + ring_expert * expert
    with_mtp = without + ring_dense * MTP_DENSE_LINEAR + ring_expert * MTP_EXPERT_LINEAR / 64
    assert saved_seconds(WITH) / saved_seconds(WITHOUT) == pytest.approx(with_mtp / without, rel=1e-9)
