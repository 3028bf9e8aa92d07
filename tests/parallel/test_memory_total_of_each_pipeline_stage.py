"""Each layout's per-GPU memory total of the first and of the last pipeline stage (``memory_total_bytes_by_stage``),
beside the most loaded stage's terms (``memory_bytes``), against hand-derived values (docs/parallel.md, Memory):
the embedding on the first stage, the head and the logits on the last, 1F1B's min(m, p) micro-batches in flight on
the first against 1 on the last."""

from __future__ import annotations

import pytest
from tests.parallel.shapes import H100, _llama_style

from runplan.parallel.layout import Layout, ParallelRequest
from runplan.parallel.search import evaluate_layout

SEQ = 1024
#: 4 layers, h 1,024, 16 heads of 64, 4 KV heads, SwiGLU F 2,816, RMSNorm, untied vocabulary V
H, A, KV, D, F, L = 1024, 16, 4, 64, 2816, 4
#: per layer: Q and O 2·h·a·d, K and V 2·h·kv·d, two norms 2h, SwiGLU 3·h·F = 11,274,240 parameters
LAYER = 2 * H * A * D + 2 * H * KV * D + 2 * H + 3 * H * F
#: stored bytes per token and layer (bf16, FlashAttention, no dropout, no recompute, t = 1): norm inputs 4h and
#: outputs 4h, Q, K, V 2(a·d + 2·kv·d), attention output 2·a·d, log-sum-exp 4a, SwiGLU 6F = 30,272
PER_TOKEN = 4 * H + 4 * H + 2 * (A * D + 2 * KV * D) + 2 * A * D + 4 * A + 6 * F
RESERVE = 3e9  # constraints.reserve_bytes default
#: ZeRO-0, fp32 gradients, fp32 Adam: bf16 weights 2 + gradients 4 + master and moments 12 = 18 bytes per parameter
STATE = 18


def _estimate(vocab: int, pp: int, microbatches: int = 4):
    shape = _llama_style("tiny", L, H, A, F, n_kv_heads=KV, head_dim=D, vocab_size=vocab)
    layout = Layout(
        tp=1, pp=pp, dp=1, cp=1, ep=1, zero=0, micro_batch=1, microbatches=microbatches, vpp=1,
        recompute="none", sequence_parallel=False,
    )  # fmt: skip
    return evaluate_layout(ParallelRequest(model=shape, gpu=H100, n_gpus=pp, seq_len=SEQ), layout)


def _hand(vocab: int) -> tuple[float, float]:
    """(first, last) totals at p = 2, m = 4: two layers on each stage; the first holds the embedding V·h and
    min(m, p) = 2 micro-batches of 1,024 tokens, the last the head V·h and final norm h, one micro-batch and the
    loss's logits, 6 bytes each (bf16 + the fused cross-entropy's fp32 copy)."""
    first = STATE * (2 * LAYER + vocab * H) + 2 * SEQ * 2 * PER_TOKEN + RESERVE
    last = STATE * (2 * LAYER + vocab * H + H) + SEQ * 2 * PER_TOKEN + 6 * SEQ * vocab + RESERVE
    return first, last


def test_hand_derived_constants():
    assert LAYER == 11_274_240 and PER_TOKEN == 30_272
    assert _hand(4096) == (3_605_364_224, 3_568_551_424)  # 481.4 MB state + 124.0 MB activations + 3 GB
    assert _hand(32000) == (4_119_690_752, 4_254_320_128)  # the last stage's logits: 196.6 MB


@pytest.mark.parametrize(("vocab", "stage"), [(4096, "first"), (32000, "last")])
def test_first_and_last_stage_totals_are_hand_derived(vocab, stage):
    est = _estimate(vocab, pp=2)
    first, last = _hand(vocab)
    by_stage = est.memory_total_bytes_by_stage
    assert by_stage is not None
    assert by_stage.first == pytest.approx(first, rel=1e-12)
    assert by_stage.last == pytest.approx(last, rel=1e-12)
    # memory_bytes and memory_stage keep their meaning: the more loaded stage
    assert est.memory_stage == stage
    assert est.memory_bytes.total == pytest.approx(max(first, last), rel=1e-12)
    assert getattr(by_stage, stage) == est.memory_bytes.total


def test_one_stage_is_one_gpu_and_one_figure():
    """p = 1: the embedding, the head, the layers, one micro-batch and the logits on the one GPU."""
    est = _estimate(4096, pp=1, microbatches=4)
    by_stage = est.memory_total_bytes_by_stage
    one = STATE * (L * LAYER + 2 * 4096 * H + H) + SEQ * L * PER_TOKEN + 6 * SEQ * 4096 + RESERVE
    assert by_stage is not None and by_stage.first == by_stage.last == est.memory_bytes.total
    assert by_stage.first == pytest.approx(one, rel=1e-12)


def test_the_key_is_in_the_json_after_memory_stage():
    data = _estimate(4096, pp=2).model_dump(mode="json")
    keys = list(data)
    assert keys.index("memory_total_bytes_by_stage") == keys.index("memory_stage") + 1
    assert set(data["memory_total_bytes_by_stage"]) == {"first", "last"}
