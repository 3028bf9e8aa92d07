"""A new user's wording reports: B_opt named for what it is, `init --price-per-gpu-hour`, monitor's spike amounts
and one-step ranges, rounded plan inputs in Markdown, and what the sweep's GPU-hours count under --wsd."""

from __future__ import annotations

import json

import pytest
import yaml
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.plan import build_plan
from runplan.spec import load_plan_text


def run(*args: str):
    return CliRunner().invoke(app, list(args))


def _flat(text: str) -> str:
    return " ".join(text.split())


# ---- 1. DeepSeek's B_opt is not a critical batch ---------------------------------------------------------


def test_parallelize_names_b_opt_as_the_batch_ceiling_not_a_critical_batch():
    result = run("parallelize", "--model", "8b", "--gpus", "64")
    assert result.exit_code == 0, result.output
    text = _flat(result.stdout)
    assert "batch ceiling (DeepSeek's compute-optimal B_opt) " in text and "critical batch" not in text
    # the JSON keeps its key and number; only the words changed
    data = json.loads(run("parallelize", "--model", "8b", "--gpus", "64", "--json").stdout)
    assert data["critical_batch"]["tokens"] == pytest.approx(data["batch_range_tokens"][1])
    assert data["warnings"][0].startswith("batch ceiling (DeepSeek's compute-optimal B_opt) ")
    best = data["layouts"][0]["why"]
    assert any("(at most DeepSeek's compute-optimal B_opt)" in line for line in best)


def test_parallelize_with_a_target_batch_calls_b_opt_by_its_name_not_the_ceiling():
    result = run("parallelize", "--model", "8b", "--gpus", "64", "--global-batch", "4M")
    assert result.exit_code == 0, result.output
    text = _flat(result.stdout)
    assert "DeepSeek's compute-optimal batch B_opt " in text
    assert "batch ceiling" not in text and "critical batch" not in text


# ---- 2. init --price-per-gpu-hour ------------------------------------------------------------------------


def test_init_writes_the_price_and_plan_costs_with_it(tmp_path):
    paths = {}
    for price in (None, "3.5"):
        argv = ["init", "--gpus", "512"] + ([] if price is None else ["--price-per-gpu-hour", price])
        out = run(*argv)
        assert out.exit_code == 0, out.output
        cluster = yaml.safe_load(out.stdout)["cluster"]
        assert cluster.get("price_per_gpu_hour") == (None if price is None else 3.5)
        paths[price] = tmp_path / f"plan-{price}.yaml"
        paths[price].write_text(out.stdout)
    costs = {}
    for price, path in paths.items():
        planned = run("plan", str(path), "-f", "json")
        assert planned.exit_code == 0, planned.output
        costs[price] = json.loads(planned.stdout)["cost"]
    assert costs["3.5"]["price_per_gpu_hour"] == 3.5 and costs[None]["price_per_gpu_hour"] == 2.0
    assert costs["3.5"]["total_cost"] == pytest.approx(costs[None]["total_cost"] * 3.5 / 2.0)


@pytest.mark.parametrize(
    ("value", "phrase"),
    [("abc", "expected a number"), ("-1", "greater than or equal to 0"), ("1e6", "less than or equal")],
)
def test_init_refuses_a_bad_price_in_one_line_naming_the_flag(value, phrase, one_error_line):
    line = one_error_line(run("init", "--price-per-gpu-hour", value))
    assert line.startswith("runplan: error: --price-per-gpu-hour:") and phrase in line


# ---- 3. monitor: the amount above the pre-spike mean, and one-step ranges --------------------------------


def test_words_name_a_one_step_range_as_a_step():
    from runplan.monitor.words import percent, steps_text

    assert steps_text(1290, 1290) == "step 1,290"
    assert steps_text(2360, 2365) == "steps 2,360-2,365"
    assert (percent(0.05), percent(0.025)) == ("5%", "2.5%")


def test_monitor_says_how_far_above_and_the_threshold_and_a_single_step(shared_data_dir, tmp_path):
    path = shared_data_dir / "training_logs/megatron/mixtral_8x7b_alltoall_tp2pp4ep4_release.dgx_h100.json"
    report = tmp_path / "incident.md"
    result = run("monitor", str(path), "--report", str(report))
    text = _flat(result.stdout)
    # 3.13 against 2.964 is 5.6% above: the old text rounded it to the threshold ("5% above")
    assert "loss 3.13 at step 1,290 is 5.6% above its pre-spike mean 2.964 (threshold 5%;" in text
    assert "inspect the batches of step 1,290." in text or "inspect the batches of step 1,290 " in text
    assert "steps 1,290-1,290" not in text
    assert "inspect the batches of steps 2,360-2,365" in text  # a real range stays a range
    markdown = report.read_text()
    assert "| 1,290 | 1,290 | 1,295 | loss_spike | watch |  | 1,290 |" in markdown


def test_monitor_bloom_spike_gives_the_rise_to_a_tenth_of_a_percent(shared_data_dir):
    path = shared_data_dir / "training_logs/bigscience/tr11-176B-ml.spike-31214.log"
    text = _flat(run("monitor", str(path)).stdout)
    assert "is 130.7% above its pre-spike mean 2.21 (threshold 5%; baseline of only 2 logged points" in text


# ---- 4. plan -f markdown: inputs to 4 significant digits -------------------------------------------------


def test_markdown_inputs_round_floats_and_keep_integers(tmp_path):
    from runplan.report.markdown import render_markdown

    spec = load_plan_text(
        "schema_version: 1\nbudget: {flops: 2e23}\ncluster: {gpu: h100-sxm, gpus: 512}\n", "p.yaml"
    )
    plan = build_plan(spec, tmp_path)
    text = render_markdown(plan)
    block = text.split("## Inputs", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    raw = plan.inputs["operations"]["failures_per_1000_node_days"]
    assert len(repr(raw)) > 8  # a long derived float: the case the user saw
    assert f"failures_per_1000_node_days: {raw:.4g}\n" in block
    assert "4 significant digits" in text
    assert "  gpus: 512\n" in block and "  vocab_size: 128256\n" in block  # integers whole
    assert "  flops: 2.0e+23\n" in block
    read = yaml.safe_load(block)  # still YAML, its floats still floats
    assert read["budget"]["flops"] == 2e23 and read["operations"]["failures_per_1000_node_days"] == float(
        f"{raw:.4g}"
    )


# ---- 5. sweep --wsd: the GPU-hours column counts what each run adds ---------------------------------------


def test_sweep_wsd_says_the_gpu_hours_are_what_each_run_adds():
    wsd = run("sweep", "--flops", "2e23", "--wsd", "--budgets", "3", "--gpus", "512")
    assert wsd.exit_code == 0, wsd.output
    header = next(line for line in wsd.stdout.splitlines() if "budget" in line and "tokens" in line)
    assert "GPU-h*" in header
    assert "GPU-h*: what each run adds with WSD, not a whole training" in _flat(wsd.stdout)
    plain = run("sweep", "--flops", "2e23", "--budgets", "3", "--gpus", "512")
    assert "GPU-h*" not in plain.stdout and "what each run adds" not in plain.stdout


def test_plan_sweep_section_names_the_added_gpu_hours_under_wsd(tmp_path):
    from runplan.report.sections import plan_sections

    base = "schema_version: 1\nbudget: {flops: 2e23}\ncluster: {gpu: h100-sxm, gpus: 512}\n"
    plan = build_plan(load_plan_text(base + "sweep: {wsd: true, budgets: 3}\n", "p.yaml"), tmp_path)
    section = next(s for s in plan_sections(plan) if s.title == "Proxy sweep")
    assert section.tables[0].headers[-1] == "added GPU-hours"
    assert any(b.startswith("added GPU-hours: what each run adds with WSD") for b in section.bullets)


def test_plan_sweep_section_says_the_proxies_of_a_moe_plan_are_dense(tmp_path):
    """The architect builds dense shapes only: a law fitted on the sweep of a MoE plan is a dense law."""
    from runplan.report.sections import plan_sections

    base = "schema_version: 1\nbudget: {tokens: 1T}\ncluster: {gpu: h100-sxm, gpus: 256}\n"
    moe = build_plan(load_plan_text(base + "model: mixtral-8x7b\n", "p.yaml"), tmp_path)
    section = next(s for s in plan_sections(moe) if s.title == "Proxy sweep")
    (note,) = [b for b in section.bullets if "dense" in b]
    assert "8 experts" in note and "top-2" in note and "active parameters" in note
    dense = build_plan(load_plan_text(base + "model: llama-3-8b\n", "p.yaml"), tmp_path)
    section = next(s for s in plan_sections(dense) if s.title == "Proxy sweep")
    assert not [b for b in section.bullets if "dense" in b]
