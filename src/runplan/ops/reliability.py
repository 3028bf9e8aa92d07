"""Failures and goodput: job interruption rate, MTBF, expected lost time, effective wall-clock days.

Model (docs/operations.md §3): interruptions arrive as a Poisson process. A job on n nodes, each failing at rate r
per node-day, is interrupted at rate λ = n·r (any node stops the synchronous job), so its mean time between
interruptions is M = 1/λ. A job on part of a node counts n = its GPUs / GPUs per node (``failing_nodes``). The run is cut into segments of τ seconds of work, each ended by a checkpoint save
that blocks for δ seconds. After an interruption the job restarts (R seconds: detect, reschedule, load the
checkpoint; failures may also strike during it) and redoes the segment from its start.

Exact expected time per segment (Daly 2006, "A higher order estimate of the optimum checkpoint interval for
restart dumps", FGCS 22(3), the expected wall-clock time with restarts; also docs/operations.md §3):

    E[T] = M·e^{R/M}·(e^{(τ+δ)/M} − 1)

Derivation: a failed attempt leaves the job needing R + τ + δ of failure-free time, which takes
M·(e^{(R+τ+δ)/M} − 1) in expectation; the first attempt needs only τ + δ. Weighting by the chance that the
first attempt fails gives the formula, and the expected number of interruptions per segment is E[T]/M.
First-order form (Young 1974, expanding to first order in (τ+δ)/M and R/M):
E[T] ≈ (τ + δ)·(1 + (τ + δ)/(2M) + R/M).

Calibration (Llama 3, arXiv 2407.21783, §3.3.4 and Table 5): 419 unexpected interruptions in 54 days of
pre-training on 16,384 H100 = 2,048 nodes of 8, i.e. 419/(54·2,048) = 3.79 per 1,000 node-days and a job
MTBF of 54·24/419 = 3.09 h. Kokolis et al. 2024 (arXiv 2410.21680) report 2.3 to 6.5 per 1,000 node-days on
Meta's research clusters.

Leaves out: failures that are not independent (a switch or a whole rack), time-varying rates (infant
mortality, ageing), silent data corruption found late, stragglers and planned maintenance (Llama 3 also
had 47 planned interruptions), and, with asynchronous saves, a failure during the background write making
the previous checkpoint the latest durable one (about L more lost per interruption, L the write time;
``operate`` warns with the corrected figure when it matters, see ``runplan.ops._durability_lag_warning``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import BaseModel, Field, model_validator

from runplan.ops._notes import INPUT_CONFIG, Explained, Reasoned, fmt, fmt_plain, fmt_seconds, in_days
from runplan.units import (
    SECONDS_PER_DAY,
    NonNegativeNumber,
    PositiveBytes,
    PositiveCount,
    PositiveNumber,
    at_least,
    at_most,
)

#: Llama 3 (arXiv 2407.21783, §3.3.4): 419 unexpected interruptions, 54 days, 2,048 nodes of 8 H100.
LLAMA3_INTERRUPTIONS = 419
LLAMA3_DAYS = 54
LLAMA3_NODES = 2_048
LLAMA3_FAILURES_PER_1000_NODE_DAYS = LLAMA3_INTERRUPTIONS / (LLAMA3_DAYS * LLAMA3_NODES) * 1000.0
#: Llama 3's nodes held 8 H100 each (arXiv 2407.21783 §3.3.1), so its rate is per 8-GPU node.
LLAMA3_GPUS_PER_NODE = 8
#: GPUs of the host whose storage NICs node_write_bandwidth_bytes_per_s describes: a DGX H100, 8 GPUs (NVIDIA DGX
#: BasePOD reference architecture). A node of g > 8 GPUs writes through g/8 such hosts' NICs (checkpoint._write_hosts).
WRITE_HOST_GPUS = 8


def default_failure_rate(gpus_per_node: int) -> float:
    """Llama 3's rate per 8-GPU node scaled to nodes of ``gpus_per_node`` GPUs: r = 3.79 × g / 8.

    Hand-derived: most of Llama 3's unexpected interruptions came from the GPUs themselves (Table 5: faulty GPU
    30.1%, HBM3 17.2%, SRAM 4.5%, GPU system processor 4.1%, ...), so the rate carries over per GPU, not per
    node: a 72-GPU NVLink domain counted as one "node" fails about 9× as often as an 8-GPU node, not as often.
    """
    return LLAMA3_FAILURES_PER_1000_NODE_DAYS * gpus_per_node / LLAMA3_GPUS_PER_NODE


def failure_rate_for(spec: OperationsSpec, gpus_per_node: int) -> tuple[float, str]:
    """The rate the failure model uses and where it comes from: the plan file's, else the Llama 3 default
    scaled to the node size (see :func:`default_failure_rate`)."""
    if "failures_per_1000_node_days" in spec.model_fields_set:
        return spec.failures_per_1000_node_days, "plan file, operations.failures_per_1000_node_days"
    rate = default_failure_rate(gpus_per_node)
    if gpus_per_node == LLAMA3_GPUS_PER_NODE:
        return rate, "Llama 3: 419 / (54 d × 2,048 nodes) × 1,000"
    return rate, (
        f"Llama 3's 3.79 per 8-GPU node × {gpus_per_node}/8 GPUs per node: its interruptions are mostly GPU "
        "faults, so the rate scales per GPU"
    )


#: Bounds of the operations inputs (OperationsSpec): wide enough for any real cluster, narrow enough that a
#: typo (an exponent off by hundreds) is refused instead of overflowing the renewal formula.
#: 100 MB/s: a single hard disk or 1 Gb/s Ethernet; every real checkpoint path (NIC, PCIe, file system) is faster.
MIN_BANDWIDTH_BYTES_PER_S = 1e8
#: 1,000 per 1,000 node-days: every node failing once a day, ~260× the Llama 3 rate and ~150× the worst
#: research cluster in Kokolis et al. 2024 (6.5).
MAX_FAILURES_PER_1000_NODE_DAYS = 1000.0
#: A week to resume: any longer is not a restart but a new cluster.
MAX_RESTART_SECONDS = 7 * SECONDS_PER_DAY
#: A day of fixed cost per save (barriers, metadata): real saves take seconds to minutes.
MAX_SAVE_FIXED_SECONDS = SECONDS_PER_DAY


class OperationsSpec(BaseModel):
    """Plan-file section `operations:`: storage, checkpointing and failure assumptions."""

    model_config = INPUT_CONFIG

    storage_write_bandwidth_bytes_per_s: PositiveBytes = Field(
        2e12,
        **at_least(MIN_BANDWIDTH_BYTES_PER_S),
        description="Aggregate sustained write bandwidth of the checkpoint storage, bytes/s. Default 2 TB/s: "
        "Meta's Tectonic as used for Llama 3 (arXiv 2407.21783 §3.3.1: 2 TB/s sustained, 7 TB/s peak). At "
        "least 1e8 (100 MB/s, one hard disk).",
    )
    node_write_bandwidth_bytes_per_s: PositiveBytes | None = Field(
        25e9,
        **at_least(MIN_BANDWIDTH_BYTES_PER_S),
        description="Write bandwidth one 8-GPU host can push to storage, bytes/s (its storage NICs). Default "
        "25e9 (200 Gb/s), an assumption: DGX H100 nodes carry two dual-port ConnectX-7 for storage and management "
        "(NVIDIA DGX BasePOD reference architecture). A node of more than 8 GPUs is several hosts, each with its "
        "own NICs (a GB200 NVL72 NVLink domain is 18 compute trays of 4 GPUs, each running its own OS with two "
        "BlueField-3 for storage and management: NVIDIA DGX GB200 User Guide, Hardware), so it writes at this × "
        "gpus_per_node/8, as its failures are counted per GPU (failures_per_1000_node_days); a node of 8 or fewer "
        "GPUs is one host. null = not modelled. At least 1e8 (1 Gb/s Ethernet).",
    )
    host_staging: bool = Field(
        True,
        description="Asynchronous checkpointing: copy each GPU's shard to host memory, then write in the "
        "background (Megatron-Core async save, PyTorch DCP async_save). false = synchronous save.",
    )
    host_link_bandwidth_bytes_per_s: PositiveBytes = Field(
        50e9,
        **at_least(MIN_BANDWIDTH_BYTES_PER_S),
        description="Device-to-host copy bandwidth per GPU, bytes/s. Default 50e9: PCIe Gen5 x16 is 32 GT/s "
        "× 16 lanes ≈ 63 GB/s per direction (PCI-SIG PCIe 5.0), about 80% of it achieved. At least 1e8 "
        "(slower than one PCIe Gen1 lane).",
    )
    fully_parallel_save: bool = Field(
        True,
        description="Every rank writes an equal share of the replicated state (Megatron-Core fully parallel "
        "save); false = only the first data-parallel replica writes weights and unsharded optimizer state.",
    )
    save_fixed_seconds: NonNegativeNumber = Field(
        2.0,
        **at_most(MAX_SAVE_FIXED_SECONDS),
        description="Fixed blocking cost of every save on top of moving the bytes (barrier, state-dict "
        "planning, metadata), seconds. Default 2 s: a planning assumption; measure yours. At most a day.",
    )
    restart_seconds: NonNegativeNumber = Field(
        600.0,
        **at_most(MAX_RESTART_SECONDS),
        description="Time from an interruption until training resumes (detect, reschedule, load the "
        "checkpoint, warm up), seconds. Default 600 s: a planning assumption; measure yours. At most a week.",
    )
    failures_per_1000_node_days: PositiveNumber = Field(
        LLAMA3_FAILURES_PER_1000_NODE_DAYS,
        **at_most(MAX_FAILURES_PER_1000_NODE_DAYS),
        description="Unexpected job interruptions per 1,000 node-days. Default 3.79 per 8-GPU node: Llama 3 "
        "(arXiv 2407.21783 §3.3.4), 419 interruptions in 54 days on 2,048 nodes, mostly GPU faults, so scaled "
        "by gpus_per_node/8 for other node sizes; a value given here is used as is. Meta research clusters: "
        "2.3-6.5 (arXiv 2410.21680). At most 1,000 (every node failing daily).",
    )
    retention_generations: PositiveCount = Field(
        3,
        **at_most(1000),
        description="Rolling checkpoints kept; the oldest is deleted only after the newest passes its "
        "checksum validation. At most 1,000 (milestones, not rolling generations, are the long-term record).",
    )
    milestone_every_tokens: PositiveNumber | None = Field(
        None,
        description="Keep a permanent milestone checkpoint every this many tokens (rounded to a multiple of "
        "the checkpoint interval); unset = every 10% of the training tokens.",
    )
    milestone_weights_only: bool = Field(
        False,
        description="Milestones keep only bf16 weights (2 B/param) instead of the full resumable state; "
        "false keeps them resumable, e.g. to branch WSD cooldowns from them.",
    )


#: A request's ``spec`` field: the plan file's operations section (defaults when the plan has none).
OperationsSection = Annotated[
    OperationsSpec, Field(default_factory=OperationsSpec, description="The plan file's operations section.")
]


def job_interruption_rate_per_day(failures_per_1000_node_days: float, n_nodes: float) -> float:
    """λ = n_nodes · r / 1000 interruptions per day (any node stops a synchronous job)."""
    return n_nodes * failures_per_1000_node_days / 1000.0


def failing_nodes(gpus: int, gpus_per_node: int) -> float:
    """The nodes whose failures stop the job, counted by its GPUs: gpus / gpus_per_node (a fraction of a node for
    a job smaller than one; whole nodes are counted as before).

    Hand-derived from the argument behind :func:`default_failure_rate`: most of Llama 3's interruptions were
    faults of a GPU (arXiv 2407.21783 Table 5: faulty GPU 30.1%, HBM3 17.2%, SRAM 4.5%, GPU system processor
    4.1%, ...), which stop only the job that runs on it, so the rate is carried per GPU. A job on 4 GPUs of an
    8-GPU node is interrupted at 4/8 of the node's rate, as a job on one 4-GPU node is (3.79 × 4/8), and 8 GPUs
    of a 72-GPU NVLink domain at 8/72 of the domain's, as one 8-GPU node. Host, NIC and switch faults that stop
    the whole node are charged at the same per-GPU share (an approximation; the rate does not split them out).
    """
    return gpus / gpus_per_node


def job_mtbf_seconds(failures_per_1000_node_days: float, n_nodes: float) -> float:
    """M = 1/λ in seconds: 86,400 · 1000 / (n_nodes · r)."""
    return SECONDS_PER_DAY / job_interruption_rate_per_day(failures_per_1000_node_days, n_nodes)


def expected_segment_seconds(work_seconds, save_seconds, restart_seconds, mtbf_seconds):
    """Exact E[T] = M·e^{R/M}·(e^{(τ+δ)/M} − 1) for one segment (Daly 2006); numpy-broadcastable."""
    import numpy as np  # lazy: `runplan --help` must not load numpy

    m = np.asarray(mtbf_seconds, dtype=float)
    with np.errstate(over="ignore"):  # segments far longer than M: E[T] = inf, reported as goodput ≈ 0
        return (
            m
            * np.exp(np.asarray(restart_seconds) / m)
            * np.expm1((np.asarray(work_seconds) + save_seconds) / m)
        )


def first_order_segment_seconds(work_seconds, save_seconds, restart_seconds, mtbf_seconds):
    """First-order E[T] ≈ (τ+δ)·(1 + (τ+δ)/(2M) + R/M) (Young 1974); numpy-broadcastable."""
    import numpy as np  # lazy: `runplan --help` must not load numpy

    a = np.asarray(work_seconds, dtype=float) + save_seconds
    return a * (1 + a / (2 * np.asarray(mtbf_seconds)) + np.asarray(restart_seconds) / mtbf_seconds)


class ReliabilityRequest(BaseModel):
    """What the failure model needs: the cluster, the run's useful time and the checkpoint plan."""

    model_config = INPUT_CONFIG

    n_nodes: PositiveCount = Field(description="Nodes the job runs on.")
    gpus: PositiveCount | None = Field(
        None,
        description="GPUs of the job; fewer than n_nodes × gpus_per_node (a job on part of a node) are "
        "interrupted at their share of the nodes' rate (failing_nodes). Unset = n_nodes × gpus_per_node.",
    )
    useful_seconds: PositiveNumber = Field(
        description="Failure-free training time: Σ over batch stages of steps × that stage's step time (no saves, no failures)."
    )
    interval_seconds: PositiveNumber = Field(
        description="Work between checkpoints τ, seconds (rounded to steps): with a batch ramp the mean over the "
        "run, W × interval_steps / total_steps."
    )
    interval_steps: PositiveCount | None = Field(
        None, description="Steps between saves k, for the reason line of τ (the checkpoint stage's interval)."
    )
    total_steps: PositiveCount | None = Field(
        None, description="Steps of the run S, for the reason line of τ = W × k / S."
    )
    save_blocking_seconds: NonNegativeNumber = Field(description="Time a save blocks training δ, seconds.")
    gpus_per_node: PositiveCount = Field(
        LLAMA3_GPUS_PER_NODE,
        description="GPUs per node: the default failure rate (Llama 3's, per 8-GPU node) is scaled by it / 8.",
    )
    spec: OperationsSection

    @model_validator(mode="after")
    def _gpus_fit_the_nodes(self) -> ReliabilityRequest:
        if self.gpus is not None and self.gpus > self.n_nodes * self.gpus_per_node:
            raise ValueError(
                f"gpus = {self.gpus:,} do not fit on {self.n_nodes:,} nodes of {self.gpus_per_node}; give the "
                "job's GPUs or more nodes"
            )
        return self

    def failing_nodes(self) -> float:
        """Nodes counted by the job's GPUs (:func:`failing_nodes`): n_nodes when it fills them."""
        gpus = self.gpus if self.gpus is not None else self.n_nodes * self.gpus_per_node
        return failing_nodes(gpus, self.gpus_per_node)


class Reliability(Explained):
    """The failures-and-goodput section of a run plan."""

    failures_per_1000_node_days: float
    n_nodes: int
    job_interruptions_per_day: float
    job_mtbf_seconds: float
    restart_seconds: float
    interval_seconds: float
    save_blocking_seconds: float
    segments: int
    expected_segment_seconds: float
    first_order_segment_seconds: float
    useful_seconds: float
    expected_elapsed_seconds: float
    first_order_elapsed_seconds: float
    expected_interruptions: float
    save_overhead_seconds: float
    expected_failure_loss_seconds: float
    goodput: float
    first_order_goodput: float
    useful_days: float
    effective_days: float
    warnings: list[str]


def assess_reliability(request: ReliabilityRequest) -> Reliability:
    """Expected interruptions, lost time and goodput for one run (exact renewal formula; see module doc).

    The useful time W splits into ⌊W/τ⌋ full segments and one shorter last segment of W mod τ; each segment
    ends with a save of δ. Elapsed = Σ E[T] over segments; goodput = W / elapsed; expected interruptions =
    elapsed / M (each segment's expected interruptions are E[T]/M).
    """
    spec, w = request.spec, request.useful_seconds
    rate, source = failure_rate_for(spec, request.gpus_per_node)
    m = job_mtbf_seconds(rate, request.failing_nodes())
    tau, delta, r = min(request.interval_seconds, w), request.save_blocking_seconds, spec.restart_seconds
    full = math.floor(w / tau * (1.0 + 1e-12))  # (τ = W·k/S from steps: W/τ is whole up to rounding)
    rest = max(0.0, w - full * tau)
    rest = 0.0 if rest < 1e-9 * w else rest
    segments = full + (1 if rest > 0 else 0)
    seg_exact, elapsed = _run_seconds(expected_segment_seconds, full, rest, (tau, delta, r, m))
    seg_first, elapsed_first = _run_seconds(first_order_segment_seconds, full, rest, (tau, delta, r, m))
    goodput = Reasoned(
        w / elapsed, f"W / elapsed = {fmt_plain(w)} / {fmt_plain(elapsed)} = {w / elapsed:.4f}"
    )
    return Reliability.build(
        **_failure_rate(rate, request, m, source),
        **_segment_inputs(r, tau, delta, request),
        segments=Reasoned(
            segments,
            f"⌈W/τ⌉ = ⌈{fmt_plain(w)} / {fmt_plain(tau)}⌉ = {segments:,} segments (each ends with a save)",
        ),
        expected_segment_seconds=Reasoned(
            seg_exact,
            f"E[T] = M·e^(R/M)·(e^((τ+δ)/M) − 1) = {fmt_plain(m)}·e^({r / m:.4g})·(e^({(tau + delta) / m:.4g}) − 1) "
            f"= {fmt_plain(seg_exact)} s (exact renewal, Daly 2006)",
        ),
        first_order_segment_seconds=Reasoned(
            seg_first,
            f"(τ+δ)·(1 + (τ+δ)/(2M) + R/M) = {fmt_plain(seg_first)} s (first order; {(seg_first / seg_exact - 1):+.2%} "
            "vs exact)",
        ),
        useful_seconds=Reasoned(w, f"W = Σ stage steps × stage step time = {fmt_seconds(w)}"),
        expected_elapsed_seconds=Reasoned(
            elapsed, f"Σ E[T] over {segments:,} segments = {fmt_seconds(elapsed)}"
        ),
        first_order_elapsed_seconds=Reasoned(
            elapsed_first, f"Σ first-order E[T] = {fmt_seconds(elapsed_first)}"
        ),
        **_lost_time(w, (elapsed, elapsed_first), m, (segments, delta), goodput),
        warnings=_warnings((tau, delta), m, goodput.value, elapsed_first / elapsed, spec.host_staging),
    )


def _run_seconds(
    segment_seconds: Callable[[float, float, float, float], Any],
    full: int,
    rest: float,
    segment: tuple[float, float, float, float],
) -> tuple[float, float]:
    """E[T] of one full segment, and Σ E[T] over ``full`` segments of τ plus a last one of ``rest`` seconds."""
    tau, delta, r, m = segment
    one = float(segment_seconds(tau, delta, r, m))
    return one, full * one + (float(segment_seconds(rest, delta, r, m)) if rest > 0 else 0.0)


def _failure_rate(
    rate: float, request: ReliabilityRequest, m: float, source: str
) -> dict[str, Reasoned[float]]:
    """Node failure rate → the job's interruption rate λ and its MTBF M (any node stops a synchronous job; a job
    on part of a node at its GPUs' share, :func:`failing_nodes`)."""
    nodes, failing = request.n_nodes, request.failing_nodes()
    per_day = job_interruption_rate_per_day(rate, failing)
    share = (
        f"{nodes:,}"
        if failing == nodes
        else f"{request.gpus:,}/{request.gpus_per_node} (the job's GPUs' share of its node{'s' * (nodes != 1)}: "
        "the rate is mostly GPU faults)"
    )
    return dict(
        failures_per_1000_node_days=Reasoned(rate, f"r = {rate:.3g} per 1,000 node-days ({source})"),
        n_nodes=Reasoned(nodes, f"{nodes:,} node{'s' * (nodes != 1)} in the job"),
        job_interruptions_per_day=Reasoned(
            per_day, f"λ = n·r/1000 = {share} × {rate:.3g} / 1000 = {per_day:.3g} per day"
        ),
        job_mtbf_seconds=Reasoned(m, f"M = 86,400 s / λ = {fmt_seconds(m)}"),
    )


def _segment_inputs(
    r: float, tau: float, delta: float, request: ReliabilityRequest
) -> dict[str, Reasoned[float]]:
    """The renewal model's inputs: restart time R, work per segment τ (at most W) and blocking save time δ.

    τ is the mean work between saves: a save every k steps over S steps of W seconds of work (ramp steps
    included, which are shorter) makes ⌈S/k⌉ segments of W·k/S on average; checkpointing.main_interval_seconds
    is k × the main step, the longest segment."""
    k, steps = request.interval_steps, request.total_steps
    formula = (
        f"W × k / S = {fmt_plain(request.useful_seconds)} × {k:,} / {steps:,} = "
        if k and steps and k < steps
        else ""
    )
    return dict(
        restart_seconds=Reasoned(
            r, f"R = {fmt_seconds(r)} (detect, reschedule, load; operations.restart_seconds)"
        ),
        interval_seconds=Reasoned(
            tau,
            f"τ = {formula}{fmt_seconds(tau)}: the mean work between saves over the batch stages (a ramp's steps "
            "are shorter; checkpointing.main_interval_seconds is the interval at the main batch)",
        ),
        save_blocking_seconds=Reasoned(delta, f"δ = {fmt_seconds(delta)} of blocking per save"),
    )


def _lost_time(
    w: float, elapsed: tuple[float, float], m: float, saves: tuple[int, float], goodput: Reasoned[float]
) -> dict[str, Reasoned[float]]:
    """Where the wall clock goes beyond the useful time W (saves, redone work, restarts), goodput and days."""
    exact, first_order = elapsed
    segments, delta = saves
    interruptions = exact / m
    save_overhead = segments * delta
    failure_loss = exact - w - save_overhead
    return dict(
        expected_interruptions=Reasoned(
            interruptions,
            f"elapsed / M = {fmt_plain(exact)} / {fmt_plain(m)} = {fmt(interruptions)} interruptions",
        ),
        save_overhead_seconds=Reasoned(
            save_overhead,
            f"{segments:,} save{'s' * (segments != 1)} × δ {fmt_plain(delta)} s = {fmt_seconds(save_overhead)}",
        ),
        expected_failure_loss_seconds=Reasoned(
            failure_loss, f"elapsed − W − saves = {fmt_seconds(failure_loss)} (redone work + restarts)"
        ),
        goodput=goodput,
        first_order_goodput=Reasoned(w / first_order, f"W / first-order elapsed = {w / first_order:.4f}"),
        useful_days=in_days(w, "W", "days without failures or saves"),
        effective_days=in_days(exact, "elapsed", "wall-clock days"),
    )


#: An interval this many times Young's √(2δM) is far from optimal (a planning choice, not a published bound): the
#: plan's Daly interval is at most Young's, so only an interval raised for an async save's background write
#: (checkpoint._interval_steps) or a hand-made request is this far above it.
FAR_ABOVE_YOUNG = 2.0


def _warnings(
    segment: tuple[float, float], m: float, goodput: float, first_order_ratio: float, host_staging: bool
) -> list[str]:
    """Cautions: segments longer than the MTBF, goodput below Llama 3's ~90%, a poor first-order estimate.

    A segment longer than M with τ at Daly's optimum (Daly 2006), at most Young's √(2δM) (M once δ ≥ 2M), comes
    from a slow save: a shorter interval adds saves of the same δ, so the remedy names what δ is made of."""
    tau, delta = segment
    warnings = []
    if tau + delta > m:
        warnings.append(
            f"a segment (τ+δ = {fmt_seconds(tau + delta)}) is longer than the job MTBF ({fmt_seconds(m)}): "
            f"most segments will be interrupted; {_segment_remedy(tau, delta, m, host_staging)}"
        )
    if goodput < 0.9:
        # one decimal rounds 0.8998 up to "90.0%", which is no number below 90%: truncate to two decimals then
        shown = f"{goodput:.1%}" if f"{goodput:.1%}" != "90.0%" else f"{math.floor(goodput * 1e4) / 100:.2f}%"
        warnings.append(
            f"goodput {shown} is below the ~90% Llama 3 reported (§3.3.4): faster saves "
            f"({'a faster host link or fixed cost' if host_staging else 'async staging, operations.host_staging'}), "
            "faster restarts or a lower failure rate would help"
        )
    if abs(first_order_ratio - 1) > 0.01:
        warnings.append(
            f"the first-order (Young) estimate is off by {(first_order_ratio - 1):+.1%} from the exact "
            "renewal formula: rely on the exact figure"
        )
    return warnings


def _segment_remedy(tau: float, delta: float, m: float, host_staging: bool) -> str:
    """What shortens a segment longer than M. An async δ is save_fixed_seconds + bytes ÷ host link
    (checkpoint._async_blocking), a synchronous one fixed + bytes ÷ storage (checkpoint._sync_save). An async
    interval far above Young's was raised to the background write L (checkpoint._interval_steps: τ ≈ L): only
    faster storage or fewer nodes shorten it, which ops.operate's durability warning already says once L ≥ M
    (taken as τ ≥ M here, τ being L rounded up to a whole step)."""
    far = tau > FAR_ABOVE_YOUNG * math.sqrt(2.0 * delta * m)
    if far and host_staging:
        raised = "the interval is set by the background write"
        return (
            f"{raised} (see the async-saves warning)"
            if tau >= m
            else f"{raised}: faster storage or fewer nodes"
        )
    if far:
        return "checkpoint more often or run on fewer nodes"
    knobs = (
        "host_link_bandwidth_bytes_per_s, save_fixed_seconds: an async save blocks for the fixed cost and the "
        "device→host copy"
        if host_staging
        else "host_staging: true, storage_write_bandwidth_bytes_per_s, save_fixed_seconds"
    )
    return f"the save is too slow for this MTBF: save faster (operations.{knobs}) or run on fewer nodes"
