"""Input models for flags that have no plan-file section of their own (imported lazily: pydantic is heavy).

Each extends or mirrors the model a plan file fills, so a flag and a key are checked by the same field.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from runplan.ops.cost import PricePerGpuHour
from runplan.parallel.layout import MfuFraction, checked_top
from runplan.spec import Budget
from runplan.units import PositiveCount


class FlagBudget(Budget):
    """The plan file's budget as flags: at most one of --flops and --days, and the hardware flags."""

    gpus: PositiveCount | None = Field(
        None, description="GPUs of the run: with days gives C; with flops gives the wall-clock days."
    )
    price_per_gpu_hour: PricePerGpuHour | None = Field(None, description="USD per GPU-hour, for the cost.")

    @model_validator(mode="after")
    def _exactly_one(self) -> FlagBudget:  # replaces Budget's rule: flags may give no budget at all
        if self.flops is not None and self.days is not None:
            raise ValueError("give the budget once: --flops, or --gpus with --days")
        return self


class SearchOverrides(BaseModel):
    """`parallelize --top/--mfu`, typed as ParallelRequest types them: they also lay over a plan file's request."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    top: PositiveCount | None = Field(None, description="How many ranked layouts to return.")
    mfu_override: MfuFraction | None = Field(None, description="Use this MFU instead of the time model.")

    @field_validator("top")
    @classmethod
    def _readable_top(cls, top: int | None) -> int | None:
        return None if top is None else checked_top(top)


__all__ = ["FlagBudget", "SearchOverrides"]
