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
* ``elementwise_traffic_factor``: HBM bytes moved by norms, activations, residuals and rotary per stored
  activation byte, forward + backward (~2 forward and ~4 backward if every op read and wrote once: 6).
* ``tp_overlap_fraction``: net share of TP communication taken off the critical path by TP overlap; identified
  by paired runs of one job with and without it (torchtitan's async-TP benchmark).
* ``dp_overlap_interference``: compute seconds lost per second of DP communication hidden under it (NCCL ring
  kernels hold SMs and HBM bandwidth beside the GEMMs; Rashidi et al. 2021, ISCA).

Held, not fitted (the published runs cannot separate them from the GEMM rate and the pipeline schedule):

* :data:`ATTENTION_FRACTION_OF_GEMM`: FlashAttention forward+backward rate relative to the large-GEMM rate.
  FlashAttention-2 reaches ~35% of H100 peak and FlashAttention-3 up to 75% forward (Shah et al. 2024, arXiv
  2407.08608, §1 and §4), backward lower; 0.5 × the training-loop GEMM fraction sits between the two.
* :data:`COLLECTIVE_LATENCY_SECONDS`: fixed cost of one collective or send (kernel launch + protocol latency,
  tens of µs).

A named attention kernel (``attention_kernel`` of a measured run, e.g. MPT's 2023 Triton FlashAttention) gets
its own attention rate relative to a GEMM, fitted and reported, never used for planning.
"""

from __future__ import annotations

from dataclasses import dataclass

ATTENTION_FRACTION_OF_GEMM = 0.5
COLLECTIVE_LATENCY_SECONDS = 2e-5


@dataclass(frozen=True)
class Constant:
    """One fitted Efficiency field: its bounds, and whether each GPU family has its own value."""

    name: str
    low: float
    high: float
    per_family: bool = False
    unit: str = ""


FITTED_CONSTANTS: tuple[Constant, ...] = (
    Constant("gemm_peak_fraction", 0.2, 1.0, per_family=True),
    Constant("gemm_half_dim", 0.0, 512.0),
    Constant("network_efficiency", 0.2, 1.0),
    Constant("inter_node_network_efficiency", 0.1, 1.0),
    Constant("step_overhead_seconds", 0.0, 30.0, unit="s"),
    Constant("elementwise_traffic_factor", 0.0, 20.0),
    Constant("tp_overlap_fraction", 0.0, 1.0),
    Constant("dp_overlap_interference", 0.0, 1.0),
)
#: Bounds of a named kernel's attention rate relative to the GEMM rate.
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
    "elementwise_traffic_factor": 6.0,
    "tp_overlap_fraction": 0.5,
    "dp_overlap_interference": 0.5,
}


def constant_named(name: str) -> Constant:
    """The :class:`Constant` called ``name`` (a fitted Efficiency field)."""
    for constant in FITTED_CONSTANTS:
        if constant.name == name:
            return constant
    raise KeyError(name)
