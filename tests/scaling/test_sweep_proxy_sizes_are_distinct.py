"""Every proxy of a budget is a distinct model, each run and trunk id names one model, and the sampled sizes
straddle the budget's compute-optimal N, or the sweep says why not.

The sizes sit on a log10-N lattice, but each one is built by runplan.architect, which picks the nearest rung of
its ladder (up to architect.TOLERANCE, 7.5%, away). With a narrow span neighbouring targets fell on the same rung: `runplan sweep --flops
2e23 --span 0.05 --budgets 1` listed 3.88B twice and 4.04B three times, seven runs of four models (the duplicates
cost 3·2e21 FLOPs and teach a fit nothing), and with --wsd each copy got its own stable trunk.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.errors import Infeasible
from runplan.scaling.laws import shipped_laws
from runplan.scaling.sweep import SweepRequest, design_sweep

LAW = shipped_laws()["besiroglu2024"]
runner = CliRunner()


def _model(run) -> tuple[int, int, int]:
    return (run.total_params, run.n_layers, run.d_model)


def test_a_narrow_span_lists_each_proxy_model_once_and_says_how_many():
    sweep = design_sweep(SweepRequest(flops=2e23, law=LAW, span_decades=0.05, budgets=1))
    models = [_model(r) for r in sweep.runs]
    assert len(models) == len(set(models)) == 4  # 3.70B, 3.88B, 4.04B, 4.40B (the architect's rungs)
    assert sweep.total_flops == pytest.approx(4 * 2e21, rel=1e-6)
    assert sweep.total_fraction == pytest.approx(0.04, rel=1e-6)
    (note,) = [w for w in sweep.warnings if "distinct" in w]
    assert "4 distinct proxy models for the 7 sizes" in note and "sweep.span_decades" in note


def test_run_ids_and_wsd_trunks_name_one_model_each():
    """15 sizes over 0.3 decades: 3.362B and 3.368B are both proxies and both printed n3.4e+09 before."""
    sweep = design_sweep(SweepRequest(flops=2e23, law=LAW, sizes=15, span_decades=0.3, wsd=True))
    ids = Counter(r.run for r in sweep.runs)
    assert max(ids.values()) == 1
    per_budget = Counter((r.budget_flops, _model(r)) for r in sweep.runs)
    assert max(per_budget.values()) == 1
    trunks: dict[str, set] = {}
    for r in sweep.runs:
        trunks.setdefault(r.trunk or "", set()).add(_model(r))
    assert all(len(models) == 1 for models in trunks.values())
    assert sweep.training_runs == len(trunks) == len({_model(r) for r in sweep.runs})
    assert sweep.runs_saved == len(sweep.runs) - sweep.training_runs


def test_the_default_sweep_keeps_its_ids_and_seven_sizes():
    sweep = design_sweep(SweepRequest(flops=2e23, law=LAW))
    assert len(sweep.runs) == 21 and not any("distinct" in w for w in sweep.warnings)
    assert sweep.runs[0].run == "c2e+21-n1.5e+09"


def test_fewer_than_three_models_in_a_budget_is_infeasible_naming_the_span():
    """0.02 decades around 1e21's optimum: every target lands on one rung; a parabola needs three sizes."""
    with pytest.raises(Infeasible) as caught:
        design_sweep(SweepRequest(flops=1e23, law=LAW, span_decades=0.02, budgets=1))
    assert "1 distinct proxy model" in caught.value.reason
    assert any("sweep.span_decades" in s for s in caught.value.suggestions)
    result = runner.invoke(app, ["sweep", "--flops", "1e23", "--span", "0.02", "--budgets", "1"])
    assert result.exit_code == 1 and "--span" in result.output


def test_sizes_that_miss_the_optimum_are_named():
    """0.05 decades at the budget 2.82e24 (1% of 2.82e26): 3 models (152B, 156B, 162B), all below N_opt = 163B;
    Approach 2 drops a budget whose minimum lies outside its sizes, so the sweep says so."""
    sweep = design_sweep(SweepRequest(flops=2.82e26, law=LAW, span_decades=0.05, sizes=7, budgets=1))
    n_opt = LAW.compute_optimal(2.82e24)[0]
    sizes = [r.params for r in sweep.runs]
    assert not min(sizes) < n_opt < max(sizes)
    (note,) = [w for w in sweep.warnings if "do not straddle" in w]
    assert f"{n_opt:.3g}" in note and "sweep.span_decades" in note


def test_json_runs_match_the_terminal_table():
    args = ["sweep", "--flops", "2e23", "--span", "0.05", "--budgets", "1"]
    data = json.loads(runner.invoke(app, [*args, "--json"]).stdout)
    table = runner.invoke(app, args).stdout
    assert len(data["runs"]) == 4
    assert sum(line.strip().startswith("2e+21 ") for line in table.splitlines()) == 4  # table rows
    assert any("4 distinct proxy models" in w for w in data["warnings"])
    header = " ".join(table.split(" budget ")[0].split())
    assert "7 sizes asked, 4 distinct models" in header and "7 sizes each" not in header


def test_the_plans_sweep_section_counts_the_distinct_models(tmp_path):
    # 7 sizes over 0.1 decade at 2e21 and 2e20 FLOPs fall on 4 and 3 generated shapes: the plan's runs row says
    # 7 runs, not 2 × 7, and why
    from typer.testing import CliRunner

    from runplan.cli.app import app

    plan = tmp_path / "plan.yaml"
    plan.write_text(
        "schema_version: 1\nbudget: {flops: 2e23}\ncluster: {gpu: h100-sxm, gpus: 512}\n"
        "sweep: {span_decades: 0.1, budgets: 2}\n"
    )
    result = CliRunner().invoke(app, ["plan", str(plan), "-f", "markdown"])
    assert result.exit_code == 0, result.output
    (row,) = [line for line in result.stdout.splitlines() if line.startswith("| runs |")]
    assert row.startswith("| runs | 7 | 7 sizes per budget")
    assert "; 4 + 3 distinct models (sizes sharing a shape listed once)" in row
