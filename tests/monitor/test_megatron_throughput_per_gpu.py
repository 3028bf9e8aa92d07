"""Megatron-LM's ``throughput per GPU (TFLOP/s/GPU)`` read as ``tflops_per_gpu`` and, with ``--plan``, set against
the plan's count with the gap explained (docs/monitor.md, "Megatron's own TFLOP/s").

Line format: Megatron-LM ``megatron/training/training.py`` ``training_log`` at commit d98e8a64 (with
``--log-throughput``): throughput = ``num_floating_point_operations(args, batch_size)`` ÷ (elapsed time per
iteration × 10^12 × world size), printed ``{throughput:.1f}``.

Hand-derived numbers, llama-3.1-70b (h 8,192, L 80, 64 query / 8 KV heads of 128, SwiGLU F 28,672, V 128,256) at
4,096 tokens, as ``examples/70b-512-h100.yaml`` plans it (512 GPUs, main batch 5,312 × 4,096 = 21,757,952 tokens):
- Megatron's count per token: 6 × [80 × (8,192 × (8,192 + 2 × 1,024) + 8,192 × 8,192 + 3 × 8,192 × 28,672) +
  8,192 × 128,256] + 6 × 80 × 4,096 × 8,192 (causal: QK^T and AV at half) = 6 × 69,501,714,432 +
  16,106,127,360 = 433,116,413,952.
- the plan's (PaLM, no causal discount, norms counted): 449,230,454,784; the gap 16,114,040,832 = the causal half
  16,106,127,360 + 6 × 1,318,912 norm weights (80 × 2 × 8,192 + 8,192).
- at 40 s a step: 21,757,952 ÷ 40 = 543,948.8 tokens/s; Megatron prints 433,116,413,952 × 543,948.8 ÷ 512 ÷ 1e12
  = 460.14 → "460.1"; the plan's count at that speed 449,230,454,784 × 543,948.8 ÷ 512 ÷ 1e12 = 477.26.
- back from the line: 460.1e12 × 512 × 40 ÷ 21,757,952 = 4.3308e11 FLOPs per token (×0.964 the plan's).
"""

from __future__ import annotations

import pytest

from runplan.monitor.readers import read_logs

TRAIN_ITERS = 93_333
BATCH = 5_312
TOKENS_PER_STEP = BATCH * 4_096
MEGATRON_70B = 433_116_413_952.0
PLAN_70B = 449_230_454_784.0


def megatron_line(iteration: int, ms: float, throughput: float, loss: float) -> str:
    """One Megatron-LM ``training_log`` line (d98e8a64; bf16: loss scale 1.0; the timestamp of ``datetime.now()``),
    with the engine's format specs."""
    s = " [2026-08-22 15:22:22.123456]"
    s += f" iteration {iteration:8d}/{TRAIN_ITERS:8d} |"
    s += f" consumed samples: {2_624 * 2_791 + BATCH * (iteration - 2_791):12d} |"
    s += f" elapsed time per iteration (ms): {ms:.1f} |"
    s += f" throughput per GPU (TFLOP/s/GPU): {throughput:.1f} |"
    s += f" learning rate: {1.5e-4:.6E} |"
    s += f" global batch size: {BATCH:5d} |"
    s += " {}: {:.6E} |".format("lm loss", loss)
    s += f" loss scale: {1.0:.1f} |"
    s += f" grad norm: {0.25:.3f} |"
    s += f" number of skipped iterations: {0:3d} |"
    s += f" number of nan iterations: {0:3d} |"
    return s


def _log(tmp_path, throughput: float = 460.14, ms: float = 40_000.0):
    path = tmp_path / "megatron.log"
    lines = [megatron_line(it, ms, throughput, 2.5 - 1e-5 * it) for it in range(3_000, 3_200, 10)]
    path.write_text("\n".join(lines) + "\n")
    return read_logs([path])


def _plan():
    from runplan.cli.common import plan_from_file

    return plan_from_file("examples/70b-512-h100.yaml")[2]


def test_line_as_printed_is_byte_exact():
    assert megatron_line(3_000, 40_000.0, 460.14, 2.47) == (
        " [2026-08-22 15:22:22.123456] iteration     3000/   93333 | consumed samples:      8433792 | elapsed time "
        "per iteration (ms): 40000.0 | throughput per GPU (TFLOP/s/GPU): 460.1 | learning rate: 1.500000E-04 | "
        "global batch size:  5312 | lm loss: 2.470000E+00 | loss scale: 1.0 | grad norm: 0.250 | number of "
        "skipped iterations:   0 | number of nan iterations:   0 |"
    )


def test_throughput_per_gpu_is_read_as_tflops_per_gpu_and_not_listed_unused(tmp_path):
    log = _log(tmp_path)
    assert log.format == "megatron"
    assert log.values["tflops_per_gpu"].tolist() == [460.1] * 20
    assert log.source_names["tflops_per_gpu"] == "throughput per GPU (TFLOP/s/GPU)"
    assert log.values["step_seconds"][0] == pytest.approx(40.0)
    assert not any("throughput per GPU" in note for note in log.notes)


def test_megatron_formula_on_llama_70b_is_hand_derived():
    from runplan.monitor.engine_flops import megatron_flops_per_token

    shape = _plan().model.shape
    assert megatron_flops_per_token(shape, 4_096) == MEGATRON_70B
    # the gap to the plan: the causal half of attention and 6 × the norm weights
    assert PLAN_70B - MEGATRON_70B == 16_106_127_360 + 6 * (80 * 2 * 8_192 + 8_192)


def test_megatron_formula_on_mixtral_counts_top2_experts_and_no_router():
    """mixtral-8x7b (h 4,096, L 32, 32 / 8 heads of 128, 8 experts of F 14,336, top-2, V 32,000) at 4,096 tokens:
    6 × [32 × (4,096 × (4,096 + 2,048) + 4,096² + 2 × 3 × 4,096 × 14,336) + 4,096 × 32,000] + 6 × 32 × 4,096 ×
    4,096 = 6 × 12,747,538,432 + 3,221,225,472 = 79,706,456,064; the router's 4,096 × 8 weights are not in it."""
    from runplan.catalog import shipped_catalog
    from runplan.monitor.engine_flops import megatron_flops_per_token

    assert megatron_flops_per_token(shipped_catalog().model("mixtral-8x7b"), 4_096) == 79_706_456_064.0


def test_megatron_formula_on_deepseek_v3_takes_the_mla_branch():
    """deepseek-v3 (h 7,168, L 61, 128 heads, q/kv LoRA 1,536/512, d_qk 128 + 64 RoPE, d_v 128; 3 dense layers of F
    18,432, 58 MoE layers of 8 routed + 1 shared experts of 2,048; V 129,280) at 4,096 tokens, Megatron's MLA
    terms per layer: q 1,536 × (7,168 + 128 × 192 + 1) = 48,760,320; kv 512 × (7,168 + 128 × 256 + 1) + 7,168 × 64
    = 20,906,496; out 128 × 128 × 7,168 = 117,440,512; so 6 × (61 × 187,107,328 + 3 × 3 × 7,168 × 18,432 + 58 × 9 ×
    3 × 7,168 × 2,048 + 7,168 × 129,280) = 6 × 36,518,291,456 = 219,109,748,736, + core 3 × 61 × 4,096 × 128 ×
    (192 + 128) = 30,702,305,280: 249,812,054,016 without its multi-token-prediction module. With it
    (--mtp-num-layers 1, num_floating_point_operations @ d98e8a64): one more MoE block (187,107,328 + 9 × 3 × 7,168
    × 2,048), its 3 norms and 2h·h projection (21,504 + 102,760,448) and one more logit pass (7,168 × 129,280):
    6 × 1,612,930,048 more, and one more layer of core, 3 × 4,096 × 128 × 320: 259,992,950,784."""
    from runplan.catalog import shipped_catalog
    from runplan.monitor.engine_flops import megatron_flops_per_token

    deepseek = shipped_catalog().model("deepseek-v3")
    assert megatron_flops_per_token(deepseek.model_copy(update={"mtp_layers": 0}), 4_096) == 249_812_054_016.0
    assert megatron_flops_per_token(deepseek, 4_096) == 259_992_950_784.0


def test_plan_comparison_explains_megatrons_count(tmp_path):
    from runplan.monitor.render import vs_plan_text
    from runplan.monitor.vs_plan import compare

    out = compare(_log(tmp_path), _plan())
    assert out["step_seconds"] == pytest.approx(40.0)
    assert out["tokens_per_second"] == pytest.approx(543_948.8)
    assert out["logged_tflops_per_gpu"] == pytest.approx(460.1)
    assert out["logged_mfu"] is None  # Megatron prints no MFU
    note = out["notes"]["logged_tflops_per_gpu"]
    assert note.startswith("Megatron's own 460.1 TFLOP/s per GPU against 477.3 by the plan's count")
    assert "4.331e+11 FLOPs per token" in note and "4.492e+11" in note and "×0.964" in note
    assert "4.331e+11 by Megatron's formula on the plan's shape" in note
    assert "causal" in note and "×1.000" in note
    assert vs_plan_text(out).splitlines()[-1] == note


def test_another_run_leaves_a_gap_megatrons_formula_does_not_explain(tmp_path):
    """A log whose count is 10% above Megatron's formula for the plan's model (another model, or another GPU
    count): 460.14 × 1.1 = 506.154 printed 506.2; 506.2 ÷ 460.14 = 1.100 is left unexplained."""
    from runplan.monitor.vs_plan import compare

    note = compare(_log(tmp_path, throughput=506.154), _plan())["notes"]["logged_tflops_per_gpu"]
    assert "the rest ×1.100" in note


def test_other_engines_tflops_get_no_megatron_note(tmp_path):
    """Megatron-DeepSpeed's ``TFLOPs`` is another formula (it adds the recompute forward): no Megatron note."""
    from tests.monitor.test_engine_log_lines_as_printed import mds_line

    from runplan.monitor.vs_plan import compare

    path = tmp_path / "mds.log"
    path.write_text("\n".join(mds_line(it, 7000.0, 6.0, 0.9) for it in range(1, 30)) + "\n")
    out = compare(read_logs([path]), _plan())
    assert out["logged_tflops_per_gpu"] is None and "logged_tflops_per_gpu" not in out["notes"]


def test_megatron_count_has_no_window_term_and_counts_geglu_as_three_matrices():
    # num_floating_point_operations (@ d98e8a64) counts each layer's attention core over the full s (causal
    # half) whatever the window, and a gated MLP as 3 matrices: Gemma 2 9B at 8,192 tokens by hand
    from runplan.catalog import shipped_catalog
    from runplan.monitor.engine_flops import megatron_flops_per_token

    shape = shipped_catalog().model("gemma-2-9b")
    h, layers, q, kv = 3584, 42, 16 * 256, 8 * 256
    weights = layers * (h * (q + 2 * kv) + q * h) + layers * h * 14336 * 3 + h * 256000
    core = 6 * layers * 8192 * 16 * (256 + 256) / 2
    assert megatron_flops_per_token(shape, 8192) == 6 * weights + core


def test_a_windowed_plan_names_the_window_among_the_formula_gaps(tmp_path):
    # Gemma 2 9B at 8,192 tokens: the plan counts its window layers at 2w - w²/s, Megatron's formula the full s
    from runplan.cli.common import plan_from_file
    from runplan.monitor.vs_plan import compare

    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(
        "schema_version: 1\nmodel: gemma-2-9b\nbudget: {tokens: 1T}\ncluster: {gpu: h100-sxm, gpus: 512}\n"
        "training: {seq_len: 8192}\n"
    )
    note = compare(_log(tmp_path), plan_from_file(str(plan_file))[2])["notes"]["logged_tflops_per_gpu"]
    assert "no recompute, no sliding window)" in note
    assert "no sliding window" not in compare(_log(tmp_path), _plan())["notes"]["logged_tflops_per_gpu"]
