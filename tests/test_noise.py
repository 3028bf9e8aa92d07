"""Noise and wrong labels a new user met (issue 15): each fixed, each checked."""

from __future__ import annotations

from pathlib import Path

import yaml
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.plan import build_plan
from runplan.spec import load_plan_text

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def run(*args: str, columns: int = 80):
    return CliRunner().invoke(app, list(args), env={"COLUMNS": str(columns)})


def _plan(path: Path):
    return build_plan(load_plan_text(path.read_text(), str(path)), path.parent)


def _one_budget_plan(tmp_path: Path):
    """The 70B example with a one-budget proxy sweep (the default is three budgets)."""
    path = tmp_path / "one.yaml"
    path.write_text((EXAMPLES / "70b-512-h100.yaml").read_text() + "sweep: {budgets: 1}\n")
    return _plan(path)


def test_a_plan_carries_no_sweep_note_it_cannot_act_on(tmp_path):
    plan = _one_budget_plan(tmp_path)
    # the plan's sweep keeps the suggestion, worded with the plan key (not `runplan sweep --budgets`) ...
    assert any("sweep: {budgets: 3} in the plan file" in w for w in plan.sweep.warnings)
    assert not any("--budgets" in w for w in plan.sweep.warnings)
    # ... and it is not one of the plan's cautions
    assert not any("budgets" in w for w in plan.warnings)


def test_the_sweep_note_filter_is_structured_not_a_text_match(tmp_path):
    """Sweep.plan_warnings drops exactly the notes flag_notes makes (one budget, with and without WSD) and
    keeps every other caution, whatever its words."""
    from runplan.scaling.sweep import PLAN_BUDGETS, flag_notes

    plan = _one_budget_plan(tmp_path)
    sweep = plan.sweep.model_copy(update={"warnings": [*plan.sweep.warnings, "a caution about budgets 3"]})
    assert len(flag_notes(True, 1)) == 2 and len(flag_notes(False, 1)) == 1 and flag_notes(True, 3) == []
    suggestions = flag_notes(sweep.wsd, 1) + flag_notes(sweep.wsd, 1, PLAN_BUDGETS)
    assert sweep.plan_warnings == [w for w in sweep.warnings if w not in suggestions]
    assert len(sweep.plan_warnings) == len(sweep.warnings) - 1  # the one-budget suggestion, in plan words
    assert "a caution about budgets 3" in sweep.plan_warnings
    three = sweep.model_copy(update={"budgets": [1e21, 1e20, 1e19]})
    assert three.plan_warnings == three.warnings  # with three budgets no note suggests the flag


def test_a_compute_optimal_plan_does_not_explain_itself_as_a_fixed_model():
    result = run("plan", str(EXAMPLES / "2e23-compute-optimal.yaml"), "--detail", columns=200)
    line = next(x for x in result.stdout.splitlines() if x.strip().startswith("objective"))
    assert "compute_optimal" in line and "fixed" not in line


def test_an_explicit_shape_is_not_labelled_generated():
    from runplan.catalog import load_catalog

    shape = load_catalog([]).model("llama-3.1-8b").model_dump(mode="json")
    shape.pop("name")
    text = yaml.safe_dump(
        {
            "schema_version": 1,
            "name": "explicit",
            "model": {"shape": shape},
            "budget": {"tokens": "1T"},
            "cluster": {"gpu": "h100-sxm", "gpus": 64},
        }
    )
    from runplan.report.sections import summary_lines

    first = summary_lines(build_plan(load_plan_text(text, "<test>")))[0]
    assert first.startswith("explicit shape: ")


def test_the_infeasible_answer_is_short_lines():
    result = run("parallelize", "--model", "405b", "--gpus", "8")
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    assert lines[0].startswith("runplan: infeasible: ") and len(lines[0]) <= 100
    assert "  nearest misses:" in lines and "  to make it feasible:" in lines
    assert sum(line.startswith("    - ") for line in lines) >= 2
    assert max(len(line) for line in lines) < 200  # was one line of about 700 characters


def test_the_license_file_is_the_one_pyproject_names():
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert 'license = { text = "Apache-2.0" }' in (ROOT / "pyproject.toml").read_text()


def test_shell_completion_can_be_shown_and_installed():
    result = run("--show-completion", "bash")
    assert result.exit_code == 0 and "_runplan_completion" in result.stdout
    assert "--install-completion" in run("--help").stdout


def test_a_plan_sets_its_sweep_and_names_the_key_that_acts_on_a_note(tmp_path):
    """The plan file's `sweep:` section shapes the plan's proxy sweep; a bad key is one located line; the
    one-budget suggestion stays out of the warnings and, in the sweep section, names the plan key."""
    base = "schema_version: 1\nbudget: {flops: 2e23}\ncluster: {gpu: h100-sxm, gpus: 512}\n"
    three = build_plan(load_plan_text(base + "sweep: {budgets: 3, sizes: 5}\n", "p.yaml"), tmp_path)
    assert len(three.sweep.budgets) == 3 and len(three.sweep.runs) == 15
    assert len(build_plan(load_plan_text(base, "p.yaml"), tmp_path).sweep.budgets) == 3  # the default
    one = build_plan(load_plan_text(base + "sweep: {budgets: 1}\n", "p.yaml"), tmp_path)
    assert len(one.sweep.budgets) == 1 and not any("budgets" in w for w in one.warnings)
    from runplan.report.markdown import render_markdown

    assert "sweep: {budgets: 3} in the plan file lets Approach 2 fit" in render_markdown(one)
    bad = tmp_path / "bad.yaml"
    bad.write_text(base + "sweep:\n  budgets: 9\n")
    result = run("plan", str(bad))
    assert result.exit_code == 2
    assert f"{bad}:5: sweep.budgets: need 1 to 6 budgets, got 9" in result.output
