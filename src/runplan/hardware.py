"""Accelerator specifications used by every time, memory and cost estimate.

All bandwidths are **unidirectional bytes per second per GPU** (NVIDIA quotes NVLink as the sum of both
directions: H100's 900 GB/s is 450 GB/s each way). Rates are dense (no 2:4 sparsity) FLOP/s.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from runplan.units import PositiveBytes, PositiveCount, PositiveNumber

#: Field -> (low, high, unit): numbers far outside any accelerator are a units mistake (e.g. TFLOP/s written as
#: FLOP/s), refused where the spec is read, naming the field (a catalog file's line, a plan's cluster.gpu).
#: Peak bf16 FLOP/s from a 2016 P100 (~2e13) to beyond any announced part (B200 dense ~2.3e15); HBM from 1 GB to
#: 100 TB; every bandwidth at least 100 MB/s; board power 1 W to 100 kW.
GPU_RANGES = {
    "bf16_flops": (1e12, 1e18, "FLOP/s"),
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
    inter_node_bandwidth_bytes_per_s: PositiveBytes = Field(
        description="Scale-out network bandwidth per GPU, one direction, bytes/s (400 Gb/s = 50e9)."
    )
    gpus_per_node: PositiveCount = Field(description="GPUs in one node / NVLink domain.")
    tdp_watts: PositiveNumber = Field(description="Board power (TDP), watts.")
    family: Literal["ampere", "hopper", "blackwell", "cdna3"] | None = Field(
        None,
        description="Architecture; picks the time model's calibrated efficiencies (Ampere has its own, every "
        "other family uses Hopper's: docs/validation.md). Unset: Hopper's.",
    )
    source: str | None = Field(None, description="Datasheet or paper the numbers come from.")

    @field_validator(*GPU_RANGES)
    @classmethod
    def _within_any_accelerator(cls, value: float, info: ValidationInfo) -> float:
        low, high, unit = GPU_RANGES[str(info.field_name)]
        if not low <= value <= high:
            raise ValueError(
                f"{value:.3g} {unit} is outside [{low:.0e}, {high:.0e}]: check the units (an H100 SXM has "
                "989e12 FLOP/s, 80GB, 3.35e12 B/s and 700 W)"
            )
        return value
