"""Small wording helpers for monitor's messages (a count with its noun, so "1 logged step", not "1 logged steps")."""

from __future__ import annotations


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``count`` with ``noun`` in the singular for exactly one, else ``plural`` (default: ``noun`` + "s")."""
    return f"{count:,} {noun if count == 1 else plural or noun + 's'}"
