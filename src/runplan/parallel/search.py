"""Exhaustive, vectorized search over parallel layouts: grid → array expressions → mask → sort.

The grid holds every combination of t, p, c (with d = GPUs/(t·p·c)), e, v, ZeRO stage, micro-batch size and
recomputation that satisfies the divisibility rules (``layout.py``). The micro-batch count m is not a free
axis: for fixed other axes, throughput rises with m (the bubble (p-1)/(v·m) and the per-step DP/optimizer
costs are amortised over more tokens) while memory does not depend on m once m ≥ p (1F1B holds min(m, p)
micro-batches), and m < p always breaks the bubble limit (bubble ≥ (p-1)/(p-1) = 1) or, interleaved,
Megatron's rule that m is a multiple of p. So the best layout uses the largest m whose global batch
d·b·m·s stays in the batch range, and each grid row is evaluated
at that m: no layout that could win is skipped.
``SearchResult.space_size`` counts every m in range; ``candidates`` counts the rows evaluated.
"""

from __future__ import annotations

import math
import time

import numpy as np

from runplan.defaults import MAX_GPUS, MAX_GPUS_PER_NODE, MAX_SEQ_LEN
from runplan.errors import Infeasible, SpecError
from runplan.parallel.batch import critical_batch
from runplan.parallel.layout import (
    RECOMPUTE_CODES,
    RECOMPUTE_NAMES,
    CriticalBatch,
    Efficiency,
    LayoutEstimate,
    MemoryBytes,
    ParallelRequest,
    SearchResult,
    TimeSeconds,
    TpBest,
)
from runplan.parallel.memory import ShapeTerms, memory_breakdown
from runplan.parallel.timing import default_efficiency, step_time
from runplan.scaling.budget import MIN_MFU
from runplan.units import SECONDS_PER_DAY

AXES = ("t", "p", "d", "e", "c", "v", "zero", "b", "rc", "sp")

# Bounds on a layout request (validate_request): far beyond any real run, so only typos are refused, and low
# enough that the integer grid arithmetic (int64) and the float time model stay finite.
# MAX_GPUS, MAX_GPUS_PER_NODE and MAX_SEQ_LEN are shared with the plan file (runplan.defaults).
#: 1e10 tokens per step: about 150× the largest batch reported (DeepSeek-V3 ramps to 15,360 sequences of
#: 4,096 = 63M tokens, arXiv 2412.19437 §4.2; Llama 3 405B uses 16M).
MAX_GLOBAL_BATCH_TOKENS = 1e10
#: 1e20 training tokens: millions of times the largest pre-training sets reported by 2025 (Qwen3: 36T).
MAX_TRAINING_TOKENS = 1e20
CONSTRAINT_NAMES = ("memory", "bubble", "global_batch")


def divisors(n: int) -> list[int]:
    """Positive divisors of ``n`` in increasing order."""
    small = [k for k in range(1, math.isqrt(n) + 1) if n % k == 0]
    return sorted(set(small + [n // k for k in small]))


#: User-facing names of the request fields that :func:`validate_request` checks, per entry point.
FLAG_NAMES = {
    "n_gpus": "--gpus",
    "gpus_per_node": "--gpus-per-node",
    "global_batch_tokens": "--global-batch",
    "training_tokens": "--training-tokens",
    "min_global_batch_tokens": "--min-batch",
    "max_global_batch_tokens": "--max-batch",
    "mfu_override": "--mfu",
    "seq_len": "--seq-len",
    "reserve_bytes": "--reserve",
    "gpu": "--gpu",
    "tp": "--tp",
    "pp": "--pp",
    "dp": "--dp",
    "ep": "--ep",
    "cp": "--cp",
    "vpp": "--vpp",
    "micro_batch": "--mbs",
    "microbatches": "--microbatches",
}
PLAN_KEYS = {
    "n_gpus": "cluster.gpus",
    "gpus_per_node": "cluster.gpus_per_node",
    "global_batch_tokens": "schedule.global_batch_tokens",
    "training_tokens": "budget",
    "min_global_batch_tokens": "constraints.min_global_batch_tokens",
    "max_global_batch_tokens": "constraints.max_global_batch_tokens",
    "mfu_override": "mfu_override",
    "seq_len": "training.seq_len",
    "reserve_bytes": "constraints.reserve_bytes",
    "gpu": "cluster.gpu",
    "tp": "parallel.tp",
    "pp": "parallel.pp",
    "dp": "parallel.dp",
    "ep": "parallel.ep",
    "cp": "parallel.cp",
    "vpp": "parallel.vpp",
    "micro_batch": "parallel.micro_batch",
    "microbatches": "parallel.microbatches",
}


def validate_request(request: ParallelRequest, names: dict[str, str] | None = None) -> None:
    """Refuse requests no layout search can answer sensibly, with a SpecError naming the flag or key.

    ``names`` maps request fields to what the user typed (:data:`FLAG_NAMES`, :data:`PLAN_KEYS`). Checks:
    whole nodes (a job of more than one node uses every GPU of each node), a target batch of at least one
    sequence and at most the training tokens (else the run is less than one step), a batch range with
    min ≤ max, an MFU override of at least MIN_MFU (it divides the step time), and the bounds above
    (MAX_GPUS, MAX_SEQ_LEN, MAX_GLOBAL_BATCH_TOKENS, MAX_TRAINING_TOKENS).
    """
    name = {field: field for field in FLAG_NAMES} | (names or {})
    n, node = request.n_gpus, request.node_size
    if n > MAX_GPUS:
        raise SpecError(
            f"{float(n):.4g} GPUs is beyond any cluster (limit {MAX_GPUS:,}; the largest reported by 2025 "
            "hold a few hundred thousand)",
            where=name["n_gpus"],
            hint="check the number, e.g. 512 or 16k",
        )
    if request.gpus_per_node is not None and request.gpus_per_node > MAX_GPUS_PER_NODE:
        raise SpecError(
            f"{float(request.gpus_per_node):.4g} GPUs per node is beyond any NVLink domain (limit "
            f"{MAX_GPUS_PER_NODE:,}; HGX nodes have 8, GB200 NVL72 racks 72)",
            where=name["gpus_per_node"],
            hint="e.g. 8",
        )
    if request.seq_len > MAX_SEQ_LEN:
        raise SpecError(
            f"a sequence of {float(request.seq_len):.3g} tokens is beyond any trained context (limit "
            f"{MAX_SEQ_LEN:.0e}; the longest advertised by 2025 is 10M)",
            where=name["seq_len"],
            hint="e.g. 8192 or 128k",
        )
    if n > node and n % node:
        raise SpecError(
            f"{n} GPUs do not fill whole nodes of {node}",
            where=name["n_gpus"],
            hint=f"use a multiple of {node}, e.g. {n - n % node or node}, or set GPUs per node",
        )
    _validate_gpu(request, name)
    _validate_pins(request, name)
    reserve = request.constraints.reserve_bytes
    if reserve >= request.gpu.hbm_bytes:
        raise SpecError(
            f"a reserve of {reserve:.3g} bytes is not below the {request.gpu.name}'s "
            f"{request.gpu.hbm_bytes / 1e9:.0f} GB of HBM: nothing would be left for the model",
            where=name["reserve_bytes"],
            hint="typical: 2GB to 5GB",
        )
    batch, tokens = request.global_batch_tokens, request.training_tokens
    if batch is not None and batch < request.seq_len:
        raise SpecError(
            f"a global batch of {batch:,.0f} tokens is less than one sequence of {request.seq_len:,}",
            where=name["global_batch_tokens"],
            hint=f"use a multiple of the sequence length, e.g. {request.seq_len * 256:,}",
        )
    if batch is not None and tokens is not None and batch > tokens:
        raise SpecError(
            f"a global batch of {batch:.4g} tokens is more than the {tokens:.4g} training tokens "
            "(the run would be less than one step)",
            where=name["global_batch_tokens"],
            hint="typical batches are 1M to 16M tokens",
        )
    cons = request.constraints
    low, high = cons.min_global_batch_tokens, cons.max_global_batch_tokens
    if low is not None and high is not None and low > high:
        raise SpecError(
            f"the smallest batch {low:.4g} is above the largest {high:.4g}",
            where=name["min_global_batch_tokens"],
            hint=f"swap them, or lower {name['min_global_batch_tokens']}",
        )
    for field, value, limit in (
        ("global_batch_tokens", request.global_batch_tokens, MAX_GLOBAL_BATCH_TOKENS),
        ("min_global_batch_tokens", request.constraints.min_global_batch_tokens, MAX_GLOBAL_BATCH_TOKENS),
        ("max_global_batch_tokens", request.constraints.max_global_batch_tokens, MAX_GLOBAL_BATCH_TOKENS),
        ("training_tokens", request.training_tokens, MAX_TRAINING_TOKENS),
    ):
        if value is not None and value > limit:
            what = "training tokens" if field == "training_tokens" else "tokens per step"
            raise SpecError(
                f"{value:.3g} {what} is beyond any real run (limit {limit:.0e})",
                where=name[field],
                hint="check the exponent; batches of 1M to 64M tokens and 1T to 40T training tokens are usual"
                if field != "training_tokens"
                else "check the exponent; 1T to 40T training tokens are usual",
            )
    if request.mfu_override is not None and request.mfu_override < MIN_MFU:
        raise SpecError(
            f"must be at least {MIN_MFU:g}, got {request.mfu_override:g}",
            where=name["mfu_override"],
            hint="typical: 0.3 to 0.5",
        )


#: Ranges of a GPU spec the time and memory models accept (an inline or catalog GPU far outside them is a
#: typo): peak bf16 FLOP/s from a 2016 P100 (~2e13) to beyond any announced part (B200 dense ~2.3e15); HBM
#: from 1 GB to 100 TB; every bandwidth at least 100 MB/s; board power 1 W to 100 kW.
GPU_RANGES = {
    "bf16_flops": (1e12, 1e18, "FLOP/s"),
    "hbm_bytes": (1e9, 1e14, "bytes"),
    "hbm_bandwidth_bytes_per_s": (1e8, 1e15, "bytes/s"),
    "intra_node_bandwidth_bytes_per_s": (1e8, 1e15, "bytes/s"),
    "inter_node_bandwidth_bytes_per_s": (1e8, 1e15, "bytes/s"),
    "tdp_watts": (1.0, 1e5, "W"),
}


def _validate_gpu(request: ParallelRequest, name: dict[str, str]) -> None:
    """A GPU spec whose numbers lie far outside any accelerator (GPU_RANGES) is refused, naming the field."""
    gpu = request.gpu
    for field, (low, high, unit) in GPU_RANGES.items():
        value = getattr(gpu, field)
        if not low <= value <= high:
            raise SpecError(
                f"GPU '{gpu.name}': {field} {value:.3g} {unit} is outside [{low:.0e}, {high:.0e}]",
                where=f"{name['gpu']}.{field}" if name["gpu"].startswith("cluster") else name["gpu"],
                hint="check the units; an H100 SXM has 989e12 FLOP/s, 80GB, 3.35e12 B/s and 700 W",
            )


def _validate_pins(request: ParallelRequest, name: dict[str, str]) -> None:
    """Pinned degrees above the GPU count (or layers, for vpp), and a pinned micro-batch or count of
    micro-batches above MAX_GLOBAL_BATCH_TOKENS, are typos: refused here, before the int64 grid."""
    pins, n = request.pins, request.n_gpus
    for axis in ("tp", "pp", "dp", "ep", "cp"):
        value = getattr(pins, axis)
        if value is not None and value > n:
            raise SpecError(
                f"{axis}={float(value):.4g} is more than the {n:,} GPUs of the job",
                where=name[axis],
                hint=f"a parallel degree divides the GPU count, e.g. {axis} 8",
            )
    if pins.vpp is not None and pins.vpp > request.model.n_layers:
        raise SpecError(
            f"vpp={float(pins.vpp):.4g} is more chunks than the {request.model.n_layers} layers",
            where=name["vpp"],
            hint="interleaving splits each stage's layers into v chunks, e.g. vpp 2",
        )
    s = request.seq_len
    b, m = pins.micro_batch, pins.microbatches
    for field, value in (
        ("micro_batch", b),
        ("microbatches", m),
        ("microbatches", b * m if b and m else None),
    ):
        if value is not None and value * s > MAX_GLOBAL_BATCH_TOKENS:
            raise SpecError(
                f"{float(value):.4g} sequences of {s:,} tokens per data-parallel rank is beyond any real step "
                f"(limit {MAX_GLOBAL_BATCH_TOKENS:.0e} tokens per step)",
                where=name[field],
                hint="micro-batches of 1 to 16 sequences and tens of micro-batches per step are usual",
            )


def batch_range_tokens(request: ParallelRequest, crit: CriticalBatch) -> tuple[float, float, str]:
    """(low, high, where it came from): target ± tolerance, else [min, max or the critical batch]."""
    cons = request.constraints
    if request.global_batch_tokens is not None:
        tol = request.global_batch_tolerance
        low = request.global_batch_tokens * (1.0 - tol)
        high = request.global_batch_tokens * (1.0 + tol)
        source = f"target {request.global_batch_tokens:.4g} tokens ± {tol:.0%}"
        if cons.min_global_batch_tokens is not None:
            low = max(low, cons.min_global_batch_tokens)
        if cons.max_global_batch_tokens is not None:
            high = min(high, cons.max_global_batch_tokens)
        return low, high, source
    low = cons.min_global_batch_tokens or float(request.seq_len)
    if cons.max_global_batch_tokens is not None:
        return low, cons.max_global_batch_tokens, "given range"
    # the critical batch of a very long run can exceed any batch planned: cap it (MAX_GLOBAL_BATCH_TOKENS)
    return low, max(min(crit.tokens, MAX_GLOBAL_BATCH_TOKENS), low), "at most the critical batch"


def structural_axes(request: ParallelRequest) -> tuple[list[tuple[int, ...]], list[str]]:
    """Every (t, p, c, d, e, v) allowed by the divisibility rules and the pins; reasons when none is."""
    shape, pins, cons = request.model, request.pins, request.constraints
    n, node, L, s = request.n_gpus, request.node_size, shape.n_layers, request.seq_len
    rows: list[tuple[int, ...]] = []
    tps = [
        t
        for t in divisors(n)
        if shape.n_heads % t == 0 and shape.n_kv_heads % t == 0 and (t <= node or cons.allow_cross_node_tp)
    ]
    if pins.tp is not None:
        tps = [t for t in tps if t == pins.tp]
    for t in tps:
        pps = [p for p in divisors(n // t) if p <= L and (L % p == 0 or cons.allow_uneven_pipeline)]
        if pins.pp is not None:
            pps = [p for p in pps if p == pins.pp]
        for p in pps:
            cps = [c for c in divisors(n // (t * p)) if c == 1 or s % (2 * c) == 0]
            if pins.cp is not None:
                cps = [c for c in cps if c == pins.cp]
            for c in cps:
                d = n // (t * p * c)
                if pins.dp is not None and d != pins.dp:
                    continue
                eps = [e for e in divisors(shape.n_experts) if d % e == 0] if shape.is_moe else [1]
                if pins.ep is not None:
                    eps = [e for e in eps if e == pins.ep]
                # interleaving splits the largest stage's ceil(L/p) layers into v chunks; with uneven stages
                # the shorter ones get shorter chunks (Megatron-core's --pipeline-model-parallel-layout;
                # Llama 3 ran 126 layers on PP16 with interleaving, Grattafiori et al. 2024 §3.3.2)
                vs = divisors(-(-L // p)) if p >= 2 else [1]
                if pins.vpp is not None:
                    vs = [v for v in vs if v == pins.vpp]
                for e in eps:
                    rows.extend((t, p, c, d, e, v) for v in vs)
    reasons = []
    if not rows:
        if not tps:
            reasons.append(
                f"no TP degree divides {n} GPUs, {shape.n_heads} heads and {shape.n_kv_heads} KV heads"
                + ("" if request.constraints.allow_cross_node_tp else f" within a node of {node}")
                + (f" with tp={pins.tp}" if pins.tp else "")
            )
        else:
            pinned = {k: v for k, v in pins.model_dump().items() if v is not None}
            reasons.append(
                f"no layout satisfies t·p·d·c = {n} with the divisibility rules (layers {L}, "
                f"sequence {s}, experts {shape.n_experts}) and the pins {pinned}"
            )
    return rows, reasons


def build_grid(request: ParallelRequest) -> tuple[dict[str, np.ndarray], list[str]]:
    """The candidate grid as arrays (m not yet set)."""
    pins = request.pins
    structural, reasons = structural_axes(request)
    if not structural:
        return {}, reasons
    zeros = [pins.zero] if pins.zero is not None else [0, 1, 2, 3]
    mbs = [pins.micro_batch] if pins.micro_batch is not None else list(request.micro_batch_choices)
    rcs = [RECOMPUTE_CODES[pins.recompute]] if pins.recompute is not None else [0, 1, 2]
    base = np.asarray(structural, dtype=np.int64)  # columns t, p, c, d, e, v
    inner = np.asarray([(z, b, r) for z in zeros for b in mbs for r in rcs], dtype=np.int64)
    rows = np.repeat(base, len(inner), axis=0)
    tail = np.tile(inner, (len(base), 1))
    grid = {
        "t": rows[:, 0],
        "p": rows[:, 1],
        "c": rows[:, 2],
        "d": rows[:, 3],
        "e": rows[:, 4],
        "v": rows[:, 5],
        "zero": tail[:, 0],
        "b": tail[:, 1],
        "rc": tail[:, 2],
    }
    grid["sp"] = (
        np.full(len(rows), pins.sequence_parallel, dtype=bool)
        if pins.sequence_parallel is not None
        else grid["t"] > 1
    )
    return grid, reasons


def _ceil_div(a, b):
    return -(-a // b)


def choose_microbatches(request: ParallelRequest, grid: dict, low_tokens: float, high_tokens: float):
    """(m to evaluate, batch-range ok, m values in range per row) — the largest m in range, see module doc."""
    s = request.seq_len
    # clip before the int64 arithmetic: a batch range from a huge critical batch (many training tokens)
    # would overflow it, and no batch above MAX_GLOBAL_BATCH_TOKENS is planned anyway
    low_tokens = min(low_tokens, MAX_GLOBAL_BATCH_TOKENS)
    high_tokens = min(high_tokens, MAX_GLOBAL_BATCH_TOKENS)
    low_seq = math.ceil(low_tokens / s - 1e-9)
    high_seq = math.floor(high_tokens / s + 1e-9)
    step = np.where(grid["v"] > 1, grid["p"], 1)
    per = grid["d"] * grid["b"]
    if request.pins.microbatches is not None:
        m = np.full_like(per, request.pins.microbatches)
        count = np.ones_like(per)
    else:
        m_high = (high_seq // per) // step * step
        m_low = _ceil_div(_ceil_div(low_seq, per), step) * step
        count = np.maximum(0, (m_high - m_low) // step + 1)
        m = np.where(m_high >= step, m_high, step)
    sequences = per * m
    ok = (m % step == 0) & (sequences >= low_seq) & (sequences <= high_seq)
    return m, ok, count


def evaluate(request: ParallelRequest, grid: dict, eff: Efficiency | None = None) -> dict[str, np.ndarray]:
    """Memory, time, throughput and utilisation of every row of ``grid`` (which must hold m)."""
    shape, gpu = request.model, request.gpu
    terms = ShapeTerms.from_shape(shape)
    eff = eff or request.efficiency or default_efficiency(gpu)
    s = request.seq_len
    mem = memory_breakdown(
        terms,
        grid,
        seq_len=s,
        gradient_bytes=request.gradient_bytes,
        reserve_bytes=request.constraints.reserve_bytes,
        flash=request.flash_attention,
    )
    times = step_time(
        terms,
        grid,
        seq_len=s,
        gpu=gpu,
        node_size=request.node_size,
        n_gpus=request.n_gpus,
        gradient_bytes=request.gradient_bytes,
        eff=eff,
        flash=request.flash_attention,
        tp_overlap=request.tp_comm_overlap,
    )
    tokens_per_step = grid["d"].astype(float) * grid["b"] * grid["m"] * s  # float: no int64 overflow
    model_flops_token = shape.model_flops_per_token(s)
    recompute_flops_token = 2.0 * shape.active_non_embedding_params + shape.attention_flops_per_token(s) / 3.0
    peak_total = request.n_gpus * gpu.bf16_flops
    step = times["step"]
    model_tokens_per_second = tokens_per_step / step
    if request.mfu_override is not None:
        step = model_flops_token * tokens_per_step / (request.mfu_override * peak_total)
        times = {k: np.zeros_like(step) for k in times}
        share = (grid["p"] - 1.0) / (grid["v"] * grid["m"])
        times["bubble"] = step * share / (1.0 + share)
        times["compute"] = step - times["bubble"]
        times["step"] = step
        # exactly equal for every row (not up to rounding), so the time model's own speed breaks the tie
        tokens_per_second = np.full_like(step, request.mfu_override * peak_total / model_flops_token)
    else:
        tokens_per_second = model_tokens_per_second
    hardware_token = model_flops_token + np.where(grid["rc"] == 2, recompute_flops_token, 0.0)
    out = {f"mem_{k}": v for k, v in mem.items()}
    out.update({f"time_{k}": v for k, v in times.items()})
    out.update(
        step=step,
        tokens_per_step=tokens_per_step,
        tokens_per_second=tokens_per_second,
        model_tokens_per_second=model_tokens_per_second,
        mfu=model_flops_token * tokens_per_second / peak_total,
        hfu=hardware_token * tokens_per_second / peak_total,
        bubble=(grid["p"] - 1.0) / (grid["v"] * grid["m"]),
    )
    return out


def _estimate(
    request: ParallelRequest,
    grid: dict,
    ev: dict,
    i: int,
    *,
    limit: float,
    low: float,
    high: float,
    batch_source: str,
    violations: list[str],
) -> LayoutEstimate:
    shape, s = request.model, request.seq_len
    t, p, d, e, c, v, m, b = (int(grid[k][i]) for k in ("t", "p", "d", "e", "c", "v", "m", "b"))
    layers = -(-shape.n_layers // p)
    tps = float(ev["tokens_per_second"][i])
    total = float(ev["mem_total"][i])
    bubble = float(ev["bubble"][i])
    tokens = int(ev["tokens_per_step"][i])
    cons = request.constraints
    why = [
        f"memory {total / 1e9:.1f} GB <= {limit / 1e9:.1f} GB = {request.gpu.hbm_bytes / 1e9:.0f} GB x "
        f"(1 - {cons.memory_headroom_fraction:g}) on the "
        f"{'last' if ev['mem_last_is_max'][i] else 'first'} stage",
        f"bubble (p-1)/(v*m) = {p - 1}/({v}*{m}) = {bubble:.3f} <= {cons.max_bubble_fraction:g}",
        f"global batch d*b*m*s = {d}*{b}*{m}*{s} = {tokens:,} tokens in [{low:,.0f}, {high:,.0f}] "
        f"({batch_source})",
        f"TP {t} divides {shape.n_heads} heads and {shape.n_kv_heads} KV heads"
        + (
            f", within a node of {request.node_size}"
            if t <= request.node_size
            else ", across nodes (allowed)"
        ),
        f"PP {p}: {shape.n_layers} layers, {layers} on the largest stage"
        + ("" if shape.n_layers % p == 0 else " (uneven stages)")
        + (f", {v} interleaved chunks" if v > 1 else ""),
    ]
    if shape.is_moe:
        why.append(f"EP {e} divides {shape.n_experts} experts and DP {d} (borrowed from DP)")
    if c > 1:
        why.append(f"CP {c}: {s} tokens split into {2 * c} load-balanced chunks of {s // (2 * c)}")
    why.append(f"t*p*d*c = {t}*{p}*{d}*{c} = {t * p * d * c} GPUs")
    mem = MemoryBytes(
        **{
            k: float(ev[f"mem_{k}"][i])
            for k in ("weights", "gradients", "optimizer", "activations", "other", "total")
        }
    )
    time_s = TimeSeconds(**{k: float(ev[f"time_{k}"][i]) for k in TimeSeconds.model_fields})
    days = request.training_tokens / tps / SECONDS_PER_DAY if request.training_tokens else None
    return LayoutEstimate(
        tp=t,
        pp=p,
        dp=d,
        ep=e,
        cp=c,
        zero=int(grid["zero"][i]),
        micro_batch=b,
        microbatches=m,
        vpp=v,
        recompute=RECOMPUTE_NAMES[int(grid["rc"][i])],
        global_batch_tokens=tokens,
        bubble_fraction=bubble,
        memory_bytes=mem,
        step_seconds=float(ev["step"][i]),
        tokens_per_second=tps,
        mfu=float(ev["mfu"][i]),
        hfu=float(ev["hfu"][i]),
        tokens_per_second_per_gpu=tps / request.n_gpus,
        sequence_parallel=bool(grid["sp"][i]),
        layers_per_stage=layers,
        uneven_stages=shape.n_layers % p != 0,
        memory_stage="last" if ev["mem_last_is_max"][i] else "first",
        memory_limit_bytes=limit,
        time_seconds=time_s,
        days_to_train=days,
        violations=violations,
        why=why if not violations else [],
    )


def search(request: ParallelRequest) -> SearchResult:
    """Evaluate every layout of the space, keep the feasible ones, rank by predicted tokens per second."""
    start = time.perf_counter()
    validate_request(request)
    shape, cons = request.model, request.constraints
    crit = critical_batch(shape, request.seq_len, request.training_tokens)
    low, high, batch_source = batch_range_tokens(request, crit)
    info_model = {
        "name": shape.name,
        "total_params": shape.total_params,
        "active_params": shape.active_params,
        "n_layers": shape.n_layers,
        "d_model": shape.d_model,
    }
    info_cluster = {"gpu": request.gpu.name, "n_gpus": request.n_gpus, "gpus_per_node": request.node_size}
    grid, reasons = build_grid(request)
    notes = [
        f"critical batch {crit.tokens:,.0f} tokens: {crit.law}"
        + (" with D = 20·N assumed" if crit.assumed_training_tokens else "")
    ]
    empty = dict(
        model=info_model,
        cluster=info_cluster,
        seq_len=request.seq_len,
        batch_range_tokens=(low, high),
        critical_batch=crit,
        notes=notes,
    )
    if not grid:
        return SearchResult(
            candidates=0,
            space_size=0,
            feasible=0,
            layouts=[],
            eliminated={"divisibility": 0},
            eliminated_only={},
            nearest_misses=[],
            suggestions=reasons,
            search_seconds=time.perf_counter() - start,
            **empty,
        )
    m, batch_ok, count = choose_microbatches(request, grid, low, high)
    grid["m"] = m
    ev = evaluate(request, grid)
    limit = request.gpu.hbm_bytes * (1.0 - cons.memory_headroom_fraction)
    ok = {
        "memory": ev["mem_total"] <= limit,
        "bubble": ev["bubble"] <= cons.max_bubble_fraction + 1e-12,
        "global_batch": batch_ok,
    }
    feasible = ok["memory"] & ok["bubble"] & ok["global_batch"]
    n_rows = len(m)
    eliminated = {k: int(n_rows - v.sum()) for k, v in ok.items()}
    eliminated_only = {
        k: int((~ok[k] & np.logical_and.reduce([ok[o] for o in ok if o != k])).sum()) for k in ok
    }
    idx = np.flatnonzero(feasible)
    layouts: list[LayoutEstimate] = []
    misses: list[LayoutEstimate] = []
    ranked = idx
    if idx.size:
        keys = (
            grid["rc"][idx],
            grid["v"][idx],
            grid["b"][idx],
            grid["zero"][idx],
            grid["e"][idx],
            grid["c"][idx],
            grid["p"][idx],
            grid["t"][idx],
            ev["mem_total"][idx],
            -ev["model_tokens_per_second"][idx],  # under --mfu every row ties: the time model breaks it
            -ev["tokens_per_second"][idx],
        )
        ranked = idx[np.lexsort(keys)]
        order = ranked[: request.top]
        layouts = [
            _estimate(
                request,
                grid,
                ev,
                int(i),
                limit=limit,
                low=low,
                high=high,
                batch_source=batch_source,
                violations=[],
            )
            for i in order
        ]
    else:
        tokens = ev["tokens_per_step"]
        score = (
            np.maximum(0.0, ev["mem_total"] / limit - 1.0)
            + np.maximum(0.0, ev["bubble"] / max(cons.max_bubble_fraction, 1e-9) - 1.0)
            + np.where(
                batch_ok, 0.0, np.maximum(0.0, low - tokens) / low + np.maximum(0.0, tokens - high) / high
            )
        )
        order = np.lexsort((-ev["tokens_per_second"], score))[:3]
        for i in order:
            broken = []
            if not ok["memory"][i]:
                broken.append(f"memory {ev['mem_total'][i] / 1e9:.1f} GB > {limit / 1e9:.1f} GB")
            if not ok["bubble"][i]:
                broken.append(f"bubble {ev['bubble'][i]:.3f} > {cons.max_bubble_fraction:g}")
            if not batch_ok[i]:
                broken.append(f"global batch {tokens[i]:,.0f} tokens outside [{low:,.0f}, {high:,.0f}]")
            misses.append(
                _estimate(
                    request,
                    grid,
                    ev,
                    int(i),
                    limit=limit,
                    low=low,
                    high=high,
                    batch_source=batch_source,
                    violations=broken,
                )
            )
    result = SearchResult(
        candidates=n_rows,
        space_size=int(np.maximum(count, 1).sum()),
        feasible=int(idx.size),
        layouts=layouts,
        eliminated=eliminated,
        eliminated_only=eliminated_only,
        nearest_misses=misses,
        suggestions=[] if idx.size else _suggestions(request, grid, ev, ok, limit, low, high),
        best_by_tp=[] if request.mfu_override is not None else _best_by_tp(grid, ev, ranked),
        search_seconds=time.perf_counter() - start,
        **empty,
    )
    return result


def _best_by_tp(grid: dict, ev: dict, ranked: np.ndarray) -> list[TpBest]:
    """The first row of each TP degree in the full ranking (users ask 'how far behind is TP 8?')."""
    if not ranked.size:
        return []
    top = float(ev["tokens_per_second"][ranked[0]])
    # first occurrence of each TP degree in the ranking = its best row under the ranking's tie-breaks
    degrees, first = np.unique(grid["t"][ranked], return_index=True)
    out = []
    for tp, i in zip(degrees, ranked[first], strict=True):
        i = int(i)
        layout = (
            f"PP{int(grid['p'][i])} DP{int(grid['d'][i])} CP{int(grid['c'][i])} EP{int(grid['e'][i])} "
            f"ZeRO-{int(grid['zero'][i])} mbs{int(grid['b'][i])} v{int(grid['v'][i])} "
            f"{RECOMPUTE_NAMES[int(grid['rc'][i])]}"
        )
        speed = float(ev["tokens_per_second"][i])
        out.append(
            TpBest(
                tp=int(tp),
                layout=layout,
                tokens_per_second=speed,
                mfu=float(ev["mfu"][i]),
                behind_best=1 - speed / top,
            )
        )
    return out


def _suggestions(
    request: ParallelRequest, grid: dict, ev: dict, ok: dict, limit: float, low: float, high: float
) -> list[str]:
    """What would make the request feasible, from which constraint removed the candidates."""
    shape, gpu, pins = request.model, request.gpu, request.pins
    out: list[str] = []
    pinned = [k for k, v in pins.model_dump().items() if v is not None]
    if not ok["memory"].any():
        best = float(ev["mem_total"].min())
        # bf16 weights (2) + gradients (request.gradient_bytes: 4 fp32, 2 bf16) + Adam's fp32 master weights,
        # momentum and variance (12) per parameter: the mixed-precision model states of ZeRO (Rajbhandari et
        # al. 2020, §3.1: 2 + 2 + 12 = 16 with bf16 gradients); activations come on top
        per_param = 2 + request.gradient_bytes + 12
        states = per_param * float(shape.total_params)
        usable = limit - request.constraints.reserve_bytes
        need = math.ceil(states / max(usable, 1.0))
        out.append(
            f"the smallest memory of any layout is {best / 1e9:.1f} GB against {limit / 1e9:.1f} GB usable"
        )
        out.append(
            f"more GPUs: model states alone ({per_param} bytes/param: 2 weights + {request.gradient_bytes} "
            f"gradients + 12 optimizer, fully sharded) need at least {need:,} {gpu.name} GPUs"
        )
        out.append(
            "ZeRO-3 (--zero 3), full recomputation (--recompute full), a smaller micro-batch (--mbs 1)"
            + (", context parallelism (--cp) for this long sequence" if request.seq_len >= 32768 else "")
        )
    if not ok["bubble"].any():
        out.append(
            "more micro-batches per step (a larger --global-batch), interleaving (--vpp 2+), "
            "fewer pipeline stages, or a larger --max-bubble"
        )
    if not ok["global_batch"].any():
        smallest = float((grid["d"] * request.seq_len).min())
        out.append(
            f"the smallest global batch any layout can run is {smallest:,.0f} tokens (d*1*1*s) against "
            f"a ceiling of {high:,.0f}: use fewer GPUs, more TP/PP/CP to shrink DP, or raise the batch "
            "(--global-batch / --max-batch)"
        )
    if pinned:
        out.append("unpin " + ", ".join(f"--{k}" for k in pinned) + " to widen the search")
    return out


def ensure_feasible(result: SearchResult) -> SearchResult:
    """Return ``result`` if any layout is feasible, else raise Infeasible naming the constraint."""
    if result.feasible:
        return result
    if not result.candidates:
        raise Infeasible(
            "no layout passes the divisibility rules: " + "; ".join(result.suggestions),
            suggestions=["change the GPU count or the pins"],
        )
    everyone = [k for k, v in result.eliminated.items() if v == result.candidates]
    if everyone:
        names = " and ".join(everyone)
        reason = f"every one of the {result.candidates:,} candidates breaks the {names} constraint"
    else:
        counts = ", ".join(f"{k} removed {v:,}" for k, v in result.eliminated.items())
        reason = (
            f"no candidate satisfies memory, bubble and batch together ({counts} of {result.candidates:,})"
        )
    near = "; ".join(
        f"tp{x.tp} pp{x.pp} dp{x.dp} cp{x.cp} ep{x.ep} zero{x.zero} mbs{x.micro_batch} "
        f"{x.recompute}: " + ", ".join(x.violations)
        for x in result.nearest_misses
    )
    if near:
        reason += f"; nearest misses: {near}"
    raise Infeasible(reason, suggestions=result.suggestions)
