"""Accelerator specifications used by every time, memory and cost estimate.

All bandwidths are **unidirectional bytes per second per GPU** (NVIDIA quotes NVLink as the sum of both
directions: H100's 900 GB/s is 450 GB/s each way). Rates are dense (no 2:4 sparsity) FLOP/s.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from runplan.defaults import MAX_GPUS_PER_NODE
from runplan.units import PositiveBytes, PositiveCount, PositiveNumber

#: Field -> (low, high, unit): numbers far outside any accelerator are a units mistake (e.g. TFLOP/s written as
#: FLOP/s), refused where the spec is read, naming the field (a catalog file's line, a plan's cluster.gpu).
#: Peak bf16 FLOP/s from a 2016 P100 (~2e13) to beyond any announced part (B200 dense ~2.3e15); HBM from 1 GB to
#: 100 TB; every bandwidth at least 100 MB/s; board power 1 W to 100 kW. fp8 shares bf16's range (a GPU without
#: fp8 leaves it null).
GPU_RANGES = {
    "bf16_flops": (1e12, 1e18, "FLOP/s"),
    "fp8_flops": (1e12, 1e18, "FLOP/s"),
    "hbm_bytes": (1e9, 1e14, "bytes"),
    "hbm_bandwidth_bytes_per_s": (1e8, 1e15, "bytes/s"),
    "intra_node_bandwidth_bytes_per_s": (1e8, 1e15, "bytes/s"),
    "inter_node_bandwidth_bytes_per_s": (1e8, 1e15, "bytes/s"),
    "tdp_watts": (1.0, 1e5, "W"),
}


class GpuSpec(BaseModel):
    """One accelerator type as a catalog entry or an inline plan-file spec."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="Catalog name, e.g. 'h100-sxm'.")
    hbm_bytes: PositiveBytes = Field(description="Device memory in bytes (80 GB = 80e9).")
    bf16_flops: PositiveNumber = Field(description="Dense bf16 tensor-core peak, FLOP/s.")
    fp8_flops: PositiveNumber | None = Field(
        None, description="Dense fp8 tensor-core peak, FLOP/s (None if absent)."
    )
    hbm_bandwidth_bytes_per_s: PositiveBytes = Field(description="HBM bandwidth, bytes/s.")
    intra_node_bandwidth_bytes_per_s: PositiveBytes = Field(
        description="NVLink/fabric bandwidth per GPU, one direction, bytes/s (H100: 450e9)."
    )
    intra_node_link_bytes_per_s: PositiveBytes | None = Field(
        None,
        description="Fully connected nodes only (no switch; AMD Infinity Fabric): one peer-to-peer link, one "
        "direction, bytes/s (MI300X: 64e9). A collective among g GPUs of the node then runs on its g-1 links, "
        "min(intra_node_bandwidth, (g-1) x link); a send to one peer on one link. Unset: a switched node "
        "(NVSwitch), every group at intra_node_bandwidth.",
    )
    inter_node_bandwidth_bytes_per_s: PositiveBytes = Field(
        description="Scale-out network bandwidth per GPU, one direction, bytes/s (400 Gb/s = 50e9)."
    )
    gpus_per_node: PositiveCount = Field(description="GPUs in one node / NVLink domain.")
    tdp_watts: PositiveNumber = Field(description="Board power (TDP), watts.")
    family: Literal["ampere", "hopper", "blackwell", "cdna3"] | None = Field(
        None,
        description="Architecture; picks the time model's calibrated efficiencies (Ampere has its own, every "
        "other family uses Hopper's: docs/validation.md). Unset: read from the name when the chip it names (h100, "
        "a100, b200, mi300x) is of one family, else refused naming this key (runplan.catalog.with_family).",
    )
    source: str | None = Field(None, description="Datasheet or paper the numbers come from.")

    @field_validator(*GPU_RANGES)
    @classmethod
    def _within_any_accelerator(cls, value: float | None, info: ValidationInfo) -> float | None:
        low, high, unit = GPU_RANGES[str(info.field_name)]
        if value is not None and not low <= value <= high:
            raise ValueError(
                f"{value:.3g} {unit} is outside [{low:.0e}, {high:.0e}]: check the units (an H100 SXM has "
                "989e12 FLOP/s, 80GB, 3.35e12 B/s and 700 W)"
            )
        return value

    @field_validator("gpus_per_node")
    @classmethod
    def _within_any_nvlink_domain(cls, value: int) -> int:
        """The same bound as cluster.gpus_per_node (runplan.defaults.MAX_GPUS_PER_NODE), checked where the spec
        is written, so the error names the entry's own field rather than a cluster key the user never set."""
        if value > MAX_GPUS_PER_NODE:
            raise ValueError(
                f"{value:,} GPUs per node is beyond any NVLink domain (limit {MAX_GPUS_PER_NODE:,}; HGX nodes "
                "have 8, GB200 NVL72 racks 72)"
            )
        return value

    @field_validator("fp8_flops")
    @classmethod
    def _fp8_at_least_bf16(cls, value: float | None, info: ValidationInfo) -> float | None:
        """Every fp8 tensor core runs at least its bf16 rate (dense: H100 SXM 1,979 vs 989 TFLOP/s, B200 4,500 vs
        2,250, MI300X 2,614.9 vs 1,307.4; vendors' datasheets): a lower fp8 figure is a units or column mistake
        (e.g. the bf16 value halved for sparsity twice) that would make fp8 plan slower than bf16."""
        bf16 = info.data.get("bf16_flops")  # validated first (field order); absent when it failed
        if value is not None and bf16 is not None and value < bf16:
            raise ValueError(
                f"{value:.4g} FLOP/s is below bf16_flops {bf16:.4g}: every fp8 tensor core runs at least the bf16 "
                "rate (datasheets: twice it); write the dense fp8 peak, or null where the GPU has no fp8"
            )
        return value
