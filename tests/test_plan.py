"""`runplan plan`, `check` and `init` on every shipped example, in every format."""

import json
import math
import re
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.plan import RunPlan, build_plan
from runplan.report.format import fmt_count
from runplan.report.markdown import render_markdown
from runplan.report.sections import plan_sections
from runplan.resolved import diff_resolved
from runplan.spec import load_plan, load_plan_text

EXAMPLES_DIR = Path(__file__).resolve().parents[1] / "examples"
EXAMPLES = sorted(EXAMPLES_DIR.glob("*.yaml"))
TOP_KEYS = [
    "inputs",
    "allocation",
    "model",
    "layout",
    "schedule",
    "checkpointing",
    "reliability",
    "monitoring",
    "sweep",
    "cost",
    "warnings",
]
BAD_TOKENS = re.compile(r"\b(nan|inf|-inf|NaN|Infinity)\b")


def run(*args: str):
    return CliRunner().invoke(app, list(args))


@pytest.fixture(scope="module", params=EXAMPLES, ids=lambda p: p.stem)
def planned(request) -> tuple[Path, RunPlan]:
    path = request.param
    return path, build_plan(load_plan(path), path.parent)


def _numbers(value, path=""):
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _numbers(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _numbers(item, f"{path}[{index}]")
    elif isinstance(value, int | float) and not isinstance(value, bool):
        yield path, float(value)


def test_json_has_the_stable_keys_and_sane_numbers(planned):
    _, plan = planned
    data = plan.model_dump(mode="json")
    assert list(data) == TOP_KEYS
    for path, number in _numbers(data):
        assert math.isfinite(number), path
        if path.endswith(("_seconds", "_days", "_bytes", "_hours")) or path.endswith("cost"):
            assert number >= 0, f"{path} = {number}"


def test_plan_is_consistent_across_stages(planned):
    _, plan = planned
    best, schedule = plan.layout.best, plan.schedule
    assert best.tp * best.pp * best.dp * best.cp == plan.inputs["cluster"]["gpus"]
    assert schedule.global_batch_tokens == best.global_batch_tokens
    seq = plan.inputs["training"]["seq_len"]
    for stage in schedule.batch_stages:  # every ramp stage divides into micro-batches on each replica
        assert stage.global_batch_sequences % (best.dp * best.micro_batch) == 0
        assert stage.global_batch_tokens == stage.global_batch_sequences * seq
    assert abs(schedule.scheduled_tokens - plan.allocation.tokens) <= schedule.global_batch_tokens
    assert plan.checkpointing.interval_steps >= 1
    assert 0 < plan.reliability.goodput <= 1
    assert plan.cost.main.wall_clock_days >= plan.cost.main.useful_days


def test_every_row_has_a_reason(planned):
    _, plan = planned
    for section in plan_sections(plan):
        for what, value, why in section.rows:
            assert why, f"{section.title}: {what} = {value} has no reason"
            assert not BAD_TOKENS.search(value), (section.title, what, value)


def test_markdown_reads_like_a_design_doc(planned):
    _, plan = planned
    text = render_markdown(plan)
    for heading in (
        "## Summary",
        "## Inputs",
        "## Derived numbers",
        "## Decisions",
        "## Warnings",
        "### Allocation",
        "### Parallel layout",
        "### Checkpointing",
        "### Time and cost",
    ):
        assert heading in text
    assert "| what | value | why |" in text
    assert not BAD_TOKENS.search(text)


@pytest.mark.parametrize("fmt", ["terminal", "markdown", "json", "yaml"])
def test_cli_plans_the_main_example_in_every_format(fmt, tmp_path):
    out = tmp_path / f"plan.{fmt}"
    result = run("plan", str(EXAMPLES_DIR / "70b-512-h100.yaml"), "--format", fmt, "-o", str(out))
    assert result.exit_code == 0, result.output
    text = out.read_text()
    assert "70" in text and not BAD_TOKENS.search(text.replace("inference", ""))
    if fmt == "json":
        assert list(json.loads(text)) == TOP_KEYS
    if fmt == "yaml":
        assert "resolved" in yaml.safe_load(text)


def test_resolved_yaml_checks_clean_then_reports_drift(planned, tmp_path):
    path, _ = planned
    resolved = tmp_path / f"{path.stem}.resolved.yaml"
    assert run("plan", str(path), "-f", "yaml", "-o", str(resolved)).exit_code == 0
    result = run("check", str(resolved))
    assert result.exit_code == 0, result.output
    assert "ok:" in result.stdout
    # one input changed → readable diff and exit 1
    document = yaml.safe_load(resolved.read_text())
    document["cluster"]["price_per_gpu_hour"] = 3.0
    changed = tmp_path / "changed.yaml"
    changed.write_text(yaml.safe_dump(document, sort_keys=False))
    result = run("check", str(changed))
    assert result.exit_code == 1, result.output
    assert "drift:" in result.stderr
    assert re.search(
        r"^  cost\.main\.cost: [\d,]+ USD → [\d,]+ USD \(\+50\.00%\)$", result.stderr, re.MULTILINE
    ), result.stderr


def test_diff_resolved_reports_paths_and_relative_change():
    old = {"a": {"b": 100.0, "notes": {"b": "x"}}, "c": [1, 2], "search_seconds": 0.1}
    new = {"a": {"b": 101.0, "notes": {"b": "y"}}, "c": [1, 2, 3], "search_seconds": 0.3}
    assert diff_resolved(old, new) == ["a.b: 100 → 101 (+1.00%)", "c: 2 items → 3 items"]
    assert diff_resolved(old, old) == []
    assert diff_resolved({"x": 1.0}, {"x": 1.00001}, rtol=1e-4) == []


def test_init_writes_a_valid_commented_plan():
    result = run("init", "--flops", "1e22", "--gpus", "64", "--name", "tiny")
    assert result.exit_code == 0, result.output
    spec = load_plan_text(result.stdout)
    assert spec.budget.flops == 1e22 and spec.cluster.gpus == 64 and spec.name == "tiny"
    assert result.stdout.count("\n  # ") > 40  # every key with its help text
    fixed = run("init", "--model", "llama-3.1-8b", "--tokens", "1T", "--gpus", "64")
    assert fixed.exit_code == 0 and load_plan_text(fixed.stdout).budget.tokens == 1e12
    bad = run("init", "--tokens", "1T")
    assert bad.exit_code == 2 and "--tokens" in bad.stderr


def _plan_text(tmp_path: Path, name: str, text: str):
    """`runplan plan` on a plan file written from ``text``."""
    path = tmp_path / name
    path.write_text(text)
    return run("plan", str(path))


def test_objective_that_contradicts_a_fixed_model_is_bad_input(tmp_path):
    result = _plan_text(
        tmp_path,
        "p.yaml",
        "schema_version: 1\nmodel: llama-3.1-8b\nobjective:\n  kind: compute_optimal\n"
        "budget:\n  tokens: 1T\ncluster:\n  gpus: 64\n",
    )
    assert result.exit_code == 2
    assert "p.yaml:4: objective.kind:" in result.stderr


def test_budget_tokens_needs_a_fixed_model(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("schema_version: 1\nbudget:\n  tokens: 1T\ncluster:\n  gpus: 64\n")
    result = run("plan", str(path))
    assert result.exit_code == 2
    assert "p.yaml:3: budget.tokens: budget.tokens needs a fixed model" in result.stderr


def test_allocate_and_parallelize_read_the_same_plan_file():
    path = str(EXAMPLES_DIR / "70b-512-h100.yaml")
    plan = build_plan(load_plan(path), EXAMPLES_DIR)
    allocated = run("allocate", path, "--json")
    assert allocated.exit_code == 0, allocated.output
    data = json.loads(allocated.stdout)
    assert data["params"] == plan.allocation.params and data["tokens"] == plan.allocation.tokens
    assert data["gpus"] == 512 and data["cost_usd"] > 0
    laid_out = run("parallelize", path, "--json")
    assert laid_out.exit_code == 0, laid_out.output
    best = json.loads(laid_out.stdout)["layouts"][0]
    assert (best["tp"], best["pp"], best["dp"], best["step_seconds"]) == (
        plan.layout.best.tp,
        plan.layout.best.pp,
        plan.layout.best.dp,
        plan.layout.best.step_seconds,
    )
    pinned = json.loads(run("parallelize", path, "--tp", "4", "--pp", "4", "--json").stdout)["layouts"]
    assert {(x["tp"], x["pp"]) for x in pinned} == {(4, 4)}


@pytest.mark.parametrize(("gpu", "overlap", "sp", "warned"), [
    ("a100-80gb", "true", "true", True), ("a100-80gb", "false", "true", False),
    ("h100-sxm", "true", "true", False),
    ("a100-80gb", "true", "false", False),  # no SP: the time model overlaps nothing (timing, TP)
])  # fmt: skip
def test_tp_overlap_on_ampere_is_warned_as_an_assumption(tmp_path, gpu, overlap, sp, warned):
    """TransformerEngine's TP comm overlap needs CUDA multicast (sm90) unless UB_SKIPMC=1: on A100 the plan's
    time assumes an overlap the engine runs only on a slower path, and the Megatron export leaves it out. Only
    where the time model overlaps at all: with sequence parallelism, TP inside a node."""
    path = tmp_path / "p.yaml"
    path.write_text(
        "schema_version: 1\nname: p\nbudget: {flops: 1.3e23}\ntraining: {seq_len: 4096}\n"
        f"cluster: {{gpu: {gpu}, gpus: 256}}\nstack: {{tp_comm_overlap: {overlap}}}\n"
        f"parallel: {{tp: 4, sequence_parallel: {sp}}}\n"
    )
    plan = build_plan(load_plan(path), tmp_path)
    assert plan.layout.best.tp > 1
    found = [w for w in plan.warnings if "TP communication overlap" in w]
    assert bool(found) is warned
    if warned:
        assert "UB_SKIPMC=1" in found[0] and "stack.tp_comm_overlap: false" in found[0]


def _pinned_a100_days_plan(tmp_path, vpp: int, objective: str = "") -> Path:
    path = tmp_path / "pinned.yaml"
    path.write_text(
        "schema_version: 1\nname: pinned\nbudget: {days: 30}\ntraining: {seq_len: 4096}\n"
        "cluster: {gpu: a100-80gb, gpus: 256}\n"
        f"parallel: {{tp: 8, pp: 2, vpp: {vpp}, zero: 1, micro_batch: 1, recompute: selective}}\n" + objective
    )
    return path


def test_a_pin_that_rules_out_the_larger_sizes_fills_the_days_with_tokens_and_says_why(tmp_path):
    """vpp 3 divides the first guess's 36 layers (18 per stage) but not the 64 of the next size: the plan kept
    the first, which filled 19.8 of the 30 days on the law's D. The fill now steps back from the infeasible size
    to a feasible one between (60 layers, 30 per stage), trains it on the tokens that fill the days, and says
    that a larger size is infeasible and how far D is from the law's."""
    plan = build_plan(load_plan(_pinned_a100_days_plan(tmp_path, 3)), tmp_path)
    assert plan.layout.best.vpp == 3 and plan.model.shape.n_layers == 60
    assert 30 * 0.99 <= plan.cost.main.wall_clock_days <= 30
    a = plan.allocation
    assert a.law_tokens is not None and 1.0 < a.tokens / a.law_tokens < 1.1
    (warning,) = [w for w in plan.warnings if w.startswith("budget:")]
    assert warning.startswith("budget: a larger size is infeasible (vpp=3 does not divide")
    assert f", so the model the budget sized is trained on {a.tokens / 1e9:.4g} B tokens, " in warning
    assert "beyond the law's D for this size" in warning and warning.endswith("to use the budget's 30 days")


def test_a_pin_that_rules_out_the_larger_sizes_says_why_a_fixed_ratio_does_not_fill(tmp_path):
    """tokens_per_param keeps D = r·N (it does not fill by tokens): the plan fills 20.1 of the 30 days and says
    that a larger size is infeasible, not that no size fills the days within 1%."""
    ratio = "objective: {kind: tokens_per_param, tokens_per_param: 20}\n"
    plan = build_plan(load_plan(_pinned_a100_days_plan(tmp_path, 3, ratio)), tmp_path)
    assert plan.allocation.tokens == pytest.approx(20 * plan.allocation.params)
    (warning,) = [w for w in plan.warnings if w.startswith("budget:")]
    assert (
        "fills 20.1 of the budget's 30 days: a larger size is infeasible (vpp=3 does not divide the 20 layers"
        in warning
    )
    assert "vpp=3 does not divide" in warning


def _tiny_tp8_plan(tmp_path, objective: str = "", days: float = 0.04) -> RunPlan:
    path = tmp_path / "tiny.yaml"
    path.write_text(
        f"schema_version: 1\nname: t\nbudget: {{days: {days}}}\ncluster: {{gpu: h100-sxm, gpus: 64}}\nparallel: {{tp: 8}}\n"
        + objective
    )
    return build_plan(load_plan(path), tmp_path)


def test_a_budget_no_size_fits_is_infeasible_and_names_the_days_that_would_fit(tmp_path):
    """0.03 days on 64 H100 with tp 8 and a fixed D/N (tokens_per_param fills by size alone): the smallest size
    tp 8 can split is 489.2 M (0.0381 days) and the next smaller one has 14 heads, which tp 8 cannot split. No
    plan fits the budget: infeasible (exit 1), naming the budget's key, the days the smallest plan takes and the
    pin that stopped a smaller size (it was a plan exiting 0 with an overrun warning, where a FLOPs budget that
    small exits 1). At 0.04 days the 489.2 M model fits (test_a_budget_a_smaller_shape_fits_is_planned_on_it_not_
    refused.py); the fill's first steps overran with 545.8 M before the fill stepped by the days' slope."""
    from runplan.plan import BudgetTooSmall

    with pytest.raises(BudgetTooSmall) as refused:
        _tiny_tp8_plan(tmp_path, "objective: {kind: tokens_per_param, tokens_per_param: 20}\n", days=0.03)
    text = str(refused.value)
    assert text.startswith("budget.days: 0.03 days cannot hold the smallest plan: 489.2 M parameters on ")
    assert (
        "take 0.0381 days, and a smaller size is infeasible (tp=8 does not divide the 14 heads and 14 KV"
        in text
    )
    assert "to make it feasible: raise budget.days to at least 0.0381; pin one of 1, 2, 7, 14" in text
    # every command that fills the file's days refuses alike, naming the plan key (not allocate's --days flag)
    for command in ("plan", "allocate", "parallelize"):
        result = CliRunner().invoke(app, [command, str(tmp_path / "tiny.yaml")])
        out = " ".join(result.output.split())
        assert result.exit_code == 1, (command, out)
        assert "budget.days: 0.03 days cannot hold" in out and "raise budget.days to at least 0.0381" in out


def test_the_budget_row_of_a_plan_over_its_days_says_it_overruns(tmp_path):
    """A budget row whose rate is above the layout's MFU and whose plan ends after the days says the plan
    overruns (a fill may end up to FILL_RTOL over); within the days it names another reason."""
    from runplan.report.sections import _budget_why

    plan = _tiny_tp8_plan(tmp_path)
    over = plan.allocation.model_copy(
        update={"mfu": plan.layout.best.mfu * 1.1, "days": plan.cost.main.wall_clock_days * 0.995}
    )
    why = _budget_why(plan.model_copy(update={"allocation": over}))
    assert f"above the layout's MFU {plan.layout.best.mfu:.1%}: the plan overruns its days" in why


def test_a_size_that_cannot_shrink_ends_within_the_days_on_fewer_tokens(tmp_path):
    """The same budget, compute-optimal: the size that overruns trains on fewer tokens than the law's D, ends within
    the 0.04 days, and the warning says why; the budget row does not say it overruns."""
    from runplan.report.sections import plan_sections

    plan = _tiny_tp8_plan(tmp_path)
    assert 0.04 * 0.99 <= plan.cost.main.wall_clock_days <= 0.04
    (warning,) = [w for w in plan.warnings if w.startswith("budget:")]
    assert warning.startswith(
        "budget: a smaller size is infeasible (tp=8 does not divide the 14 heads and 14 KV heads)"
    )
    assert "short of the law's D for this size" in warning and warning.endswith(
        "to end within the budget's 0.04 days"
    )
    why = {row[0]: row for section in plan_sections(plan) for row in section.rows}["budget"][2]
    assert "the plan overruns its days" not in why


def test_flags_can_still_replace_a_plan_file_s_infeasible_pins(tmp_path):
    """A days budget pinned to tp 16 on 8-GPU nodes is infeasible as written; `parallelize FILE --tp 2` lays
    another pin over it and `allocate FILE` answers from the budget's own conversion (both did before the fill
    was shared, and the docs say flags are laid over the plan's)."""
    path = tmp_path / "bad.yaml"
    path.write_text(
        "schema_version: 1\nname: t\nbudget: {days: 3}\ncluster: {gpu: h100-sxm, gpus: 256}\n"
        "parallel: {tp: 16}\n"
    )
    assert run("plan", str(path)).exit_code == 1
    laid = run("parallelize", str(path), "--tp", "2", "--json")
    assert laid.exit_code == 0, laid.output
    assert {x["tp"] for x in json.loads(laid.stdout)["layouts"]} == {2}
    assert run("allocate", str(path)).exit_code == 0


def test_a_pin_the_budget_s_model_cannot_take_names_that_model(tmp_path):
    result = run("plan", str(_pinned_a100_days_plan(tmp_path, 5)))
    assert result.exit_code == 1, result.output
    text = " ".join(result.stderr.split())
    assert (
        "vpp=5 does not divide the 18 layers of a stage at pp=2 (the model the budget sizes: 36 layers × "
        in text
    )
    assert "or fix the model with 'model: <preset or size>' and pin for it" in text


def test_a_days_budget_sizes_one_model_in_allocate_parallelize_and_plan(tmp_path):
    """A GPU-time budget is filled at the chosen layout's predicted speed (plan.build_plan), not converted at
    budget.mfu: allocate and parallelize on the file gave 26.7 B while plan gave 33.6 B (256 A100, 30 days)."""
    path = tmp_path / "a100.yaml"
    path.write_text(
        "schema_version: 1\nname: a100-30d\nbudget: {days: 30}\ntraining: {seq_len: 4096}\n"
        "cluster: {gpu: a100-80gb, gpus: 256, price_per_gpu_hour: 1.5}\n"
    )
    plan = build_plan(load_plan(path), tmp_path)
    assert plan.allocation.days == 30 and plan.allocation.mfu is not None and plan.allocation.mfu > 0.5
    # the budget row gives both rates: C's share of the peak, and the layout's higher MFU (attention FLOPs)
    from runplan.report.sections import plan_sections

    rows = {row[0]: row for section in plan_sections(plan) for row in section.rows}
    assert f"× {plan.allocation.mfu:.1%} × days" in rows["budget"][2]
    assert f"below the layout's MFU {plan.layout.best.mfu:.1%}" in rows["budget"][2]
    assert plan.allocation.mfu < plan.layout.best.mfu
    allocated = run("allocate", str(path), "--json")
    assert allocated.exit_code == 0, allocated.output
    data = json.loads(allocated.stdout)
    assert data["params"] == plan.allocation.params and data["tokens"] == plan.allocation.tokens
    assert data["days"] == pytest.approx(30.0, rel=1e-9)
    text = run("allocate", str(path)).stdout
    assert "sized as `runplan plan` sizes it" in " ".join(text.split())
    # the model is trained on the tokens that fill the days, in plan and in allocate alike
    assert plan.allocation.law_tokens is not None and data["law_tokens"] == plan.allocation.law_tokens
    assert f"trained on {plan.allocation.tokens / 1e9:.4g} B tokens, " in " ".join(text.split())
    assert plan.schedule.training_tokens == plan.allocation.tokens
    laid_out = run("parallelize", str(path), "--json")
    assert laid_out.exit_code == 0, laid_out.output
    best = json.loads(laid_out.stdout)["layouts"][0]  # the same model: the same best layout and step time
    assert (best["tp"], best["pp"], best["dp"]) == (
        plan.layout.best.tp,
        plan.layout.best.pp,
        plan.layout.best.dp,
    )
    assert best["step_seconds"] == plan.layout.best.step_seconds


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["allocate", "PLAN", "--flops", "1e22"], "--flops"),
        (["parallelize", "PLAN", "--gpus", "64"], "--gpus"),
    ],
)
def test_plan_file_and_input_flags_conflict(args, flag):
    args = [str(EXAMPLES_DIR / "70b-512-h100.yaml") if a == "PLAN" else a for a in args]
    result = run(*args)
    assert result.exit_code == 2
    assert f"{flag}: {flag} and a plan file both set the inputs" in result.stderr


def test_checkpoint_interval_is_daly_for_the_printed_delta_and_m(planned):
    """The interval equals Daly (2006) for the δ and M the plan prints, rounded to whole steps."""
    _, plan = planned
    c, step = plan.checkpointing, plan.layout.best.step_seconds
    delta, mtbf = c.save_blocking_seconds, c.job_mtbf_seconds
    x = delta / (2 * mtbf)
    daly = math.sqrt(2 * delta * mtbf) * (1 + math.sqrt(x) / 3 + x / 9) - delta if delta < 2 * mtbf else mtbf
    assert c.daly_interval_seconds == pytest.approx(daly, rel=1e-9)
    assert c.interval_steps == max(1, round(daly / step)) or "raised" in c.notes["interval_steps"]


def test_goodput_is_the_exact_renewal_formula_for_the_printed_numbers(planned):
    """Σ over segments of E[T] = M·e^{R/M}·(e^{(τ+δ)/M} − 1), last segment shorter; goodput = W / Σ E[T]."""
    _, plan = planned
    r = plan.reliability
    m, big_r, delta, tau, work = (
        r.job_mtbf_seconds,
        r.restart_seconds,
        r.save_blocking_seconds,
        r.interval_seconds,
        r.useful_seconds,
    )
    full, rest = divmod(work, tau)
    if rest < 1e-9 * work:  # τ comes from whole steps, so W/τ can be whole up to rounding: no last segment
        rest = 0.0
    elif tau - rest < 1e-9 * work:
        full, rest = full + 1, 0.0

    def segment(w):
        return m * math.exp(big_r / m) * math.expm1((w + delta) / m)

    elapsed = full * segment(tau) + (segment(rest) if rest > 0 else 0.0)
    assert r.expected_elapsed_seconds == pytest.approx(elapsed, rel=1e-6)
    assert r.goodput == pytest.approx(work / elapsed, rel=1e-6)


@pytest.mark.parametrize(
    "args",
    [
        ["allocate", "--flops", "2e23", "--gpus", "1024", "--price-per-gpu-hour", "2"],
        ["allocate", "--flops", "2e23", "--tokens-per-param", "1e6"],
        ["allocate", "--flops", "2e23", "--inference-tokens", "1e13"],
        ["parallelize", "--model", "mixtral-8x7b", "--gpus", "64", "--training-tokens", "1T"],
        ["sweep", "--flops", "2e23", "--budgets", "3", "--wsd", "--gpu", "h100-sxm"],
        ["fit", str(EXAMPLES_DIR / "isoflop_synthetic.csv"), "--bootstrap", "5"],
    ],
    ids=["allocate", "allocate-ratio", "allocate-inference", "parallelize", "sweep", "fit"],
)
def test_terminal_output_has_no_nan_inf_or_negative_times(args):
    """Numbers printed to users never read nan or inf, and no duration is negative."""
    result = run(*args)
    assert result.exit_code == 0, result.stderr
    text = result.stdout + result.stderr
    assert not BAD_TOKENS.search(text.replace("inference", "")), text
    assert not re.search(r"-\d[\d.,]*\s*(s|ms|days?|hours?|GPU-h)\b", text), text


def test_check_json_reports_status_and_changes(tmp_path):
    resolved = tmp_path / "r.yaml"
    assert (
        run("plan", str(EXAMPLES_DIR / "moe-mixtral-8x7b.yaml"), "-f", "yaml", "-o", str(resolved)).exit_code
        == 0
    )
    ok = run("check", str(resolved), "--json")
    assert ok.exit_code == 0 and json.loads(ok.stdout)["status"] == "ok"
    document = yaml.safe_load(resolved.read_text())
    document["cluster"]["price_per_gpu_hour"] = 4.0
    resolved.write_text(yaml.safe_dump(document, sort_keys=False))
    drift = run("check", str(resolved), "--json")
    assert drift.exit_code == 1
    data = json.loads(drift.stdout)
    assert data["status"] == "drift" and any(c["path"] == "cost.main.cost" for c in data["changes"])


def test_fmt_value_reads_units_from_field_names():
    from runplan.report.format import fmt_value

    assert fmt_value("written_bytes_per_rank", 1.929e9) == "1.93 GB"
    assert fmt_value("bytes_per_param", 14.0001) == "14 B/param"
    assert fmt_value("save_blocking_seconds", 2.039) == "2.039 s"
    assert fmt_value("job_mtbf_seconds", 356323) == "4.12 days"
    assert fmt_value("goodput", 0.995) == "99.5%"
    assert fmt_value("total_params", 70553706496) == "70.55 B"
    assert fmt_value("billed_gpu_hours", 491679.4) == "491,679"
    assert fmt_value("failures_per_1000_node_days", 3.7887) == "3.79"
    assert fmt_value("canary_overhead_fraction", 0.00064) == "0.064%"


def test_memory_plot_labels_tell_every_ranked_layout_apart():
    from runplan.cli.common import plan_from_file
    from runplan.report.plots import layout_label

    plan = plan_from_file(str(Path(__file__).resolve().parents[1] / "examples" / "70b-512-h100.yaml"))[2]
    layouts = [plan.layout.best, *plan.layout.runners_up]
    labels = [layout_label(x, chosen=i == 0) for i, x in enumerate(layouts)]
    assert len(set(labels)) == len(labels)  # no two bars share a position
    assert all(
        f"CP{x.cp}" in label and f"v{x.vpp}" in label for x, label in zip(layouts, labels, strict=True)
    )
    assert labels[0].endswith("(chosen)")


def test_the_batch_constraints_bound_the_batch_the_plan_aims_for(tmp_path):
    text = (EXAMPLES_DIR / "70b-512-h100.yaml").read_text()
    # a floor above the law's batch (and the critical batch): the plan aims at the floor and warns
    floor = tmp_path / "floor.yaml"
    floor.write_text(text.replace("constraints:\n", "constraints:\n  min_global_batch_tokens: 1e8\n"))
    planned = build_plan(load_plan(floor), tmp_path)
    assert planned.layout.target_global_batch_tokens == 1e8
    assert planned.layout.best.global_batch_tokens >= 1e8
    assert any("critical batch" in w for w in planned.warnings)
    # a stated batch outside the stated range is a contradiction in the file: exit 2 at the batch's key
    clash = tmp_path / "clash.yaml"
    clash.write_text(
        text.replace("constraints:\n", "constraints:\n  min_global_batch_tokens: 1e7\n")
        + "schedule:\n  global_batch_tokens: 4M\n"
    )
    result = run("plan", str(clash))
    assert result.exit_code == 2 and "schedule.global_batch_tokens" in result.stderr, result.stderr
    assert "clash.yaml:" in result.stderr


def test_a_run_longer_than_a_year_is_flagged(tmp_path):
    text = run("init", "--model", "8b", "--tokens", "1T", "--gpus", "8", "--seq-len", "128k").stdout
    path = tmp_path / "long.yaml"
    path.write_text(text)
    planned = build_plan(load_plan(path), tmp_path)
    days = planned.reliability.effective_days
    assert days > 365 and any(w.startswith(f"time: the run takes {days:,.0f} days") for w in planned.warnings)
    # the shipped examples all finish within a year and say nothing
    assert not any(w.startswith("time:") for w in build_plan(load_plan(EXAMPLES[0]), EXAMPLES_DIR).warnings)


def test_the_batch_note_says_where_the_batch_came_from():
    plan70 = build_plan(load_plan(EXAMPLES_DIR / "70b-512-h100.yaml"), EXAMPLES_DIR)  # no schedule batch set
    note = plan70.schedule.notes["target_batch_tokens"]
    best = plan70.layout.best
    assert "plan file" not in note and f"{best.dp}·{best.micro_batch}·{best.microbatches}·4096" in note
    assert "DeepSeek B_opt" in note
    plan405 = build_plan(load_plan(EXAMPLES_DIR / "405b-16k-h100-8k.yaml"), EXAMPLES_DIR)  # sets 16M
    assert (
        "aimed at 16 M tokens: plan file schedule.global_batch_tokens"
        in plan405.schedule.notes["target_batch_tokens"]
    )


def test_mfu_says_what_it_reads_under_the_other_flop_counts():
    plan = build_plan(load_plan(EXAMPLES_DIR / "405b-16k-h100-8k.yaml"), EXAMPLES_DIR)
    shape, best = plan.model.shape, plan.layout.best
    # hand-derived: 405B at 8,192 tokens: 6N = 6 x matmul weights per token; attention 6·L·s·a·(d_qk + d_v)
    dense = 6 * shape.matmul_params_per_token()
    attention = 6 * shape.n_layers * 8192 * shape.n_heads * (shape.qk_dim + shape.value_dim)
    assert plan.model.flops_per_token == pytest.approx(dense + attention, rel=1e-12)
    rows = {row[0]: row for section in plan_sections(plan) for row in section.rows}
    reason = rows["MFU"][2]
    causal = best.mfu * (dense + attention / 2) / (dense + attention)
    assert (
        f"causal attention {causal:.1%}" in reason
        and f"6N alone {best.mfu * dense / (dense + attention):.1%}" in reason
    )
    # N is named: the summary's parameter count (405.9 B) is not the 6N count (matmul weights per token)
    active = plan.model.active_params
    assert f"(N = {fmt_count(shape.matmul_params_per_token())} matmul parameters per token; " in reason
    assert f"{best.mfu * 6 * active / (dense + attention):.1%} with the {fmt_count(active)} active" in reason


def test_a_batch_floor_above_the_training_tokens_is_refused_at_its_key(tmp_path):
    result = _plan_text(
        tmp_path,
        "tiny.yaml",
        "schema_version: 1\nmodel: llama-3.1-8b\nbudget: {tokens: 3M}\ncluster: {gpus: 8}\n"
        "constraints: {min_global_batch_tokens: 8M}\n",
    )
    assert result.exit_code == 2 and "tiny.yaml:5: constraints.min_global_batch_tokens" in result.stderr, (
        result.stderr
    )


def test_parallelize_lays_the_batch_flags_over_a_plan_file_before_aiming_the_batch():
    # the plan aims at ~21.5M tokens; --max-batch 4M must move the aim, not leave an empty range
    result = run("parallelize", str(EXAMPLES_DIR / "70b-512-h100.yaml"), "--max-batch", "4M", "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["layouts"][0]["global_batch_tokens"] <= 4e6


def test_the_plan_names_its_calibration_and_warns_when_it_lacks_the_gpu(tmp_path):
    data = yaml.safe_load((EXAMPLES_DIR.parent / "configs" / "calibration.yaml").read_text())
    del data["families"]["ampere"]
    cal = tmp_path / "hopper-only.yaml"
    cal.write_text(yaml.safe_dump(data))
    a100 = tmp_path / "a100.yaml"
    a100.write_text(
        (EXAMPLES_DIR / "70b-512-h100.yaml").read_text().replace("gpu: h100-sxm", "gpu: a100-80gb")
    )
    result = run("plan", str(a100), "--calibration", str(cal))
    assert result.exit_code == 0, result.stderr
    assert "predictions from" in result.stdout and "has no ampere runs" in result.stdout
    plan = build_plan(load_plan(a100).model_copy(update={"calibration": str(cal)}), tmp_path)
    assert any(w.startswith("calibration:") and "has no ampere runs" in w for w in plan.warnings)
    # on its own family (the H100 example with the same Hopper-only file), no such warning
    h100 = load_plan(EXAMPLES_DIR / "70b-512-h100.yaml").model_copy(update={"calibration": str(cal)})
    own = build_plan(h100, tmp_path)
    assert own.layout.calibration.startswith(str(cal)) and not any(
        w.startswith("calibration:") for w in own.warnings
    )


def test_a_set_batch_the_layout_does_not_run_exactly_is_flagged():
    # the 405B example sets 16M (16,000,000) tokens: 1,953.125 sequences of 8,192, so the layout runs 2,048
    plan = build_plan(load_plan(EXAMPLES_DIR / "405b-16k-h100-8k.yaml"), EXAMPLES_DIR)
    (warning,) = [w for w in plan.warnings if w.startswith("batch: the layout runs")]
    assert f"{plan.layout.best.global_batch_tokens:,} tokens per step, +4.9% from the 16,000,000" in warning
    assert "1953.125 sequences of 8,192 tokens, so no layout runs it exactly" in warning
    # a batch the plan aims at by law is not the user's: no such warning
    assert not any(
        w.startswith("batch: the layout runs")
        for w in build_plan(load_plan(EXAMPLES[0]), EXAMPLES_DIR).warnings
    )


def test_a_set_batch_that_does_not_divide_by_dp_says_so(tmp_path):
    # 16,388,096 tokens = 4,001 sequences of 4,096: a whole number, but not a multiple of the layout's DP
    path = tmp_path / "odd.yaml"
    path.write_text(
        (EXAMPLES_DIR / "70b-512-h100.yaml").read_text() + "schedule:\n  global_batch_tokens: 16388096\n"
    )
    plan = build_plan(load_plan(path), tmp_path)
    (warning,) = [w for w in plan.warnings if w.startswith("batch: the layout runs")]
    assert f"its 4,001 sequences do not divide by this layout's DP {plan.layout.best.dp}" in warning
    assert "pin parallel.micro_batch" not in warning


def test_the_searchs_cautions_reach_the_plan(tmp_path):
    # the 128k example on torchtitan's stack picks a CP layout: the plan carries the search's CP caution; the
    # example as shipped (default stack, bf16) carries none of the search's cautions
    example = (EXAMPLES_DIR / "405b-16k-h100-128k.yaml").read_text()
    path = tmp_path / "tt.yaml"
    path.write_text(example.replace("cluster:", "stack: torchtitan-fsdp2\ncluster:", 1))
    planned = build_plan(load_plan(path), tmp_path)
    assert planned.layout.best.cp > 1
    assert any(w.startswith("layout: context parallelism on torchtitan") for w in planned.warnings)
    shipped = build_plan(load_plan(EXAMPLES_DIR / "405b-16k-h100-128k.yaml"), EXAMPLES_DIR)
    assert not any(w.startswith("layout:") for w in shipped.warnings)


def test_summary_ratio_is_per_parameter_of_the_model_trained():
    """A generated shape misses the law's N (7B asked, 7.158 B built): the summary's tokens per parameter is
    D over the shape's count (4.762e12 / 7.158e9 = 665), not the allocation's D / 7e9 = 680."""
    from runplan.report.sections import summary_lines

    plan = build_plan(load_plan(EXAMPLES_DIR / "2e23-7b-overtrained.yaml"), EXAMPLES_DIR)
    assert plan.allocation.params == 7e9 and plan.model.total_params == 7_157_813_248
    first = summary_lines(plan)[0]
    assert "7.158 B parameters" in first and "(665/param)" in first


def test_summary_steps_name_the_batch_ramp_apart():
    """With a batch ramp, "65,003 steps at 5.505 M tokens" reads as 357.8 B tokens where the run trains 352 B:
    the ramp's steps run at a smaller batch, so the summary names them apart and steps × batch of the main
    stage plus the ramp's tokens is D."""
    from runplan.report.sections import summary_lines

    plan = build_plan(load_plan(EXAMPLES_DIR / "2e23-7b-overtrained.yaml"), EXAMPLES_DIR)
    *ramp, main = plan.schedule.batch_stages
    assert ramp, "the example plans a batch ramp"
    ramp_steps = sum(stage.steps for stage in ramp)
    line = summary_lines(plan)[2]
    assert line.startswith(
        f"{plan.schedule.total_steps:,} steps: {ramp_steps:,} in the batch ramp, then {main.steps:,} at "
    )
    flat = plan.model_copy(
        update={
            "schedule": plan.schedule.model_copy(update={"batch_stages": [main], "total_steps": main.steps})
        }
    )
    assert summary_lines(flat)[2].startswith(f"{main.steps:,} steps at ")


def test_summary_names_the_law_s_count_when_it_is_not_the_one_printed():
    """Krajewski's MoE law counts active non-embedding parameters (12.62 B for Mixtral): 2e12 / 12.62e9 = 159
    per parameter, which a reader could not get from the 12.88 B active printed beside it (155)."""
    from runplan.report.sections import summary_lines

    plan = build_plan(load_plan(EXAMPLES_DIR / "moe-mixtral-8x7b.yaml"), EXAMPLES_DIR)
    assert plan.model.law_params == pytest.approx(12.62e9, rel=1e-3)
    first = summary_lines(plan)[0]
    assert "(12.88 B active)" in first and "(159/param of the law's N 12.62 B)" in first


def test_summary_ratio_below_one_token_per_parameter_is_not_zero():
    """A budget too small for a fixed 671 B MoE (2.5 M tokens on 35.7 B law parameters) printed "(0/param ...)"."""
    from types import SimpleNamespace

    from runplan.report.sections import _per_param

    m = SimpleNamespace(law_params=35.7e9, total_params=671e9, active_params=37.55e9)
    assert _per_param(2.475e6, m) == "6.9e-05/param of the law's N 35.7 B"
    assert _per_param(5.56e12, m) == "156/param of the law's N 35.7 B"


def test_summary_layout_reads_as_whatif_prints_it(tmp_path):
    """The summary said "TP2 PP1 DP128 EP2 CP4" where `whatif` and `parallelize` say "... CP4 EP2"."""
    from runplan.cli.compare import _record
    from runplan.report.sections import summary_lines

    path = tmp_path / "p.yaml"
    path.write_text(
        "schema_version: 1\nname: m\nmodel: mixtral-8x7b\nbudget: {tokens: 1T}\ntraining: {seq_len: 32k}\n"
        "cluster: {gpu: h100-sxm, gpus: 256}\nparallel: {tp: 2, pp: 1, cp: 2, ep: 8, zero: 1}\n"
    )
    plan = build_plan(load_plan(path), tmp_path)
    assert " CP2 EP8 ZeRO-1 " in summary_lines(plan)[1]
    assert _record(256, plan)["layout"] == "TP2 PP1 DP64 CP2 EP8 ZeRO-1"


def test_architecture_of_an_mla_model_names_its_latent_attention():
    """DeepSeek-V3 printed "128 / 128 × 128, multi-head attention": its queries and keys are 192 wide (128 + 64
    rope), values 128, through a 512-wide KV latent (DeepSeek-V2 §2.1), which the FLOP count uses."""
    from runplan.catalog import load_catalog
    from runplan.report.sections import _attention_row

    _, value, why = _attention_row(load_catalog([]).model("deepseek-v3"))
    assert value == "128 × 192 (128 + 64 rope), 128"
    assert "multi-head latent attention" in why and "KV rank 512" in why and "q rank 1,536" in why
    dense = _attention_row(load_catalog([]).model("llama-3.1-70b"))
    assert dense == ("heads / KV heads × head dim", "64 / 8 × 128", "GQA groups")


@pytest.mark.parametrize(("params", "code"), [("13b", 2), ("7b", 0), ("7.5b", 0)])
def test_objective_params_beside_a_model_must_agree(tmp_path, params, code):
    """model: 7b (7.158 B) with objective.params 13b asks for two sizes: refused at the key, not silently
    dropped; the same size said twice (7b, or 7.5b within 10%) is accepted."""
    path = tmp_path / "p.yaml"
    path.write_text(
        "schema_version: 1\nname: c\nmodel: 7b\nbudget: {flops: 2e23}\n"
        f"objective: {{kind: fixed_params, params: {params}}}\ncluster: {{gpu: h100-sxm, gpus: 512}}\n"
    )
    result = CliRunner().invoke(app, ["allocate", str(path)])
    assert result.exit_code == code, result.output
    if code:
        assert "p.yaml:5: objective.params: 1.3e+10 parameters, but model: has 7.158e+09" in result.stderr


def test_a_learned_position_table_shorter_than_the_sequence_is_warned(tmp_path):
    """GPT-3 175B has 2,048 learned positions (Brown et al. 2020, Table 2.1: n_ctx 2048); at 4,096 the table
    must grow by 2,048 × 12,288 = 25,165,824 parameters: the plan and the Megatron export say so."""
    path = tmp_path / "p.yaml"
    path.write_text(
        "schema_version: 1\nname: g\nmodel: gpt-3-175b\nbudget: {flops: 3e23}\ntraining: {seq_len: 4096}\n"
        "cluster: {gpu: a100-80gb, gpus: 1024}\n"
    )
    plan = build_plan(load_plan(path), tmp_path)
    assert any("+25,165,824 parameters" in w and w.startswith("model: 2,048 learned") for w in plan.warnings)
    result = CliRunner().invoke(app, ["export", str(path), "--to", "megatron"])
    assert result.exit_code == 0 and "the model has 2,048 rows, Megatron builds 4,096" in " ".join(
        result.stderr.split()
    )
    path.write_text(path.read_text().replace("4096", "2048"))
    assert not any("learned" in w for w in build_plan(load_plan(path), tmp_path).warnings)


def test_a_one_gpu_summary_says_gpu_and_keeps_small_energy(tmp_path):
    """125M on one H100 for 2.5B tokens: "1 GPU", and about a kWh of energy as 0.0011 MWh, not "0 MWh"."""
    from runplan.report.sections import summary_lines

    path = tmp_path / "tiny.yaml"
    path.write_text(
        "schema_version: 1\nname: tiny\nmodel: 125m\nbudget: {tokens: 2.5B}\ntraining: {seq_len: 2048}\n"
        "cluster: {gpu: h100-sxm, gpus: 1}\n"
    )
    plan = build_plan(load_plan(path), tmp_path)
    line = summary_lines(plan)[3]
    assert " on 1 GPU (goodput" in line and " 0 MWh" not in line
    assert f"{plan.cost.main.energy_mwh:.2g} MWh" in line
    # Young/Daly gives 22,746 steps between saves on this 11,472-step run: one save, at the end
    assert plan.checkpointing.interval_steps > plan.schedule.total_steps
    assert "checkpoint at the end only (the optimal interval, " in summary_lines(plan)[2]


def test_memory_and_time_tables_explain_every_row():
    """Each memory and time term of the layout section says what it counts in one line (its field's
    description), so a reader of 'gradients 35.3 GB' learns it is the fp32/bf16 buffer sharded from ZeRO-2."""
    from runplan.report.sections import plan_sections

    plan = build_plan(load_plan(EXAMPLES_DIR / "70b-512-h100.yaml"), EXAMPLES_DIR)
    tables = {t.title.split(",")[0]: t for s in plan_sections(plan) for t in s.tables if t.title}
    memory, time = tables["Memory per GPU"], tables["Step time"]
    assert memory.headers == ["part", "bytes", "what it counts"]
    assert time.headers == ["part", "time", "what it counts"]
    why = {row[0]: row[2] for row in [*memory.rows, *time.rows]}
    assert why["gradients"] == "Gradient buffer (fp32 or bf16; sharded from ZeRO-2)"
    assert why["bubble"] == "Pipeline fill and drain: (p-1)/v micro-batch times"
    assert all(row[2] for row in [*memory.rows, *time.rows])


def test_a_fixed_model_echoes_the_objective_it_was_allocated_with(tmp_path):
    """model: 7b without an objective is allocated as fixed_params; the plan's inputs echoed the default
    compute_optimal beside an allocation that says fixed_params. An objective the file gives is echoed as is."""
    path = tmp_path / "m.yaml"
    path.write_text(
        "schema_version: 1\nname: m\nmodel: 7b\nbudget: {days: 14}\ncluster: {gpu: a100-80gb, gpus: 64}\n"
    )
    plan = build_plan(load_plan(path), tmp_path)
    assert (
        plan.inputs["objective"] == {"kind": "fixed_params"} and plan.allocation.objective == "fixed_params"
    )
    path.write_text(path.read_text().replace("model: 7b\n", ""))
    assert build_plan(load_plan(path), tmp_path).inputs["objective"]["kind"] == "compute_optimal"
