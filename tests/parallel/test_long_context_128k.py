"""Long-context training (128k to 1M tokens) against hand-derived values: Meta's Llama 3 405B layout at 131,072
tokens (Dubey et al. 2024, arXiv 2407.21783, Table 4 row 3: 16,384 H100, TP 8, CP 16, PP 16, DP 8, 16M tokens per
batch, 380 TFLOP/s, 38% MFU), its activation and logits memory per GPU, the TransformerEngine ring's time, the
model-FLOPs convention at long sequences, and what the CLI says when a long sequence meets CP pinned to 1."""

from __future__ import annotations

import pytest
from tests.parallel.shapes import H100, LLAMA_405B
from tests.parallel.test_torch_context_parallel import EFF  # explicit constants: a refit moves nothing
from typer.testing import CliRunner

from runplan.parallel.grid import LayoutGrid
from runplan.parallel.layout import Layout, ParallelRequest
from runplan.parallel.memory import ShapeTerms, activation_bytes
from runplan.parallel.search import evaluate
from runplan.parallel.stack import Stack

SEQ = 131072
#: Meta's 128k stage (Table 4 row 3); micro-batch 1 and 16 micro-batches per DP rank (16 x 8 = 128 sequences
#: = 16,777,216 tokens), interleaved v = 8 over 8 layers per stage (§3.3.2), selective recompute
META = Layout(
    tp=8, pp=16, dp=8, cp=16, ep=1, zero=1, micro_batch=1, microbatches=16, vpp=8, recompute="selective",
    sequence_parallel=True,
)  # fmt: skip
#: FlashAttention-2 named, so that the cuDNN factor of `auto` on Hopper stays out of the hand derivation
FA2 = Stack(attention_kernel="flash-attention-2")

# Llama 3.1 405B: h 16,384, a 128, kv 8, head dim 128, F 53,248, V 128,256, L 126; ceil(126 / 16) = 8 layers
H, A, KV, D, F, V = 16384, 128, 8, 128, 53248, 128256
T = SEQ // 16  # tokens per CP rank and micro-batch: 8,192
#: selective (layernorm + activation) with SP, per token and layer, ÷ t = 8: norm inputs 4h/t 8,192; Q, K, V
#: 2(a·d + 2·kv·d)/t 4,608; attention output 2·a·d/t 4,096; LSE 4a/t 64; SwiGLU gate and up 4F/t 26,624
SELECTIVE_BYTES = 8192 + 4608 + 4096 + 64 + 26624  # 43,584
LOGITS = 6 * T * V // 8  # bf16 logits + their fp32 copy, vocab-parallel over t = 8: 788,004,864 bytes


def _request(layout: Layout, stack: Stack = FA2, shape=LLAMA_405B, seq: int = SEQ) -> ParallelRequest:
    n = layout.tp * layout.pp * layout.dp * layout.cp
    return ParallelRequest(model=shape, gpu=H100, n_gpus=n, seq_len=seq, stack=stack)


def test_meta_128k_layout_memory_hand_derived():
    ev = evaluate(_request(META), LayoutGrid.of([META]), EFF)
    mem = ev.memory
    # first stage: 8 layers of 3,187,703,808 params (attention 570,425,344, norms 32,768, MLP 2,617,245,696)
    # + the embedding 2,101,346,304, ÷ t = 8: Ψ = 3,450,372,096
    psi = (8 * (2 * H * H + 2 * H * KV * D + 2 * H + 3 * H * F) + V * H) / 8
    assert psi == 3_450_372_096
    assert float(mem.weights[0]) == pytest.approx(2 * psi)  # 6.90 GB
    assert float(mem.gradients[0]) == pytest.approx(4 * psi)  # fp32, ZeRO-1 does not shard them: 13.80 GB
    assert float(mem.optimizer[0]) == pytest.approx(12 * psi / (8 * 16))  # over d·c = 128: 0.323 GB
    # in flight on the first stage: min(m, p + (p-1)/v) = min(16, 17.875) = 16 micro-batches of the whole stage
    assert float(mem.activations[0]) == pytest.approx(16 * T * 8 * SELECTIVE_BYTES)  # 45.70 GB
    assert float(mem.total[0]) == pytest.approx(6 * psi + 12 * psi / 128 + 16 * T * 8 * SELECTIVE_BYTES + 3e9)
    assert float(mem.total[0]) < 0.95 * 80e9  # 69.7 GB: Meta's layout fits the H100 in this model
    assert not bool(ev.memory_last_is_max[0])  # the last stage: 14.125 in flight + 0.79 GB logits, 69.2 GB


@pytest.mark.parametrize("cross_entropy", ["fused", "unfused"])
def test_the_last_stage_holds_the_logits_of_its_cp_shard(cross_entropy):
    # last stage, interleaved: ((v-1)p + 1)/v = 113/8 = 14.125 stage-equivalents in flight, plus the loss's
    # logits of one micro-batch: (b·s/c) tokens x V/t, 6 bytes fused (bf16 + fp32 copy), 12 unfused
    # (PyTorch's F.cross_entropy(logits.float())); the first stage holds none (p > 1)
    stack = Stack(cross_entropy=cross_entropy)
    terms = ShapeTerms.from_shape(LLAMA_405B)
    g = META
    args = (terms, g.tp, g.pp, g.cp, g.micro_batch, g.microbatches, g.vpp, 1, True, SEQ)
    last = float(activation_bytes(*args, last=True, stack=stack))
    first = float(activation_bytes(*args, last=False, stack=stack))
    per_logit = 6 if cross_entropy == "fused" else 12
    assert last == pytest.approx(14.125 * T * 8 * SELECTIVE_BYTES + per_logit * T * V / 8)
    assert first == pytest.approx(16 * T * 8 * SELECTIVE_BYTES)
    assert per_logit * T * V / 8 == pytest.approx(LOGITS * per_logit / 6)  # 0.79 GB fused at CP 16


def test_full_recompute_at_128k_keeps_the_layer_inputs_and_one_working_layer():
    # full: 2h/t = 4,096 bytes per token and layer kept; backward working set one layer's activations without
    # recompute (norm in/out 16,384, attention 8,768, SwiGLU 6F/t 39,936: 65,088) less its kept input 4,096
    terms = ShapeTerms.from_shape(LLAMA_405B)
    last = float(activation_bytes(terms, 8, 16, 16, 1, 16, 8, 2, True, SEQ, last=True, stack=FA2))
    assert last == pytest.approx(14.125 * T * 8 * 4096 + T * (65088 - 4096) + LOGITS)  # 5.08 GB


def test_meta_128k_transformer_engine_ring_hand_derived():
    # K/V per rank: 2 B x T x kv/t (1) x (d_qk + d_v) = 4,194,304 bytes; t·c = 128 > 8: across nodes,
    # 50e9 x 0.9 B/s: (c-1)(K/B + lat) = 15 x (93.2 us + 20 us) = 1.70 ms forward, 3.40 ms backward, under the
    # attention: forward 2·T·s·(a/t)·(d_qk+d_v)/2 = 4.398e12 FLOPs / (0.5 x 989e12) x (1 + 1000·16/131072)
    # = 9.98 ms, backward 2.5x: all hidden. Exposed: the merges, (c-1) x (10 B x (output T·(a/t)·d_v
    # 16,777,216 + dQ T·(a/t)·d_qk 16,777,216 + dK/dV T·(kv/t)·(d_qk+d_v) 2,097,152) / 3.35e12 + 2 lat)
    # = 15 x (106.4 us + 40 us) = 2.196 ms per layer; x 8 layers x 16 micro-batches = 0.2811 s per step
    ev = evaluate(_request(META), LayoutGrid.of([META]), EFF)
    merge_elements = T * (A // 8) * D + T * (A // 8) * D + T * (KV // 8) * 2 * D
    per_layer = 15 * (10.0 * merge_elements / 3.35e12 + 2 * 2e-5)
    assert float(ev.time.context_parallel[0]) == pytest.approx(16 * 8 * per_layer, rel=1e-9)
    assert 16 * 8 * per_layer == pytest.approx(0.2811, abs=1e-4)


def test_model_flops_at_128k_count_attention_in_full_and_mfu_says_so():
    # PaLM App. B: 6N + 6·L·s·a·(d_qk + d_v), no causal discount: at 131,072 tokens the attention term
    # 6 x 126 x 131,072 x 128 x 256 = 3.247e12 FLOPs per token is 57% of the model FLOPs
    attention = 6.0 * 126 * SEQ * A * 2 * D
    assert LLAMA_405B.attention_flops_per_token(SEQ) == pytest.approx(attention)
    assert LLAMA_405B.attention_flops_per_token(SEQ, causal=True) == pytest.approx(attention / 2)
    flops = LLAMA_405B.model_flops_per_token(SEQ)
    assert flops == pytest.approx(6.0 * LLAMA_405B.matmul_params_per_token() + attention)
    assert attention / flops == pytest.approx(0.572, abs=1e-3)
    ev = evaluate(_request(META), LayoutGrid.of([META]), EFF)
    tokens_per_s = float(ev.tokens_per_second[0])
    assert float(ev.mfu[0]) == pytest.approx(tokens_per_s * flops / (16384 * 989e12))
    # selective = layernorm + activation reruns no GEMM: HFU = MFU
    assert float(ev.hfu[0]) == pytest.approx(float(ev.mfu[0]))


# ------------------------------------------------------------------ the CLI at long sequences ---------------
pytest.importorskip("runplan.catalog")
from runplan.cli.app import app  # noqa: E402

runner = CliRunner()


def test_meta_128k_layout_pinned_on_the_cli_fits():
    res = runner.invoke(
        app,
        [
            "parallelize",
            "--model",
            "llama-3.1-405b",
            "--gpus",
            "16384",
            "--seq-len",
            "128k",
            "--global-batch",
            "16M",
            "--tp",
            "8",
            "--pp",
            "16",
            "--cp",
            "16",
            "--dp",
            "8",
            "--mbs",
            "1",
            "--vpp",
            "8",
            "--zero",
            "1",
            "--recompute",
            "selective",
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    assert '"cp": 16' in res.output


def test_a_128k_mesh_that_misses_the_gpu_count_is_bad_input_at_dp():
    # 8·16·4·16 = 8,192 (Meta's Table 4 says DP 8, not 4): a mesh that misses the GPU count is bad input at --dp
    res = runner.invoke(
        app,
        [
            "parallelize",
            "--model",
            "llama-3.1-405b",
            "--gpus",
            "16384",
            "--seq-len",
            "128k",
            "--tp",
            "8",
            "--pp",
            "16",
            "--cp",
            "16",
            "--dp",
            "4",
        ],
    )
    assert res.exit_code == 2
    assert "--dp: pinned tp·pp·dp·cp = 8·16·4·16 = 8,192 GPUs, not 16,384" in res.output
    assert "Traceback" not in res.output


def test_a_million_tokens_with_cp_pinned_to_1_says_to_raise_cp():
    res = runner.invoke(
        app, ["parallelize", "--model", "llama-3.1-8b", "--gpus", "64", "--seq-len", "1m", "--cp", "1"]
    )
    assert res.exit_code == 1
    text = " ".join(res.output.split())
    assert "its largest term is activations" in text
    assert "more context parallelism (--cp 2) for this long sequence" in text  # the least CP that fits
    assert "unpin --cp" in text
    # and unpinned, the same request fits (TP 8 CP 8 or TP 4 CP 16, 67.4 GB: 49.5 GB of stored activations
    # and 12.6 GB of logits, 6 x 131,072 x 128,256 / 8)
    free = runner.invoke(
        app, ["parallelize", "--model", "llama-3.1-8b", "--gpus", "64", "--seq-len", "1m", "--top", "1"]
    )
    assert free.exit_code == 0


def test_the_cp_hint_offers_only_degrees_the_job_can_take():
    res = runner.invoke(
        app, ["parallelize", "--model", "llama-3.1-8b", "--gpus", "64", "--seq-len", "100000", "--cp", "64"]
    )
    assert res.exit_code == 2
    # 2c | 100,000 and c | 64: c in {1, 2, 4, 8, 16}
    assert "pin one of 1, 2, 4, 8, 16," in res.output


def test_a_stack_without_cp_at_a_million_tokens_says_its_stack_rules_cp_out():
    res = runner.invoke(
        app,
        ["parallelize", "--model", "llama-3.1-8b", "--gpus", "64", "--seq-len", "1m", "--stack", "deepspeed"],
    )
    assert res.exit_code == 1
    assert "context parallel" in " ".join(res.output.split()).split("to make it feasible")[1]


def test_without_flash_attention_a_cp_rank_stores_its_queries_scores_against_all_keys():
    # Korthikanti Table 2's 5as/h per s·b·h: softmax output 2, dropout mask 1, dropped output 2 bytes per score;
    # a CP rank's tokens each score all s keys, so 5·a·s/t per token = 5 x 128 x 131,072 / 8 = 10,485,760 bytes
    # in place of FlashAttention's fp32 LSE 4a/t = 64
    from runplan.parallel.memory import layer_activation_bytes_per_token

    terms = ShapeTerms.from_shape(LLAMA_405B)
    flash = Stack()
    scores = Stack(flash_attention=False, attention_dropout=0.1)
    _, with_flash = layer_activation_bytes_per_token(terms, 8, True, 0, moe=False, seq_len=SEQ, stack=flash)
    _, without = layer_activation_bytes_per_token(terms, 8, True, 0, moe=False, seq_len=SEQ, stack=scores)
    assert float(without) - float(with_flash) == pytest.approx(5 * A * SEQ / 8 - 4 * A / 8)
    assert pytest.approx(85.9e9, rel=1e-3) == 5 * A * SEQ / 8 * T  # 86 GB per layer on a CP-16 rank
