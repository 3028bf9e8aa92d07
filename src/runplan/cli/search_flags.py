"""`parallelize`'s search flags as a model (imported lazily: pydantic is heavy).

Kept apart from ``flag_models`` (the budget flags extend the plan file's ``Budget``): importing the plan-file
models pulls in every ops stage, which ``parallelize --model ... --gpus ...`` never runs.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from runplan.parallel.layout import MfuFraction, checked_top
from runplan.units import PositiveCount


class SearchOverrides(BaseModel):
    """`parallelize --top/--mfu`, typed as ParallelRequest types them: they also lay over a plan file's request."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    top: PositiveCount | None = Field(None, description="How many ranked layouts to return.")
    mfu_override: MfuFraction | None = Field(None, description="Use this MFU instead of the time model.")

    @field_validator("top")
    @classmethod
    def _readable_top(cls, top: int | None) -> int | None:
        return None if top is None else checked_top(top)


__all__ = ["SearchOverrides"]
