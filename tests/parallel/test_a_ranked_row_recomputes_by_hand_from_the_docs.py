"""One row of `runplan parallelize --model 70b --gpus 512` recomputed by hand from docs/parallel.md: Llama 3.1 70B
(L 80, h 8,192, a 64, k 8, d_head 128, F 28,672 SwiGLU, V 128,256) on 512 H100 SXM at TP 4, PP 2, DP 64, ZeRO-1,
micro-batch 1, m 67, v 1, selective recompute (default stack: layernorm + activation), s = 4,096 (the first row of
the shipped ranking). The first two ranked rows pinned in full give the numbers the ranking printed, the second no
less memory than the first where it ties with it.

Memory (first stage, 40 layers + embedding; Memory per GPU):
  layer = attention h*(a+2k)*128 + a*128*h = 150,994,944 + MLP 3*h*F = 704,643,072 + two norms 16,384
        = 855,654,400; stage = 40 layers + V*h 1,050,673,152 = 35,276,849,152; Psi = stage / t = 8,819,212,288
  weights 2 Psi = 17,638,424,576; gradients 4 Psi = 35,276,849,152; optimizer 12 Psi / (d*c = 64) = 1,653,602,304
  activations per token and layer (x = 1/t with SP, selective drops the norm outputs and the SwiGLU output):
        norm inputs 2*2h/t 8,192 + Q, K, V 2(a+2k)*128/t 5,120 + output 2*a*128/t 4,096 + LSE 4a/t 64
        + gate and up 4F/t 28,672 = 46,144 bytes; x min(m, p) = 2 micro-batches in flight x 4,096 tokens x 40
        layers = 15,120,465,920; reserve 3e9.
Time (Time per step; the shipped Hopper constants):
  TP: 4 collectives of 2*T*h = 67,108,864 bytes per layer, ring 2(t-1)/t = 1.5, at NVLink 450e9 x eta_nvlink,
      + 20 us each, 40 layers x 67 micro-batches, (1 - phi) exposed (TP overlap);
  PP: 2 sends per micro-batch of 2*T*h/t = 16,777,216 bytes at the NIC 50e9 x eta_net + latency;
  bubble: (p-1)/v = 1 micro-batch time (compute + TP + PP per micro-batch);
  optimizer: (24 + 4 + 2) * Psi' / (d*c) bytes over HBM 3.35e12, Psi' the slowest stage's, the last: 40 layers +
      final norm 8,192 + head V*h, / t = 8,819,214,336 (32 more per GPU than the first stage's)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app

BASE = ["parallelize", "--model", "70b", "--gpus", "512", "--json"]
ROW = {
    "tp": 4,
    "pp": 2,
    "dp": 64,
    "cp": 1,
    "ep": 1,
    "zero": 1,
    "micro_batch": 1,
    "microbatches": 67,
    "vpp": 1,
}


def _layouts(*argv: str) -> list[dict]:
    result = CliRunner().invoke(app, [*BASE, *argv])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["layouts"]


def _pinned(row: dict) -> dict:
    flags = {"micro_batch": "--mbs"}
    argv = [x for k in ROW for x in (flags.get(k, f"--{k}"), str(row[k]))]
    (layout,) = _layouts(*argv, "--recompute", row["recompute"])
    return layout


def _constants() -> dict:
    from runplan.calibrate.calibration import shipped_calibration
    from runplan.catalog import load_catalog

    gpu = load_catalog([]).gpu("h100-sxm")
    return shipped_calibration().efficiency(gpu).model_dump()


def test_the_layout_recomputes_by_hand():
    # pinned in full, so that a refit that moves the ranking (docs/parallel.md, 70B on 512 H100) keeps the check
    first = _pinned({**ROW, "recompute": "selective"})
    memory = first["memory_bytes"]
    assert memory["weights"] == pytest.approx(17_638_424_576, rel=1e-12)
    assert memory["gradients"] == pytest.approx(35_276_849_152, rel=1e-12)
    assert memory["optimizer"] == pytest.approx(1_653_602_304, rel=1e-12)
    assert memory["activations"] == pytest.approx(15_120_465_920, rel=1e-12)
    assert memory["total"] == pytest.approx(
        17_638_424_576 + 35_276_849_152 + 1_653_602_304 + 15_120_465_920 + 3e9
    )
    c = _constants()
    lat, m = c["collective_latency_seconds"], 67
    tp = 4 * 40 * m * (67_108_864 * 1.5 / (450e9 * c["network_efficiency"]) + lat)
    pp = 2 * m * (16_777_216 / (50e9 * c["inter_node_network_efficiency"]) + lat)
    t = first["time_seconds"]
    assert t["tensor_parallel"] == pytest.approx(tp * (1 - c["tp_overlap_fraction"]), rel=1e-6)
    assert t["pipeline_p2p"] == pytest.approx(pp, rel=1e-6)
    per_microbatch = (t["compute"] + t["tensor_parallel"] + t["pipeline_p2p"]) / m
    assert t["bubble"] == pytest.approx(per_microbatch, rel=1e-6)
    assert t["optimizer"] == pytest.approx(30 * 8_819_214_336 / 64 / 3.35e12, rel=1e-9)
    assert first["step_seconds"] == pytest.approx(sum(t.values()), rel=1e-12)
    assert first["tokens_per_second"] == pytest.approx(64 * 67 * 4096 / first["step_seconds"], rel=1e-12)


def test_pinning_the_first_two_rows_gives_the_same_numbers_and_the_order():
    """The ranking (search._ranked): rows within constraints.throughput_tolerance (1%) of the fastest tie and rank
    by memory, least first; so the first row is within 1% of the fastest, and a second row that ties needs no
    less memory."""
    result = CliRunner().invoke(app, [*BASE, "--top", "2"])
    data = json.loads(result.stdout)
    first, second = data["layouts"]
    for row in (first, second):
        pinned = _pinned(row)
        assert pinned["tokens_per_second"] == pytest.approx(row["tokens_per_second"], rel=1e-12)
        assert pinned["memory_bytes"] == pytest.approx(row["memory_bytes"], rel=1e-12)
    fastest = data["fastest"]["tokens_per_second"]
    assert fastest >= first["tokens_per_second"] >= 0.99 * fastest
    if second["tokens_per_second"] >= 0.99 * fastest:
        assert second["memory_bytes"]["total"] >= first["memory_bytes"]["total"]
