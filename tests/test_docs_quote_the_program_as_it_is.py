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


# --- numbers quoted from docs/validation.md and the shipped time model --------------------------------------


def _validation_rows() -> list[list[str]]:
    """The per-run table of docs/validation.md: run, source, GPU, flash, layout, in-fit error, LOSO error, ..."""
    text = (DOCS / "validation.md").read_text()
    table = text[text.index("| run | source | GPU | flash | layout evaluated | in fit |") :]
    rows = []
    for line in table.splitlines()[2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows


def _measured_over_predicted(row: list[str]) -> float:
    """A run's measured step ÷ the shipped model's (its in-fit error is predicted / measured − 1)."""
    return 1 / (1 + float(row[5].rstrip("%")) / 100)


def test_parallel_md_cp_run_ranges_are_validation_md_errors():
    """docs/parallel.md (CP): the bf16 CP runs of NVIDIA's dgxc recipes and Meta's CP-16 row "take A-B of the
    predicted time", and torchtitan's "C-D, median M". The doc said 0.93-1.09 after the MoE MLP's TP collectives
    moved Grok-1's rows from −8.3% to −5.5% (1.06); the torchtitan figures are also the program's warning
    (timing.TORCHTITAN_CP_TIME_RATIO)."""
    from runplan.parallel.timing import TORCHTITAN_CP_TIME_RATIO

    rows = _validation_rows()
    cp = [r for r in rows if re.search(r"\bCP([2-9]|\d\d)\b", r[4])]
    nvidia = [
        _measured_over_predicted(r)
        for r in cp
        if (r[1] == "nvidia-dgxc-2024" and "fp8" not in r[0]) or r[0].startswith("llama3-405b-16384gpu-cp16")
    ]
    titan = sorted(_measured_over_predicted(r) for r in cp if r[1] == "pytorch-torchtitan")
    assert len(nvidia) >= 6 and len(titan) >= 4
    text = flat(DOCS / "parallel.md")
    quoted = re.search(r"on TransformerEngine's ring, take ([\d.]+)-([\d.]+) of the predicted time", text)
    assert quoted, "docs/parallel.md lost its range of the CP runs on TransformerEngine's ring"
    assert (float(quoted.group(1)), float(quoted.group(2))) == pytest.approx(
        (min(nvidia), max(nvidia)), abs=0.006
    )
    titan_quoted = re.search(
        r"64k-256k tokens\) ([\d.]+)-([\d.]+), median ([\d.]+), on PyTorch's model", text
    )
    assert titan_quoted, "docs/parallel.md lost its range of torchtitan's CP runs"
    median = (titan[(len(titan) - 1) // 2] + titan[len(titan) // 2]) / 2
    low, high, mid = (float(x) for x in titan_quoted.groups())
    assert (low, mid, high) == pytest.approx((titan[0], median, titan[-1]), abs=0.006)
    assert (low, mid, high) == TORCHTITAN_CP_TIME_RATIO


def test_parallel_md_128k_step_times_are_the_shipped_models(validate, published):
    """docs/parallel.md's 128k worked example: Meta's CP-16 layout "on Meta's stack as the calibration row states
    it" (benchmarks/published_runs.yaml, llama3-405b-16384gpu-cp16) takes S s per step at MFU M%, and on the
    `default` stack (`runplan parallelize` with the layout pinned) S' s at M'%: with the shipped constants, so a
    refit that moves them leaves the doc behind."""
    from runplan.calibrate.fit import complete_layout
    from runplan.catalog import load_catalog
    from runplan.parallel.grid import LayoutGrid
    from runplan.parallel.search import evaluate

    text = flat(DOCS / "parallel.md")
    meta = re.search(r"no TP overlap\) ([\d.]+) s per step, MFU ([\d.]+)% against Meta's 38%", text)
    default = re.search(r"and TP overlap\) ([\d.]+) s, ([\d.]+)%\.", text)
    assert meta and default, "docs/parallel.md lost the 128k example's step times"
    row = next(p for p in published[1] if p.id == "llama3-405b-16384gpu-cp16")
    eff = validate.calibrated_efficiency(row)
    ev = evaluate(row.request, LayoutGrid.of([complete_layout(row, eff)]), eff)
    assert f"{float(ev.step_seconds[0]):.1f}" == meta.group(1)
    # the row times 128 layers (schedule_layers: PP 16 × 8); the MFU counts the model's own 126 (5.67e12 FLOPs
    # per token at 128k, as the doc says), not the padded schedule's
    model = load_catalog().model("llama-3.1-405b")
    flops = model.model_flops_per_token(row.request.seq_len)
    assert f"of {flops / 1e12:.2f}e12 per token" in text
    mfu = float(ev.tokens_per_second[0]) / row.request.n_gpus * flops / row.request.gpu.bf16_flops
    assert f"{100 * mfu:.1f}" == meta.group(2)
    pinned = json.loads(
        invoke(
            *("parallelize", "--model", "llama-3.1-405b", "--gpus", "16384", "--seq-len", "128k"),
            *("--tp", "8", "--cp", "16", "--pp", "16", "--zero", "1", "--mbs", "1", "--vpp", "8"),
            *("--recompute", "selective", "--global-batch", "16M", "--json"),
        )
    )["layouts"][0]
    assert f"{pinned['step_seconds']:.1f}" == default.group(1)
    assert f"{100 * pinned['mfu']:.1f}" == default.group(2)


def test_catalog_md_memory_bias_is_validation_md_mean_signed_error():
    """docs/catalog.md keeps the marketed HBM because "the memory model predicts the logged peaks of published
    runs about N% low on average": validation.md's mean signed memory error per GPU (−9.0% on A100 and H100; the
    doc said 10%)."""
    text = (DOCS / "validation.md").read_text()
    means = [
        float(m) for m in re.findall(r"^\| (?:A100|H100) \| memory \| .* \| ([+-][\d.]+)% \|$", text, re.M)
    ]
    assert len(means) == 2 and all(m < 0 for m in means)
    quoted = re.search(
        r"predicts the logged peaks of published runs about (\d+)% low on average", flat(DOCS / "catalog.md")
    )
    assert quoted, "docs/catalog.md lost its memory-bias figure"
    assert min(round(-m) for m in means) <= int(quoted.group(1)) <= max(round(-m) for m in means)


def test_design_md_layout_field_recipe_names_every_place_a_new_field_needs():
    """docs/design.md's layout-field recipe against today's code: a boolean `Searched((True,))` field added to a
    copy of the tree also needed the shipped schema regenerated (tests/test_spec.py compares it), the field named
    in docs/plan-file.md and docs/parallel.md (tests here and in test_docs_agree.py), every caller of the oracle's
    positional `layout(*axes)` (it zips Layout's fields strictly), the stored plans rewritten when the field has no
    default, and a line in `cli/parallelize.py`'s pins dict for a flag of its own; `Layout.one_line()` and
    `resolved.LAYOUT_AXIS_PATHS` name the axes by hand. The recipe once listed four steps and none of these."""
    import inspect

    from runplan import resolved
    from runplan.parallel.layout import Layout

    recipe = flat(DOCS / "design.md")
    recipe = recipe[recipe.index("### a layout field") : recipe.index("### a stage")]
    reference = (REPO / "tests" / "parallel" / "reference.py").read_text()
    assert "zip(Layout.model_fields, axes, strict=True)" in reference
    assert "`layout(*axes)`" in recipe
    assert "def test_shipped_schema_file_is_current" in (REPO / "tests" / "test_spec.py").read_text()
    assert "runplan schema > docs/plan.schema.json" in recipe
    assert "docs/plan-file.md's `parallel` row" in recipe and "docs/parallel.md's `--json` contract" in recipe
    assert (REPO / "tests" / "export" / "_plans.py").is_file() and "python -m tests.export._plans" in recipe
    assert "_pins_by_name(pin, dict(" in (REPO / "src" / "runplan" / "cli" / "parallelize.py").read_text()
    assert "`_pins_by_name`" in recipe
    # the two hand lists of axes: each still leaves a Layout field out, so a new one is not added by itself
    assert {p.rsplit(".", 1)[1] for p in resolved.LAYOUT_AXIS_PATHS} < set(Layout.model_fields)
    assert "model_fields" not in inspect.getsource(Layout.one_line)
    assert "`resolved.LAYOUT_AXIS_PATHS`" in recipe and "`Layout.one_line()`" in recipe
    for path in re.findall(r"`((?:src|tests)/[\w/.]+\.py)`", recipe):
        assert (REPO / path).is_file(), path


FP8_TABLE_ROWS = {  # docs/parallel.md's fp8/bf16 table: job -> (bf16 row ids, fp8 row ids) of docs/validation.md
    "torchtitan Llama 3.1 8B": (
        ["torchtitan-8b-8gpu-compile", "torchtitan-8b-128gpu-compile"],
        ["torchtitan-8b-8gpu-fp8", "torchtitan-8b-128gpu-fp8"],
    ),
    "dgxc Llama 3.1 8B": (["nv-8b-8gpu"], ["nv-8b-8gpu-fp8"]),
    "dgxc Llama 3.1 70B": (["nv-70b-64gpu", "nv-70b-512gpu"], ["nv-70b-64gpu-fp8", "nv-70b-512gpu-fp8"]),
    "dgxc Llama 3.1 405B": (
        ["nv-405b-576gpu", "nv-405b-2304gpu"],
        ["nv-405b-576gpu-fp8", "nv-405b-2304gpu-fp8"],
    ),
    "dgxc GPT-3 175B": (["nv-gpt3-175b-128gpu"], ["nv-gpt3-175b-128gpu-fp8"]),
    "dgxc Grok-1 314B MoE": (
        ["grok1-314b-512gpu", "grok1-314b-2048gpu"],
        ["grok1-314b-512gpu-fp8", "grok1-314b-2048gpu-fp8"],
    ),
}


def test_parallel_md_fp8_table_step_errors_are_validation_md_in_fit_errors():
    """docs/parallel.md (FP8, calibration rows): the bf16 and fp8 step errors of each paired job are the in-fit
    column of docs/validation.md, to the digits the table shows (torchtitan 8B on 128 GPUs read −8.2% where the
    table had −8.3%)."""
    errors = {row[0].removesuffix(" (fit: false)"): row[5] for row in _validation_rows()}
    text = (DOCS / "parallel.md").read_text()
    table = text[text.index("| job | bf16 step error | fp8 step error |") :].split("\n\n", 1)[0]
    seen = set()
    for line in table.splitlines()[2:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        job = next(name for name in FP8_TABLE_ROWS if cells[0].startswith(name))
        seen.add(job)
        for quoted, ids in zip(cells[1:3], FP8_TABLE_ROWS[job], strict=True):
            for shown, run in zip(quoted.split(" / "), ids, strict=True):
                shown = shown.replace("−", "-").rstrip("%")
                decimals = len(shown.split(".")[1]) if "." in shown else 0
                value = float(errors[run].rstrip("%"))
                assert f"{value:+.{decimals}f}" == f"{float(shown):+.{decimals}f}", (
                    job,
                    run,
                    shown,
                    errors[run],
                )
    assert seen == set(FP8_TABLE_ROWS)


def test_parallel_md_70b_tp_answer_is_the_current_search():
    """docs/parallel.md, "70B on 512 H100 and TP = 8": the refit history ends with today's answer, "TP 4 is X%
    ahead, A% against B%" (`best_by_tp` of `runplan parallelize --model 70b --gpus 512`): a refit that moves it
    leaves the doc behind."""
    text = flat(DOCS / "parallel.md")
    paragraph = text[text.index("**70B on 512 H100 and TP = 8.**") : text.index("**Decision:**")]
    last = re.findall(r"TP (\d+) is ([\d.]+)% ahead, ([\d.]+)% against ([\d.]+)%", paragraph)[-1]
    best_by_tp = json.loads(invoke("parallelize", "--model", "70b", "--gpus", "512", "--json"))["best_by_tp"]
    by_tp = {entry["tp"]: entry for entry in best_by_tp}
    winner, loser = by_tp[int(last[0])], by_tp[8 if last[0] == "4" else 4]
    assert winner["behind_best"] == 0
    assert f"{100 * loser['behind_best']:.1f}" == last[1]
    assert (f"{100 * winner['mfu']:.1f}", f"{100 * loser['mfu']:.1f}") == last[2:]


@pytest.mark.parametrize(
    ("log", "name"),
    [
        ("megatron/mixtral_8x7b_alltoall_tp2pp4ep4_release.dgx_h100.json", "Mixtral 8x7B"),
        ("megatron/t5_release.dgx_h100.json", "T5"),
    ],
)
def test_monitor_md_real_log_summaries_count_every_event(shared_data_dir, log, name):
    """docs/monitor.md's summary of each Megatron release log names its verdict and counts its events: Mixtral's
    read "recovered spikes at 3,850 (+39%) and 4,260 (+26%)" where `runplan monitor` reports 12 recovered spikes
    and a throughput drop; the two quoted are the largest."""
    text = flat(DOCS / "monitor.md")
    summary = text[text.index(f"{name}: `") :].split(". ", 1)[0]
    out = json.loads(
        invoke("monitor", str(shared_data_dir / "training_logs" / log), "--stall-seconds", "0", "--json")
    )
    assert summary.startswith(f"{name}: `{out['verdict']}`: ")
    counts = out["summary"]["events_by_kind"]
    spikes = [e for e in out["events"] if e["kind"] == "loss_spike"]
    assert f"{counts['loss_spike']} " in summary and all(e["recovered"] for e in spikes)
    assert counts.get("divergence", 0) == 0 and "no divergence" in summary
    drops = [e for e in out["events"] if e["kind"] == "throughput_drop"]
    words = {0: None, 1: "one throughput drop"}.get(len(drops), f"{len(drops)} throughput drops")
    assert (words in summary) if words else ("throughput drop" not in summary), summary
    quoted = re.findall(r"([\d,]+) \(\+(\d+)%\)", summary)  # "the largest at 3,850 (+39%) and ..."
    largest = sorted(spikes, key=lambda e: e["value"] / e["baseline"], reverse=True)[: len(quoted)]
    for (step, rise), spike in zip(quoted, sorted(largest, key=lambda e: e["peak_step"]), strict=True):
        assert spike["peak_step"] == int(step.replace(",", ""))
        assert round(100 * (spike["value"] / spike["baseline"] - 1)) == int(rise)


@pytest.mark.parametrize(
    ("args", "lead"), [(["gpus", "h10"], "e.g."), (["models", "gemma-2"], "naming its models:")]
)
def test_catalog_md_quotes_the_catalog_errors_as_printed(args, lead):
    """docs/catalog.md quotes `runplan catalog`'s one-line errors: an unknown name, and a family name, which the doc
    said "lists its models" (it is refused, exit 2, naming them)."""
    result = CliRunner().invoke(app, ["catalog", *args])
    assert result.exit_code == 2
    quoted = re.search(re.escape(lead) + r" `(runplan: error: [^`]+)`", flat(DOCS / "catalog.md"))
    assert quoted, f"docs/catalog.md lost its quote of `runplan catalog {' '.join(args)}`"
    assert " ".join(result.stderr.split()) == quoted.group(1)


def _yaml_blocks(doc: str) -> list[str]:
    return re.findall(r"^```yaml\n(.*?)^```", (DOCS / doc).read_text(), flags=re.M | re.S)


def test_plan_file_md_example_plans_and_catalog_md_entries_load(tmp_path, monkeypatch):
    """The YAML a new user copies from the docs works as written: docs/plan-file.md's plan plans the model it
    names on its 512 GPUs, and each catalog block of docs/catalog.md is a catalog whose entries `runplan catalog`
    shows as written (the GB200 NVL72 rack as 72 GPUs per node)."""
    monkeypatch.chdir(tmp_path)
    (plan_text,) = _yaml_blocks("plan-file.md")
    (tmp_path / "plan.yaml").write_text(plan_text)
    plan = json.loads(invoke("plan", "plan.yaml", "--format", "json"))
    assert plan["inputs"]["cluster"]["gpus"] == 512 and plan["model"]["shape"]["name"] == "llama-3.1-70b"
    blocks = _yaml_blocks("catalog.md")
    assert len(blocks) == 2
    for i, block in enumerate(blocks):
        path = tmp_path / f"catalog{i}.yaml"
        path.write_text(block)
        entries = yaml.safe_load(block)
        for entry in entries.get("gpus", []):
            shown = json.loads(invoke("catalog", "gpus", entry["name"], "--catalog", str(path), "--json"))
            assert shown["gpus_per_node"] == entry["gpus_per_node"]
        for entry in entries.get("models", []):
            shown = json.loads(invoke("catalog", "models", entry["name"], "--catalog", str(path), "--json"))
            assert shown["n_layers"] == entry["n_layers"]


def test_plan_file_md_names_every_init_flag():
    """docs/plan-file.md: "`runplan init > plan.yaml` (its flags `--flops`, ..., `--name` fill the keys they name"
    lists every option `runplan init` has, and no other."""
    from typer.main import get_command

    init = get_command(app).commands["init"]
    options = {o for p in init.params for o in p.opts if o.startswith("--") and o != "--help"}
    listed = re.search(
        r"`runplan init > plan\.yaml` \(its flags (.*?) fill the keys", flat(DOCS / "plan-file.md")
    )
    assert listed, "docs/plan-file.md lost its list of init's flags"
    assert set(re.findall(r"`(--[a-z-]+)`", listed.group(1))) == options
