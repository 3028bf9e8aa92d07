"""Input models for flags that have no plan-file section of their own (imported lazily: pydantic is heavy).

Each extends or mirrors the model a plan file fills, so a flag and a key are checked by the same field.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from runplan.defaults import MAX_GPUS
from runplan.scaling.budget import Budget
from runplan.units import PositiveCount, PricePerGpuHour, at_most


class FlagBudget(Budget):
    """The plan file's budget as flags: at most one of --flops and --days, and the hardware flags."""

    gpus: PositiveCount | None = Field(
        None,
        **at_most(MAX_GPUS),  # the bound of the plan file's cluster.gpus, which this flag stands for
        description="GPUs of the run: with days gives C; with flops gives the wall-clock days.",
    )
    price_per_gpu_hour: PricePerGpuHour | None = Field(None, description="USD per GPU-hour, for the cost.")

    @model_validator(mode="after")
    def _exactly_one(self) -> FlagBudget:  # replaces Budget's rule: flags may give no budget at all
        if self.flops is not None and self.days is not None:
            raise ValueError("give the budget once: --flops, or --gpus with --days")
        return self


__all__ = ["FlagBudget"]
