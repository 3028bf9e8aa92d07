"""Accelerator specifications used by every time, memory and cost estimate.

All bandwidths are **unidirectional bytes per second per GPU** (NVIDIA quotes NVLink as the sum of both
directions: H100's 900 GB/s is 450 GB/s each way). Rates are dense (no 2:4 sparsity) FLOP/s.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class GpuSpec(BaseModel):
    """One accelerator type as a catalog entry or an inline plan-file spec."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="Catalog name, e.g. 'h100-sxm'.")
    hbm_bytes: float = Field(gt=0, description="Device memory in bytes (80 GB = 80e9).")
    bf16_flops: float = Field(gt=0, description="Dense bf16 tensor-core peak, FLOP/s.")
    fp8_flops: float | None = Field(
        None, gt=0, description="Dense fp8 tensor-core peak, FLOP/s (None if absent)."
    )
    hbm_bandwidth_bytes_per_s: float = Field(gt=0, description="HBM bandwidth, bytes/s.")
    intra_node_bandwidth_bytes_per_s: float = Field(
        gt=0, description="NVLink/fabric bandwidth per GPU, one direction, bytes/s (H100: 450e9)."
    )
    inter_node_bandwidth_bytes_per_s: float = Field(
        gt=0, description="Scale-out network bandwidth per GPU, one direction, bytes/s (400 Gb/s = 50e9)."
    )
    gpus_per_node: int = Field(gt=0, description="GPUs in one node / NVLink domain.")
    tdp_watts: float = Field(gt=0, description="Board power (TDP), watts.")
    source: str | None = Field(None, description="Datasheet or paper the numbers come from.")
