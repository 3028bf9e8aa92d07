"""`runplan diff` and `runplan check` say "active params" for the law's N of a mixture-of-experts plan.

The allocation's N is the count C = 6·N·D spends (plan._law_params): for a MoE plan the active parameters only
(Krajewski et al. 2024's law is in active parameters; the plan's own report says "active" since 809c090). Found on
a review: `runplan diff examples/70b-512-h100.yaml examples/moe-mixtral-8x7b.yaml` printed ``allocation.params:
70.55 B params → 12.62 B params``, as if Mixtral had 12.62 B parameters (it has 46.7 B; 12.62 B is its active
non-embedding count, 12,879,925,248 − 2 × 32,000 × 4,096). Each side's unit follows its own plan."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.resolved import diff_changes

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
DENSE, MOE = EXAMPLES / "70b-512-h100.yaml", EXAMPLES / "moe-mixtral-8x7b.yaml"


def _diff(*args: str) -> list[str]:
    result = CliRunner().invoke(app, ["diff", *map(str, args)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return result.stdout.splitlines()


def test_dense_to_moe_says_active_on_the_moe_side_only():
    lines = _diff(DENSE, MOE)
    assert "  allocation.params: 70.55 B params → 12.62 B active params (-82.12%)" in lines
    # the model's own count stays total on both sides: 46.7 B for Mixtral (12.62 B active of it)
    assert "  model.total_params: 70.55 B params → 46.7 B params (-33.81%)" in lines


def test_moe_to_dense_says_active_on_the_left():
    # 70,553,706,496 / 12,617,781,248 − 1 = +459.16%
    assert "  allocation.params: 12.62 B active params → 70.55 B params (+459.16%)" in _diff(MOE, DENSE)


def _section(n_experts: int, params: float) -> dict:
    return {
        "model": {"shape": {"n_experts": n_experts}, "law_params": params},
        "allocation": {"params": params, "compute_optimal_params": 2 * params, "tokens_per_param": 20.0},
    }


def test_a_moe_drift_says_active_on_both_sides_and_keeps_raw_json():
    changes = {c.path: c for c in diff_changes(_section(8, 10e9), _section(8, 12e9))}
    assert changes["allocation.params"].readable() == (
        "allocation.params: 10 B active params → 12 B active params (+20.00%)"
    )
    # the law's N wherever the plan holds it: the compute-optimal N and the model's law_params
    assert changes["allocation.compute_optimal_params"].readable() == (
        "allocation.compute_optimal_params: 20 B active params → 24 B active params (+20.00%)"
    )
    assert changes["model.law_params"].readable() == (
        "model.law_params: 10 B active params → 12 B active params (+20.00%)"
    )
    assert changes["allocation.params"].record() == {
        "path": "allocation.params",
        "section": "allocation",
        "kind": "changed",
        "old": 10e9,
        "new": 12e9,
        "relative_change": 0.2,
    }


def test_a_dense_drift_says_params():
    (change, *_) = diff_changes(_section(0, 10e9), _section(0, 12e9))
    assert change.readable() == "allocation.params: 10 B params → 12 B params (+20.00%)"


def test_diff_json_is_unchanged_raw_numbers():
    result = CliRunner().invoke(app, ["diff", str(DENSE), str(MOE), "--json"])
    head = {c["path"]: c for c in json.loads(result.stdout)["headline"]}
    assert head["allocation.params"]["new"] == 12_617_781_248
    assert set(head["allocation.params"]) == {"path", "section", "kind", "old", "new", "relative_change"}


def test_a_moe_plan_s_tokens_per_param_are_per_active_param():
    old, new = _section(8, 10e9), _section(8, 10e9)
    new["allocation"]["tokens_per_param"] = 25.0
    (change,) = diff_changes(old, new)
    assert change.readable() == (
        "allocation.tokens_per_param: 20 tokens/active param → 25 tokens/active param (+25.00%)"
    )
