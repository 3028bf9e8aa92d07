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


def plan_gpus(plan) -> int:
    """The plan's GPU count: the world size its checkpoint plan shards over (ops/checkpoint.py ``_world_size``)."""
    return int(plan.checkpointing.world_size)


def plan_batch_sequences(plan) -> int:
    """The plan's main global batch in sequences: its last batch stage, as the exporters read it
    (src/runplan/export/_common.py ``Facts.global_batch_sequences``)."""
    return int(plan.schedule.batch_stages[-1].global_batch_sequences)


def _inconsistency(plan, best) -> str | None:
    """Why ``best`` is no layout runplan would plan for ``plan`` (None when t·p·d·c and d·b·m hold)."""
    t, p, d, c, b, m = best.tp, best.pp, best.dp, best.cp, best.micro_batch, best.microbatches
    gpus, batch = plan_gpus(plan), plan_batch_sequences(plan)
    if t * p * d * c != gpus:
        return f"t·p·d·c = {t}·{p}·{d}·{c} = {t * p * d * c}, not the plan's {gpus} GPUs"
    if d * b * m != batch:
        return f"d·b·m = {d}·{b}·{m} = {d * b * m}, not the plan's main batch of {batch} sequences"
    return _structural_inconsistency(plan, best)


def _structural_inconsistency(plan, best) -> str | None:
    """The search's divisibility rules for v and e (src/runplan/parallel/search.py ``structural_axes``: v divides
    the largest stage's ⌈L/p⌉ layers and needs p >= 2; e divides the experts and d·c, 1 without experts;
    ``choose_microbatches``: m a multiple of p when v > 1)."""
    p, d, c, e, v, m = best.pp, best.dp, best.cp, best.ep, best.vpp, best.microbatches
    n_experts = plan.model.shape.n_experts
    if v > 1 and p < 2:
        return f"v = {v} interleaves pipeline stages and p = 1 has none"
    if v > 1 and best.layers_per_stage % v:
        return f"v = {v} does not divide the {best.layers_per_stage} layers of the largest stage"
    if v > 1 and m % p:
        return f"interleaving (v = {v}) needs m a multiple of p, and m = {m} is not of p = {p}"
    if (e > 1 and not n_experts) or (n_experts and (n_experts % e or (d * c) % e)):
        return f"e = {e} must divide the {n_experts} experts and d·c = {d}·{c} (1 without experts)"
    return None


def with_layout(plan, *, consistent: bool = True, **changes):
    """A copy of ``plan`` with fields of ``layout.best`` replaced (to reach exporter branches).

    The result must still be a layout runplan could plan: t·p·d·c the plan's GPU count, d·b·m its main batch
    in sequences (see :func:`rebalanced` to derive d and m) and v, e as the search allows them
    (:func:`_structural_inconsistency`); a test whose point is an inconsistent plan passes
    ``consistent=False`` and says why. A change of ``pp`` also sets the derived ``layers_per_stage`` = ⌈L/p⌉ and
    ``uneven_stages`` = (p ∤ L), as the search does (src/runplan/parallel/search.py ``_estimate``)."""
    if "pp" in changes:
        n_layers, pp = plan.model.shape.n_layers, changes["pp"]
        changes = {"layers_per_stage": -(-n_layers // pp), "uneven_stages": n_layers % pp != 0, **changes}
    best = plan.layout.best.model_copy(update=changes)
    why = _inconsistency(plan, best)
    if consistent and why is not None:
        raise AssertionError(
            f"with_layout({', '.join(f'{k}={v!r}' for k, v in changes.items())}): {why}; "
            "change dp / microbatches with it (rebalanced derives them), or pass consistent=False and say why"
        )
    return plan.model_copy(update={"layout": plan.layout.model_copy(update={"best": best})})


def rebalanced(plan, *, consistent: bool = True, **changes):
    """:func:`with_layout` with d and m derived where the change leaves them out: d = GPUs / (t·p·c), then
    m = batch / (d·b), so that t·p·d·c and d·b·m stay the plan's (refused when they do not divide)."""
    best = plan.layout.best.model_copy(update=changes)
    t, p, c, b = best.tp, best.pp, best.cp, best.micro_batch
    gpus, batch = plan_gpus(plan), plan_batch_sequences(plan)
    if "dp" not in changes:
        if gpus % (t * p * c):
            raise AssertionError(f"rebalanced: {gpus} GPUs do not divide by t·p·c = {t}·{p}·{c}")
        changes = {**changes, "dp": gpus // (t * p * c)}
    d = changes["dp"]
    if "microbatches" not in changes:
        if batch % (d * b):
            raise AssertionError(
                f"rebalanced: the main batch of {batch} sequences does not divide by d·b = {d}·{b}"
            )
        changes = {**changes, "microbatches": batch // (d * b)}
    return with_layout(plan, consistent=consistent, **changes)


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
