"""README.md and docs/ say what the program does today: numbers quoted from a run, field lists that claim to be
complete, and docs/design.md's recipes for adding a layout field, a command and a module.

Each test reads the doc it guards and checks it against the program, so either drifting alone fails here
(tests/test_docs_agree.py holds the older checks of the same kind).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from runplan.cli.app import app

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"


def flat(path: Path) -> str:
    """The doc's text with every run of whitespace as one space (sentences wrap across lines)."""
    return " ".join(path.read_text().split())


def invoke(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, f"runplan {' '.join(args)}: exit {result.exit_code}\n{result.output}"
    return result.stdout


def section(text: str, heading: str) -> str:
    """The Markdown section under ``heading`` up to the next heading of any level."""
    start = text.index(heading) + len(heading)
    following = re.search(r"\n#+ ", text[start:])
    return text[start : start + following.start()] if following else text[start:]


# --- numbers quoted from a run ------------------------------------------------------------------------------


def test_scaling_md_sardana_intervals_are_what_fit_prints(shared_data_dir):
    """docs/scaling.md quotes Approach 3's ill-conditioned intervals on Sardana et al.'s 47 runs (runplan fit's
    defaults: 100 resamples, 10th-90th percentiles, seed 0). They read E [0.68, 1.94] and D/N [0.79, 63] after
    the fit changed to E [0.754, 1.93] and D/N [1.08, 62.3]."""
    csv = shared_data_dir / "beyond_chinchilla" / "trainingresults.csv"
    args = [
        "fit",
        str(csv),
        "--params-col",
        "Parameters",
        "--tokens-col",
        "Tokens",
        "--loss-col",
        "Smoothed Loss",
    ]
    fit = json.loads(invoke(*args, "--method", "parametric", "--json"))["parametric"]
    quoted = re.search(
        r"on Sardana et al\.'s 47 runs, E \[([\d.]+), ([\d.]+)\] and D/N \[([\d.]+), ([\d.]+)\]",
        flat(DOCS / "scaling.md"),
    )
    assert quoted, "docs/scaling.md lost its quote of the Sardana intervals"
    e_low, e_high, r_low, r_high = (float(x) for x in quoted.groups())
    assert fit["runs"] == 47
    assert (e_low, e_high) == pytest.approx((fit["E"]["low"], fit["E"]["high"]), abs=0.006)
    ratio = fit["tokens_per_param"]
    assert (r_low, r_high) == pytest.approx((ratio["low"], ratio["high"]), rel=0.01)


def test_readme_days_budget_example_is_the_plans_wall_clock(tmp_path, monkeypatch):
    """README: a GPU-time budget is aimed 0.2% short (30 × 0.998 = 29.94 days); the plan it gives on the stated
    cluster is what the README quotes, to the digits shown (29.93 days on 64 H100s, not the 29.94 aimed at)."""
    readme = flat(REPO / "README.md")
    quoted = re.search(r"aimed 0\.2% short: 30 days on (\d+) H100s plan ([\d.]+) days", readme)
    assert quoted, "README lost its worked days-budget example"
    gpus, days = quoted.groups()
    monkeypatch.chdir(tmp_path)
    (tmp_path / "plan.yaml").write_text(invoke("init", "--days", "30", "--gpus", gpus))
    plan = json.loads(invoke("plan", "plan.yaml", "--format", "json"))
    assert plan["inputs"]["cluster"]["gpu"] == "h100-sxm"
    assert f"{plan['reliability']['effective_days']:.2f}" == days
    assert 30 * (1 - 0.004) <= float(days) <= 30 * (1 - 0.002)  # "about 0.2-0.4% short", docs/plan-file.md


def test_readme_catalog_gpus_comment_names_only_what_the_table_shows():
    """The tour's comment for `runplan catalog gpus` listed the source among the table's columns; the table has
    none (one entry, `catalog gpus NAME`, shows it)."""
    line = next(
        raw for raw in (REPO / "README.md").read_text().splitlines() if raw.startswith("runplan catalog gpus")
    )
    table = invoke("catalog", "gpus")
    for word in ("memory", "bf16", "fp8", "HBM", "TDP"):
        assert word in line
    assert ("TDP W" in table) and ("source" not in table)
    assert "source" not in line.split("#", 1)[1].split("NAME")[0], line
    assert "source" in invoke("catalog", "gpus", "h100-sxm")


# --- field lists that claim to be complete ------------------------------------------------------------------


def test_catalog_md_model_fields_name_every_model_shape_field():
    """docs/catalog.md: "Every field of runplan.model.ModelShape is written out for each shipped preset" and
    the paragraph names them; `mtp_layers` and `mtp_loss_weight` (DeepSeek-V3's MTP module) were missing."""
    from runplan.model import ModelShape

    named = set(re.findall(r"`([a-z_]+)`", section((DOCS / "catalog.md").read_text(), "## Model fields")))
    missing = sorted(set(ModelShape.model_fields) - named - {"name"})
    assert not missing, f"docs/catalog.md '## Model fields' does not name {missing}"


def test_catalog_md_gpu_field_table_has_a_row_per_gpu_spec_field():
    """docs/catalog.md's GPU field table (field, unit, meaning) left out `intra_node_link_bytes_per_s`."""
    from runplan.hardware import GpuSpec

    table = section((DOCS / "catalog.md").read_text(), "## GPU fields (units)")
    rows = set(re.findall(r"^\| `([a-z_0-9]+)` \|", table, flags=re.M))
    assert set(GpuSpec.model_fields) <= rows, sorted(set(GpuSpec.model_fields) - rows)
    shipped = yaml.safe_load((REPO / "configs" / "gpus.yaml").read_text())
    assert shipped["gpus"][0].keys() - {"aliases", "note"} <= rows


# --- docs/design.md's recipes -------------------------------------------------------------------------------


def test_design_md_module_table_has_a_row_for_every_module():
    """docs/design.md's "module | one job" table: every module and package under src/runplan has a row (the
    monitor package, hf_config.py, fileio.py, escape.py and defaults.py had none)."""
    text = (DOCS / "design.md").read_text()
    table = text[text.index("| module | one job |") : text.index("## Where we departed")]
    first_cells = " ".join(re.findall(r"^\| ([^|]+) \|", table, flags=re.M))
    named = set(re.findall(r"`([a-z_]+)(?:\.py|/)", first_cells))
    package = REPO / "src" / "runplan"
    modules = {p.stem for p in package.glob("*.py")} | {p.name for p in package.iterdir() if p.is_dir()}
    missing = sorted(modules - named - {"__init__", "__main__", "__pycache__"})
    assert not missing, f"docs/design.md's module table has no row for {missing}"


def test_design_md_layout_field_recipe_is_what_build_grid_needs():
    """The grid has a column for a Layout field only if it is structural (search.structural_axes), annotated
    Searched, or one of micro_batch, microbatches, sequence_parallel: a field added as step 1 once told (no
    Searched "unless the search should try several values") made every search an internal error. The recipe
    must say that a pin-only field takes a one-value Searched((default,))."""
    from runplan.parallel.layout import Layout, searched_domain

    structural = {"tp", "pp", "dp", "ep", "cp", "vpp"}
    special = {"micro_batch", "microbatches", "sequence_parallel"}
    searched = {name for name in Layout.model_fields if searched_domain(name) is not None}
    assert set(Layout.model_fields) == structural | special | searched
    recipe = flat(DOCS / "design.md")
    recipe = recipe[recipe.index("### a layout field") : recipe.index("### a stage")]
    assert "Searched((default,))" in recipe and "build_grid" in recipe
    # the scratch-branch example's field is a stack field today: a pin of it is refused
    assert "stack.overlap_param_gather" in recipe
    assert "overlap_param_gather" not in Layout.model_fields


def test_design_md_command_recipe_registers_where_the_app_looks():
    """A command is registered by one entry in cli/app.py's COMMAND_MODULES (command name -> module whose
    register(app) adds it; a run imports only that module), not a line in _register_commands (a loop)."""
    from runplan.cli import app as app_module

    recipe = flat(DOCS / "design.md")
    recipe = recipe[recipe.index("### a command") :]
    assert "COMMAND_MODULES" in recipe and "register(app)" in recipe
    assert "one line in `_register_commands`" not in recipe
    for command, module in app_module.COMMAND_MODULES.items():
        assert (REPO / "src" / "runplan" / "cli" / f"{module}.py").is_file(), command


LISTED_SECTIONS = {  # plan-file.md rows that list their keys (the others summarise in words)
    "budget": "runplan.scaling.budget.Budget",
    "objective": "runplan.scaling.allocate.Objective",
    "law": "runplan.scaling.laws.LawSpec",
    "training": "runplan.spec.Training",
    "cluster": "runplan.spec.Cluster",
    "constraints": "runplan.parallel.layout.Constraints",
    "parallel": "runplan.parallel.layout.Pins",
    "stack": "runplan.parallel.stack.Stack",
    "cost": "runplan.ops.cost.CostSpec",
    "sweep": "runplan.scaling.sweep.SweepSpec",
}


@pytest.mark.parametrize("key", sorted(LISTED_SECTIONS))
def test_plan_file_md_section_rows_name_every_key(key):
    """docs/plan-file.md's Sections table: a row that lists its keys lists all of them (`constraints` left out
    `throughput_tolerance`, the rule README describes, and `allow_uneven_pipeline`)."""
    import importlib

    module, name = LISTED_SECTIONS[key].rsplit(".", 1)
    model = getattr(importlib.import_module(module), name)
    row = next(
        line for line in (DOCS / "plan-file.md").read_text().splitlines() if line.startswith(f"| `{key}` |")
    )
    assert row.rstrip().endswith(f"`{LISTED_SECTIONS[key]}` |"), row
    named = set(re.findall(r"`([A-Za-z_0-9]+)`", row))
    missing = sorted(set(model.model_fields) - named - ({"preset"} if key == "stack" else set()))
    assert not missing, f"docs/plan-file.md's `{key}` row does not name {missing}"


def test_operations_md_names_the_detail_sections_it_covers():
    """docs/operations.md: "Sections 4 to 9 of `runplan plan --detail` ... come from runplan.ops": the sections
    it lists are the report's 4th to 9th, and the one of them designed outside runplan.ops (the proxy sweep)
    is named as the exception (the doc once said all six came from runplan.ops)."""
    output = invoke("plan", str(REPO / "examples" / "70b-512-h100.yaml"), "--detail")
    titles = re.findall(r"^─+ ([A-Z][A-Za-z ]+?) ─+$", output, flags=re.M)
    text = flat(DOCS / "operations.md")
    listed = re.search(r"Sections 4 to 9 of `runplan plan --detail` \(([^)]*)\)", text)
    assert listed, "docs/operations.md lost its list of the sections it covers"
    assert [t.lower() for t in titles[3:9]] == listed.group(1).replace(", ", ",").split(",")
    assert "except the proxy sweep's design (`runplan.scaling.sweep`" in text


def test_calibration_md_worst_memory_miss_is_the_shipped_files():
    """docs/calibration.md justifies refusing a peak under a tenth of the prediction by "the model's worst miss
    on published runs": the shipped file's largest `peak_memory.worst_abs_error` (0.2354, H100), which the
    plan's calibration line prints as "23.5% worst"; the doc said 23%."""
    shipped = yaml.safe_load((REPO / "configs" / "calibration.yaml").read_text())
    worst = max(
        f["peak_memory"]["worst_abs_error"] for f in shipped["families"].values() if f.get("peak_memory")
    )
    quoted = re.search(r"The model's worst miss on published runs is (\d+)%", flat(DOCS / "calibration.md"))
    assert quoted and int(quoted.group(1)) == round(100 * worst)


def test_plan_file_md_smallest_plan_example_is_what_plan_says(tmp_path, monkeypatch):
    """docs/plan-file.md's infeasible GPU-time budget: 0.2 GPU-hours on 8 H100s. The error's numbers (the
    smallest shape, its days, the GPU-hours that would hold it) and the steps of that smallest plan (the doc said
    7,600; the plan of that shape on those tokens runs 7,738)."""
    text = flat(DOCS / "plan-file.md")
    quoted = re.search(
        r"\(([\d.]+) GPU-hours on (\d+) H100s: the smallest generated shape, ([\d.]+) M parameters, takes ([\d.]+) "
        r"days, mostly the fixed overhead of its ([\d,]+) steps; at least ([\d.]+) GPU-hours\)",
        text,
    )
    assert quoted, "docs/plan-file.md lost its infeasible-budget example"
    hours, gpus, params_m, days, steps, at_least = quoted.groups()
    monkeypatch.chdir(tmp_path)
    starter = invoke("init", "--flops", "2e23", "--gpus", gpus).replace(
        "  flops: 2e23", f"  gpu_hours: {hours}"
    )
    (tmp_path / "budget.yaml").write_text(starter)
    result = CliRunner().invoke(app, ["plan", "budget.yaml"])
    assert result.exit_code == 1
    message = " ".join(result.stderr.split())
    found = re.search(r"([\d.]+) M parameters on ([\d.]+) B tokens take ([\d.]+) days", message)
    assert found and round(float(found.group(1))) == float(params_m) and found.group(3) == days, message
    assert f"raise budget.gpu_hours to at least {at_least}" in message
    smallest = invoke(
        "init", "--model", f"{found.group(1)}M", "--tokens", f"{found.group(2)}B", "--gpus", gpus
    )
    (tmp_path / "smallest.yaml").write_text(smallest)
    plan = json.loads(invoke("plan", "smallest.yaml", "--format", "json"))
    assert plan["schedule"]["total_steps"] == int(steps.replace(",", ""))
    assert f"{plan['reliability']['effective_days']:.3g}" == days


MONITOR_FORMAT_NAMES = {  # `runplan monitor --format` value -> how README names it
    "megatron": "Megatron",
    "torchtitan": "torchtitan",
    "nemo": "NeMo",
    "hf": "HF Trainer",
    "llmc": "llm.c",
    "tensorboard": "TensorBoard",
    "scalars-json": "Megatron's JSON export of its TensorBoard scalars",
    "jsonl": "JSONL",
    "csv": "CSV",
    "deepspeed": "DeepSpeed",
}


def test_readme_names_every_log_format_monitor_reads():
    """README's `runplan monitor` paragraph lists the logs it reads; it left out the scalars-json format
    (Megatron's export of its TensorBoard scalars: the Mixtral and T5 logs in ../shared/data are in it)."""
    from runplan.monitor.readers import FORMATS

    readme = flat(REPO / "README.md")
    listed = re.search(r"`runplan monitor` reads a running or finished run's log \(([^)]*)\)", readme)
    assert listed, "README lost its list of log formats"
    assert set(FORMATS) - {"auto"} == set(MONITOR_FORMAT_NAMES)
    for name in MONITOR_FORMAT_NAMES.values():
        assert name in listed.group(1), name


def test_readme_warns_that_ci_run_replaces_the_development_venv():
    """.ci/run deletes .venv and installs the quick-start lines' non-editable package there, so the editable
    install of README's Development block is gone after it; the README line running it says so."""
    ci = (REPO / ".ci" / "run").read_text()
    assert ci.count("rm -rf .venv") >= 1
    line = next(
        raw for raw in (REPO / "README.md").read_text().splitlines() if raw.startswith("bash .ci/run")
    )
    assert "replaces yours" in line


def test_the_summary_gives_a_run_shorter_than_a_day_in_hours_or_minutes():
    # 0.0132 days (the smallest plan of docs/plan-file.md) is 19.0 min (3 digits: 19), not "0.0 days"; a day or more keeps days
    from runplan.report.sections import _wall_clock

    assert _wall_clock(0.0132) == "19 min"
    assert _wall_clock(0.5) == "12 h"
    assert _wall_clock(29.934) == "29.9 days"
