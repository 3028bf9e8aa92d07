"""Compute budget from hardware, and the reverse: GPU-hours, wall-clock days and cost of a FLOP count.

C = GPUs × peak × MFU × seconds, with MFU as defined by PaLM (Chowdhery et al. 2022, §4.1): model FLOPs
(6·N·D here) over peak hardware FLOPs. Leaves out failures, restarts, evaluation and checkpoint stalls:
goodput below 100% is the ops stage's job, not this one.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from runplan.defaults import DEFAULT_MFU
from runplan.errors import SpecError
from runplan.hardware import GpuSpec
from runplan.units import SECONDS_PER_DAY, SECONDS_PER_HOUR, Flops, PositiveNumber

#: Largest training budget runplan plans for: 1e30 FLOPs is 8e7 H100-years at 40% MFU (1e30 / (989e12 × 0.4)
#: s), a million H100s for 80 years, some 2,000× the largest runs reported by 2025 (~5e26, Epoch AI's
#: notable-models data). Anything above is a typo (an extra digit in the exponent), not a plan.
MAX_TRAINING_FLOPS = 1e30


#: Smallest MFU accepted anywhere an MFU is given: 1%. Reported pre-training MFUs are 20-60% (Llama 3 405B:
#: 38-43%, Grattafiori et al. 2024 Table 4); below 1% the GPUs are idle, not training, and dividing by such an
#: MFU only turns a typo into an astronomically long run.
MIN_MFU = 0.01


def check_training_flops(flops: float, *, where: str | None = "budget.flops") -> float:
    """Return ``flops`` if it is a finite budget in (0, MAX_TRAINING_FLOPS]; else a SpecError naming ``where``."""
    import math

    if not (isinstance(flops, int | float) and not math.isnan(flops) and flops > 0):
        raise SpecError(f"the compute budget must be a positive number, got {flops!r}", where=where)
    if flops > MAX_TRAINING_FLOPS:  # infinity included (an overflowing product of GPUs and days)
        raise SpecError(
            f"a budget of {flops:.3g} FLOPs is beyond any trainable run (limit {MAX_TRAINING_FLOPS:.0e}: a "
            "million H100s for 80 years)",
            where=where,
            hint="check the exponent, e.g. 2e23; the largest runs reported by 2025 used about 5e26",
        )
    return float(flops)


def checked_mfu(mfu: float) -> float:
    """``mfu`` if it is in [MIN_MFU, 1]; the one bound every MFU field validates with (a ValueError)."""
    if not MIN_MFU <= mfu <= 1:
        raise ValueError(f"MFU must be in [{MIN_MFU:g}, 1], got {mfu:g} (typical: 0.3 to 0.5)")
    return mfu


def flops_from_hardware(gpus: float, days: float, gpu: GpuSpec, mfu: float) -> float:
    """C = gpus × bf16 peak (FLOP/s) × MFU × days × 86,400 s.

    The inputs come from validated models (``Budget``: positive GPUs and days, MFU in [MIN_MFU, 1]).
    """
    return gpus * gpu.bf16_flops * mfu * days * SECONDS_PER_DAY


class HardwareCost(BaseModel):
    """What a FLOP count costs on given hardware (the reverse of :func:`flops_from_hardware`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    gpu: str = Field(description="GPU name.")
    mfu: float = Field(description="Model FLOPs utilisation assumed.")
    gpus: int | None = Field(None, description="GPUs the run uses (None: only GPU-hours are known).")
    gpu_hours: float = Field(description="GPU-hours: C / (peak × MFU) / 3600.")
    days: float | None = Field(None, description="Wall-clock days on `gpus` GPUs.")
    price_per_gpu_hour: float | None = Field(None, description="USD per GPU-hour, as given.")
    cost_usd: float | None = Field(None, description="gpu_hours × price_per_gpu_hour.")


def hardware_cost(
    flops: float,
    gpu: GpuSpec,
    mfu: float,
    *,
    gpus: int | None = None,
    price_per_gpu_hour: float | None = None,
) -> HardwareCost:
    """GPU-hours = C / (bf16 peak × MFU) / 3600; days = GPU-hours / gpus / 24; cost = GPU-hours × price."""
    gpu_hours = flops / (gpu.bf16_flops * mfu) / SECONDS_PER_HOUR
    days = gpu_hours / gpus / 24.0 if gpus else None
    cost = gpu_hours * price_per_gpu_hour if price_per_gpu_hour is not None else None
    return HardwareCost(
        gpu=gpu.name,
        mfu=mfu,
        gpus=gpus,
        gpu_hours=gpu_hours,
        days=days,
        price_per_gpu_hour=price_per_gpu_hour,
        cost_usd=cost,
    )


__all__ = [
    "DEFAULT_MFU",
    "MAX_TRAINING_FLOPS",
    "MIN_MFU",
    "SECONDS_PER_DAY",
    "SECONDS_PER_HOUR",
    "HardwareCost",
    "check_training_flops",
    "checked_mfu",
    "flops_from_hardware",
    "hardware_cost",
]


class Budget(BaseModel):
    """How much the run trains: exactly one of FLOPs, GPU-hours, days on the cluster, or tokens (fixed model)."""

    # the schema says "exactly one" too, so that an editor flags `{flops, days}` as runplan refuses it
    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        json_schema_extra={
            "oneOf": [{"required": [key]} for key in ("flops", "gpu_hours", "days", "tokens")]
        },
    )

    flops: Flops | None = Field(None, description="Training compute C in FLOPs, e.g. 2e23.")
    gpu_hours: PositiveNumber | None = Field(
        None, description="GPU-hours on the cluster's GPU type; converted with C = hours × 3600 × peak × mfu."
    )
    days: PositiveNumber | None = Field(
        None, description="Wall-clock days on all of cluster.gpus; C = gpus × days × 86400 × peak × mfu."
    )
    tokens: PositiveNumber | None = Field(
        None,
        description="Training tokens D for a fixed `model:`; C = 6·N·D (N in the law's parameter count).",
    )
    mfu: PositiveNumber = Field(
        DEFAULT_MFU,
        description="Model FLOPs utilisation in [0.01, 1] used to turn GPU time into FLOPs (PaLM §4.1 "
        "definition); default 0.4, a planning assumption (Llama 3 reports 38-43% bf16 MFU on 16k H100, "
        "§3.3.2 Table 4).",
        json_schema_extra={"minimum": MIN_MFU, "maximum": 1},
    )

    @field_validator("mfu")
    @classmethod
    def _mfu_in_range(cls, value: float) -> float:
        return checked_mfu(value)

    @model_validator(mode="after")
    def _exactly_one(self) -> Budget:
        given = [name for name in ("flops", "gpu_hours", "days", "tokens") if getattr(self, name) is not None]
        if len(given) != 1:
            raise ValueError(
                "give exactly one of flops, gpu_hours, days or tokens"
                + (f" (got {', '.join(given)})" if given else "")
            )
        return self
