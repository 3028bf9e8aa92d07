"""The physical constants ``runplan calibrate`` fits, their bounds, and the ones it holds.

Fitted (each a field of :class:`~runplan.parallel.layout.Efficiency`; docs/parallel.md says where each acts):

* ``gemm_peak_fraction`` (per GPU family): large-GEMM fraction of the datasheet bf16 peak *inside a training
  loop* (clocks under sustained power, launch gaps, allocator and stream synchronisation folded in). Bounds
  0.2-1. Consistency check, not a bound: an isolated 8192³ bf16 GEMM measured ~790 TFLOP/s on H100 = 80% of
  989 (docs/parallel.md, Time per step), so a training-loop fit above that is suspect.
* ``gemm_half_dim``: d0 in eta = eta_max / (1 + d0/M + d0/N + d0/K), tile and wave quantisation of small GEMMs.
* ``network_efficiency`` / ``inter_node_network_efficiency``: NCCL bus bandwidth over link bandwidth inside a
  node (NVLink) and across nodes (NICs). NVIDIA's nccl-tests report bus bandwidths somewhat below the link
  rate for large all-reduce / all-gather messages; 0.8 is the planning value.
* ``step_overhead_seconds``: fixed seconds per step outside the modelled terms (data loading, logging,
  host synchronisation).
* ``elementwise_time_factor``: time of the elementwise ops over their bytes counted op by op
  (``timing.elementwise_forward_bytes``: one read and one write per fused kernel; backward twice the forward)
  at the full HBM bandwidth: 1 if every kernel streamed at the bandwidth peak; more for kernels below it and
  ops not counted (embedding, loss, casts, copies).
* ``eager_elementwise_share``: share of the bytes PyTorch eager kernels move beyond fused ones (counted kernel
  by kernel, ``timing.ELEMENTWISE_OP_BYTES``) that a stack running its elementwise ops eagerly pays; identified
  by paired runs of one job compiled and eager (torchtitan's benchmark, Tables 1 and 3). 1 = the count
  exactly; the eager kernels' cache reuse and launch overlap move it.
* ``tp_overlap_fraction``: net share of TP communication taken off the critical path by TP overlap; identified
  by paired runs of one job with and without it (torchtitan's async-TP benchmark).
* ``dp_overlap_interference``: compute seconds lost per second of DP communication hidden under it (NCCL ring
  kernels hold SMs and HBM bandwidth beside the GEMMs; Rashidi et al. 2021, ISCA).

Held, not fitted (the published runs cannot separate them from the GEMM rate and the pipeline schedule):

* :data:`FLASH_ATTENTION_2`: the FlashAttention-2 kernel's forward+backward rate per GPU family, as
  r(s) = r_max / (1 + s0 / s) over the sequence length s one kernel call sees. Fitted here to the published kernel
  benchmark, never to training runs: Dao 2023 (arXiv 2307.08691) Fig. 4(d) and the flash-attention README's
  H100 figure (causal, head dim 128, 16k tokens per batch; FLOPs with the causal half, backward 2.5× forward):
  A100 99, 133, 155, 173, 182, 189 TFLOP/s and H100 163, 221, 265, 294, 308, 328 TFLOP/s at s = 512 ... 16k.
  r_max and s0 (least squares on log rate) reproduce every bar within 2%. The benchmark times the kernel alone, so inside a training
  loop it is derated as the GEMMs are: × fitted gemm_peak_fraction / the isolated GEMM fraction
  (:data:`ISOLATED_GEMM_FRACTION`).
* :data:`ISOLATED_GEMM_FRACTION`: the best bf16 matmul rate of one GPU measured alone over the datasheet peak
  (Bekman, ml-engineering, compute/accelerator, "Maximum Achievable Matmul FLOPS comparison table": A100 SXM
  267.9-271.2 of 312, H100 SXM 792.1-794.5 of 989).
* :data:`KERNEL_BENCHMARK_RATIOS`: named attention kernels' rates relative to FlashAttention-2 in the same A100
  figure (r_max of the kernel over FA2's, fitted alike): FlashAttention 1 (55 ... 83 TFLOP/s) 81.5 / 193.5 = 0.42,
  the 2022-23 Triton FlashAttention (50 ... 80) 80.4 / 193.5 = 0.42. Reported, not used as a prior: end-to-end
  runs fit these kernels at 0.7-0.75 of FlashAttention-2 (the FA2 paper's FA1 rows, MPT's Triton rows), and
  starting a fold from 0.42 made leave-one-source-out worse (median 9.0% against 7.8%). A kernel the fit has not
  seen runs at FlashAttention-2's rate (prior 1).

"""

from __future__ import annotations

from dataclasses import dataclass

#: family -> (r_max / bf16 peak, s0 tokens) of FlashAttention-2 forward+backward, causal, head dim 128 (above).
FLASH_ATTENTION_2: dict[str, tuple[float, float]] = {
    "ampere": (193.5 / 312.0, 485.0),
    "hopper": (333.5 / 989.0, 532.0),
}
#: family -> best isolated bf16 GEMM rate / peak (Bekman's MAMF table, above).
ISOLATED_GEMM_FRACTION: dict[str, float] = {"ampere": 0.869, "hopper": 0.803}
#: named kernel -> its forward+backward rate / FlashAttention-2's in the kernel benchmark (Dao 2023 Fig. 4(d), above).
KERNEL_BENCHMARK_RATIOS: dict[str, float] = {"flash-attention-1": 0.42, "triton-flash-2023": 0.42}
#: A named kernel's rate / FlashAttention-2's before any fit (and in a fold that holds out every run of it): 1,
#: not the benchmark ratio above (the docstring says why).
UNSEEN_KERNEL_RATIO = 1.0
COLLECTIVE_LATENCY_SECONDS = 2e-5


@dataclass(frozen=True)
class Constant:
    """One fitted Efficiency field: its bounds, whether each GPU family has its own value, and the runs that
    identify it (what an under-determined fit tells its user to add; docs/calibration.md, Under-determined
    fits)."""

    name: str
    low: float
    high: float
    per_family: bool = False
    unit: str = ""
    identified_by: str = ""


FITTED_CONSTANTS: tuple[Constant, ...] = (
    Constant("gemm_peak_fraction", 0.2, 1.0, per_family=True, identified_by="a run on a GPU of this family"),
    Constant(
        "gemm_half_dim",
        0.0,
        512.0,
        identified_by="runs with small and large GEMMs (a small and a large model, short and long sequences)",
    ),
    Constant(
        "network_efficiency",
        0.2,
        1.0,
        identified_by="runs with TP inside a node beside runs without it (or, for MoE runs, EP inside a node)",
    ),
    Constant(
        "inter_node_network_efficiency",
        0.1,
        1.0,
        identified_by="runs whose data-, pipeline- or expert-parallel groups span nodes beside runs inside one",
    ),
    Constant(
        "step_overhead_seconds",
        0.0,
        30.0,
        unit="s",
        identified_by="the same layout at two global batches (a short and a long step)",
    ),
    Constant(
        "elementwise_time_factor",
        0.0,
        20.0,
        identified_by="runs of models of different widths (the elementwise share of a step falls as d_model grows)",
    ),
    Constant(
        "tp_overlap_fraction",
        0.0,
        1.0,
        identified_by="the same job with TP overlap on and off (stack.tp_comm_overlap; TP inside a node, "
        "sequence_parallel)",
    ),
    Constant(
        "dp_overlap_interference",
        0.0,
        1.0,
        identified_by="runs at different data-parallel sizes (gradient traffic hidden under the backward pass)",
    ),
    Constant(
        "eager_elementwise_share",
        0.0,
        1.0,
        identified_by="the same job compiled and eager (stack.fused_elementwise true and false)",
    ),
)
#: What identifies a named attention kernel's rate (it scales the attention only, which grows with the sequence).
KERNEL_IDENTIFIED_BY = "runs of that kernel at two sequence lengths"
#: Bounds of a named kernel's attention rate relative to FlashAttention-2's.
KERNEL_RATIO_BOUNDS = (0.02, 1.0)

#: Uncalibrated planning values (``--base priors``): the start of a fit from nothing and the value of every
#: constant the runs cannot identify. Round physical values, fitted on nothing: the shipped default is built
#: from them, so leave-one-source-out folds never see the held-out source through a held constant.
PRIORS: dict[str, float] = {
    "gemm_peak_fraction": 0.7,
    "gemm_half_dim": 64.0,
    "network_efficiency": 0.8,
    "inter_node_network_efficiency": 0.8,
    "step_overhead_seconds": 0.0,
    "elementwise_time_factor": 1.0,
    "tp_overlap_fraction": 0.5,
    "dp_overlap_interference": 0.5,
    "eager_elementwise_share": 1.0,
}


def identified_by(key: str) -> str:
    """What run identifies the fit key ``key`` (``gemm_peak_fraction[hopper]``, ``attention_kernel[...]``)."""
    name = key.split("[")[0]
    if name == "attention_kernel":
        return KERNEL_IDENTIFIED_BY
    return constant_named(name).identified_by


def constant_named(name: str) -> Constant:
    """The :class:`Constant` called ``name`` (a fitted Efficiency field)."""
    for constant in FITTED_CONSTANTS:
        if constant.name == name:
            return constant
    raise KeyError(name)


def attention_fraction(family: str, gemm_peak_fraction: float) -> float:
    """FlashAttention-2's training-loop r_max / peak on ``family``: the kernel benchmark's, derated as the GEMMs
    (× gemm_peak_fraction / isolated GEMM fraction)."""
    r_max, _ = FLASH_ATTENTION_2[family]
    return min(1.0, r_max * gemm_peak_fraction / ISOLATED_GEMM_FRACTION[family])


def attention_half_seq(family: str) -> float:
    """s0 of FlashAttention-2 on ``family`` (tokens): the kernel reaches half its r_max at s = s0."""
    return FLASH_ATTENTION_2[family][1]
