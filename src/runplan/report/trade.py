"""The trade a layout ranking made, in words: shared by `runplan parallelize` and the plan report.

Kept apart from report/sections.py, which imports the whole plan (runplan.plan: the plan file's models and every
ops stage, about 1 s of `parallelize`'s terminal start-up measured with callgrind): `parallelize` needs this sentence
and nothing else of the plan report."""

from __future__ import annotations

from typing import Any

from runplan.report.format import fmt_bytes


def margin_trade(best: Any, others: list[Any], tolerance: float) -> str | None:
    """The trade the ranking made when the chosen layout is not the fastest listed: tokens/s given up for
    memory margin (constraints.throughput_tolerance), or None when it is the fastest."""
    fastest = max([best, *others], key=lambda x: x.tokens_per_second)
    if fastest is best or fastest.tokens_per_second <= best.tokens_per_second:
        return None
    slower = 1 - best.tokens_per_second / fastest.tokens_per_second
    limit = best.memory_limit_bytes
    return (
        f"margin over speed: {slower:.2%} fewer tokens/s than the fastest layout for "
        f"{fmt_bytes(fastest.memory_bytes.total - best.memory_bytes.total)} more memory margin "
        f"({best.memory_bytes.total / limit:.1%} of the limit instead of {fastest.memory_bytes.total / limit:.1%}); "
        f"layouts within {tolerance:.0%} of the fastest rank by margin (constraints.throughput_tolerance)"
    )
