"""A GPU-time budget is spent: the plan is sized so its predicted wall clock (goodput included) fills it;
`init` takes --days and never writes a silent FLOP budget for a cluster (issue 15)."""

from __future__ import annotations

import pytest
import yaml
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.plan import FILL_RTOL, build_plan
from runplan.spec import load_plan_text


def _plan(budget: dict, gpus: int = 1024, **keys):
    text = yaml.safe_dump(
        {
            "schema_version": 1,
            "name": "t",
            "budget": budget,
            "cluster": {"gpu": "h100-sxm", "gpus": gpus},
            **keys,
        }
    )
    return build_plan(load_plan_text(text, "<test>"))


def test_thirty_days_on_1024_h100_fills_thirty_days():
    plan = _plan({"days": 30})
    days = plan.cost.main.wall_clock_days
    assert days == pytest.approx(30, rel=FILL_RTOL)
    a = plan.allocation
    assert a.days == 30
    # C = GPUs × peak × effective utilisation × seconds, the effective utilisation below the layout's MFU
    # (goodput < 1) and far from the 0.4 the budget assumed
    assert a.flops == pytest.approx(1024 * 989e12 * a.mfu * 30 * 86400, rel=1e-6)
    assert 0.4 < a.mfu < plan.layout.best.mfu


def test_gpu_hours_budget_is_days_on_the_cluster():
    hours = 30 * 24 * 512
    plan = _plan({"gpu_hours": hours}, gpus=512)
    assert plan.cost.main.wall_clock_days == pytest.approx(30, rel=0.05)
    assert plan.allocation.days == pytest.approx(30)
    assert plan.cost.main.wall_clock_days <= 30 * (1 + FILL_RTOL) or any(
        w.startswith("budget:") for w in plan.warnings
    )


def test_a_flops_budget_is_not_resized():
    plan = _plan({"flops": 2e23})
    assert plan.allocation.flops == pytest.approx(2e23) and plan.allocation.days is None
    assert plan.allocation.law_tokens is None  # C as given: D is the law's, not a fill's


def test_a_token_budget_trains_on_its_tokens():
    plan = _plan({"tokens": "2T"}, model="llama-3.1-8b")
    assert plan.allocation.tokens == 2e12 and plan.schedule.training_tokens == 2e12
    assert plan.allocation.law_tokens is None


@pytest.mark.parametrize("gpus", [64, 128, 256, 1024])
def test_thirty_days_are_filled_within_1_percent_and_never_overrun(gpus):
    """The model generated for the law's N is a rung up to 7.5% from it, so a fill in C alone ended at 28.0, 30.26,
    29.75 and 29.77 of 30 days on these clusters; the model it settles on now trains on the tokens that fill them."""
    days = _plan({"days": 30}, gpus=gpus).cost.main.wall_clock_days
    assert 30 * (1 - FILL_RTOL) <= days <= 30


def test_the_model_the_fill_sized_trains_on_the_tokens_the_days_buy():
    """30 days on 64 H100s: the law's N 26.87 B has the rung 25.89 B, whose law D (518.8 B) takes 28.0 days; the
    run trains on the D that fills 30, every downstream number from that D, and the allocation says so."""
    from runplan.report.format import fmt_count
    from runplan.report.sections import plan_sections, summary_lines

    plan = _plan({"days": 30}, gpus=64)
    a = plan.allocation
    assert a.objective == "compute_optimal" and a.law_tokens is not None
    assert a.tokens / a.law_tokens - 1 == pytest.approx(0.069, abs=0.002)
    assert plan.model.law_params < a.params  # the rung below the law's N: more tokens fill the days
    assert plan.schedule.training_tokens == a.tokens
    steps_tokens = sum(stage.steps * stage.global_batch_tokens for stage in plan.schedule.batch_stages)
    assert steps_tokens == pytest.approx(a.tokens, rel=1e-4)
    assert a.flops == pytest.approx(6 * a.params * a.tokens) and a.budget_flops == a.flops
    assert a.tokens_per_param == pytest.approx(a.tokens / a.params)
    assert a.flops == pytest.approx(64 * 989e12 * a.mfu * 30 * 86400, rel=1e-6)
    rows = {row[0]: row for section in plan_sections(plan) for row in section.rows}
    assert rows["tokens D"][1] == fmt_count(a.tokens)
    assert rows["law's D for N"][1] == fmt_count(a.law_tokens)
    assert rows["law's D for N"][2] == (
        f"trained on {fmt_count(a.tokens)} tokens, 6.9% beyond the law's D for this size "
        f"({fmt_count(a.law_tokens)}), to use the budget's 30 days"
    )
    assert f"{fmt_count(a.tokens)} tokens" in summary_lines(plan)[0]
    assert not [w for w in plan.warnings if w.startswith("budget:")]


def test_plan_file_md_quotes_the_fill_line_of_30_days_on_64_h100s():
    from pathlib import Path

    from runplan.report.sections import plan_sections

    row = {r[0]: r for s in plan_sections(_plan({"days": 30}, gpus=64)) for r in s.rows}["law's D for N"]
    text = " ".join((Path(__file__).parents[1] / "docs" / "plan-file.md").read_text().split())
    assert f'"{row[2]}" (30 days on 64 H100s)' in text


@pytest.mark.parametrize(
    "objective",
    [
        {"kind": "tokens_per_param", "tokens_per_param": 20},
        {"kind": "inference_optimal", "inference_tokens": 1e13},
    ],
)
def test_objectives_that_set_d_themselves_keep_the_law_s_d(objective):
    """tokens_per_param fixes D/N and inference_optimal derives D from a target loss: the days are filled by C
    alone, and D stays the law's."""
    plan = _plan({"days": 30}, gpus=256, objective=objective)
    a = plan.allocation
    assert a.law_tokens is None and plan.schedule.training_tokens == a.tokens
    if objective["kind"] == "tokens_per_param":
        assert a.tokens == pytest.approx(20 * a.params)


def test_a_fixed_model_fills_the_days_with_all_its_compute_in_tokens():
    plan = _plan({"days": 30}, gpus=512, model="llama-3.1-70b")
    a = plan.allocation
    assert 30 * (1 - FILL_RTOL) <= plan.cost.main.wall_clock_days <= 30
    assert a.objective == "fixed_params" and a.law_tokens is None
    assert a.tokens == pytest.approx(a.flops / (6 * a.params)) and plan.schedule.training_tokens == a.tokens


def _init(*args: str):
    return CliRunner().invoke(app, ["init", *args])


def test_init_days_writes_a_days_budget():
    result = _init("--days", "30", "--gpus", "512")
    assert result.exit_code == 0, result.output
    budget = yaml.safe_load(result.stdout)["budget"]
    assert budget == {"days": "30"} or budget == {"days": 30}


def test_init_gpus_without_a_budget_writes_a_marked_placeholder_not_flops():
    result = _init("--gpus", "1024")
    assert result.exit_code == 0, result.output
    assert "flops" not in yaml.safe_load(result.stdout)["budget"]
    assert "placeholder" in result.stdout


def test_init_refuses_two_budgets():
    result = _init("--days", "3", "--flops", "1e23")
    assert result.exit_code == 2 and "--days" in result.stderr


def test_init_cites_nothing_outside_the_repo():
    text = _init().stdout
    assert "runplan.dev" not in text and "REFERENCES" not in text and "design brief" not in text
    assert "$schema=docs/plan.schema.json" in text


def test_the_allocation_warnings_follow_the_tokens_trained():
    """42 days on 16 H100: the law's D (316.9 B) lies inside besiroglu2024's fitted D range (up to 3.18e11),
    the D trained (327.6 B) does not; the warning is said at the trained D (it was missing: only a note of the
    law's point was ever restated)."""
    plan = _plan({"days": 42}, gpus=16)
    a = plan.allocation
    assert a.law_tokens < 3.18e11 < a.tokens
    assert any(f"D = {a.tokens:.3g}" in w and "above the fitted" in w for w in a.warnings)


def test_a_d_over_n_warning_of_the_law_s_point_goes_when_the_run_trains_inside_the_range():
    """krajewski2024-moe read as a dense law on 3 days of 64 H100: the law's point has 0.997 tokens per
    parameter (below the published range's 1), the run trains 1.02: no range warning for it."""
    plan = _plan({"days": 3}, gpus=64, law={"name": "krajewski2024-moe"})
    a = plan.allocation
    assert a.tokens / a.params >= 1.0 > a.law_tokens / a.params
    assert not any("tokens per parameter is outside" in w for w in a.warnings)


def test_the_intervals_of_a_token_filled_plan_are_at_the_tokens_trained(tmp_path):
    """A bootstrap law: D is the budget's (no interval), the loss interval is the resamples' loss at the N and
    D trained and brackets the loss reported (was centred on the law's D and loss)."""
    from tests.scaling.test_moe_intervals import REPO

    from runplan.scaling.fit import fit_parametric, read_runs, write_law_file

    fit = fit_parametric(read_runs(REPO / "examples" / "isoflop_synthetic.csv"), bootstrap=20, starts=4)
    write_law_file(fit, tmp_path / "law.yaml")
    plan = _plan({"days": 30}, gpus=64, law={"file": str(tmp_path / "law.yaml")})
    a = plan.allocation
    assert a.intervals is not None and a.tokens != a.law_tokens
    assert a.intervals.tokens.value == a.tokens and a.intervals.tokens.low is None
    assert a.intervals.loss.value == a.loss
    assert a.intervals.loss.low <= a.loss <= a.intervals.loss.high


def test_allocate_on_a_days_budget_labels_the_budget_s_days_and_cost(tmp_path):
    """`allocate FILE` prices the whole 42 days on 16 GPUs (16 x 42 x 24 x 2 = 32,256 USD) where `plan FILE`
    predicts the run ends 0.2-0.4% short: the rows say they are the budget's (they read as the run's)."""
    path = tmp_path / "a.yaml"
    path.write_text(_init("--days", "42", "--gpus", "16").stdout)
    out = " ".join(CliRunner().invoke(app, ["allocate", str(path)]).stdout.split())
    assert "budget's wall-clock 42.0 days on 16 GPUs" in out
    assert (
        "budget's cost 32,256 USD at 2 USD per GPU-hour (`runplan plan`: the predicted days and cost)" in out
    )
    flops = " ".join(CliRunner().invoke(app, ["allocate", "--flops", "1e22", "--gpus", "16"]).stdout.split())
    assert "budget's" not in flops and "wall-clock" in flops


def test_a_fill_step_into_infeasible_sizes_tries_the_sizes_between():
    """0.02 days on 64 H100 with pp 16: the fill's second step asked for a size of 12 layers, fewer than the 16
    stages, and the fill stopped there, keeping a 570 M model that took 0.102 days (5x) and blaming a smaller
    size, though 0.05 days planned 310 M within budget. Geometric midpoints back toward the feasible C find a
    size with 16+ layers; the plan now ends within the days."""
    plan = _plan({"days": 0.02}, gpus=64, parallel={"pp": 16})
    assert 0.02 * (1 - 2 * FILL_RTOL) <= plan.cost.main.wall_clock_days <= 0.02
    assert plan.model.shape.n_layers >= 16
    (warning,) = [w for w in plan.warnings if w.startswith("budget:")]
    assert warning.startswith("budget: a smaller size is infeasible (") and "short of the law's D" in warning


def test_a_memory_capped_fill_keeps_the_largest_size_that_fits_not_the_closest_days():
    """75 days on one H100 (hoffmann2022-unrounded): sizes above 3.41 B do not fit in memory, and the fill's
    midpoints swung between 3.64 B (95.8 days) and 3.26 B (59 days); keeping the iterate closest to the days
    trained the 3.26 B model on 151 B tokens (loss 2.2028) where 3.37 B (20 x 3072) on 168 B (2.1911) fits the
    same days.
    Tokens fill the days afterwards, so the largest size within them wins, and the memory refusal is said."""
    text = {
        "law": {"name": "hoffmann2022-unrounded"},
        "training": {"seq_len": 4096, "vocab_size": 128256},
        "cluster": {"gpu": "h100-sxm", "gpus": 1, "gpus_per_node": 1},
    }
    plan = build_plan(
        load_plan_text(
            yaml.safe_dump({"schema_version": 1, "name": "g", "budget": {"days": 75}, **text}), "<test>"
        )
    )
    assert plan.model.total_params == pytest.approx(3.368e9, rel=0.005)  # 20 layers x 3072
    assert 75 * 0.99 <= plan.cost.main.wall_clock_days <= 75
    (warning,) = [w for w in plan.warnings if w.startswith("budget:")]
    assert warning.startswith("budget: a larger size is infeasible (") and "memory" in warning


def test_allocate_on_an_inference_optimal_days_budget_shows_the_budget_s_days(tmp_path):
    """inference_optimal trains more than the budget's C (its D comes from the target loss): `allocate FILE`
    ran those FLOPs at the budget's rate and printed 21.1 "budget's" days for a 10-day budget; the rate is now
    the training FLOPs' over the days, so the days and cost are the budget's: 64 x 10 x 24 x 2 = 30,720 USD."""
    path = tmp_path / "inf.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "schema_version": 1,
                "name": "inf",
                "budget": {"days": 10},
                "cluster": {"gpu": "h100-sxm", "gpus": 64},
                "law": {"name": "hoffmann2022-unrounded"},
                "objective": {"kind": "inference_optimal", "inference_tokens": 1e13},
                "training": {"seq_len": 4096, "vocab_size": 128256},
            }
        )
    )
    out = " ".join(CliRunner().invoke(app, ["allocate", str(path)]).stdout.split())
    assert "budget's wall-clock 10.0 days on 64 GPUs" in out and "budget's cost 30,720 USD" in out


def test_gpu_hours_too_few_for_the_smallest_shape_are_infeasible_in_gpu_hours():
    """0.2 GPU-hours on 8 H100: the smallest shape the architect generates (40.18 M, mostly embeddings) takes
    0.0132 days, at the per-step overhead of its 7,600 steps, and no smaller shape exists. Refused (was exit 0 and
    a warning that the plan takes 13x the budget) in the key the user gave, with a number that is enough:
    rounded up, 0.0132 days x 8 GPUs x 24 = 2.54 GPU-hours."""
    from runplan.plan import BudgetTooSmall

    with pytest.raises(BudgetTooSmall) as refused:
        _plan({"gpu_hours": 0.2}, gpus=8)
    text = str(refused.value)
    assert text.startswith(
        "budget.gpu_hours: 0.2 GPU-hours cannot hold the smallest plan: 40.18 M parameters"
    )
    assert "cannot generate a shape with" in text and "raise budget.gpu_hours to at least 2.54;" in text
    assert "change the budget or objective" not in text  # the architect's range hint: the budget line says it
