"""Measured runs generated from known constants (for the recovery test)."""

from __future__ import annotations

from runplan.calibrate.fit import Prepared, predict, prepare, with_attention
from runplan.calibrate.measured import MeasuredFile
from runplan.catalog import load_catalog
from runplan.parallel.layout import Efficiency, Layout

#: The constants the synthetic runs are generated with (none equal to a prior or to the shipped value).
TRUTH = {
    "gemm_peak_fraction": 0.66,
    "gemm_half_dim": 40.0,
    "network_efficiency": 0.85,
    "inter_node_network_efficiency": 0.55,
    "step_overhead_seconds": 0.3,
    "elementwise_time_factor": 2.5,
    "tp_overlap_fraction": 0.6,
    "dp_overlap_interference": 0.3,
    "eager_elementwise_share": 0.45,
}

# (model, GPUs, seq, global batch, tp, pp, dp, zero, mbs, vpp, recompute, sp, tp overlap)
LAYOUTS = [
    ("llama-3.1-8b", 8, 8192, 32, 1, 1, 8, 1, 1, 1, "none", False, False),
    ("llama-3.1-8b", 8, 2048, 256, 1, 1, 8, 1, 1, 1, "none", False, False),
    ("llama-3.1-8b", 8, 8192, 16, 8, 1, 1, 0, 1, 1, "none", True, False),
    ("llama-3.1-8b", 8, 8192, 16, 8, 1, 1, 0, 1, 1, "none", True, True),
    ("llama-3.1-8b", 16, 8192, 16, 8, 1, 2, 0, 1, 1, "selective", True, True),
    ("llama-3.1-8b", 64, 4096, 64, 1, 1, 64, 3, 1, 1, "full", False, False),
    ("llama-3.1-8b", 128, 4096, 128, 1, 1, 128, 1, 1, 1, "none", False, False),
    ("llama-3.1-8b", 128, 4096, 1024, 1, 1, 128, 1, 2, 1, "none", False, False),
    ("llama-3.1-8b", 1, 1024, 8, 1, 1, 1, 0, 8, 1, "none", False, False),
    ("llama-3.1-8b", 1, 512, 4, 1, 1, 1, 0, 1, 1, "none", False, False),
    ("llama-3.1-70b", 64, 8192, 64, 8, 4, 2, 1, 1, 5, "none", True, True),
    ("llama-3.1-70b", 64, 8192, 64, 8, 4, 2, 1, 1, 5, "none", True, False),
    ("llama-3.1-70b", 256, 4096, 256, 4, 8, 8, 1, 1, 1, "full", True, True),
    ("llama-3.1-70b", 512, 4096, 1024, 8, 8, 8, 1, 1, 5, "selective", True, True),
    ("llama-3.1-70b", 128, 4096, 128, 8, 2, 8, 1, 1, 1, "full", True, False),
    ("llama-3.1-70b", 128, 2048, 512, 8, 1, 16, 0, 2, 1, "full", True, False),
]

# mixture-of-experts runs, the last field the expert parallelism: EP inside a node (Mixtral, 8 experts) and
# across nodes (Qwen3-30B-A3B, 128 experts), beside TP and PP
MOE_LAYOUTS = [
    ("mixtral-8x7b", 8, 4096, 64, 1, 1, 8, 1, 1, 1, "selective", False, False, 8),
    ("mixtral-8x7b", 64, 4096, 256, 1, 4, 16, 1, 1, 1, "selective", False, False, 8),
    ("mixtral-8x7b", 32, 4096, 128, 1, 1, 32, 1, 1, 1, "full", False, False, 2),
    ("mixtral-8x7b", 64, 4096, 128, 2, 1, 32, 1, 1, 1, "full", True, False, 8),
    ("qwen3-30b-a3b", 16, 4096, 128, 1, 1, 16, 1, 1, 1, "none", False, False, 16),
    ("qwen3-30b-a3b", 32, 4096, 128, 1, 1, 32, 1, 1, 1, "full", False, False, 32),
]


def synthetic_runs(
    truth: dict[str, float] = TRUTH, gpu: str = "h100-sxm", *, dense: bool = True, moe: bool = False
) -> list[Prepared]:
    """One measured run per row of LAYOUTS (``dense``) and of MOE_LAYOUTS (``moe``), its step time predicted
    with ``truth``."""
    runs = []
    # the first and the ZeRO-3 run again with eager elementwise kernels: the pairs that identify their share
    rows: list[tuple[tuple, bool]] = []
    if dense:
        rows += [(row, True) for row in LAYOUTS] + [(LAYOUTS[0], False), (LAYOUTS[5], False)]
    if moe:
        rows += [(row, True) for row in MOE_LAYOUTS]
    for i, (row, fused) in enumerate(rows):
        model, n, seq, batch, tp, pp, dp, zero, mbs, vpp, recompute, sp, overlap, *ep = row
        layout = Layout(
            tp=tp,
            pp=pp,
            dp=dp,
            cp=1,
            ep=ep[0] if ep else 1,
            zero=zero,
            micro_batch=mbs,
            microbatches=batch // (dp * mbs),
            vpp=vpp,
            recompute=recompute,
            sequence_parallel=sp,
        )
        runs.append(
            {
                "id": f"run{i}",
                "model": model,
                "gpu": gpu,
                "n_gpus": n,
                "seq_len": seq,
                "global_batch": batch,
                "layout": layout.model_dump(),
                "stack": {"tp_comm_overlap": overlap, "fused_elementwise": fused},
                # a placeholder, replaced below by the time ``truth`` predicts; slow enough to be possible
                "measured": {"step_seconds": 1e3},
            }
        )
    prepared = prepare(MeasuredFile.model_validate({"runs": runs}), load_catalog([]))
    eff = Efficiency(**truth, attention_fraction=1.0, collective_latency_seconds=2e-5)
    out = []
    for p in prepared:
        layout = Layout(**p.request.pins.pinned())
        tps = predict(p, layout, with_attention(eff, p.family))[0]
        step = float(p.request.global_batch_tokens or 0) / tps / p.request.n_gpus
        run = p.run.model_copy(update={"measured": p.run.measured.model_copy(update={"step_seconds": step})})
        out.append(
            Prepared(
                p.index,
                run,
                p.request,
                p.family,
                float(p.request.global_batch_tokens or 0) / step / p.request.n_gpus,
            )
        )
    return out
