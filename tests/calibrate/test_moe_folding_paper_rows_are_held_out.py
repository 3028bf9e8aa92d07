"""The MoE Parallel Folding rows of benchmarks/published_runs.yaml (Liu et al. 2025, arXiv 2504.14960: Mixtral 8x22B
on Eos H100, Megatron-core, BF16, capacity factor 1): only the "MCore" rows (expert TP = TP, EP inside DP x CP, which
runplan expresses), held out of the shipped fit, their numbers as the paper prints them, and their predictions.

Paper numbers, hand-copied: Table 3 (MCore, 128 GPUs, CP 1 TP 2 EP 4 PP 8, global batch 256, sequence 4,096) MFU
46.3%, Table 2 458.3 TFLOPS; Table 4 (same layout, global batch 1,024) 128 / 256 / 512 / 1,024 GPUs: 49.4 / 48.0 /
45.5 / 42.3%; peak 989.5 TFLOP/s (§4.1). Table 5's Mcore rows (CP 4 to 16, 16K to 128K tokens) are refused: the
FLOP count behind their MFU is not determined (the row file's block comment).

FLOPs per token (the paper states none; taken as Megatron-core's num_floating_point_operations before 8873b55d6a,
2025-03-06, identical at core_v0.10.0 and core_v0.11.0): 12·L·h²·[(1 + g/a + s/h)·q/h + (F/h)·k·3/2 + V/(2·L·h)]
with L 56, h 6,144, a 48, g 8, q 6,144, F 16,384, k 2, V 32,000 padded to a multiple of 128·TP (32,256 at TP 4).
F is --ffn-hidden-size at those tags and --moe-ffn-hidden-size on main from 0d389f5e99 (2025-02-25): 16,384 either way.
By hand at s 4,096: 12 x 56 x 6,144² = 25,367,150,592; bracket 1 + 1/6 + 2/3 + 8 + 32,000/688,128 = 9.879837...;
product 250,623,295,488.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from runplan.calibrate.calibration import shipped_calibration
from runplan.calibrate.fit import step_error
from runplan.model import ModelShape

PEAK_TFLOPS = 989.5
PREFIX = "moe-folding-mixtral-8x22b-mcore-"
#: id suffix: (GPUs, sequence, global batch, CP, TP, EP, PP, MFU, TFLOPS as printed or None)
PAPER = {
    "128gpu-gbs256": (128, 4096, 256, 1, 2, 4, 8, 0.463, 458.3),
    "128gpu-gbs1024": (128, 4096, 1024, 1, 2, 4, 8, 0.494, None),
    "256gpu-gbs1024": (256, 4096, 1024, 1, 2, 4, 8, 0.480, None),
    "512gpu-gbs1024": (512, 4096, 1024, 1, 2, 4, 8, 0.455, None),
    "1024gpu-gbs1024": (1024, 4096, 1024, 1, 2, 4, 8, 0.423, None),
}
#: step-time error of the shipped constants (predicted / published - 1), docs/validation.md "every run"
PREDICTED_STEP_ERROR = {
    "128gpu-gbs256": 0.020,
    "128gpu-gbs1024": 0.034,
    "256gpu-gbs1024": 0.025,
    "512gpu-gbs1024": 0.003,
    "1024gpu-gbs1024": -0.008,
}


def megatron_flops_before_8873b55(seq_len: int, tp: int) -> Fraction:
    """Megatron-core's FLOPs per token for Mixtral 8x22B at core_v0.10.0/v0.11.0 (module docstring), exact."""
    n_layers, h, heads, groups, ffn, top_k = 56, 6144, 48, 8, 16384, 2
    multiple = 128 * tp
    vocab = -(-32000 // multiple) * multiple
    bracket = (
        (1 + Fraction(groups, heads) + Fraction(seq_len, h))
        + Fraction(ffn, h) * top_k * Fraction(3, 2)
        + Fraction(vocab, 2 * n_layers * h)
    )
    return 12 * n_layers * h * h * bracket


def test_the_flop_count_by_hand():
    assert megatron_flops_before_8873b55(4096, 2) == 250_623_295_488
    assert 12 * 56 * 6144**2 == 25_367_150_592
    # Megatron pads 32,000 to a multiple of 128 x TP: unchanged at TP 2, 32,256 at TP 4
    assert (
        megatron_flops_before_8873b55(131072, 4) - megatron_flops_before_8873b55(131072, 2) == 6 * 256 * 6144
    )
    # at 4,096 tokens it is runplan's PaLM model-FLOP count within 0.01% (no causal half in either)
    shape = ModelShape(
        n_layers=56, d_model=6144, n_heads=48, n_kv_heads=8, head_dim=128, ffn_hidden=16384, mlp="swiglu",
        vocab_size=32000, tied_embeddings=False, norm="rmsnorm", n_experts=8, top_k=2, expert_ffn_hidden=16384,
    )  # fmt: skip
    assert float(megatron_flops_before_8873b55(4096, 2)) == pytest.approx(
        shape.model_flops_per_token(4096), rel=1e-4
    )


def test_the_rows_are_the_papers_mcore_rows_and_held_out(published):
    data = published[0]
    rows = {row["id"]: row for row in data["runs"] if row.get("source_id") == "nvidia-moe-folding-2025"}
    assert set(rows) == {PREFIX + suffix for suffix in PAPER}
    fitted = {run for family in shipped_calibration().families.values() for run in family.runs}
    assert not set(rows) & fitted
    assert "2504.14960" in data["sources"]["moe-folding"]["url"]
    for suffix, (n, seq, gbs, cp, tp, ep, pp, mfu, printed) in PAPER.items():
        row = rows[PREFIX + suffix]
        assert row["fit"] is False and row["source"] == "moe-folding" and row["gpu"] == "h100-sxm"
        assert data["models"][row["model"]]["n_experts"] == 8 and data["models"][row["model"]]["top_k"] == 2
        pins = row["pins"]
        assert (row["n_gpus"], row["seq_len"], row["global_batch"]) == (n, seq, gbs)
        assert (pins["cp"], pins["tp"], pins["ep"], pins["pp"]) == (cp, tp, ep, pp)
        # the layout multiplies to the GPU count; EP borrows DP x CP ranks (expert TP = TP) and divides 8 experts
        assert pins["tp"] * pins["pp"] * pins["dp"] * pins["cp"] == n
        assert (pins["dp"] * pins["cp"]) % ep == 0 and 8 % ep == 0 and gbs % pins["dp"] == 0
        assert row["precision"] == "bf16" and row["stack"]["precision"] == "bf16"
        # the published numbers: MFU as printed; TFLOP/s as printed (Table 2) or MFU x 989.5; tokens/s by the count
        tflops = printed if printed is not None else round(mfu * PEAK_TFLOPS, 1)
        assert row["published"]["mfu"] == mfu
        assert row["published"]["tflops_per_gpu"] == pytest.approx(tflops, abs=1e-9)
        tokens = tflops * 1e12 / float(megatron_flops_before_8873b55(seq, tp))
        assert row["published"]["tokens_per_s_per_gpu"] == pytest.approx(tokens, abs=0.05)
        assert row["metric"] == "tokens_per_s_per_gpu" and "tokens_per_s_per_gpu" in row["derived"]
    # Table 2's BF16 TFLOPS are Table 3's MFU times the peak (MCore 458.3 = 46.3%, w/ Folding 487.7 = 49.3%), as
    # the conversion of the other rows assumes
    assert abs(0.463 * PEAK_TFLOPS - 458.3) < 0.25 and abs(0.493 * PEAK_TFLOPS - 487.7) < 0.25


def test_predictions_of_the_folding_paper_rows(validate, published):
    """Shipped constants: every row within +3.4% (slower) to -0.8% (faster) of the paper's step time, on the FLOP
    count before 8873b55d6a (with the later count's causal half the published tokens/s is 3.5% higher and the
    errors 3.5% more positive)."""
    prepared = [p for p in published[1] if p.run.source_id == "nvidia-moe-folding-2025"]
    shipped = validate.predict_shipped(prepared)
    for p in prepared:
        assert step_error(shipped[p.id].log_error) == pytest.approx(
            PREDICTED_STEP_ERROR[p.id.removeprefix(PREFIX)], abs=0.02
        ), p.id
