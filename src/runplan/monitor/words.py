"""Small wording helpers for monitor's messages: a count with its noun ("1 logged step", not "1 logged steps"), a
step range ("step 1,290", not "steps 1,290-1,290") and a threshold percentage."""

from __future__ import annotations


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``count`` with ``noun`` in the singular for exactly one, else ``plural`` (default: ``noun`` + "s")."""
    return f"{count:,} {noun if count == 1 else plural or noun + 's'}"


def steps_text(first: int, last: int) -> str:
    """A step range in words: "step 1,290" when it is one step, else "steps 1,290-1,300"."""
    return f"step {first:,}" if first == last else f"steps {first:,}-{last:,}"


def percent(fraction: float) -> str:
    """A threshold fraction as a percentage without a rounded-away digit: 0.05 is "5%", 0.025 "2.5%"."""
    return f"{fraction * 100:.3g}%"
