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

import functools
import itertools
import math
import time
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from runplan.errors import Infeasible, PinConflict, SpecError
from runplan.parallel.batch import critical_batch
from runplan.parallel.grid import Columns, Evaluation, LayoutGrid
from runplan.parallel.layout import (
    CriticalBatch,
    Efficiency,
    Layout,
    LayoutEstimate,
    MemoryBytes,
    ParallelRequest,
    SearchResult,
    StageTotalBytes,
    TimeSeconds,
    TpBest,
    searched_domain,
)
from runplan.parallel.memory import ShapeTerms, memory_breakdown, model_state_bytes
from runplan.parallel.request_rules import MAX_GLOBAL_BATCH_TOKENS, check_request, pinned_mesh_problem
from runplan.parallel.timing import (
    context_parallel_notes,
    default_efficiency,
    precision_notes,
    recompute_flops_per_token,
    step_time,
    within_node,
)
from runplan.units import SECONDS_PER_DAY

#: Most candidate layouts one search evaluates: about 0.5 GB and 1.5 s per million rows on one core (8.8M
#: GPUs, 5,040 layers, 720 heads: 7.6M rows took 11 s and 3.7 GB), so 2M keeps any accepted request under
#: 10 s and 2 GB. Real requests are far below it (405B on 16,384 H100: 54,960 rows).
MAX_GRID_ROWS = 2_000_000
CONSTRAINT_NAMES = ("memory", "bubble", "global_batch")


@functools.lru_cache(maxsize=4096)
def _divisors(n: int) -> tuple[int, ...]:
    small = [k for k in range(1, math.isqrt(n) + 1) if n % k == 0]
    return tuple(sorted(set(small + [n // k for k in small])))


def divisors(n: int) -> list[int]:
    """Positive divisors of ``n`` in increasing order (computed once per ``n``: the structural loops ask for
    the same few numbers many times)."""
    return list(_divisors(n))


def batch_range_tokens(request: ParallelRequest, crit: CriticalBatch) -> tuple[float, float, str]:
    """(low, high, where it came from): target ± tolerance, else [min, max or DeepSeek's compute-optimal
    B_opt as the ceiling]."""
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
    # B_opt of a very long run can exceed any batch planned: cap it (MAX_GLOBAL_BATCH_TOKENS)
    ceiling = min(crit.tokens, MAX_GLOBAL_BATCH_TOKENS)
    if low > ceiling:  # a floor above the ceiling: held within the target tolerance above it, as a
        # target would be, rather than to the floor exactly (which almost no d·b·m·s hits)
        high = low * (1.0 + request.global_batch_tolerance)
        return low, high, f"at least {low:.4g} tokens, above the batch ceiling {ceiling:.3g}"
    if ceiling < crit.tokens:
        return (
            low,
            ceiling,
            f"at most {ceiling:.3g} tokens, DeepSeek's compute-optimal B_opt {crit.tokens:.3g} capped",
        )
    return low, ceiling, "at most DeepSeek's compute-optimal B_opt"


def structural_axes(request: ParallelRequest) -> tuple[list[tuple[int, ...]], list[str]]:
    """Every (t, p, c, d, e, v) allowed by the divisibility rules and the pins; reasons when none is."""
    shape, pins, cons = request.model, request.pins, request.constraints
    n, node, L, s = request.n_gpus, request.node_size, shape.n_layers, request.seq_len
    rows: list[tuple[int, ...]] = []
    tps = [
        t
        for t in divisors(n)
        if shape.n_heads % t == 0
        and shape.n_kv_heads % t == 0
        and (within_node(t, node, n) or cons.allow_cross_node_tp)
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
            elif not request.stack.context_parallel:  # the engine has none (a pin still wins)
                cps = [1]
            for c in cps:
                d = n // (t * p * c)
                if pins.dp is not None and d != pins.dp:
                    continue
                # EP borrows the d·c ranks that hold the same layers (Megatron-core's MoE parallel folding,
                # core_r0.10.0 parallel_state; torchtitan ParallelDims: (dp_shard·cp) % ep == 0)
                eps = [e for e in divisors(shape.n_experts) if (d * c) % e == 0] if shape.is_moe else [1]
                if pins.ep is not None:
                    eps = [e for e in eps if e == pins.ep]
                # interleaving splits the largest stage's ceil(L/p) layers into v chunks; with uneven stages
                # the shorter ones get shorter chunks (Megatron-core's --pipeline-model-parallel-layout;
                # Llama 3 ran 126 layers on PP16 with interleaving, Grattafiori et al. 2024 §3.3.2)
                vs = divisors(-(-L // p)) if p >= 2 else [1]
                if pins.vpp is not None:
                    vs = [v for v in vs if v == pins.vpp]
                elif not request.stack.interleaved_pipeline:  # plain 1F1B only (a pin still wins)
                    vs = [1]
                for e in eps:
                    rows.extend((t, p, c, d, e, v) for v in vs)
    reasons = []
    if not rows:
        if not tps:
            reasons += _pin_conflicts(request) or [
                f"no TP degree divides {n} GPUs, {shape.n_heads} heads and {shape.n_kv_heads} KV heads"
                + ("" if request.constraints.allow_cross_node_tp else f" within a node of {node}")
                + (f" with tp={pins.tp}" if pins.tp else "")
            ]
        else:
            pinned = ", ".join(f"parallel.{k}={v}" for k, v in pins.model_dump().items() if v is not None)
            reasons += _pin_conflicts(request) or [
                f"no layout satisfies t·p·d·c = {n} with the divisibility rules (layers {L}, "
                f"sequence {s}, experts {shape.n_experts}) and the pins {pinned}"
            ]
    return rows, reasons


def _pin_conflicts(request: ParallelRequest) -> list[str]:
    """The pins that break a divisibility rule on their own (whatever the other axes), each named with its
    rule: so an infeasible pinned request says which pin to change, not only that some combination fails."""
    return [f"{text} ({hint})" for _, text, hint in pin_conflicts(request)]


def _valid(values: list[int]) -> str:
    """Allowed values, the first few: '1, 2, 4, 8' or '1, 2, 3, ... 64'."""
    return (
        ", ".join(map(str, values))
        if len(values) <= 8
        else ", ".join(map(str, values[:6])) + f", ... {values[-1]}"
    )


def pin_conflicts(request: ParallelRequest) -> list[tuple[str, str, str]]:
    """(axis, rule broken, fix) for each pin that no layout can take whatever the other axes."""
    shape, pins, n = request.model, request.pins, request.n_gpus
    L, s, out = shape.n_layers, request.seq_len, []
    for axis in ("tp", "pp", "dp", "cp", "ep"):
        value = getattr(pins, axis)
        if value is not None and n % value:
            out.append((axis, f"{axis}={value} does not divide the {n:,} GPUs", f"pin a divisor of {n:,}"))
    mesh = pinned_mesh_problem(pins, n)
    if not out and mesh is not None:  # at the last pinned factor of the product (dp, where it is pinned)
        axis = next(a for a in ("dp", "cp", "pp", "tp") if getattr(pins, a) is not None)
        leave = ", or leave dp to the search" if axis == "dp" else ""
        out.append((axis, f"pinned {mesh}", f"pin tp·pp·dp·cp = the job's GPUs{leave}"))
    out += _tp_pin_conflicts(request)
    if pins.pp is not None and pins.pp > L:
        out.append(("pp", f"pp={pins.pp} is more pipeline stages than the {L} layers", f"pin pp ≤ {L}"))
    elif pins.pp is not None and L % pins.pp and not request.constraints.allow_uneven_pipeline:
        out.append(
            (
                "pp",
                f"pp={pins.pp} does not divide the {L} layers",
                f"pin one of {_valid(divisors(L))}, or allow uneven stages: constraints.allow_uneven_pipeline",
            )
        )
    if pins.vpp is not None and pins.vpp > 1 and pins.pp == 1:
        out.append(
            (
                "vpp",
                f"vpp={pins.vpp} interleaves pipeline stages, and pp=1 has none",
                "pin pp 2 or more, or vpp 1",
            )
        )
    elif pins.vpp is not None and pins.pp is not None and pins.pp > 1 and -(-L // pins.pp) % pins.vpp:
        stage = -(-L // pins.pp)
        out.append(
            (
                "vpp",
                f"vpp={pins.vpp} does not divide the {stage} layers of a stage at pp={pins.pp}",
                f"pin one of {_valid(divisors(stage))}",
            )
        )
    elif pins.vpp is not None and pins.vpp > 1 and pins.pp is None:
        out += _vpp_pin_conflicts(request)
    if pins.cp is not None and pins.cp > 1 and s % (2 * pins.cp):
        chunks = [c for c in divisors(s // 2) if n % c == 0] if s % 2 == 0 else [1]  # the job can take them
        out.append(
            (
                "cp",
                f"cp={pins.cp} needs the sequence ({s:,}) to split into 2·cp = {2 * pins.cp} equal chunks",
                f"pin one of {_valid(chunks)}, or a sequence divisible by {2 * pins.cp}",
            )
        )
    out += _expert_pin_conflicts(request)
    return out


def _vpp_pin_conflicts(request: ParallelRequest) -> list[tuple[str, str, str]]:
    """:func:`pin_conflicts` of a vpp pin without a pp pin: v must divide the largest stage's ceil(L/p) layers
    for some p the job can have (a divisor of its GPUs, 2 ≤ p ≤ L, dividing L unless stages may be uneven)."""
    L, v, cons = request.model.n_layers, request.pins.vpp, request.constraints
    stages = [
        -(-L // p)
        for p in divisors(request.n_gpus)
        if 2 <= p <= L and (L % p == 0 or cons.allow_uneven_pipeline)
    ]
    valid = sorted({c for layers in stages for c in divisors(layers)})
    if v is None or v in valid:
        return []
    sizes = ", ".join(f"{layers}" for layers in sorted(set(stages), reverse=True))
    return [
        (
            "vpp",
            f"vpp={v} divides no pipeline stage this job can have ({L} layers: stages of {sizes or 'none'} layers)",
            f"pin one of {_valid(valid)}" if valid else "pin vpp 1",
        )
    ]


def _tp_pin_conflicts(request: ParallelRequest) -> list[tuple[str, str, str]]:
    """:func:`pin_conflicts` of the tp pin: it divides the heads and KV heads, and (unless cross-node TP is
    allowed) its groups of consecutive ranks fit whole in a node (:func:`timing.within_node`)."""
    shape, pins = request.model, request.pins
    out: list[tuple[str, str, str]] = []
    if pins.tp is None:
        return out
    heads = math.gcd(shape.n_heads, shape.n_kv_heads)
    if heads % pins.tp:
        undivided = " and ".join(
            f"{count} {name}"
            for count, name in ((shape.n_heads, "heads"), (shape.n_kv_heads, "KV heads"))
            if count % pins.tp
        )
        out.append(
            (
                "tp",
                f"tp={pins.tp} does not divide the {undivided}",
                f"pin one of {_valid(divisors(heads))}",
            )
        )
    elif (
        not within_node(pins.tp, request.node_size, request.n_gpus)
        and not request.constraints.allow_cross_node_tp
    ):
        node = request.node_size
        within = [t for t in divisors(node) if heads % t == 0]
        out.append(
            (
                "tp",
                f"tp={pins.tp} is wider than a node of {node} GPUs"
                if pins.tp > node
                else f"tp={pins.tp} does not divide a node of {node} GPUs: groups of consecutive ranks "
                f"straddle two nodes (ranks {pins.tp}-{2 * pins.tp - 1} of the second group)",
                f"pin one of {_valid(within)}, or allow it: constraints.allow_cross_node_tp",
            )
        )
    return out


def _expert_pin_conflicts(request: ParallelRequest) -> list[tuple[str, str, str]]:
    """:func:`pin_conflicts` of the ep pin: experts are spread over the data- and context-parallel ranks."""
    shape, pins, n = request.model, request.pins, request.n_gpus
    if pins.ep is None:
        return []
    if pins.ep > 1 and not shape.is_moe:
        return [
            (
                "ep",
                f"ep={pins.ep} on a dense model: expert parallelism needs MoE layers",
                "pin ep 1, or drop it",
            )
        ]
    if shape.is_moe and shape.n_experts % pins.ep:
        return [
            (
                "ep",
                f"ep={pins.ep} does not divide the {shape.n_experts} experts",
                f"pin one of {_valid(divisors(shape.n_experts))}",
            )
        ]
    ranks, other = None, ""
    if pins.dp is not None and pins.cp is not None:
        ranks, how = pins.dp * pins.cp, f"dp·cp = {pins.dp}·{pins.cp}"
    elif pins.tp is not None and pins.pp is not None and n % (pins.tp * pins.pp) == 0:
        ranks, how = n // (pins.tp * pins.pp), f"dp·cp = {n:,}/(tp·pp)"  # whatever the split between them
    elif pins.tp is not None or pins.pp is not None:
        # one of tp, pp pinned: every d·c = n/(t·p) divides n/tp (or n/pp), so an ep that does not divide that
        # divides no d·c the free axis can leave (Megatron: world % (ETP·EP·PP) == 0 with ETP = TP)
        axis, value = ("tp", pins.tp) if pins.tp is not None else ("pp", pins.pp)
        if value and n % value == 0:
            ranks, how = n // value, f"dp·cp·{'pp' if axis == 'tp' else 'tp'} = {n:,}/{axis}"
            other = f", or a smaller {axis}"
    if ranks is None or ranks % pins.ep == 0:
        return []
    return [
        (
            "ep",
            f"ep={pins.ep} does not divide {how} = {ranks:,} (experts are spread over the data- and "
            "context-parallel ranks)",
            f"pin one of {_valid([e for e in divisors(ranks) if shape.n_experts % e == 0])}{other}",
        )
    ]


def build_grid(request: ParallelRequest) -> tuple[LayoutGrid | None, list[str]]:
    """The candidate grid (``microbatches`` still 0: :func:`choose_microbatches` sets it), or None and why.

    Rows are every structural (t, p, c, d, e, v) times every combination of the searched axes (the Layout
    fields annotated with :class:`Searched`, e.g. ZeRO stage and recomputation) and the micro-batch sizes;
    a pinned axis contributes its one value. Sequence parallelism is on whenever t > 1 unless pinned.
    """
    pins = request.pins
    structural, reasons = structural_axes(request)
    if not structural:
        return None, reasons
    inner_axes: dict[str, list[int]] = {}
    for axis in Layout.model_fields:
        domain = searched_domain(axis)
        if domain is None and axis != "micro_batch":
            continue
        values = list(request.micro_batch_choices if domain is None else domain.values)
        if axis == "zero" and request.stack.distributed_optimizer is not None:  # the stack fixes sharding
            values = [z for z in values if (z >= 1) == request.stack.distributed_optimizer]
        # Megatron asserts the distributed optimizer for fp8 parameter gathers and for its precision-aware
        # optimizer (bf16 moments: core/optimizer/__init__.py @ d98e8a64), the one engine that keeps them; a
        # pinned ZeRO-0 is still evaluated (a pinned layout always is), and the Megatron export refuses it
        if axis == "zero" and (
            request.stack.fp8_param_gather or request.stack.optimizer_state_dtype == "bf16"
        ):
            values = [z for z in values if z >= 1]
        if axis == "zero" and request.stack.zero_stages is not None:  # the stages the engine has
            values = [z for z in values if z in request.stack.zero_stages] or values
        if getattr(pins, axis) is not None:
            values = [getattr(pins, axis)]
        codes = domain.codes if domain is not None else None
        inner_axes[axis] = [codes[domain.values.index(v)] for v in values] if codes and domain else values
    _check_grid_size(len(structural) * math.prod(len(v) for v in inner_axes.values()))
    base = np.asarray(structural, dtype=np.int64)  # columns t, p, c, d, e, v
    inner = np.asarray(list(itertools.product(*inner_axes.values())), dtype=np.int64)
    rows = np.repeat(base, len(inner), axis=0)
    tail = np.tile(inner, (len(base), 1))
    columns: dict[str, np.ndarray] = {
        name: rows[:, i] for i, name in enumerate(("tp", "pp", "cp", "dp", "ep", "vpp"))
    }
    columns |= {name: tail[:, i] for i, name in enumerate(inner_axes)}
    keep = np.ones(len(rows), dtype=bool)
    if not (request.stack.fsdp_mixed_precision or (pins.zero == 3 and pins.pp not in (None, 1))):
        # ZeRO-3 under pipeline stages is PyTorch FSDP's (torchtitan; memory.model_state_bytes): DeepSpeed's
        # pipeline engine and Megatron's FSDP2 paths refuse it, so other stacks search it only when both are pinned
        keep &= ~((columns["zero"] == 3) & (columns["pp"] > 1))
    if request.stack.preset == "deepspeed" and not (pins.zero in (2, 3) and pins.pp not in (None, 1)):
        # DeepSpeed's PipelineEngine asserts ZeRO below 2 ("ZeRO-2 and ZeRO-3 are incompatible with pipeline
        # parallelism", runtime/pipe/engine.py; the export refuses it): searched only when both are pinned
        keep &= ~((columns["zero"] >= 2) & (columns["pp"] > 1))
    if request.stack.preset == "torchtitan-fsdp2" and pins.zero != 0:
        # torchtitan takes EP ranks from FSDP and CP ranks only (efsdp = dp_shard·cp·tp/(etp·ep), 0.2.2
        # distributed/parallel_dims.py); ZeRO-0 is DDP, dp_shard 1, so EP must divide c (the export refuses the rest)
        keep &= ~((columns["zero"] == 0) & (columns["ep"] > 1) & (columns["cp"] % columns["ep"] != 0))
    if pins.zero is None:  # no group to shard over (d·c = 1): ZeRO 0, 1 and 2 are one layout; keep the lowest
        stages = [z for z in inner_axes["zero"] if z <= 2]
        if len(stages) > 1:
            keep &= ~((columns["dp"] * columns["cp"] == 1) & np.isin(columns["zero"], sorted(stages)[1:]))
    if not keep.any():  # the engine rules above removed every row: say which pins meet them
        return None, [_engine_rules_reason(request)]
    if not keep.all():  # one copy of the columns, however many rules removed rows
        columns = {name: values[keep] for name, values in columns.items()}
        rows = rows[keep]
    columns["microbatches"] = np.zeros(len(rows), dtype=np.int64)
    # SP splits activations over the TP group: at t = 1 there is none, whatever is pinned
    columns["sequence_parallel"] = (columns["tp"] > 1) & (pins.sequence_parallel is not False)
    return LayoutGrid(columns), reasons


def _engine_rules_reason(request: ParallelRequest) -> str:
    """Why :func:`build_grid`'s engine rules left no row (every structural row has pipeline stages, e.g. a vpp
    pin, and the pinned ZeRO stage is one the stack's pipeline engine does not run under them), with what the
    engine runs (:func:`_engine_rules_fix`). A ZeRO-2/3 + PP layout on DeepSpeed is not offered: its
    PipelineEngine refuses it (runtime/pipe/engine.py, 0.19.8) and so does the export."""
    zero, preset = request.pins.zero, request.stack.preset
    if zero in (2, 3) and preset == "deepspeed":
        return "every layout the pins leave has pipeline stages, and DeepSpeed's pipeline engine runs ZeRO below 2 only"
    if zero == 3:
        # Megatron-LM @ d98e8a6: --use-torch-fsdp2 asserts pipeline_model_parallel_size == 1 (training/arguments.py),
        # Megatron FSDP v2 raises on it (core/distributed/fsdp/mcore_fsdp_adapter.py, _validate_config); Megatron
        # FSDP v1 (--use-megatron-fsdp, what the export writes for ZeRO-3) is not refused, but every functional
        # test of it runs PP 1 (tests/functional_tests). Pinned, the layout is evaluated (build_grid's rule).
        return (
            "every layout the pins leave has pipeline stages, and this stack searches ZeRO-3 under them only with "
            "parallel.pp pinned (FSDP2 under PyTorch pipelining is torchtitan's; Megatron-LM refuses "
            "--use-torch-fsdp2 with stages and tests Megatron FSDP with none): pin parallel.pp as well to evaluate "
            "it (on Megatron, an untested layout), or a lower parallel.zero"
        )
    return (
        "every layout the pins leave has pipeline stages, and the stack's engine rules remove every layout the "
        "pins leave: pin parallel.pp as well to evaluate it anyway, or a lower parallel.zero"
    )


def _engine_rules_fix(request: ParallelRequest) -> str:
    """What lifts :func:`build_grid`'s engine rules whatever the GPU count: the highest ZeRO stage the stack's
    pipeline engine runs under stages (below 2 on DeepSpeed, below 3 elsewhere); the GPU count cannot (a vpp pin
    needs stages on any cluster)."""
    zero, stack = request.pins.zero, request.stack
    if not zero:  # (a stage-0 or stack-restricted rule: no lower stage to offer)
        return "change the pins"
    below = 2 if stack.preset == "deepspeed" else 3
    stages = [z for z in (stack.zero_stages or (0, 1, 2, 3)) if z < min(below, zero)]
    if not stages:
        return "change the pins"
    return f"a lower ZeRO stage (parallel.zero={max(stages)})"


def _check_grid_size(rows: int) -> None:
    """A search of more than MAX_GRID_ROWS layouts is refused before any array is built, with the bound."""
    if rows > MAX_GRID_ROWS:
        raise SpecError(
            f"the layout search would evaluate {rows:,} layouts, more than {MAX_GRID_ROWS:,} (about 0.5 GB and "
            "1.5 s per million)",
            where="cluster.gpus",
            hint="pin the tensor, pipeline or expert degree (parallel.tp, parallel.pp, parallel.ep), or check "
            "the GPU count, layers, heads and experts for a typo",
        )


def _ceil_div(a, b):
    return -(-a // b)


def choose_microbatches(
    request: ParallelRequest, grid: LayoutGrid, low_tokens: float, high_tokens: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(m to evaluate, batch-range ok, m values in range per row) — the largest m in range, see module doc."""
    s = request.seq_len
    # clip before the int64 arithmetic: a batch range from a huge B_opt (many training tokens)
    # would overflow it, and no batch above MAX_GLOBAL_BATCH_TOKENS is planned anyway
    low_tokens = min(low_tokens, MAX_GLOBAL_BATCH_TOKENS)
    high_tokens = min(high_tokens, MAX_GLOBAL_BATCH_TOKENS)
    low_seq = math.ceil(low_tokens / s - 1e-9)
    high_seq = math.floor(high_tokens / s + 1e-9)
    step = np.where(grid.vpp > 1, grid.pp, 1)
    per = grid.dp * grid.micro_batch
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


def _timed(
    request: ParallelRequest, grid: LayoutGrid, eff: Efficiency | None, terms: ShapeTerms
) -> tuple[Columns[TimeSeconds], np.ndarray]:
    """(time by term, step seconds) of every row of ``grid``: the time model (timing.step_time) on the request."""
    return step_time(
        terms,
        grid,
        seq_len=request.seq_len,
        gpu=request.gpu,
        node_size=request.node_size,
        n_gpus=request.n_gpus,
        eff=eff or request.efficiency or default_efficiency(request.gpu),
        stack=request.stack,
    )


def _tokens_per_step(grid: LayoutGrid, seq_len: int) -> np.ndarray:
    return grid.dp.astype(float) * grid.micro_batch * grid.microbatches * seq_len  # float: no overflow


def evaluate(request: ParallelRequest, grid: LayoutGrid, eff: Efficiency | None = None) -> Evaluation:
    """Memory, time, throughput and utilisation of every row of ``grid`` (which must hold microbatches)."""
    shape, gpu = request.model, request.gpu
    terms = ShapeTerms.from_shape(shape)
    s = request.seq_len
    memory, last_is_max, stage_totals = memory_breakdown(
        terms,
        grid,
        seq_len=s,
        reserve_bytes=request.constraints.reserve_bytes,
        stack=request.stack,
    )
    times, step = _timed(request, grid, eff, terms)
    tokens_per_step = _tokens_per_step(grid, s)
    model_flops_token = shape.model_flops_per_token(s)
    peak_total = request.n_gpus * gpu.bf16_flops
    model_tokens_per_second = tokens_per_step / step
    bubble_fraction = (grid.pp - 1.0) / (grid.vpp * grid.microbatches)
    if request.mfu_override is not None:
        step = model_flops_token * tokens_per_step / (request.mfu_override * peak_total)
        share = bubble_fraction
        bubble = step * share / (1.0 + share)
        zeros = {name: np.zeros_like(step) for name in TimeSeconds.model_fields}
        times = Columns(TimeSeconds, zeros | {"bubble": bubble, "compute": step - bubble})
        # exactly equal for every row (not up to rounding), so the time model's own speed breaks the tie
        tokens_per_second = np.full_like(step, request.mfu_override * peak_total / model_flops_token)
    else:
        tokens_per_second = model_tokens_per_second
    # HFU's extra FLOPs: exactly what the time model reruns (timing.recompute_flops_per_token, its one rule)
    hardware_token = model_flops_token + recompute_flops_per_token(
        shape,
        terms,
        grid,
        gpu=gpu,
        eff=eff or request.efficiency or default_efficiency(gpu),
        seq_len=s,
        node_size=min(request.node_size, request.n_gpus),
        stack=request.stack,
    )
    return Evaluation(
        memory=memory,
        memory_last_is_max=last_is_max,
        memory_stage_totals=Columns(StageTotalBytes, stage_totals),
        time=times,
        step_seconds=step,
        tokens_per_step=tokens_per_step,
        tokens_per_second=tokens_per_second,
        model_tokens_per_second=model_tokens_per_second,
        mfu=model_flops_token * tokens_per_second / peak_total,
        hfu=hardware_token * tokens_per_second / peak_total,
        bubble_fraction=bubble_fraction,
    )


def tokens_per_second(
    request: ParallelRequest, grid: LayoutGrid, eff: Efficiency | None = None, terms: ShapeTerms | None = None
) -> np.ndarray:
    """Tokens/s over all GPUs of every row of ``grid``, as :func:`evaluate` gives them, without the memory model:
    what a fit of the time constants evaluates thousands of times (``runplan.calibrate.fit``). ``terms``: the
    request's model as ShapeTerms, when the caller keeps them."""
    if request.mfu_override is not None:
        return evaluate(request, grid, eff).tokens_per_second
    _, step = _timed(request, grid, eff, terms or ShapeTerms.from_shape(request.model))
    return _tokens_per_step(grid, request.seq_len) / step


@dataclass(frozen=True)
class _Bounds:
    """What a layout is judged against: the memory limit and the batch range (with where it came from)."""

    memory_limit_bytes: float
    low_tokens: float
    high_tokens: float
    batch_source: str


def _why(request: ParallelRequest, layout: Layout, ev: Evaluation, i: int, bounds: _Bounds) -> list[str]:
    """Why each constraint holds for row ``i``, in words."""
    shape, s, cons = request.model, request.seq_len, request.constraints
    t, p, d, e, c, v = layout.tp, layout.pp, layout.dp, layout.ep, layout.cp, layout.vpp
    m, b = layout.microbatches, layout.micro_batch
    layers = -(-shape.n_layers // p)
    limit = bounds.memory_limit_bytes
    why = [
        f"memory {float(ev.memory.total[i]) / 1e9:.1f} GB <= {limit / 1e9:.1f} GB = "
        f"{request.gpu.hbm_bytes / 1e9:.0f} GB x (1 - {cons.memory_headroom_fraction:g}) on the "
        f"{'last' if ev.memory_last_is_max[i] else 'first'} stage",
        f"bubble (p-1)/(v*m) = {p - 1}/({v}*{m}) = {float(ev.bubble_fraction[i]):.3f} <= "
        f"{cons.max_bubble_fraction:g}",
        f"global batch d*b*m*s = {d}*{b}*{m}*{s} = {int(ev.tokens_per_step[i]):,} tokens in "
        f"[{bounds.low_tokens:,.0f}, {bounds.high_tokens:,.0f}] ({bounds.batch_source})",
        f"TP {t} divides {shape.n_heads} heads and {shape.n_kv_heads} KV heads"
        + (
            f", within a node of {request.node_size}"
            if within_node(t, request.node_size, request.n_gpus)
            else ", across nodes (allowed)"
        ),
        f"PP {p}: {shape.n_layers} layers, {layers} on the largest stage"
        + ("" if shape.n_layers % p == 0 else " (uneven stages)")
        + (f", {v} interleaved chunks" if v > 1 else ""),
    ]
    if shape.is_moe and e == 1:
        why.append(f"EP 1: all {shape.n_experts} experts on every rank")
    elif shape.is_moe:
        why.append(
            f"EP {e} divides {shape.n_experts} experts and DP·CP {d * c} (borrowed from the data- and "
            "context-parallel ranks)"
            if c > 1
            else f"EP {e} divides {shape.n_experts} experts and DP {d} (borrowed from DP)"
        )
    if c > 1:
        why.append(f"CP {c}: {s} tokens split into {2 * c} load-balanced chunks of {s // (2 * c)}")
    why.append(f"t*p*d*c = {t}*{p}*{d}*{c} = {t * p * d * c} GPUs")
    return why


def _estimate(
    request: ParallelRequest, grid: LayoutGrid, ev: Evaluation, i: int, bounds: _Bounds, violations: list[str]
) -> LayoutEstimate:
    """Row ``i`` of the grid and its evaluation as a typed estimate."""
    shape = request.model
    layout = grid.row(i)
    tps = float(ev.tokens_per_second[i])
    return LayoutEstimate(
        **layout.axes(),
        global_batch_tokens=int(ev.tokens_per_step[i]),
        bubble_fraction=float(ev.bubble_fraction[i]),
        memory_bytes=ev.memory.row(i),
        step_seconds=float(ev.step_seconds[i]),
        tokens_per_second=tps,
        mfu=float(ev.mfu[i]),
        hfu=float(ev.hfu[i]),
        tokens_per_second_per_gpu=tps / request.n_gpus,
        layers_per_stage=-(-shape.n_layers // layout.pp),
        uneven_stages=shape.n_layers % layout.pp != 0,
        memory_stage="last" if ev.memory_last_is_max[i] else "first",
        memory_total_bytes_by_stage=ev.memory_stage_totals.row(i),
        memory_limit_bytes=bounds.memory_limit_bytes,
        time_seconds=ev.time.row(i),
        days_to_train=request.training_tokens / tps / SECONDS_PER_DAY if request.training_tokens else None,
        violations=violations,
        why=_why(request, layout, ev, i, bounds) if not violations else [],
    )


def _bounds(request: ParallelRequest) -> tuple[_Bounds, CriticalBatch]:
    crit = critical_batch(request.model, request.seq_len, request.training_tokens)
    low, high, batch_source = batch_range_tokens(request, crit)
    limit = request.gpu.hbm_bytes * (1.0 - request.constraints.memory_headroom_fraction)
    return _Bounds(limit, low, high, batch_source), crit


def evaluate_layout(request: ParallelRequest, layout: Layout) -> LayoutEstimate:
    """One layout, evaluated by the same vectorized model on a one-row grid (no search, no feasibility
    filter: violations are listed, not refused). Used to re-time a chosen layout at another micro-batch count
    (the plan's batch-ramp stages) and for a fully pinned layout."""
    bounds, _ = _bounds(request)
    grid = LayoutGrid.of([layout])
    ev = evaluate(request, grid)
    return _estimate(request, grid, ev, 0, bounds, _violations(request, grid, ev, 0, bounds, None))


def _violations(
    request: ParallelRequest,
    grid: LayoutGrid,
    ev: Evaluation,
    i: int,
    bounds: _Bounds,
    batch_ok: np.ndarray | None,
) -> list[str]:
    """The constraints row ``i`` breaks, in words (empty when it is feasible)."""
    cons = request.constraints
    limit, low, high = bounds.memory_limit_bytes, bounds.low_tokens, bounds.high_tokens
    total, bubble, tokens = ev.memory.total[i], ev.bubble_fraction[i], ev.tokens_per_step[i]
    broken = []
    if not total <= limit:
        broken.append(f"memory {total / 1e9:.1f} GB > {limit / 1e9:.1f} GB")
    if not bubble <= cons.max_bubble_fraction + 1e-12:
        shown = (
            f"{bubble:.3f}" if bubble >= 1e-3 else f"{bubble:.1e}"
        )  # not 'bubble 0.000 > 0' under a cap of 0
        broken.append(f"bubble {shown} > {cons.max_bubble_fraction:g}")
    in_range = low <= tokens <= high
    if not in_range:
        broken.append(f"global batch {tokens:,.0f} tokens outside [{low:,.0f}, {high:,.0f}]")
    elif batch_ok is not None and not batch_ok[i]:
        # choose_microbatches' other rule: Megatron's interleaved schedule needs m divisible by pp
        broken.append(
            f"{grid.microbatches[i]} micro-batches not a multiple of pp {grid.pp[i]} (interleaved, v > 1)"
        )
    return broken


def _ranked(
    grid: LayoutGrid, ev: Evaluation, idx: np.ndarray, tolerance: float = 0.0, top: int | None = None
) -> np.ndarray:
    """Feasible rows ``idx`` best first (the first ``top`` of them when given). Rows within ``tolerance`` of the
    fastest predicted tokens/s are a tie (the model's error is larger than that, docs/validation.md) and come
    first, least memory first: the one with the most margin under the limit. The rest follow by tokens/s; then
    the time model under --mfu, then less memory, then the simpler layout (smaller t, p, c, e, ZeRO stage,
    micro-batch, v, less recomputation)."""
    return _order(grid, ev, idx, _near(ev, idx, tolerance), top)


def _near(ev: Evaluation, idx: np.ndarray, tolerance: float) -> np.ndarray:
    """Which rows of ``idx`` tie with the fastest within ``tolerance`` (:func:`_ranked`)."""
    speed = ev.model_tokens_per_second[idx]  # the time model's, so that --mfu keeps the same choice
    return speed >= speed.max() * (1.0 - tolerance)


def _order(
    grid: LayoutGrid, ev: Evaluation, idx: np.ndarray, near: np.ndarray, top: int | None
) -> np.ndarray:
    """:func:`_ranked` with its ties ``near`` given (a subset of rows keeps the whole ranking's ties)."""
    if top is not None and top < idx.size:
        idx, near = _contenders(ev, idx, near, top)
    keys = (
        grid.recompute[idx],
        grid.vpp[idx],
        grid.micro_batch[idx],
        grid.zero[idx],
        grid.ep[idx],
        grid.cp[idx],
        grid.pp[idx],
        grid.tp[idx],
        ev.memory.total[idx],
        -ev.model_tokens_per_second[idx],  # under --mfu every row ties: the time model breaks it
        np.where(near, 0.0, -ev.tokens_per_second[idx]),
        np.where(near, ev.memory.total[idx], 0.0),
        ~near,
    )
    order = idx[np.lexsort(keys)]
    return order if top is None else order[:top]


def _contenders(ev: Evaluation, idx: np.ndarray, near: np.ndarray, top: int) -> tuple[np.ndarray, np.ndarray]:
    """The rows that can be among the first ``top`` of :func:`_ranked`, ties included: its two leading keys are
    (near first, then least memory among the near rows) and (most tokens/s among the others), so a row worse on
    them than ``top`` others cannot make it. Sorting only these keeps the ranking exact and its cost off the
    full grid."""
    memory = ev.memory.total[idx]
    n_near = int(near.sum())
    if n_near >= top:
        cut = np.partition(memory[near], top - 1)[top - 1]
        keep = near & (memory <= cut)
    else:
        speed = ev.tokens_per_second[idx]
        cut = np.partition(speed[~near], speed.size - n_near - (top - n_near))[
            speed.size - n_near - (top - n_near)
        ]
        keep = near | (speed >= cut)
    return idx[keep], near[keep]


def _nearest_misses(
    request: ParallelRequest, grid: LayoutGrid, ev: Evaluation, batch_ok: np.ndarray, bounds: _Bounds
) -> list[LayoutEstimate]:
    """The three rows closest to feasible (summed relative excess over each limit) when none is."""
    cons = request.constraints
    limit, low, high = bounds.memory_limit_bytes, bounds.low_tokens, bounds.high_tokens
    tokens = ev.tokens_per_step
    score = (
        np.maximum(0.0, ev.memory.total / limit - 1.0)
        + np.maximum(0.0, ev.bubble_fraction / max(cons.max_bubble_fraction, 1e-9) - 1.0)
        + np.where(batch_ok, 0.0, np.maximum(0.0, low - tokens) / low + np.maximum(0.0, tokens - high) / high)
    )
    picked: dict[
        tuple[object, ...], int
    ] = {}  # three rows that read differently (vpp and SP are not printed)
    for i in np.lexsort((-ev.tokens_per_second, score)):
        row = grid.row(int(i))
        key = (row.tp, row.pp, row.dp, row.cp, row.ep, row.zero, row.micro_batch, row.recompute)
        picked.setdefault(key, int(i))
        if len(picked) == 3:
            break
    return [
        _estimate(request, grid, ev, i, bounds, _violations(request, grid, ev, i, bounds, batch_ok))
        for i in picked.values()
    ]


def _model_info(request: ParallelRequest) -> dict[str, Any]:
    shape = request.model
    return {
        "name": shape.name,
        "total_params": shape.total_params,
        "active_params": shape.active_params,
        "n_layers": shape.n_layers,
        "d_model": shape.d_model,
    }


def _batch_law_line(request: ParallelRequest, crit: CriticalBatch, bounds: _Bounds) -> str:
    """The batch law's line, naming B_opt for what it is: the range's ceiling only when no target, no largest
    batch and no cap replaced it."""
    is_ceiling = (
        request.global_batch_tokens is None
        and request.constraints.max_global_batch_tokens is None
        and bounds.high_tokens == crit.tokens
    )
    name = (
        "batch ceiling (DeepSeek's compute-optimal B_opt)"
        if is_ceiling
        else "DeepSeek's compute-optimal batch B_opt"
    )
    assumed = " with D = 20·N assumed" if crit.assumed_training_tokens else ""
    return f"{name} {crit.tokens:,.0f} tokens: {crit.law}{assumed}"


def search(request: ParallelRequest) -> SearchResult:
    """Evaluate every layout of the space, keep the feasible ones, rank by predicted tokens per second."""
    start = time.perf_counter()
    check_request(request)  # again: a request changed by model_copy (flags over a plan) skips validators
    cons = request.constraints
    bounds, crit = _bounds(request)
    grid, reasons = build_grid(request)
    common: dict[str, Any] = dict(
        model=_model_info(request),
        cluster={"gpu": request.gpu.name, "n_gpus": request.n_gpus, "gpus_per_node": request.node_size},
        seq_len=request.seq_len,
        batch_range_tokens=(bounds.low_tokens, bounds.high_tokens),
        critical_batch=crit,
        warnings=[
            _batch_law_line(request, crit, bounds),
            *precision_notes(request.gpu, request.stack, moe=request.model.is_moe),
            *_pinned_zero_notes(request),
        ],
    )
    if grid is None:
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
            **common,
        )
    m, batch_ok, count = choose_microbatches(request, grid, bounds.low_tokens, bounds.high_tokens)
    grid = grid.replace(microbatches=m)
    ev = evaluate(request, grid)
    ok = {
        "memory": ev.memory.total <= bounds.memory_limit_bytes,
        "bubble": ev.bubble_fraction <= cons.max_bubble_fraction + 1e-12,
        "global_batch": batch_ok,
    }
    idx = np.flatnonzero(ok["memory"] & ok["bubble"] & ok["global_batch"])
    n_rows = len(m)
    pinned_one = _pinned_layout(request, grid, ev, ok, bounds, n_rows, idx)
    if pinned_one is not None:
        idx, warnings = pinned_one
        common["warnings"] = [*common["warnings"], *warnings]
    near = _near(ev, idx, cons.throughput_tolerance) if idx.size else idx.astype(bool)
    ranked = _order(grid, ev, idx, near, request.top)
    if ranked.size:
        best_cp = int(grid.cp[ranked[0]])
        common["warnings"] = [*common["warnings"], *context_parallel_notes(request.stack, best_cp)]
    return SearchResult(
        candidates=n_rows,
        space_size=int(np.maximum(count, 1).sum()),
        feasible=int(idx.size),
        layouts=[
            _estimate(
                request, grid, ev, int(i), bounds, _violations(request, grid, ev, int(i), bounds, batch_ok)
            )
            for i in ranked[: request.top]
        ],
        eliminated={k: int(n_rows - v.sum()) for k, v in ok.items()},
        eliminated_only={
            k: int((~ok[k] & np.logical_and.reduce([ok[o] for o in ok if o != k])).sum()) for k in ok
        },
        fastest=_fastest(request, grid, ev, idx, bounds, batch_ok),
        nearest_misses=[] if idx.size else _nearest_misses(request, grid, ev, batch_ok, bounds),
        suggestions=[] if idx.size else _suggestions(request, grid, ev, ok, bounds),
        best_by_tp=[] if request.mfu_override is not None else _best_by_tp(grid, ev, idx, near),
        search_seconds=time.perf_counter() - start,
        **common,
    )


def _fastest(
    request: ParallelRequest,
    grid: LayoutGrid,
    ev: Evaluation,
    idx: np.ndarray,
    bounds: _Bounds,
    batch_ok: np.ndarray,
) -> LayoutEstimate | None:
    """The feasible row with the most tokens/s, with the constraints it breaks (a fully pinned layout answered
    with warnings: its ``why`` must not read 'bubble 0.250 <= 0.15'); None when no row is feasible."""
    if not idx.size:
        return None
    i = int(idx[np.argmax(ev.tokens_per_second[idx])])
    return _estimate(request, grid, ev, i, bounds, _violations(request, grid, ev, i, bounds, batch_ok))


def _pinned_zero_notes(request: ParallelRequest) -> list[str]:
    """A pinned ZeRO stage the stack's engine does not have (``Stack.zero_stages``: torchtitan has no ZeRO-1/2,
    Megatron-LM 2021-22 no sharding beyond the optimizer states), and :func:`_pinned_zero0_notes`."""
    stages, zero = request.stack.zero_stages, request.pins.zero
    if zero is None or stages is None or zero in stages:
        return _pinned_zero0_notes(request)
    have = ", ".join(str(z) for z in stages)
    return [
        f"the pinned ZeRO-{zero} is evaluated, but this stack's engine has ZeRO {have} only (stack.zero_stages); "
        f"pin one of them (--zero / parallel.zero) or plan with the stack of an engine that has it (--stack / "
        "stack:)",
        *_pinned_zero0_notes(request),
    ]


def _pinned_zero0_notes(request: ParallelRequest) -> list[str]:
    """A pinned ZeRO-0 that Megatron-LM, the one engine with bf16 optimizer states beside an fp32 master and with
    fp8 weights, cannot run: get_megatron_optimizer raises for its precision-aware optimizer without the
    distributed optimizer (core/optimizer/__init__.py @ d98e8a64), and validate_args asserts the distributed
    optimizer or an FSDP for --fp8-param-gather (training/arguments.py). The search leaves ZeRO-0 out for these
    stacks (:func:`build_grid`); a pinned one is still evaluated, with this one-line warning naming the fix."""
    if request.pins.zero != 0:
        return []
    stack, notes = request.stack, []
    if stack.optimizer_state_dtype == "bf16":
        notes.append(
            "the pinned ZeRO-0 is evaluated, but no engine runs bf16 optimizer states (stack optimizer_state_dtype) "
            "there: Megatron-LM's precision-aware optimizer needs its distributed optimizer; pin ZeRO 1 or 2 "
            "(--zero / parallel.zero) or keep the moments in fp32 (--optimizer-state-dtype / "
            "stack.optimizer_state_dtype)"
        )
    if stack.precision == "fp8" and stack.fp8_param_gather:
        notes.append(
            "the pinned ZeRO-0 is evaluated, but Megatron-LM keeps fp8 weights (stack fp8_param_gather) only with "
            "its distributed optimizer or an FSDP; pin ZeRO 1 or more (--zero / parallel.zero) or drop "
            "--fp8-param-gather (stack.fp8_param_gather)"
        )
    return notes


def _pinned_layout(
    request: ParallelRequest,
    grid: LayoutGrid,
    ev: Evaluation,
    ok: dict[str, np.ndarray],
    bounds: _Bounds,
    n_rows: int,
    feasible: np.ndarray,
) -> tuple[np.ndarray, list[str]] | None:
    """A fully pinned layout (one candidate) that fits in memory is always answered: the bubble and batch
    constraints it breaks become warnings, since the user asked for this layout (it may be one that really ran).
    Only memory rules it out, and then :func:`ensure_feasible` names the term that overflows."""
    if n_rows != 1 or feasible.size or not ok["memory"][0]:
        return None
    broken = _violations(request, grid, ev, 0, bounds, ok["global_batch"])
    return np.array([0]), [f"the pinned layout breaks a constraint: {text}" for text in broken]


def _best_by_tp(grid: LayoutGrid, ev: Evaluation, idx: np.ndarray, near: np.ndarray) -> list[TpBest]:
    """The first row of each TP degree in the ranking of the feasible rows ``idx`` (users ask 'how far behind is
    TP 8?'), with the whole ranking's ties ``near``."""
    if not idx.size:
        return []
    tps = grid.tp[idx]
    # sorted(set()), not np.unique: its first call imports numpy.ma (~15 ms of a CLI run's start-up)
    degrees = sorted(set(tps.tolist()))
    positions = np.array([_first_position(grid, ev, idx, near, np.flatnonzero(tps == t)) for t in degrees])
    firsts = idx[positions]
    # the ranking is one key order over rows, so its first row is the first of the degrees' firsts
    top = float(ev.tokens_per_second[_order(grid, ev, firsts, near[positions], 1)[0]])
    out = []
    for tp, i in zip(degrees, firsts, strict=True):
        x = grid.row(int(i))
        layout = (
            f"PP{x.pp} DP{x.dp} CP{x.cp} EP{x.ep} ZeRO-{x.zero} mbs{x.micro_batch} v{x.vpp} {x.recompute}"
        )
        speed = float(ev.tokens_per_second[i])
        out.append(
            TpBest(
                tp=int(tp),
                layout=layout,
                tokens_per_second=speed,
                mfu=float(ev.mfu[i]),
                behind_best=1 - speed / top,
            )
        )
    return out


def _first_position(
    grid: LayoutGrid, ev: Evaluation, idx: np.ndarray, near: np.ndarray, subset: np.ndarray
) -> int:
    """The position in ``idx`` of the first-ranked row among the positions ``subset``."""
    row = _order(grid, ev, idx[subset], near[subset], 1)[0]
    return int(subset[np.flatnonzero(idx[subset] == row)[0]])


def _suggestions(
    request: ParallelRequest, grid: LayoutGrid, ev: Evaluation, ok: dict[str, np.ndarray], bounds: _Bounds
) -> list[str]:
    """What would make the request feasible, from which constraint removed the candidates. Settings are written
    as plan-file paths (``parallel.zero=3``); the CLI shows them as the flags or keys its user types
    (:func:`runplan.cli.flags.paths_for_user`)."""
    out: list[str] = []
    if (
        len(grid) == 1 and not ok["memory"][0]
    ):  # one layout: only memory rules it out (bubble, batch: warnings)
        return _one_layout_memory_fixes(request, grid, ev, bounds.memory_limit_bytes)
    if not ok["memory"].any():
        memory_tips, only_gpus_help = _memory_suggestions(request, ev, bounds.memory_limit_bytes)
        out += memory_tips
        if only_gpus_help:
            return out
    if not ok["bubble"].any():
        out.append(_bubble_remedies(request, grid, ev, ok, bounds))
    if not ok["global_batch"].any():
        out.append(_batch_remedies(request, grid, ev, bounds))
    if all(v.any() for v in ok.values()):  # each constraint alone leaves rows, no row passes all three
        out += _joint_suggestions(request, grid, ev, ok, bounds)
    pinned = list(request.pins.pinned())
    if pinned:
        out.append("unpin " + ", ".join(f"parallel.{k}" for k in pinned) + " to widen the search")
    return out


def _subgrid(grid: LayoutGrid, rows: np.ndarray, **columns: np.ndarray) -> LayoutGrid:
    """The rows ``rows`` of ``grid``, with some columns replaced (arrays of the rows' length)."""
    return LayoutGrid({name: getattr(grid, name)[rows] for name in Layout.model_fields} | columns)


def _batch_remedies(request: ParallelRequest, grid: LayoutGrid, ev: Evaluation, bounds: _Bounds) -> str:
    """When no row passes the batch rules: the batch range is below every batch a layout can run (d·b·m·s at
    its least: b and m as pinned, else 1, or p for an interleaved m), falls between two steps of d·b·m·s, or
    holds the batches of layouts whose pinned m breaks the interleaved schedule's rule that p divides m
    (Megatron-LM's). A batch offered is the least that also meets the bubble cap and memory
    (:func:`_least_legal_batch`); the largest batch (constraints.max_global_batch_tokens) only where no target
    is set, since min and max only narrow a target's range (:func:`batch_range_tokens`)."""
    pins, s = request.pins, request.seq_len
    least_m = pins.microbatches or np.where(grid.vpp > 1, grid.pp, 1)
    smallest_per_dp = grid.micro_batch * least_m * s  # b·m·s: a row's batch over its d
    smallest = float((grid.dp.astype(float) * smallest_per_dp).min())
    if smallest > bounds.high_tokens:
        out = (
            f"the smallest global batch any layout can run is {smallest:,.0f} tokens (d·b·m·s) against a ceiling "
            f"of {bounds.high_tokens:,.0f}"
        )
        shrink = _smaller_batch_pins(request, grid, smallest_per_dp, smallest)
        least = _least_legal_batch(request, grid, bounds)
        if least is None:
            return (
                out
                + (": " + "; ".join(shrink) if shrink else "")
                + "; no larger batch meets the bubble cap within memory"
            )
        which = (
            "that"
            if least == smallest
            else f"{least:,.0f} tokens, the least within the bubble cap and memory"
        )
        largest = _max_batch_clause(request, least)
        batch = f"a batch of at least {which} (schedule.global_batch_tokens={least:.0f}{largest})"
        return out + ": " + "; ".join([*shrink, f"or {batch}" if shrink else batch])
    tokens = ev.tokens_per_step
    in_range = (tokens >= bounds.low_tokens) & (tokens <= bounds.high_tokens)
    if in_range.any() and pins.microbatches:
        return _interleaving_remedy(request, grid, in_range, bounds)
    return _batch_steps(tokens, bounds, "any layout")


def _smaller_batch_pins(
    request: ParallelRequest, grid: LayoutGrid, per_dp: np.ndarray, smallest: float
) -> list[str]:
    """What lowers the smallest batch d·b·m·s (``per_dp``: each row's b·m·s at its least m): fewer GPUs where a
    row's d can fall (to 1, or to a pinned dp) below the smallest batch, since fewer GPUs shrink only d; a
    smaller pinned dp or micro_batch where it is above 1, a smaller pinned microbatches where it is above the
    least a row takes (1, or p interleaved). Nothing where d, b and m are at their least already."""
    pins = request.pins
    out = []
    if float(per_dp.min()) * (pins.dp or 1) < smallest:
        out.append(_fewer_gpus(request))
    least_m = int(np.where(grid.vpp > 1, grid.pp, 1).min())
    above = {"dp": 1, "micro_batch": 1, "microbatches": least_m}
    pinned = [f"parallel.{axis}" for axis, least in above.items() if (getattr(pins, axis) or 0) > least]
    if pinned:
        out.append("a smaller " + " or ".join(pinned))
    return out


def _fewer_gpus(request: ParallelRequest) -> str:
    """The advice for fewer GPUs, with the most GPUs below the job's at which a layout passes every rule by the
    same model (:func:`_most_gpus_below_that_pass`), where one tried does."""
    fits = _most_gpus_below_that_pass(request)
    return (
        "fewer GPUs (cluster.gpus)"
        if fits is None
        else f"fewer GPUs (a layout passes at {fits:,}: cluster.gpus={fits})"
    )


def _most_gpus_below_that_pass(request: ParallelRequest) -> int | None:
    """GPU counts below the job's, searched by the same model (:func:`_some_layout_passes`) as
    :func:`_fewest_gpus_that_fit` searches above the bound, downwards: a few a node apart (whole nodes past one
    node), then a few with the gap doubling and, once one passes, the counts between it and the last miss halved
    up to a node: the count returned passes, the one a node above it was tried and does not. None where none
    tried passes (or a grid is too large to search)."""
    step = request.node_size if request.n_gpus > request.node_size else 1
    last_miss, count = request.n_gpus, request.n_gpus - step
    for tries in range(_GPU_COUNTS_TRIED + _GPU_COUNTS_WIDENED):
        if count < 1:
            return None
        passes = _some_layout_passes(request.model_copy(update={"n_gpus": count}))
        if not passes:
            if passes is None:
                return None
            last_miss = count
            count -= step if tries + 1 < _GPU_COUNTS_TRIED else step * 2 ** (tries + 2 - _GPU_COUNTS_TRIED)
            continue
        return _bisect_gpus(request, last_miss, count, step)  # halved up towards the last miss
    return None


def _max_batch_clause(request: ParallelRequest, tokens: float) -> str:
    """ ", or constraints.max_global_batch_tokens=N" where no target is set; nothing beside a target, whose range
    a largest batch only narrows (:func:`batch_range_tokens`)."""
    if request.global_batch_tokens is not None:
        return ""
    return f", or constraints.max_global_batch_tokens={tokens:.0f}"


def _bubble_microbatches(request: ParallelRequest, grid: LayoutGrid) -> np.ndarray:
    """Per row, the fewest micro-batches m with (p − 1)/(v·m) within the cap (Narayanan et al. 2021 §2.2.2), a
    multiple of p when interleaved (Megatron-LM's rule); a row with stages under a cap of 0 gets none (-1)."""
    p, v, cap = grid.pp, grid.vpp, request.constraints.max_bubble_fraction
    if cap <= 0:
        return np.where(p == 1, 1, -1)
    need = np.maximum(np.ceil((p - 1) / (v * cap) - 1e-9).astype(np.int64), 1)
    return np.where(v > 1, _ceil_div(need, p) * p, need)


def _least_legal_batch(request: ParallelRequest, grid: LayoutGrid, bounds: _Bounds) -> float | None:
    """The least global batch d·b·m·s of a row that meets the interleaving rule and the bubble cap and fits in
    memory, each row at the fewest micro-batches that does (a pinned m as pinned), by the same model."""
    pinned = request.pins.microbatches
    m = np.full_like(grid.pp, pinned) if pinned else _bubble_microbatches(request, grid)
    rows = np.flatnonzero((m > 0) & (m % np.where(grid.vpp > 1, grid.pp, 1) == 0))
    if not rows.size:
        return None
    changed = evaluate(request, _subgrid(grid, rows, microbatches=m[rows]))
    fits = changed.memory.total <= bounds.memory_limit_bytes
    fits &= changed.bubble_fraction <= request.constraints.max_bubble_fraction + 1e-12
    return float(changed.tokens_per_step[fits].min()) if fits.any() else None


def _interleaving_remedy(
    request: ParallelRequest, grid: LayoutGrid, in_range: np.ndarray, bounds: _Bounds
) -> str:
    """The pinned m breaks the interleaved schedule's rule that p divides m (Megatron-LM) on the rows whose batch
    is in range: the p of those rows, and the changes that then meet every rule by the same model (memory, the
    bubble cap, the batch range): the fewest multiple of p from m that also meets the bubble cap (with the batch
    it makes, d·b·m·s, when that leaves the range), or v = 1. Never the pinned value back."""
    m, cap = int(request.pins.microbatches or 0), request.constraints.max_bubble_fraction
    rows = np.flatnonzero(in_range & (grid.vpp > 1) & (m % grid.pp != 0))
    p = int(grid.pp[rows[0]])
    fixes = []
    bubble_m = _bubble_microbatches(request, grid)[rows]
    need = np.maximum(bubble_m, _ceil_div(m, grid.pp[rows]) * grid.pp[rows])
    more = evaluate(request, _subgrid(grid, rows, microbatches=need))
    fits = (more.memory.total <= bounds.memory_limit_bytes) & (more.bubble_fraction <= cap + 1e-12)
    fits &= bubble_m > 0
    if fits.any():  # in range first (no batch to change), then the fewest micro-batches
        tokens = more.tokens_per_step
        off_range = np.maximum(bounds.low_tokens - tokens, 0.0) + np.maximum(tokens - bounds.high_tokens, 0.0)
        cand = np.flatnonzero(fits)
        best = int(cand[np.lexsort((need[cand], off_range[cand]))[0]])
        p, fixed, batch = int(grid.pp[rows[best]]), int(need[best]), float(tokens[best])
        fix = f"parallel.microbatches={fixed}"
        if off_range[best] > 0:
            fix += f" with a global batch of {batch:,.0f} tokens (schedule.global_batch_tokens={batch:.0f})"
        fixes.append(fix)
    plain = evaluate(request, _subgrid(grid, rows, vpp=np.ones_like(rows)))
    if ((plain.memory.total <= bounds.memory_limit_bytes) & (plain.bubble_fraction <= cap + 1e-12)).any():
        fixes.append("parallel.vpp=1")
    rule = (
        f"the interleaved schedule needs the micro-batches per step in multiples of pp (Megatron-LM): "
        f"{m} is not a multiple of pp {p}"
    )
    if not fixes:
        return rule + "; no one change of parallel.microbatches or parallel.vpp also meets the bubble cap"
    return rule + "; " + " or ".join(fixes)


def _bubble_remedies(
    request: ParallelRequest, grid: LayoutGrid, ev: Evaluation, ok: dict[str, np.ndarray], bounds: _Bounds
) -> str:
    """When every row breaks the bubble cap: the remedies that the bubble fraction (p − 1)/(v·m) (Narayanan et
    al. 2021 §2.2.2) says meet it, each with the value that does, checked for memory by the same model. Never a
    pinned value back, nor an axis the search already tried (vpp on a stack that interleaves); a larger cap only
    where the least bubble is below 1, the cap's bound (``Constraints.max_bubble_fraction``)."""
    pins, cap = request.pins, request.constraints.max_bubble_fraction
    rows = np.flatnonzero(ok["memory"]) if ok["memory"].any() else np.arange(len(grid))
    remedies = []
    if cap > 0:
        remedies += _more_microbatches(request, grid, rows, bounds)
        if pins.vpp is not None or not request.stack.interleaved_pipeline:
            remedies += _more_interleaving(request, grid, rows, bounds)
    fewer = _fewer_stages(request) if pins.pp is not None and pins.pp > 1 else None
    remedies += [fewer] if fewer else []
    legal = rows[ok["global_batch"][rows]]  # a larger cap helps only rows within the batch rules
    least = float(ev.bubble_fraction[legal if legal.size else rows].min())
    larger = _larger_bubble_cap(least)
    if legal.size and larger:
        remedies.append(larger)
    if not remedies:
        return (
            f"the least bubble is {least:.3f} of the step and the cap must stay below 1: fewer pipeline stages "
            "or more micro-batches per step"
        )
    if not ok["memory"].any():  # the memory advice comes first; these only lower the bubble
        return "for the bubble: " + ", ".join(remedies)
    return ("any one of: " if len(remedies) > 1 else "") + ", ".join(remedies)


def _more_microbatches(
    request: ParallelRequest, grid: LayoutGrid, rows: np.ndarray, bounds: _Bounds
) -> list[str]:
    """The fewest micro-batches m with (p − 1)/(v·m) within the cap (a multiple of p when interleaved, Megatron's
    rule), among the ``rows`` that still fit in memory with it: a pinned m as its pin, else as the global batch
    d·b·m·s that the search derives it from (plus the batch where a pinned m leaves the range)."""
    need = _bubble_microbatches(request, grid)[rows]  # the cap is above 0 here: every row gets an m
    changed = evaluate(request, _subgrid(grid, rows, microbatches=need))
    fits = changed.memory.total <= bounds.memory_limit_bytes
    if not fits.any():
        return []
    tokens = changed.tokens_per_step[fits]
    if request.pins.microbatches is None:
        least = float(tokens.min())
        return [f"a global batch of at least {least:,.0f} tokens (schedule.global_batch_tokens={least:.0f})"]
    # the fewest micro-batches, among the rows whose batch then stays in range if any (else the nearest batch)
    low, high = bounds.low_tokens, bounds.high_tokens
    off_range = np.maximum(low - tokens, 0.0) + np.maximum(tokens - high, 0.0)
    best = int(np.lexsort((need[fits], off_range))[0])
    m, batch = int(need[fits][best]), float(tokens[best])
    out = f"{m} micro-batches per step (parallel.microbatches={m}"
    if not bounds.low_tokens <= batch <= bounds.high_tokens:
        out += f", a global batch of {batch:,.0f} tokens: schedule.global_batch_tokens={batch:.0f}"
    return [out + ")"]


def _more_interleaving(
    request: ParallelRequest, grid: LayoutGrid, rows: np.ndarray, bounds: _Bounds
) -> list[str]:
    """The fewest interleaved chunks v (a divisor of the largest stage's layers, above the row's v) with
    (p − 1)/(v·m) within the cap, at the row's m (pinned) or the largest multiple of p below it (derived, as the
    interleaved schedule needs), among the ``rows`` that then fit in memory and the batch range."""
    cap, layers = request.constraints.max_bubble_fraction, request.model.n_layers
    tried: list[tuple[int, int, int]] = []  # (row, v, m)
    for i in rows[grid.pp[rows] >= 2]:
        p, v, m = int(grid.pp[i]), int(grid.vpp[i]), int(grid.microbatches[i])
        m = m if request.pins.microbatches is not None else m // p * p
        chunks = [c for c in divisors(-(-layers // p)) if c > v and (p - 1) / (c * m or 1) <= cap + 1e-12]
        if m >= p and m % p == 0 and chunks:
            tried.append((int(i), chunks[0], m))
    if not tried:
        return []
    picked, vs, ms = (np.array(column) for column in zip(*tried, strict=True))
    changed = evaluate(request, _subgrid(grid, picked, vpp=vs, microbatches=ms))
    tokens = changed.tokens_per_step
    fits = (changed.memory.total <= bounds.memory_limit_bytes) & (tokens >= bounds.low_tokens)
    fits &= tokens <= bounds.high_tokens
    return [f"interleaving (parallel.vpp={int(vs[fits].min())})"] if fits.any() else []


def _largest_memory_term(breakdown: dict[str, float]) -> tuple[str, float]:
    """(name, bytes) of the largest term of a memory breakdown, its total aside."""
    terms = {k: v for k, v in breakdown.items() if k != "total"}
    name = max(terms, key=lambda k: terms[k])
    return name, terms[name]


def _one_layout_memory_fixes(
    request: ParallelRequest, grid: LayoutGrid, ev: Evaluation, limit: float
) -> list[str]:
    """For one layout over the memory limit (a fully pinned request): each single change of a pin or of the
    gradient dtype, evaluated by the same model, that makes it fit, with its memory; where none does alone, the
    general advice (:func:`_memory_suggestions`). Offering only what was checked: a reviewer's 405B at ZeRO-0
    was told to try bf16 gradients (still 104 GB) and fewer stages (more memory), not ZeRO-1 (74.6 GB)."""
    layout = grid.row(0)
    staged = (
        layout.pp > 1 and not request.stack.fsdp_mixed_precision
    )  # (ZeRO-3 under stages: the whole stage)
    zeros = [z for z in _stack_zero_stages(request) if z > layout.zero and (z < 3 or not staged)]
    changes: list[tuple[str, ParallelRequest, Layout]] = [
        (f"parallel.zero={z}", request, layout.model_copy(update={"zero": z})) for z in zeros
    ]
    order = ["none", "selective", "full"]
    for level in order[order.index(layout.recompute) + 1 :]:
        changes.append(
            (f"parallel.recompute={level}", request, layout.model_copy(update={"recompute": level}))
        )
    if layout.micro_batch > 1:  # the same global batch in more micro-batches of one sequence
        smaller = {"micro_batch": 1, "microbatches": layout.microbatches * layout.micro_batch}
        changes.append(("parallel.micro_batch=1", request, layout.model_copy(update=smaller)))
    if request.stack.gradient_bytes == 4:
        bf16 = request.model_copy(
            update={"stack": request.stack.model_copy(update={"gradient_dtype": "bf16"})}
        )
        changes.append(("bf16 gradients (stack.gradient_dtype)", bf16, layout))
    fits = []
    for name, changed_request, changed in changes:
        total = float(evaluate(changed_request, LayoutGrid.of([changed])).memory.total[0])
        if total <= limit:
            fits.append(f"{name} ({total / 1e9:.1f} GB)")
    if fits:
        return ["any one of: " + ", ".join(fits) + f" fits within {limit / 1e9:.1f} GB"]
    # none alone: the pin changes together (the last of each kind above is the one that saves the most), checked
    # the same way; the general advice after it, less its first line, which the reason already says
    together = _joint_memory_fix(layout, changes, limit)
    general = _memory_suggestions(request, ev, limit)[0][1:]
    unpin = "unpin " + ", ".join(f"parallel.{k}" for k in request.pins.pinned()) + " to search other layouts"
    return [together] if together else general or [unpin]


def _joint_memory_fix(
    layout: Layout, changes: list[tuple[str, ParallelRequest, Layout]], limit: float
) -> str | None:
    """The single changes of :func:`_one_layout_memory_fixes` to ``layout`` at once, evaluated by the same model:
    the pins' (the highest ZeRO stage, the most recomputation, micro-batch 1), then with bf16 gradients where
    those alone do not fit; the line naming the first set that fits, if one does."""
    pins = [change for change in changes if change[2] is not layout]
    dtype = [change for change in changes if change[2] is layout]  # the gradient-dtype change (a new request)
    for chosen in ([pins] if pins else []) + ([pins + dtype] if dtype else []):
        if len(chosen) < 2:
            continue
        # each kind of change at its last, strongest value (the changes come weakest first)
        names: dict[str, str] = {}
        update: dict[str, Any] = {}
        request = dtype[0][1] if len(chosen) > len(pins) else pins[0][1]  # (a pin change keeps the request)
        for name, _, changed in chosen:
            names[name.split("=")[0]] = name
            update |= {k: v for k, v in changed.model_dump().items() if v != getattr(layout, k)}
        total = float(evaluate(request, LayoutGrid.of([layout.model_copy(update=update)])).memory.total[0])
        if total <= limit:
            return f"all of {', '.join(names.values())} together ({total / 1e9:.1f} GB) fit within {limit / 1e9:.1f} GB"
    return None


def _state_bytes_per_param(request: ParallelRequest) -> tuple[float, float, float]:
    """The model states of one parameter fully sharded, as the memory model counts them: bf16 weights (2; none
    under FSDP mixed precision) + gradients (the stack's) + Adam's fp32 master, momentum and variance (12; 8 with
    bf16 moments), Rajbhandari et al. 2020 §3.1 (2 + 2 + 12 = 16 with bf16 gradients); activations on top."""
    stack = request.stack
    weights, grads, optimizer = model_state_bytes(
        1.0,
        0.0,
        3,
        1,
        1,
        1,
        stack.gradient_bytes,
        fsdp_mixed_precision=stack.fsdp_mixed_precision,
        autocast=stack.autocast_fp32_weights,
        moment_bytes=stack.moment_bytes,
    )
    return float(weights), float(grads), float(optimizer)


#: GPU counts :func:`_fewest_gpus_that_fit` tries from the model states' bound (a node apart past one node), then
#: the counts it tries past those with the gap doubling each time (the rest of the memory, on top of the states,
#: can need many more GPUs than the states' bound: 8B at --headroom 0.95 keeps 4.0 GB, 3.1 of them reserve and
#: buffers, and first fits at 192 GPUs against a bound of 152)
_GPU_COUNTS_TRIED = 4
_GPU_COUNTS_WIDENED = 6


class _GpuCounts(NamedTuple):
    """What :func:`_fewest_gpus_that_fit` found: the count that passes every rule (None: none tried does, or
    a grid too large to search), the last of the counts tried a node apart from the bound, and the largest count
    tried (with ``fits`` None: the largest that does not fit)."""

    fits: int | None
    contiguous_to: int
    largest_tried: int
    searchable: bool


def _fewest_gpus_that_fit(request: ParallelRequest, need: int) -> _GpuCounts:
    """GPU counts from ``need`` (the fully sharded states' bound, whole nodes past one node) until a layout passes
    every rule (memory, bubble, batch), searched by the same model: a few counts a node apart
    (``_GPU_COUNTS_TRIED``), then a few past them with the gap doubling (``_GPU_COUNTS_WIDENED``) and, once one
    fits, the counts between it and the last miss halved down to a node (a count a node below the one returned
    was tried and does not fit)."""
    step = request.node_size if need >= request.node_size else 1
    last_miss, count = need - step, need
    contiguous_to = need + (_GPU_COUNTS_TRIED - 1) * step
    for tries in range(_GPU_COUNTS_TRIED + _GPU_COUNTS_WIDENED):
        passes = _some_layout_passes(request.model_copy(update={"n_gpus": count}))
        if passes is None:
            return _GpuCounts(None, contiguous_to, last_miss, searchable=False)
        if passes:
            return _GpuCounts(_bisect_gpus(request, last_miss, count, step), contiguous_to, count, True)
        last_miss = count
        count += step if tries + 1 < _GPU_COUNTS_TRIED else step * 2 ** (tries + 2 - _GPU_COUNTS_TRIED)
    return _GpuCounts(None, contiguous_to, last_miss, searchable=True)


def _bisect_gpus(request: ParallelRequest, miss: int, fit: int, step: int) -> int:
    """The count that fits, halved towards ``miss`` (which does not; below ``fit`` for the fewest GPUs that fit,
    above it for the most below a request) in whole ``step``s while the middle one still passes every rule by the
    same model: the count returned fits, the one a step nearer ``miss`` was tried and does not."""
    while abs(fit - miss) > step:
        middle = min(miss, fit) + abs(fit - miss) // step // 2 * step
        if _some_layout_passes(request.model_copy(update={"n_gpus": middle})):
            fit = middle
        else:
            miss = middle
    return fit


def _some_layout_passes(request: ParallelRequest) -> bool | None:
    """Whether some layout of ``request`` passes every rule (memory, bubble cap, batch range), searched by the
    same model as :func:`search` (each row at its derived micro-batch count); None when its grid is too large to
    search (a SpecError from :func:`build_grid`)."""
    least = _least_memory_within_other_rules(request)
    if least is None:
        return None
    bounds, _ = _bounds(request)
    return least <= bounds.memory_limit_bytes


def _least_memory_within_other_rules(request: ParallelRequest) -> float | None:
    """The least memory per GPU of a layout of ``request`` that passes the bubble cap and the batch range,
    searched by the same model as :func:`search` (each row at its derived micro-batch count); infinity when no
    layout does, None when its grid is too large to search (a SpecError from :func:`build_grid`)."""
    try:
        grid, _ = build_grid(request)
    except SpecError:
        return None
    if grid is None:
        return math.inf
    bounds, _ = _bounds(request)
    m, batch_ok, _ = choose_microbatches(request, grid, bounds.low_tokens, bounds.high_tokens)
    ev = evaluate(request, grid.replace(microbatches=m))
    rows = batch_ok & (ev.bubble_fraction <= request.constraints.max_bubble_fraction + 1e-12)
    return float(ev.memory.total[rows].min()) if rows.any() else math.inf


def _with_margin(request: ParallelRequest, **margins: float) -> ParallelRequest:
    """``request`` with some of its margins kept free changed (constraints.memory_headroom_fraction, reserve_bytes)."""
    return request.model_copy(update={"constraints": request.constraints.model_copy(update=margins)})


def _smaller_margin(request: ParallelRequest) -> str | None:
    """The margins kept free at which some layout passes every rule at this GPU count, by the same model: the
    largest headroom h with HBM x (1 - h) >= the least memory of a layout within the bubble cap and the batch
    range (2 decimals, rounded down), and the reserve, part of every layout's memory (docs/parallel.md, Memory
    per GPU), lowered by that layout's excess over HBM x (1 - h) at the headroom as set (0.1 GB, rounded down);
    each offered only where the search passes with it. None when neither does (no layout within the other rules,
    or one above the whole HBM)."""
    least = _least_memory_within_other_rules(request)
    if least is None or not math.isfinite(least):
        return None
    cons, hbm = request.constraints, request.gpu.hbm_bytes
    offers = []
    headroom = math.floor((1.0 - least / hbm) * 100) / 100
    if 0 <= headroom < cons.memory_headroom_fraction and _some_layout_passes(
        _with_margin(request, memory_headroom_fraction=headroom)
    ):
        offers.append(f"constraints.memory_headroom_fraction={headroom:g}")
    excess = least - hbm * (1.0 - cons.memory_headroom_fraction)
    reserve = math.floor((cons.reserve_bytes - excess) / 1e8) / 10  # GB
    if 0 <= reserve * 1e9 < cons.reserve_bytes and _some_layout_passes(
        _with_margin(request, reserve_bytes=reserve * 1e9)
    ):
        offers.append(f"constraints.reserve_bytes={reserve:g}GB")
    if not offers:
        return None
    return (
        f"a smaller margin ({' or '.join(offers)}): the least memory of a layout within the bubble cap and the "
        f"batch range is {least / 1e9:.1f} of the GPU's {hbm / 1e9:.1f} GB"
    )


def _more_context_parallel(request: ParallelRequest) -> str | None:
    """The least CP degree above the pinned one (a divisor of the GPUs with 2c | s, load-balanced causal chunks)
    at which some layout passes every rule, by the same model: a CP rank holds s/c tokens of activations
    (docs/parallel.md, Memory per GPU); None when none does."""
    pinned, s = request.pins.cp or 1, request.seq_len
    for cp in (c for c in divisors(request.n_gpus) if c > pinned and s % (2 * c) == 0):
        if _some_layout_passes(_with_pin(request, cp=cp)):
            return f"parallel.cp={cp}"
    return None


def _stack_zero_stages(request: ParallelRequest) -> tuple[int, ...]:
    """The ZeRO stages the stack's engine runs (Stack.zero_stages, all four when unset) that its
    distributed_optimizer allows (true: ZeRO >= 1, false: ZeRO-0 only; build_grid's rule): what advice may offer."""
    stages = request.stack.zero_stages or (0, 1, 2, 3)
    sharded = request.stack.distributed_optimizer
    return tuple(z for z in stages if sharded is None or (z >= 1) == sharded)


def _with_pin(request: ParallelRequest, **pins: Any) -> ParallelRequest:
    """``request`` with some pins changed (the value a remedy offers)."""
    return request.model_copy(update={"pins": request.pins.model_copy(update=pins)})


def _fewer_stages(request: ParallelRequest) -> str | None:
    """The most pipeline stages below the pinned pp at which some layout passes every rule, by the same model
    (:func:`_some_layout_passes`): fewer stages shrink the bubble (p − 1)/(v·m) (Narayanan et al. 2021 §2.2.2)
    but move d, m and memory per GPU with them, so the count is searched, not derived; None when none passes."""
    for pp in range((request.pins.pp or 1) - 1, 0, -1):
        if _some_layout_passes(_with_pin(request, pp=pp)):
            return f"fewer pipeline stages (parallel.pp={pp})"
    return None


def _zero_under_stages(request: ParallelRequest) -> str | None:
    """Under pinned pipeline stages and a pinned ZeRO-0 or 1: the lowest higher stage below 3 the stack runs
    (ZeRO-3 keeps a stage gathered there, memory.model_state_bytes) at which some layout passes every rule, by
    the same model; ZeRO-1 is Megatron's distributed optimizer, its 12 bytes/param ÷ d·c (Rajbhandari et al.
    2020 §5). None when none passes."""
    pinned = request.pins.zero or 0
    for zero in (z for z in _stack_zero_stages(request) if pinned < z < 3):
        if _some_layout_passes(_with_pin(request, zero=zero)):
            return f"ZeRO-{zero} (parallel.zero={zero})"
    return None


def _memory_suggestions(request: ParallelRequest, ev: Evaluation, limit: float) -> tuple[list[str], bool]:
    """When no layout fits in memory: what overflows in the smallest one and what would help; and whether only
    more GPUs can (the fully sharded model states alone exceed the job's HBM)."""
    smallest = int(np.argmin(ev.memory.total))
    best = float(ev.memory.total[smallest])
    largest, largest_bytes = _largest_memory_term(
        {k: float(getattr(ev.memory, k)[smallest]) for k in MemoryBytes.model_fields}
    )
    weights, grads, optimizer = _state_bytes_per_param(request)
    per_param = weights + grads + optimizer
    # the multi-token-prediction modules are trained and held too (model.mtp_params, on the last stage)
    states = per_param * float(request.model.total_params + request.model.mtp_params)
    need = math.ceil(states / max(limit - request.constraints.reserve_bytes, 1.0))
    if need > request.node_size:  # GPUs come in whole nodes past one node
        need = math.ceil(need / request.node_size) * request.node_size
    out = [
        f"the smallest memory of any layout is {best / 1e9:.1f} GB against {limit / 1e9:.1f} GB usable; "
        f"its largest term is {largest} at {largest_bytes / 1e9:.1f} GB"
    ]
    states_line = (
        f"model states alone ({per_param:g} bytes/param: {weights:g} weights + {grads:g} gradients + "
        f"{optimizer:g} optimizer, fully sharded) need at least {need:,} {request.gpu.name} GPU{'' if need == 1 else 's'}"
    )
    if need > request.n_gpus:  # no pin or dtype shrinks the states below their fully sharded size: more GPUs,
        # or the margins kept free, which the bound was counted against (a layout may fit at these GPUs without them)
        margin = _smaller_margin(request)
        return [*out, _more_gpus_line(request, need, states_line), *([margin] if margin else [])], True
    if (
        largest == "activations"
    ):  # what more GPUs buy is a finer split of the tokens (CP) or the layers (TP, PP)
        out.append(_more_gpus_for_activations(request, states_line))
    # else the job has GPUs enough for the states fully sharded: what holds them back is a pin or a dtype
    useful = _pin_and_dtype_tips(request, ev, smallest, limit)
    return out + ([", ".join(useful)] if useful else []), False


def _more_gpus_for_activations(request: ParallelRequest, states_line: str) -> str:
    """The advice for more GPUs to split the activations, with the fewest count above the job's at which a layout
    passes every rule by the same model (:func:`_fewest_gpus_that_fit`, from a node more), where one tried does;
    without a count where none does (or the grid is too large to search)."""
    step = request.node_size if request.n_gpus >= request.node_size else 1
    found = _fewest_gpus_that_fit(request, request.n_gpus + step)
    text = "more GPUs, to split the activations further (TP, PP and, for a long sequence, CP divide them)"
    if found.fits is None:
        return f"{text}; {states_line} (cluster.gpus)"
    where = "first fits" if found.fits <= found.contiguous_to else "fits (none tried below it does)"
    return f"{text}: a layout {where} at {found.fits:,} GPUs (cluster.gpus={found.fits}); {states_line}"


def _more_gpus_line(request: ParallelRequest, need: int, states_line: str) -> str:
    """The advice for more GPUs: the fewest count found at which a layout passes every rule at the margins as
    set (:func:`_fewest_gpus_that_fit`), or, where none tried does, the states' bound said to be one that does
    not fit (at these margins the rest of the memory on top of the states needs more)."""
    found = _fewest_gpus_that_fit(request, need)
    if not found.searchable:  # a grid too large to search: the bound, said to be one
        return f"more GPUs: {states_line}, a lower bound (at least cluster.gpus={need})"
    if found.fits is None:
        return (
            f"more GPUs: {states_line}, a lower bound that does not fit: with the rest of the memory on top, no "
            f"count tried from {need:,} to {found.largest_tried:,} GPUs passes at these margins"
        )
    if found.fits == need:
        return f"more GPUs: {states_line} (at least cluster.gpus={need})"
    if found.fits <= found.contiguous_to:
        return (
            f"more GPUs: {states_line}; with the rest of the memory on top, a layout first fits at {found.fits:,} "
            f"(at least cluster.gpus={found.fits})"
        )
    return (
        f"more GPUs: {states_line}; with the rest of the memory on top, none from {need:,} to "
        f"{found.contiguous_to:,} fits at these margins, {found.fits:,} does (cluster.gpus={found.fits})"
    )


def _pin_and_dtype_tips(request: ParallelRequest, ev: Evaluation, smallest: int, limit: float) -> list[str]:
    """:func:`_memory_suggestions`' pins and dtypes that can lower the memory of the smallest row ``smallest``:
    only a pin can be relaxed (an unpinned axis was searched at its smallest-memory value already), and only to a
    ZeRO stage the stack's engine has (:func:`_stack_zero_stages`)."""
    pins = request.pins
    best = float(ev.memory.total[smallest])
    stages = _stack_zero_stages(request)
    have = ", ".join(map(str, stages))
    # ZeRO-3 under pinned pipeline stages holds the whole stage gathered (memory.model_state_bytes): it never
    # needs less memory than ZeRO-1 there, so it is offered only together with one stage
    staged = pins.pp is not None and pins.pp > 1
    # under the stages, a ZeRO stage below 3 that shards the optimizer, checked (a reviewer's 405B at ZeRO-0 was
    # sent to ZeRO-3 with the stages given up, CP 16 at 4,096 tokens, while ZeRO-1 fits)
    sharded = _zero_under_stages(request) if staged and pins.zero in (0, 1) else None
    long_pinned = request.seq_len >= 32768 and pins.cp is not None and pins.cp < request.n_gpus
    more_cp = _more_context_parallel(request) if long_pinned else None
    margin = _smaller_margin(request) if best <= request.gpu.hbm_bytes else None
    tips = [
        (pins.zero not in (None, 3) and not staged and 3 in stages, "ZeRO-3 (parallel.zero=3)"),
        (
            pins.zero not in (None, 3) and not staged and 3 not in stages,
            f"ZeRO-3 on a stack whose engine has it (stack.preset megatron-core: this stack runs ZeRO {have} only)",
        ),
        (sharded is not None, str(sharded)),
        (
            staged and 3 in stages,
            "ZeRO-3 without pipeline stages ("
            + ("" if pins.zero == 3 else "parallel.zero=3 ")
            + "parallel.pp=1)",
        ),
        (pins.recompute not in (None, "full"), "full recomputation (parallel.recompute=full)"),
        (pins.micro_batch not in (None, 1), "a smaller micro-batch (parallel.micro_batch=1)"),
        # bf16 gradients halve the gradients term: offered where that alone covers the excess
        (
            request.stack.gradient_bytes == 4 and float(ev.memory.gradients[smallest]) / 2 >= best - limit,
            "bf16 gradients (stack.gradient_dtype)",
        ),
        # it fits the card: the margins kept free are what rule it out (each with the value that passes)
        (margin is not None, str(margin)),
        (more_cp is not None, f"more context parallelism ({more_cp}) for this long sequence"),
        (
            request.seq_len >= 32768 and not request.stack.context_parallel and pins.cp is None,
            "a stack with context parallelism for this long sequence (stack.preset megatron-core or "
            "torchtitan-fsdp2: this stack runs none)",
        ),
    ]
    return [text for wanted, text in tips if wanted]


def _joint_suggestions(
    request: ParallelRequest, grid: LayoutGrid, ev: Evaluation, ok: dict[str, np.ndarray], bounds: _Bounds
) -> list[str]:
    """When only the constraints together rule every row out: how far each one is from passing among the rows
    that pass the other two."""
    out = []
    fits = ok["memory"] & ok["bubble"]
    if fits.any():
        batches = ev.tokens_per_step[fits]
        low, high = bounds.low_tokens, bounds.high_tokens
        below, above = batches[batches < low], batches[batches > high]
        if not below.size:  # every such batch is too large; a largest batch narrows a target, never widens it
            least = float(above.min())
            largest = _max_batch_clause(request, least)
            # fewer GPUs shrink only d: offered where a row's d·b·m·s at d = 1 (or the pinned dp) is below it
            per_dp = batches / grid.dp[fits]
            fewer = (
                f"use {_fewer_gpus(request)}, or "
                if float(per_dp.min()) * (request.pins.dp or 1) < least
                else ""
            )
            out.append(
                f"the smallest global batch of a layout within memory and the bubble cap is {least:,.0f} "
                f"tokens against a ceiling of {high:,.0f}: {fewer}a larger batch "
                f"(schedule.global_batch_tokens={least:.0f}{largest})"
            )
        else:
            out.append(_batch_steps(batches, bounds, "layouts within memory and the bubble cap"))
    batched = ok["memory"] & ok["global_batch"]
    if batched.any():
        least = float(ev.bubble_fraction[batched].min())
        larger = _larger_bubble_cap(least)  # the least bubble's row passes the other two: that cap admits it
        out.append(
            f"the smallest bubble of a layout within memory and the batch range is {least:.0%} against a cap of "
            f"{request.constraints.max_bubble_fraction:.0%}: "
            + (f"{larger}, or " if larger else "")
            + "more micro-batches per step (a larger batch, or fewer pipeline stages)"
        )
    light = ok["bubble"] & ok["global_batch"]
    if light.any():
        least = float(ev.memory.total[light].min())
        out.append(
            f"the least memory of a layout within the bubble cap and the batch range is {least / 1e9:.1f} GB "
            f"against {bounds.memory_limit_bytes / 1e9:.1f} GB usable: more GPUs or less memory per GPU"
        )
    return out


def _larger_bubble_cap(least: float) -> str | None:
    """The cap that admits a bubble fraction of ``least`` (rounded up to 0.001), or None where that is not below
    1: Constraints.max_bubble_fraction takes values below 1 only, so no cap admits a bubble of 1 or more."""
    cap = math.ceil(least * 1000) / 1000
    return f"a larger constraints.max_bubble_fraction={cap:g}" if cap < 1.0 else None


def _batch_steps(batches: np.ndarray, bounds: _Bounds, whose: str) -> str:
    """The batches step over the range (d·b·m·s moves in steps of d·s): the nearest ones on either side."""
    low, high = bounds.low_tokens, bounds.high_tokens
    below, above = batches[batches < low], batches[batches > high]
    nearest = " or ".join(
        [*([f"{below.max():,.0f}"] if below.size else []), *([f"{above.min():,.0f}"] if above.size else [])]
    )
    # with a target the range is target ± tolerance (min/max only narrow it, batch_range_tokens), and only
    # `parallelize` sets the tolerance, by its flag: a plan file has no key for it and holds the default ±10%
    # (cli.flags.paths_for_user names the flag to plan-file users as `runplan parallelize PLAN --batch-tolerance`)
    wider = (
        "a wider tolerance around it (parallelize.global_batch_tolerance; a plan holds ±10%)"
        if bounds.batch_source.startswith("target")
        else "a wider range (constraints.min_global_batch_tokens, constraints.max_global_batch_tokens)"
    )
    return (
        f"the global batches of {whose} step over [{low:,.0f}, {high:,.0f}]: the nearest are {nearest} "
        f"tokens; a batch target there (schedule.global_batch_tokens), or {wider}"
    )


def ensure_feasible(result: SearchResult, request: ParallelRequest | None = None) -> SearchResult:
    """Return ``result`` if any layout is feasible, else raise Infeasible naming the constraint: a
    :class:`PinConflict` (bad input) when no layout passed the divisibility rules because of a pin of
    ``request`` that no layout can take, whatever the other axes."""
    if result.feasible:
        return result
    conflicts = pin_conflicts(request) if request is not None and not result.candidates else []
    if conflicts:  # one line at the first pin's key: its rules and their fixes together, then other pins'
        axis = conflicts[0][0]
        mine = [c for c in conflicts if c[0] == axis]
        others = "; ".join(f"{t} ({h})" for a, t, h in conflicts if a != axis)
        text = "; ".join(t for _, t, _ in mine) + (f"; also {others}" if others else "")
        raise PinConflict(
            text, where=f"parallel.{axis}", hint="; ".join(dict.fromkeys(h for _, _, h in mine))
        )
    if not result.candidates:
        engine_rules = request is not None and bool(structural_axes(request)[0])  # (divisibility passed)
        raise Infeasible(
            "no layout passes the divisibility and engine rules: " + "; ".join(result.suggestions),
            suggestions=[
                _engine_rules_fix(request)
                if engine_rules and request is not None
                else "change the GPU count (cluster.gpus) or the pins"
            ],
        )
    if result.candidates == 1 and result.nearest_misses:
        miss = result.nearest_misses[0]
        memory = miss.memory_bytes
        largest, largest_bytes = _largest_memory_term(memory.model_dump())
        raise Infeasible(
            f"the pinned layout needs {memory.total / 1e9:.1f} GB per GPU against {miss.memory_limit_bytes / 1e9:.1f} "
            f"GB usable ({miss.memory_stage} stage); the largest term is {largest} at {largest_bytes / 1e9:.1f} GB",
            suggestions=result.suggestions,
        )
    everyone = [k for k, v in result.eliminated.items() if v == result.candidates]
    if everyone:
        names = " and ".join(everyone)
        plural = "s" if len(everyone) > 1 else ""
        reason = f"every one of the {result.candidates:,} candidates breaks the {names} constraint{plural}"
    else:
        counts = ", ".join(f"{k} removed {v:,}" for k, v in result.eliminated.items())
        reason = (
            f"no candidate satisfies memory, bubble and batch together ({counts} of {result.candidates:,})"
        )
    near = "; ".join(f"{x.one_line()}: " + ", ".join(x.violations) for x in result.nearest_misses)
    if near:
        reason += f"; nearest misses: {near}"
    raise Infeasible(reason, suggestions=result.suggestions)
