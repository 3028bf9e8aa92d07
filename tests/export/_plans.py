"""Example plans built once per test session (build_plan takes ~0.5 s each)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
GOLDEN = Path(__file__).resolve().parent / "golden"
EXAMPLE_NAMES = sorted(p.stem for p in EXAMPLES.glob("*.yaml"))


@cache
def example_plan(name: str):
    from runplan.plan import build_plan
    from runplan.spec import load_plan

    return build_plan(load_plan(EXAMPLES / f"{name}.yaml"), EXAMPLES)


def with_layout(plan, **changes):
    """A copy of ``plan`` with fields of ``layout.best`` replaced (to reach exporter branches)."""
    best = plan.layout.best.model_copy(update=changes)
    return plan.model_copy(update={"layout": plan.layout.model_copy(update={"best": best})})
