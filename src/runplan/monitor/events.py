"""What the detectors report: events with an action, and the checkpoints a rollback can go back to."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Action = Literal["none", "watch", "wait_until", "rollback", "pause", "quarantine"]
#: Actions that make the verdict "act" (the run needs a person now); "watch" and "wait_until" make it "watch".
ACT = ("rollback", "pause", "quarantine")
WATCH = ("watch", "wait_until")


@dataclass
class Event:
    """One finding. Steps are optimizer steps; ``end_step`` is None while the event is still open."""

    kind: str
    start_step: int
    peak_step: int
    end_step: int | None
    metric: str
    value: float | None
    baseline: float | None
    baseline_points: int
    recovered: bool | None
    action: Action
    rollback_to_step: int | None = None
    skip_steps: list[int] | None = None
    wait_until_step: int | None = None
    why: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Checkpoints:
    """Steps a rollback can resume from: saved steps the log lists, multiples of the checkpoint interval and
    of the plan's rollback spacing, limited to what the plan's retention still keeps at ``now``, and the plan's
    milestones (kept for good, at the steps the plan lists: a batch ramp moves them off the multiples)."""

    interval_steps: int | None = None
    saved_steps: list[int] = field(default_factory=list)
    retention_generations: int | None = None
    rollback_every_steps: int | None = None
    rollback_generations: int | None = None
    milestone_steps: list[int] = field(default_factory=list)
    source: str = ""

    def newest_at_or_before(self, step: int, now: int) -> int | None:
        """The newest checkpoint at a step ≤ ``step`` that still exists when the log ends at ``now``."""
        found = [saved for saved in (*self.saved_steps, *self.milestone_steps) if saved <= step]
        for every, keep in (
            (self.interval_steps, self.retention_generations),
            (self.rollback_every_steps, self.rollback_generations),
        ):
            if not every or step < every:
                continue
            candidate = (step // every) * every
            if keep is not None and candidate <= (now // every - keep) * every:
                continue  # rotated away by the time the log ends
            found.append(candidate)
        return max(found) if found else None

    def known(self) -> bool:
        return bool(self.interval_steps or self.saved_steps or self.rollback_every_steps)


def verdict(events: list[Event]) -> str:
    """``act`` when any event asks for a rollback, pause or quarantine; ``watch`` for watch or wait; else
    ``healthy``."""
    actions = {event.action for event in events}
    if actions & set(ACT):
        return "act"
    if actions & set(WATCH):
        return "watch"
    return "healthy"
