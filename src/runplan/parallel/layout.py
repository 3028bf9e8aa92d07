"""Input and output models of the parallelism solver (``runplan parallelize``).

Letters as in docs/parallel.md: t/p/d/e/c tensor/pipeline/data/expert/context degrees, v interleaved chunks per
pipeline rank, m micro-batches per step, b micro-batch size (sequences), s sequence length.

The mesh rule is t·p·d·c = GPUs (Megatron-LM ``initialize_model_parallel`` and torchtitan ``ParallelDims``);
expert parallelism borrows its e ranks from the data- and context-parallel ranks (e divides d·c; experts split
over TP as the other weights, ETP = t: Megatron's default, world % (ETP·EP·PP) == 0), as both do.
The global batch is d·b·m sequences, d·b·m·s tokens.

``Constraints`` and ``Pins`` are shared with the plan file (its ``constraints:`` and ``parallel:`` sections),
so every field carries a description and unknown keys are refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal, cast

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    create_model,
    field_validator,
    model_serializer,
    model_validator,
)

from runplan.defaults import DEFAULT_SEQ_LEN
from runplan.hardware import GpuSpec
from runplan.model import ModelShape
from runplan.parallel.request_rules import check_request
from runplan.parallel.stack import Stack
from runplan.units import Fraction, NonNegativeBytes, PositiveCount, PositiveNumber, TokenLength

#: A utilisation in (0, 1): 0 would mean an infinite step time.
MfuFraction = Annotated[Fraction, Field(gt=0)]

Recompute = Literal["none", "selective", "full"]
#: Integer codes used inside the vectorized search (order = less memory, more recomputation).
RECOMPUTE_CODES: dict[str, int] = {"none": 0, "selective": 1, "full": 2}
RECOMPUTE_NAMES: tuple[str, ...] = ("none", "selective", "full")


@dataclass(frozen=True)
class Searched:
    """Field metadata of a :class:`Layout` axis the search enumerates from a fixed domain when it is not pinned.

    ``values`` are the candidates; ``codes`` (optional, aligned with ``values``) are the integers the vectorized
    grid holds for them (``recompute``). Axes without it are either structural (divisibility rules in ``search.structural_axes``)
    or derived (``microbatches``, ``sequence_parallel``); adding a searched boolean is one annotated field here.
    """

    values: tuple[Any, ...]
    codes: tuple[int, ...] | None = None


class Layout(BaseModel):
    """One point of the layout space: every parallel axis and per-layout switch, one name per axis.

    The same names are the plan file's ``parallel:`` keys (:class:`Pins`), the search grid's columns
    (:class:`LayoutGrid`), the JSON keys of each ranked layout and the fields the exporters read.
    """

    tp: PositiveCount = Field(description="Tensor-parallel degree t (divides heads and KV heads).")
    pp: PositiveCount = Field(description="Pipeline-parallel degree p (number of stages).")
    dp: PositiveCount = Field(description="Data-parallel degree d (t·p·d·c = GPUs).")
    ep: PositiveCount = Field(
        description="Expert-parallel degree e (MoE; divides experts and d·c: borrows the data- and context-parallel ranks)."
    )
    cp: PositiveCount = Field(description="Context-parallel degree c (splits the sequence).")
    zero: Annotated[
        int,
        Field(
            ge=0,
            le=3,
            description="ZeRO stage 0-3 (1 = Megatron's distributed optimizer: optimizer states sharded).",
        ),
        Searched((0, 1, 2, 3)),
    ]
    micro_batch: PositiveCount = Field(description="Micro-batch size b in sequences per GPU.")
    microbatches: PositiveCount = Field(
        description="Micro-batches per step m (gradient-accumulation steps) per data-parallel rank."
    )
    vpp: PositiveCount = Field(
        description="Interleaved pipeline chunks per rank v (1 = plain 1F1B; needs pp >= 2)."
    )
    recompute: Annotated[
        Recompute,
        Field(
            description="Activation recomputation: 'none', 'selective' (norms + MLP activation) or 'full'."
        ),
        Searched(RECOMPUTE_NAMES, (0, 1, 2)),
    ]
    sequence_parallel: bool = Field(
        description="Megatron sequence parallelism with TP (default: on whenever tp > 1)."
    )

    model_config = ConfigDict(extra="forbid", frozen=True)

    def axes(self) -> dict[str, Any]:
        """The layout's own fields (not those of a subclass such as :class:`LayoutEstimate`)."""
        return {name: getattr(self, name) for name in Layout.model_fields}

    def one_line(self) -> str:
        """'TP8 PP4 DP16 CP1 ZeRO-1 mbs1 m8 v5 selective SP' (EP shown when > 1): every axis that tells two
        candidates apart, for reports, nearest misses and benchmarks/validate.py's tables."""
        ep = f" EP{self.ep}" if self.ep > 1 else ""
        return (
            f"TP{self.tp} PP{self.pp} DP{self.dp} CP{self.cp}{ep} ZeRO-{self.zero} mbs{self.micro_batch} "
            f"m{self.microbatches} v{self.vpp} {self.recompute}{' SP' if self.sequence_parallel else ''}"
        )


def searched_domain(axis: str) -> Searched | None:
    """The :class:`Searched` metadata of a Layout axis, or None for structural and derived axes."""
    found = [m for m in Layout.model_fields[axis].metadata if isinstance(m, Searched)]
    return found[0] if found else None


class _PinsBase(BaseModel):
    """Axes fixed by the user; every axis left unset is searched exhaustively."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    if TYPE_CHECKING:  # the fields are Layout's, each optional (created below)

        def __getattr__(self, name: str) -> Any: ...

    def pinned(self) -> dict[str, Any]:
        """The axes the user fixed, in Layout order."""
        return {name: value for name, value in self.model_dump().items() if value is not None}


def _optional_fields(model: type[BaseModel]) -> dict[str, Any]:
    """Every field of ``model`` made optional (default None), with its description, bounds and metadata."""
    fields: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        annotation = Annotated[(info.annotation, *info.metadata)] if info.metadata else info.annotation
        fields[name] = (cast(Any, annotation) | None, Field(None, description=info.description))
    return fields


if TYPE_CHECKING:
    Pins = _PinsBase
else:
    #: The plan file's ``parallel:`` section and the pin flags: a Layout with every axis optional.
    Pins = create_model("Pins", __base__=_PinsBase, __doc__=_PinsBase.__doc__, **_optional_fields(Layout))


class Constraints(BaseModel):
    """What a layout must satisfy to be reported as feasible."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_bubble_fraction: Fraction = Field(
        0.15,
        description="Largest pipeline bubble allowed, (p-1)/(v·m) as a fraction of ideal step time (planning "
        "default 0.15, an assumption; docs/parallel.md).",
    )
    memory_headroom_fraction: Fraction = Field(
        0.05,
        description="Fraction of HBM kept free on top of the reserve (planning assumption covering the memory "
        "model's own error).",
    )
    reserve_bytes: NonNegativeBytes = Field(
        3e9,
        description="Bytes per GPU set aside for CUDA context, NCCL buffers, cuBLAS workspace, "
        "allocator fragmentation (accepts '3GB'; planning assumption: estimate-vs-measured gaps of a few GB "
        "run both ways, Megatron-LM issue #525 and PR #482).",
    )
    min_global_batch_tokens: PositiveNumber | None = Field(
        None, description="Smallest global batch in tokens per optimizer step."
    )
    max_global_batch_tokens: PositiveNumber | None = Field(
        None, description="Largest global batch in tokens per step (default: the critical batch)."
    )
    throughput_tolerance: Fraction = Field(
        0.01,
        description="Layouts within this fraction of the fastest predicted tokens/s are ranked as a tie, the "
        "one with the most memory margin first (0: fastest first; a planning choice, smaller than the "
        "time model's error, docs/validation.md).",
    )
    allow_cross_node_tp: bool = Field(
        False, description="Allow tensor parallelism wider than one node (over the scale-out network)."
    )
    allow_uneven_pipeline: bool = Field(
        True,
        description="Allow pp that does not divide the layer count (the largest stage has "
        "ceil(L/p) layers and sets the pace).",
    )


class Efficiency(BaseModel):
    """Physical efficiency parameters of the time model (fitted by `runplan calibrate`, never per row; shipped: configs/calibration.yaml)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    gemm_peak_fraction: float = Field(
        gt=0, le=1, description="Fraction of the datasheet bf16 peak a very large GEMM reaches."
    )
    gemm_half_dim: float = Field(
        ge=0, description="d0 in eta = eta_max / (1 + d0/M + d0/N + d0/K): GEMM-shape penalty (tiles, waves)."
    )
    attention_fraction: float = Field(
        gt=0,
        le=1,
        description="Fraction of the bf16 peak FlashAttention reaches on long sequences (forward and backward).",
    )
    attention_half_seq: float = Field(
        0.0,
        ge=0,
        description="s0 in rate = attention_fraction·peak / (1 + s0/s): the sequence length (tokens per kernel "
        "call) at which FlashAttention reaches half its long-sequence rate; 0 = no length dependence.",
    )
    network_efficiency: float = Field(
        gt=0,
        le=1,
        description="Achieved collective bus bandwidth / link bandwidth (NCCL busbw ratio), NVLink.",
    )
    inter_node_network_efficiency: float | None = Field(
        None,
        gt=0,
        le=1,
        description="The same ratio across nodes (scale-out NICs); None = network_efficiency (one value for both "
        "tiers, as shipped; `runplan calibrate` can fit the tiers apart).",
    )
    step_overhead_seconds: float = Field(
        0.0,
        ge=0,
        description="Fixed seconds per optimizer step outside the modelled terms (data loading, logging, "
        "synchronisation); 0 as shipped, a calibrated constant of a user's cluster.",
    )
    tp_overlap_fraction: float = Field(
        ge=0,
        le=1,
        description="Net share of TP communication taken off the critical path when tp_comm_overlap is on "
        "(Megatron-core --tp-comm-overlap, torchtitan async TP); fitted on paired async-TP runs.",
    )
    dp_overlap_interference: float = Field(
        ge=0,
        le=1,
        description="Seconds of compute lost per second of DP communication hidden under it "
        "(SM and HBM contention of overlapped NCCL kernels); 0 = overlap is free.",
    )
    collective_latency_seconds: float = Field(
        ge=0, description="Fixed cost of one collective or point-to-point call, seconds."
    )
    elementwise_time_factor: float = Field(
        ge=0,
        description="Time of the elementwise ops (norms, activations, residual adds, RoPE) over their bytes "
        "counted op by op at the full HBM bandwidth; 1 = every kernel at the bandwidth peak.",
    )
    eager_elementwise_share: float = Field(
        1.0,
        ge=0,
        le=1,
        description="Share of the bytes PyTorch eager kernels move beyond fused ones (counted op by op, "
        "timing.ELEMENTWISE_OP_BYTES) that a stack without fused elementwise kernels pays; fitted on paired "
        "compiled / eager runs.",
    )


#: Most ranked layouts returned: a table past a few hundred rows is not read, and layouts that far down differ
#: by less than the time model's error (docs/parallel.md); rendering stays under a second.
MAX_TOP = 1000


def checked_top(top: int) -> int:
    """``top`` if at most MAX_TOP, else a ValueError with the bound and its reason."""
    if top > MAX_TOP:
        raise ValueError(
            f"{top:,} layouts is more than {MAX_TOP:,}: rows that far down differ by less than the time "
            "model's error, and nobody reads the table"
        )
    return top


class ParallelRequest(BaseModel):
    """Everything the solver needs: a shape, a cluster, a sequence length, a batch, constraints and pins."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: ModelShape = Field(description="Model shape to lay out.")
    gpu: GpuSpec = Field(description="Accelerator type.")
    n_gpus: PositiveCount = Field(description="GPUs in the job (t·p·d·c).")
    gpus_per_node: PositiveCount | None = Field(
        None, description="GPUs per node / NVLink domain (default: the GPU spec's)."
    )
    seq_len: TokenLength = Field(
        DEFAULT_SEQ_LEN, description="Training sequence length s in tokens (8k = 8192, 128k = 131072)."
    )
    global_batch_tokens: PositiveNumber | None = Field(
        None,
        description="Target global batch in tokens per step (e.g. '4M'); layouts land within the "
        "tolerance of it.",
    )
    global_batch_tolerance: Fraction = Field(
        0.1, description="Relative distance from the target global batch a layout may land at."
    )
    training_tokens: PositiveNumber | None = Field(
        None, description="Tokens to train on: gives days to train and the critical batch (default 20·N)."
    )
    micro_batch_choices: tuple[int, ...] = Field(
        (1, 2, 4, 8), description="Micro-batch sizes searched when micro_batch is not pinned."
    )
    stack: Stack = Field(
        default_factory=Stack,
        description="Training stack: FlashAttention, TP/DP overlap, recomputation rules, dtypes (parallel/stack.py).",
    )
    mfu_override: MfuFraction | None = Field(
        None, description="Use this MFU instead of the predicted time model (users who measured theirs)."
    )
    top: PositiveCount = Field(5, description="How many ranked layouts to return.")
    efficiency: Efficiency | None = Field(
        None, description="Time-model efficiencies (default: calibrated values for this GPU)."
    )
    constraints: Constraints = Field(default_factory=Constraints, description="Feasibility constraints.")
    pins: Pins = Field(default_factory=Pins, description="Axes fixed by the user.")

    @field_validator("top")
    @classmethod
    def _readable_top(cls, top: int) -> int:
        return checked_top(top)

    @model_validator(mode="after")
    def _answerable(self) -> ParallelRequest:
        # bounds and cross-field rules, each raising a one-line SpecError with its plan-key path
        # (a SpecError is not a ValueError, so pydantic lets it through unwrapped)
        check_request(self)
        return self

    @property
    def node_size(self) -> int:
        return self.gpus_per_node or self.gpu.gpus_per_node


class MemoryBytes(BaseModel):
    """Per-GPU bytes on the most loaded pipeline stage (the stage that decides feasibility)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    weights: float = Field(
        description="bf16 weights held (after TP/PP/EP and ZeRO-3 sharding), with the fp8 copy of the linear "
        "layers' weights under precision fp8."
    )
    gradients: float = Field(description="Gradient buffer (fp32 or bf16; sharded from ZeRO-2).")
    optimizer: float = Field(
        description="fp32 master weights + Adam m + v: 12 bytes/param (sharded from ZeRO-1); 8 with bf16 "
        "moments, 6 where TransformerEngine's FusedAdam keeps the master as 16-bit remainders."
    )
    activations: float = Field(
        description="Stored activations of in-flight micro-batches + the loss's logits."
    )
    other: float = Field(description="Reserve (CUDA/NCCL/fragmentation) + ZeRO-3 gathered-layer buffers.")
    total: float = Field(description="Sum of the above.")


_OVERHEAD = (
    "Fixed per-step overhead (the calibrated step_overhead_seconds: kernel-launch gaps, data loading, logging, "
    "host work), so that the terms add up to the step time."
)


class TimeSeconds(BaseModel):
    """Where one optimizer step's time goes (seconds; the exposed, non-overlapped parts)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    compute: float = Field(
        description="GEMMs, attention and elementwise work of all micro-batches (incl. recompute)."
    )
    tensor_parallel: float = Field(description="TP all-reduce / all-gather + reduce-scatter, exposed.")
    pipeline_p2p: float = Field(description="Stage-boundary sends and receives, exposed.")
    expert_all_to_all: float = Field(description="MoE dispatch/combine all-to-alls, exposed.")
    context_parallel: float = Field(
        description="CP ring K/V exchange not hidden behind attention, plus the per-step fp32 merge of partial "
        "results."
    )
    bubble: float = Field(description="Pipeline fill and drain: (p-1)/v micro-batch times.")
    data_parallel: float = Field(description="Gradient reduction / parameter gathers not hidden by backward.")
    optimizer: float = Field(description="Adam update, HBM-bound.")
    overhead: float = Field(default=0.0, description=_OVERHEAD)


#: JSON key order of a ranked layout (docs/json.md): the documented keys first, extras after. The axes come
#: from :class:`Layout`; ``sequence_parallel`` was an extra before it became an axis and keeps its place.
_ESTIMATE_KEY_ORDER = (
    *(name for name in Layout.model_fields if name != "sequence_parallel"),
    "global_batch_tokens",
    "bubble_fraction",
    "memory_bytes",
    "step_seconds",
    "tokens_per_second",
    "mfu",
    "hfu",
    "tokens_per_second_per_gpu",
    "sequence_parallel",
)


class StageTotalBytes(BaseModel):
    """Per-GPU total bytes (as ``MemoryBytes.total``) on the first and on the last pipeline stage; the larger is
    ``memory_bytes.total``. Both stages are counted with ceil(L/p) layers; the first holds the embedding and
    1F1B's in-flight micro-batches, the last the head, the logits and one micro-batch (docs/parallel.md, Memory).
    Where p = 1 both are the one stage, the same GPU: the same figure."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    first: float = Field(description="Total bytes per GPU of the first pipeline stage.")
    last: float = Field(description="Total bytes per GPU of the last pipeline stage (the first where p = 1).")


class LayoutEstimate(Layout):
    """One layout (its :class:`Layout` axes) with its memory and time estimate."""

    global_batch_tokens: int
    bubble_fraction: float
    memory_bytes: MemoryBytes
    step_seconds: float
    tokens_per_second: float
    mfu: float
    hfu: float = Field(description="Hardware FLOPs utilisation: model FLOPs + recomputation, per peak.")
    tokens_per_second_per_gpu: float
    layers_per_stage: int = Field(description="Layers on the most loaded stage, ceil(L/p).")
    uneven_stages: bool = Field(description="p does not divide L: the largest stage sets the pace.")
    memory_stage: Literal["first", "last"] = Field(description="Stage whose memory is reported (the larger).")
    memory_total_bytes_by_stage: StageTotalBytes | None = Field(
        None,
        description="Per-GPU total bytes of the first and of the last stage (equal where p = 1: one GPU); "
        "absent from plans written before it was added.",
    )
    memory_limit_bytes: float = Field(description="HBM x (1 - headroom): what total must stay under.")
    time_seconds: TimeSeconds
    days_to_train: float | None = Field(None, description="training_tokens / tokens_per_second, in days.")
    violations: list[str] = Field(default_factory=list, description="Constraints broken (near misses only).")
    why: list[str] = Field(default_factory=list, description="Why each constraint holds, in words.")

    @model_serializer(mode="wrap")
    def _documented_order(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        return {**{key: data[key] for key in _ESTIMATE_KEY_ORDER}, **data}

    @property
    def layout(self) -> Layout:
        """The axes alone."""
        return Layout(**self.axes())


class CriticalBatch(BaseModel):
    """The batch-size ceiling used when the user gives none."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tokens: float = Field(description="Global batch in tokens per step.")
    law: str = Field(description="Which law, with its source.")
    compute_flops: float = Field(description="C = M·D the law was evaluated at.")
    training_tokens: float = Field(description="D used (given, or 20·N when not given).")
    assumed_training_tokens: bool = Field(description="True when D = 20·N was assumed.")


class TpBest(BaseModel):
    """The fastest feasible layout with one TP degree: how far the runner-up TP degrees are behind the best."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tp: int
    layout: str = Field(
        description="The other axes of that layout, e.g. 'PP4 DP32 CP2 EP1 ZeRO-1 mbs1 v1 selective'."
    )
    tokens_per_second: float
    mfu: float
    behind_best: float = Field(
        description="1 - tokens/s of this layout / tokens/s of the best layout (0 = best)."
    )


class SearchResult(BaseModel):
    """What ``search`` returns: counts, the ranked feasible layouts, or why nothing is feasible."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: dict = Field(description="Model name and parameter counts.")
    cluster: dict = Field(description="GPU name, GPU count, GPUs per node.")
    seq_len: int
    candidates: int = Field(description="Layouts evaluated by the vectorized search (one row each).")
    space_size: int = Field(
        description="Layouts in the space counting every micro-batch count in the "
        "batch range (the dominated ones are not evaluated, see docs)."
    )
    feasible: int
    layouts: list[LayoutEstimate]
    batch_range_tokens: tuple[float, float] = Field(description="Global batch range applied, tokens.")
    critical_batch: CriticalBatch
    eliminated: dict[str, int] = Field(description="Candidates violating each constraint (may overlap).")
    eliminated_only: dict[str, int] = Field(description="Candidates violating only that constraint.")
    nearest_misses: list[LayoutEstimate] = Field(description="Closest infeasible layouts when none fits.")
    best_by_tp: list[TpBest] = Field(
        default_factory=list,
        description="The best-ranked feasible layout of each TP degree, ascending TP (empty with an MFU "
        "override, which makes every layout equally fast).",
    )
    fastest: LayoutEstimate | None = Field(
        None,
        description="The feasible layout with the most tokens/s, listed or not (the first ranks by memory margin "
        "among layouts within constraints.throughput_tolerance of it); null when none is feasible.",
    )
    suggestions: list[str] = Field(default_factory=list, description="What would make it feasible.")
    search_seconds: float = Field(description="Wall time of the search itself.")
    warnings: list[str] = Field(
        default_factory=list,
        description="Cautions: the critical batch assumed, a pinned layout evaluated against broken constraints.",
    )
