"""Example plans for the export tests.

``example_plan`` builds a plan from ``examples/<name>.yaml`` with the current models (once per session).
``golden_plan`` reads the checked-in ``tests/export/plans/<name>.json`` (what ``runplan plan <example> -f
json`` printed when it was written): the golden files are exports of these, so a refit of the time model or
any other change upstream of the exporters does not rewrite them. Rewrite the JSON files on purpose with

    .venv/bin/python -m tests.export._plans
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
GOLDEN = Path(__file__).resolve().parent / "golden"
PLANS = Path(__file__).resolve().parent / "plans"
EXAMPLE_NAMES = sorted(p.stem for p in EXAMPLES.glob("*.yaml"))


@cache
def example_plan(name: str):
    from runplan.plan import build_plan
    from runplan.spec import load_plan

    return build_plan(load_plan(EXAMPLES / f"{name}.yaml"), EXAMPLES)


def plan_json(plan) -> str:
    """The plan as ``runplan plan -f json`` prints it."""
    return json.dumps(plan.model_dump(mode="json"), indent=2, allow_nan=False) + "\n"


@cache
def golden_plan(name: str):
    """The checked-in RunPlan of example ``name`` (the golden files' input)."""
    from runplan.plan import RunPlan

    return RunPlan.model_validate_json((PLANS / f"{name}.json").read_text(encoding="utf-8"))


def with_layout(plan, **changes):
    """A copy of ``plan`` with fields of ``layout.best`` replaced (to reach exporter branches)."""
    best = plan.layout.best.model_copy(update=changes)
    return plan.model_copy(update={"layout": plan.layout.model_copy(update={"best": best})})


def parse_script_args(text: str) -> list[str]:
    """The argument vector inside ``ARGS=( ... )`` of an exported Megatron script (comments dropped, quotes
    removed), as bash would pass it."""
    import shlex

    inside, tokens = False, []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped == "ARGS=(":
            inside = True
            continue
        if inside and stripped == ")":
            break
        if inside and stripped and not stripped.startswith("#"):
            tokens += shlex.split(stripped, comments=True)
    return tokens


def write_plans() -> None:
    """Rewrite ``tests/export/plans/*.json`` from the examples with the current models."""
    PLANS.mkdir(exist_ok=True)
    for name in EXAMPLE_NAMES:
        (PLANS / f"{name}.json").write_text(plan_json(example_plan(name)), encoding="utf-8")


if __name__ == "__main__":
    write_plans()
