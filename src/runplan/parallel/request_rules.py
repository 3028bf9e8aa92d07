"""The rules a layout request must meet before any search: bounds and cross-field checks, stated once.

:class:`~runplan.parallel.layout.ParallelRequest` runs :func:`check_request` as its model validator, so a
request that breaks one is never built, whoever builds it (the CLI's flags, a plan file, a calibration's
measured runs). Each refusal is a one-line :class:`~runplan.errors.SpecError` naming the plan-file key path
(:data:`FIELD_PATHS`); the CLI maps the path to its flag (``runplan.cli.flags``), the plan loader to
``file:line``. ``search`` calls it again for requests changed with ``model_copy`` (flags laid over a plan's
request), which pydantic does not validate.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from runplan.defaults import MAX_GPUS, MAX_GPUS_PER_NODE, MAX_SEQ_LEN
from runplan.errors import SpecError

if TYPE_CHECKING:
    from runplan.parallel.layout import ParallelRequest

# Bounds on a layout request (check_request): far beyond any real run, so only typos are refused, and low
# enough that the integer grid arithmetic (int64) and the float time model stay finite.
# MAX_GPUS, MAX_GPUS_PER_NODE and MAX_SEQ_LEN are shared with the plan file (runplan.defaults).
#: 1e10 tokens per step: about 150× the largest batch reported (DeepSeek-V3 ramps to 15,360 sequences of
#: 4,096 = 63M tokens, arXiv 2412.19437 §4.2; Llama 3 405B uses 16M).
MAX_GLOBAL_BATCH_TOKENS = 1e10
#: 1e20 training tokens: millions of times the largest pre-training sets reported by 2025 (Qwen3: 36T).
MAX_TRAINING_TOKENS = 1e20

#: The plan-file key path of each request field :func:`check_request` checks: its SpecErrors name these
#: paths; the CLI maps a path to its flag (``runplan.cli``) and the plan loader to ``file:line``.
FIELD_PATHS = {
    "n_gpus": "cluster.gpus",
    "gpus_per_node": "cluster.gpus_per_node",
    "global_batch_tokens": "schedule.global_batch_tokens",
    "training_tokens": "budget",
    "min_global_batch_tokens": "constraints.min_global_batch_tokens",
    "max_global_batch_tokens": "constraints.max_global_batch_tokens",
    "mfu_override": "parallelize.mfu",
    "seq_len": "training.seq_len",
    "reserve_bytes": "constraints.reserve_bytes",
    "memory_headroom_fraction": "constraints.memory_headroom_fraction",
    "gpu": "cluster.gpu",
    **{
        axis: f"parallel.{axis}"
        for axis in ("tp", "pp", "dp", "ep", "cp", "vpp", "micro_batch", "microbatches")
    },
}


def pinned_mesh_problem(pins: Any, n_gpus: int) -> str | None:
    """Why the pinned tp, pp, dp and cp cannot make up ``n_gpus`` (t·p·d·c = GPUs), or None when they can: their
    product must divide the GPU count, and equal it when all four are pinned."""
    mesh = {axis: getattr(pins, axis) for axis in ("tp", "pp", "dp", "cp") if getattr(pins, axis) is not None}
    product = math.prod(mesh.values())
    if not (n_gpus % product or (len(mesh) == 4 and product != n_gpus)):
        return None
    text = (
        f"{'·'.join(mesh)} = {'·'.join(map(str, mesh.values()))} = {product:,}"
        if len(mesh) > 1
        else f"{next(iter(mesh))} = {product:,}"  # one axis: "tp = 3", not "tp = 3 = 3"
    )
    return f"{text} GPUs, not {n_gpus:,}" if len(mesh) == 4 else f"{text} does not divide {n_gpus:,} GPUs"


def zero_against_stack(zero: int | None, distributed_optimizer: bool | None) -> str | None:
    """Why a pinned ZeRO stage contradicts the stack's ``distributed_optimizer: false``, or None. False means the
    optimizer states stay whole, ZeRO-0 only (Stack.distributed_optimizer; docs/parallel.md, Stacks), while every
    ZeRO >= 1 shards them (Rajbhandari et al. 2020 §5: P_os is stage 1); the search would otherwise evaluate the
    pin and drop the stack key without a word. True beside a pinned ZeRO-0 is not refused: the megatron-core
    preset sets it, and the pin of a layout that really ran wins (a warning names what Megatron needs)."""
    if zero is None or zero == 0 or distributed_optimizer is not False:
        return None
    return (
        f"ZeRO-{zero} shards the optimizer states, and stack.distributed_optimizer: false keeps them whole "
        "(ZeRO-0 only)"
    )


def check_whole_nodes(n_gpus: int, gpus_per_node: int, where: str = "cluster.gpus") -> None:
    """A job of more than one node uses every GPU of each node (a job within one node may use part of it)."""
    if n_gpus > gpus_per_node and n_gpus % gpus_per_node:
        raise SpecError(
            f"{n_gpus} GPUs do not fill whole nodes of {gpus_per_node}",
            where=where,
            hint=f"use a multiple of {gpus_per_node}, e.g. {n_gpus - n_gpus % gpus_per_node}, or set "
            "cluster.gpus_per_node",
        )


def check_request(request: ParallelRequest) -> None:
    """Refuse requests no layout search can answer sensibly, with a SpecError naming the key path
    (:data:`FIELD_PATHS`). Checks:
    whole nodes (a job of more than one node uses every GPU of each node), a target batch of at least one
    sequence and at most the training tokens (else the run is less than one step), a batch range with
    min ≤ max, an MFU override of at least MIN_MFU (it divides the step time), and the bounds above
    (MAX_GPUS, MAX_SEQ_LEN, MAX_GLOBAL_BATCH_TOKENS, MAX_TRAINING_TOKENS).
    """
    name = FIELD_PATHS
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
    check_whole_nodes(n, node, name["n_gpus"])
    _validate_pins(request, name)
    _validate_batch(request, name)


def _validate_batch(request: ParallelRequest, name: dict[str, str]) -> None:
    """The reserve below HBM, a batch of at least one sequence and at most the run, min <= max, the bounds."""
    reserve = request.constraints.reserve_bytes
    # the search's limit is HBM less the headroom (search._bounds); the reserve comes out of that limit
    usable = request.gpu.hbm_bytes * (1.0 - request.constraints.memory_headroom_fraction)
    if reserve >= usable:
        # the key the user set is the one to change: a headroom typed beside the default reserve is named
        given = request.constraints.model_fields_set
        blamed = (
            "memory_headroom_fraction"
            if "reserve_bytes" not in given and "memory_headroom_fraction" in given
            else "reserve_bytes"
        )
        raise SpecError(
            f"a reserve of {reserve / 1e9:.3g} GB is not below the {usable / 1e9:.3g} GB the "
            f"{request.gpu.name}'s HBM leaves after the headroom: nothing would be left for the model",
            where=name[blamed],
            hint="typical: 2GB to 5GB, with constraints.memory_headroom_fraction 0.05",
        )
    batch, tokens = request.global_batch_tokens, request.training_tokens
    if batch is not None and batch < request.seq_len:
        raise SpecError(
            f"a global batch of {_as_typed(batch)} tokens is less than one sequence of {request.seq_len:,}",
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
            hint="swap them, or lower the smallest batch",
        )
    if high is not None and high < request.seq_len:
        raise SpecError(
            f"the largest batch {high:,.0f} tokens is less than one sequence of {request.seq_len:,}",
            where=name["max_global_batch_tokens"],
            hint=f"raise it to a multiple of the sequence length, e.g. {request.seq_len * 256:,}",
        )
    if batch is not None:  # the target's band [b(1-tol), b(1+tol)] must meet the range the bounds allow
        tol = request.global_batch_tolerance
        if low is not None and low > batch * (1.0 + tol):
            raise SpecError(
                f"the smallest batch {low:.4g} is above the target {batch:.4g} tokens + {tol:.0%}",
                where=name["min_global_batch_tokens"],
                hint="drop one of them, or lower the smallest batch",
            )
        if high is not None and high < batch * (1.0 - tol):
            raise SpecError(
                f"the largest batch {high:.4g} is below the target {batch:.4g} tokens - {tol:.0%}",
                where=name["max_global_batch_tokens"],
                hint="drop one of them, or raise the largest batch",
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
    _check_mfu_override(request, name)


def _check_mfu_override(request: ParallelRequest, name: dict[str, str]) -> None:
    """An MFU override of at least MIN_MFU: it divides the step time."""
    if request.mfu_override is None:
        return
    # imported here: runplan.scaling.budget builds the Budget and HardwareCost models on import (~5 ms of
    # `parallelize`'s start-up), and only an MFU override reads it (tests/test_cli_startup.py)
    from runplan.scaling.budget import MIN_MFU

    if request.mfu_override < MIN_MFU:
        raise SpecError(
            f"must be at least {MIN_MFU:g}, got {request.mfu_override:g}",
            where=name["mfu_override"],
            hint="typical: 0.3 to 0.5",
        )


def _as_typed(value: float) -> str:
    """A number as the user wrote it: whole numbers with thousands separators, a fraction as it is (1.5 stays 1.5,
    not the 2 that rounding to a whole number printed)."""
    return f"{value:,.0f}" if value == int(value) else f"{value:g}"


def _divisors_text(n: int) -> str:
    """The divisors of ``n``, the degrees a job of ``n`` GPUs can take (d = GPUs/(t·p·c)): '1, 2, 3, 6', or the
    first six and the last, '1, 2, 4, 8, 16, 32, ... 512'."""
    small = [k for k in range(1, math.isqrt(n) + 1) if n % k == 0]
    values = sorted({*small, *(n // k for k in small)})
    shown = values if len(values) <= 8 else [*values[:6], "..."]
    return ", ".join(map(str, shown)) + (f" {values[-1]}" if len(values) > 8 else "")


def _validate_pins(request: ParallelRequest, name: dict[str, str]) -> None:
    """Pinned degrees above the GPU count (or layers, for vpp), and a pinned micro-batch or count of
    micro-batches above MAX_GLOBAL_BATCH_TOKENS, are typos: refused here, before the int64 grid."""
    pins, n = request.pins, request.n_gpus
    for axis in ("tp", "pp", "dp", "ep", "cp"):
        value = getattr(pins, axis)
        if value is not None and value > n:
            raise SpecError(
                f"{axis}={float(value):.4g} is more than the {n:,} GPU{'' if n == 1 else 's'} of the job",
                where=name[axis],
                hint=f"a parallel degree divides the GPU count: pin one of {_divisors_text(n)}",
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
