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


# --- quotes added by the docs review of 2026-12-03 ----------------------------------------------------------


def test_scaling_md_approach_2_on_the_chinchilla_points_names_every_budget_left_out(shared_data_dir):
    """docs/scaling.md: "On all 245 Chinchilla points the defaults give 10 budgets ... dropping the budgets at 1.7e18
    (minimum outside the sampled sizes) and 3.3e18 (no minimum)". `runplan fit` also leaves out the budgets at
    5.0e21 and 1.3e22 (fewer than 3 distinct sizes) and 10 runs near no budget, which the doc did not say."""
    from runplan.scaling.fit import fit_isoflop, read_runs

    runs = read_runs(
        shared_data_dir / "chinchilla" / "svg_extracted_data.csv",
        params_col="Model Size",
        flops_col="Training FLOP",
    )
    iso = fit_isoflop(runs, bootstrap=0)
    text = flat(DOCS / "scaling.md")
    quoted = re.search(
        r"On all (\d+) Chinchilla points the defaults give (\d+) budgets and a = .*? dropping the budgets at "
        r"([\d.e]+) \(minimum outside the sampled sizes\) and ([\d.e]+) \(no minimum\), leaving out those at "
        r"([\d.e]+) and ([\d.e]+) \(fewer than 3 sizes\) and (\d+) runs near no budget",
        text,
    )
    assert quoted, "docs/scaling.md does not name every budget Approach 2 leaves out on the Chinchilla points"
    n_runs, n_budgets, outside, no_min, few_a, few_b, ungrouped = quoted.groups()
    assert int(n_runs) == len(runs.params) and int(n_budgets) == len(iso.budgets)
    by_kind: dict[str, list[float]] = {}
    for dropped in iso.dropped_budgets:
        by_kind.setdefault(dropped.kind, []).append(dropped.flops)
    assert [f"{c:.1e}" for c in by_kind["minimum_outside"]] == [f"{float(outside):.1e}"]
    assert [f"{c:.1e}" for c in by_kind["no_minimum"]] == [f"{float(no_min):.1e}"]
    assert sorted(f"{c:.1e}" for c in by_kind["too_few_sizes"]) == sorted(
        f"{float(c):.1e}" for c in (few_a, few_b)
    )
    assert set(by_kind) == {"minimum_outside", "no_minimum", "too_few_sizes"}
    assert int(ungrouped) == iso.ungrouped_runs


def test_calibration_md_threshold_cost_is_stated_against_the_median_of_its_day():
    """docs/calibration.md said the identification threshold "costs the median 0.4 points (2.4% before)" beside
    today's median of 2.5% (validation.md): 0.4 points was the cost when the threshold came in (2.4% → 2.8%), and the
    median has moved since. The doc now gives the median before and after that change, and today's median is
    validation.md's."""
    text = flat(DOCS / "calibration.md")
    validation = flat(DOCS / "validation.md")
    today = re.search(
        r"Pooled: median ([\d.]+)%, worst ([\d.]+)% over (\d+) runs from (\d+) sources", validation
    )
    assert today
    median, worst, runs, sources = today.groups()
    assert f"Pooled over {runs} runs from {sources} sources: median {median}% step-time error, worst " in text
    assert f"worst {round(float(worst))}%" in text
    then = re.search(r"when it came in, it moved the median from ([\d.]+)% to ([\d.]+)%", text)
    assert then, (
        "docs/calibration.md must state the threshold's cost as of its change, not against today's median"
    )
    assert "the threshold costs the median" not in text


@pytest.fixture(scope="module")
def plan_70b() -> dict:
    return json.loads(invoke("plan", str(REPO / "examples" / "70b-512-h100.yaml"), "--format", "json"))


def test_plan_file_md_laws_d_row_is_what_the_allocation_prints(tmp_path, monkeypatch):
    """docs/plan-file.md quotes the allocation row a days budget fills by tokens: "trained on 554.8 B tokens, 6.9%
    beyond the law's D for this size (518.8 B), to use the budget's 30 days" (30 days on 64 H100s)."""
    text = flat(DOCS / "plan-file.md")
    quoted = re.search(
        r"`law's D for N`: \"(trained on ([\d.]+) B tokens, ([\d.]+)% beyond the law's D for this size "
        r"\(([\d.]+) B\), to use the budget's (\d+) days)\" \((\d+) days on (\d+) H100s\)",
        text,
    )
    assert quoted, "docs/plan-file.md lost its quote of the `law's D for N` row"
    row, tokens, beyond, law, days, days_again, gpus = quoted.groups()
    assert days == days_again
    monkeypatch.chdir(tmp_path)
    (tmp_path / "plan.yaml").write_text(invoke("init", "--days", days, "--gpus", gpus))
    plan = json.loads(invoke("plan", "plan.yaml", "--format", "json"))
    allocation = plan["allocation"]
    assert f"{allocation['tokens'] / 1e9:.1f}" == tokens
    assert f"{allocation['law_tokens'] / 1e9:.1f}" == law
    assert f"{100 * (allocation['tokens'] / allocation['law_tokens'] - 1):.1f}" == beyond
    assert row in " ".join(invoke("plan", "plan.yaml", "--detail").split())


def test_parallel_md_flashattention_rate_at_4k_is_the_shipped_calibrations():
    """docs/parallel.md: "on H100 at 4k tokens it runs at 0.23 of peak, on A100 at 0.46": the shipped
    attention_fraction / (1 + s0/4096) per family, which a refit of the GEMM fraction moves."""
    shipped = yaml.safe_load((REPO / "configs" / "calibration.yaml").read_text())["families"]
    quoted = re.search(
        r"So on H100 at 4k tokens it runs at ([\d.]+) of peak, on A100 at ([\d.]+)",
        flat(DOCS / "parallel.md"),
    )
    assert quoted, "docs/parallel.md lost the FlashAttention-2 rate at 4k tokens"
    for family, shown in zip(("hopper", "ampere"), quoted.groups(), strict=True):
        eff = shipped[family]["efficiency"]
        rate = eff["attention_fraction"] / (1 + eff["attention_half_seq"] / 4096)
        assert f"{rate:.2f}" == shown, (family, rate)


def _layout_agreement_rows() -> list[list[str]]:
    text = (DOCS / "validation.md").read_text()
    table = text[text.index("| case | GPUs | seq | batch | published TP/PP/CP |") :].split("\n\n", 1)[0]
    return [[c.strip() for c in line.strip("|").split("|")] for line in table.splitlines()[2:]]


def test_parallel_md_layout_agreement_is_validation_mds_table():
    """docs/parallel.md (Layout agreement): "all six NVIDIA-tuned layouts ... come within X% of the best, all six
    with the same TP degree; Meta's TP 8 PP 16 for 405B on 8,192 and 16,384 GPUs comes within Y%" against the
    generated table in docs/validation.md."""
    rows = _layout_agreement_rows()
    nvidia = [r for r in rows if not r[0].startswith("llama3-405b")]
    meta = [r for r in rows if r[0].startswith("llama3-405b")]
    assert len(nvidia) == 6 and len(meta) == 2
    text = flat(DOCS / "parallel.md")
    quoted = re.search(
        r"all six NVIDIA-tuned layouts .*? come within ([\d.]+)% of the best, all six with the same TP degree; "
        r"Meta's TP 8 PP 16 for 405B on 8,192 and 16,384 GPUs comes within ([\d.]+)%",
        text,
    )
    assert quoted, "docs/parallel.md lost its layout-agreement summary"
    assert all(r[6] == "yes" for r in nvidia) and all(r[6] == "no" for r in meta)
    assert max(float(r[7].rstrip("%")) for r in nvidia) == float(quoted.group(1))
    assert max(float(r[7].rstrip("%")) for r in meta) == float(quoted.group(2))


def test_parallel_md_fp8_speedups_are_the_published_and_modelled_ratios(published):
    """docs/parallel.md's fp8/bf16 table: the measured speedup is the published throughputs' ratio, and the model's
    is that ratio × (1 + bf16 step error) / (1 + fp8 step error), the errors of docs/validation.md's in-fit column
    (to the rounding of those errors, ±0.01)."""
    by_id = {p.id: p for p in published[1]}
    errors = {row[0].removesuffix(" (fit: false)"): row[5] for row in _validation_rows()}
    text = (DOCS / "parallel.md").read_text()
    table = text[text.index("| job | bf16 step error | fp8 step error |") :].split("\n\n", 1)[0]
    for line in table.splitlines()[2:]:
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        job = next(name for name in FP8_TABLE_ROWS if cells[0].startswith(name))
        bf16_ids, fp8_ids = FP8_TABLE_ROWS[job]
        measured = [float(x) for x in cells[4].split(" / ")]
        model = float(cells[3])
        for i, (bf16, fp8) in enumerate(zip(bf16_ids, fp8_ids, strict=True)):
            ratio = by_id[fp8].measured_tps / by_id[bf16].measured_tps
            assert round(ratio, 2) == pytest.approx(measured[min(i, len(measured) - 1)], abs=0.005), (
                job,
                ratio,
            )
            e_bf16, e_fp8 = (float(errors[r].rstrip("%")) / 100 for r in (bf16, fp8))
            assert ratio * (1 + e_bf16) / (1 + e_fp8) == pytest.approx(model, abs=0.01), (job, bf16)


def test_catalog_md_shipped_gpu_table_is_the_shipped_catalog():
    """docs/catalog.md's "Shipped values" table: each number is configs/gpus.yaml's, in the unit its column shows."""
    shipped = {g["name"]: g for g in yaml.safe_load((REPO / "configs" / "gpus.yaml").read_text())["gpus"]}
    text = (DOCS / "catalog.md").read_text()
    table = text[text.index("| name | HBM | bf16 | fp8 | HBM BW | intra | inter | TDP | source |") :]
    rows = [line for line in table.split("\n\n", 1)[0].splitlines()[2:]]
    assert {row.split("|")[1].strip() for row in rows} == set(shipped)

    def lead(cell: str) -> float:
        return float(cell.split()[0])

    for row in rows:
        name, hbm, bf16, fp8, bw, intra, inter, tdp = (c.strip() for c in row.strip("|").split("|")[:8])
        gpu = shipped[name]
        assert lead(hbm) * 1e9 == gpu["hbm_bytes"], name
        assert lead(bf16) * 1e12 == pytest.approx(gpu["bf16_flops"]), name
        assert (
            (fp8 == "–") if gpu["fp8_flops"] is None else lead(fp8) * 1e12 == pytest.approx(gpu["fp8_flops"])
        )
        assert lead(bw) * 1e12 == pytest.approx(gpu["hbm_bandwidth_bytes_per_s"]), name
        assert lead(intra) * 1e9 == pytest.approx(gpu["intra_node_bandwidth_bytes_per_s"]), name
        assert lead(inter) * 1e9 == pytest.approx(gpu["inter_node_bandwidth_bytes_per_s"]), name
        assert lead(tdp) == gpu["tdp_watts"], name


def test_readme_read_caps_are_the_readers_caps():
    """README "Files and streams": inputs are read up to a cap, "YAML 1 MB, CSV 50 MB, monitor logs 64 MB, or 200 MB
    for JSONL and CSV logs": the constants the readers refuse a larger file by."""
    from runplan import yamlio
    from runplan.monitor import readers
    from runplan.scaling import fit

    quoted = re.search(
        r"YAML (\d+) MB, CSV (\d+) MB, monitor logs (\d+) MB, or (\d+) MB for JSONL and CSV logs",
        flat(REPO / "README.md"),
    )
    assert quoted, "README lost its list of read caps"
    caps = (yamlio.MAX_FILE_BYTES, fit.MAX_CSV_BYTES, readers.MAX_TEXT_LOG_BYTES, readers.MAX_LOG_BYTES)
    assert [int(x) * 1_000_000 for x in quoted.groups()] == list(caps)


def test_monitor_md_bloom_spike_summary_is_what_monitor_prints(shared_data_dir):
    """docs/monitor.md's summary of BLOOM-176B's first spike and its throughput excerpt, against `runplan monitor`
    on those logs (--checkpoint-interval 100, as the doc's command line)."""
    logs = shared_data_dir / "training_logs" / "bigscience"
    spike = json.loads(
        invoke(
            "monitor",
            str(logs / "tr11-176B-ml.spike-31214.log"),
            *("--checkpoint-interval", "100", "--stall-seconds", "0", "--json"),
        )
    )
    text = flat(DOCS / "monitor.md")
    quoted = re.search(
        r"BLOOM-176B's first spike: `(\w+)`: a grad-norm alert at ([\d,]+) \(([\d.]+) against a (\d+)-point mean "
        r"of ([\d.]+); (\d+) at ([\d,]+) is (\d+)×: pause\) two steps before the loss peak \(([\d.]+) at ([\d,]+) "
        r"against ([\d.]+) from only (\d+) points\).*? wait until ([\d,]+), else roll back to ([\d,]+) and skip "
        r"([\d,]+)-([\d,]+)\.",
        text,
    )
    assert quoted, "docs/monitor.md lost its BLOOM spike summary"
    q = [x.replace(",", "") for x in quoted.groups()]
    events = {e["kind"]: e for e in spike["events"]}
    alert, loss = events["grad_norm_alert"], events["loss_spike"]
    assert spike["verdict"] == q[0]
    assert alert["start_step"] == int(q[1]) and alert["baseline_points"] == int(q[3])
    assert f"{alert['baseline']:.2f}" == q[4] and round(alert["value"]) == int(q[5])
    assert alert["peak_step"] == int(q[6]) and round(alert["value"] / alert["baseline"]) == int(q[7])
    assert f"{loss['value']:.2f}" == q[8] and loss["peak_step"] == int(q[9])
    assert f"{loss['baseline']:.2f}" == q[10] and loss["baseline_points"] == int(q[11])
    assert loss["wait_until_step"] == int(q[12]) and loss["rollback_to_step"] == int(q[13])
    assert loss["skip_steps"] == [int(q[14]), int(q[15])]
    line = next(
        row
        for row in (logs / "tr11-176B-ml.spike-31214.log").read_text().splitlines()
        if f"iteration    {q[1]}/" in row
    )
    logged = re.search(r"grad norm: ([\d.]+)", line)
    assert logged and f"{float(logged.group(1)):.1f}" == q[2]  # the alert's own step, 15.886 in the log
    drop = json.loads(
        invoke("monitor", str(logs / "tr11-176B-ml.throughput-42780.log"), "--stall-seconds", "0", "--json")
    )
    (event,) = drop["events"]
    quoted = re.search(
        r"The throughput excerpt gives a ([\d.]+)% drop in tokens/s from ([\d,]+) \(step time \+([\d.]+)%, "
        r"([\d.]+) → ([\d.]+) s, still slow at the end: (\w+)\)",
        text,
    )
    assert quoted, "docs/monitor.md lost its BLOOM throughput summary"
    fall, start, rise, before, after, action = quoted.groups()
    assert event["kind"] == "throughput_drop" and event["action"] == action
    assert event["start_step"] == int(start.replace(",", ""))
    assert f"{event['baseline']:.1f}" == before and f"{event['value']:.1f}" == after
    assert f"{100 * (event['value'] / event['baseline'] - 1):.1f}" == rise
    assert f"{100 * (1 - event['baseline'] / event['value']):.1f}" == fall


def test_operations_md_70b_example_numbers_are_the_plans(plan_70b):
    """docs/operations.md quotes the 70B example (examples/70b-512-h100.yaml) in several places: its batch against
    B_opt, the law's C, the checkpoint interval in seconds at the main batch and in the ramp, the failure model's
    τ, and where its milestones fall."""
    text = flat(DOCS / "operations.md")
    schedule, ckpt, rel = plan_70b["schedule"], plan_70b["checkpointing"], plan_70b["reliability"]
    batch = re.search(r"the 70B example runs ([\d.]+)M tokens against B_opt ([\d.]+)M, \+([\d.]+)%", text)
    assert batch
    assert f"{schedule['global_batch_tokens'] / 1e6:.2f}" == batch.group(1)
    assert f"{schedule['law_batch_tokens'] / 1e6:.2f}" == batch.group(2)
    assert f"{100 * (schedule['global_batch_tokens'] / schedule['law_batch_tokens'] - 1):.1f}" == batch.group(
        3
    )
    law = re.search(r"= ([\d.]+)e11, C = ([\d.]+)e23 on its 2 T tokens", text)
    assert law and f"{schedule['compute_flops'] / 1e23:.3f}" == law.group(2)
    interval = re.search(
        r"the 70B example: (\d+) steps = ([\d,]+) s at the main batch, (\d+) s in the ramp\)", text
    )
    assert interval
    ramp_step = schedule["batch_stages"][0]["step_seconds"]
    assert ckpt["interval_steps"] == int(interval.group(1))
    assert f"{ckpt['main_interval_seconds']:,.0f}" == interval.group(2)
    assert f"{ckpt['interval_steps'] * ramp_step:.0f}" == interval.group(3)
    tau = re.search(r"\(`reliability.interval_seconds`, ([\d,]+) s there\)", text)
    assert tau and f"{rel['interval_seconds']:,.0f}" == tau.group(1)
    milestones = re.search(
        r"In the 70B example the first falls at step ([\d,]+) \(([\d.]+)% of the tokens; multiples of ([\d,]+) put "
        r"it at ([\d.]+)%\), and (\d+) fall within the run \(the 10th spacing, ([\d.]+)e12 tokens, lies past its "
        r"([\d.]+)e12\)",
        text,
    )
    assert milestones
    first, share, every, naive, count, tenth, total = milestones.groups()
    assert ckpt["milestone_steps"][0] == int(first.replace(",", ""))
    assert ckpt["milestone_every_steps"] == int(every.replace(",", "")) and ckpt["milestones"] == int(count)
    assert f"{10 * ckpt['milestone_every_tokens'] / 1e12:.3f}" == tenth
    assert f"{schedule['scheduled_tokens'] / 1e12:.3f}" == total
    ramp = schedule["batch_stages"][0]
    at_every = (
        ramp["tokens"] + (ckpt["milestone_every_steps"] - ramp["steps"]) * schedule["global_batch_tokens"]
    )
    assert f"{100 * at_every / schedule['scheduled_tokens']:.1f}" == naive
    assert f"{float(share):.1f}" == "10.0"


def test_operations_md_llama3_cluster_check_is_what_a_54_day_plan_prints(tmp_path, monkeypatch):
    """docs/operations.md: 16,384 GPUs for 54 days expect Llama 3's 419 interruptions by construction, "(a plan with
    `days: 54` fills 53.9 days and prints 418)"."""
    quoted = re.search(
        r"a plan with `days: 54` fills ([\d.]+) days and prints (\d+)\)", flat(DOCS / "operations.md")
    )
    assert quoted
    monkeypatch.chdir(tmp_path)
    (tmp_path / "plan.yaml").write_text(invoke("init", "--days", "54", "--gpus", "16384"))
    reliability = json.loads(invoke("plan", "plan.yaml", "--format", "json"))["reliability"]
    assert f"{reliability['effective_days']:.1f}" == quoted.group(1)
    assert f"{reliability['expected_interruptions']:.0f}" == quoted.group(2)


def test_operations_md_long_context_sweep_ratio_is_the_sweeps():
    """docs/operations.md: at 128k tokens a small proxy's GPU-hours exceed its 6ND share "about 5×" (`runplan sweep
    --flops 1.95e24 --seq-len 128k`): the sweep's model FLOPs over its isoFLOP budgets."""
    text = flat(DOCS / "operations.md")
    quoted = re.search(
        r"\(about (\d+)× at 128k tokens: `runplan sweep --flops ([\d.e]+) --seq-len 128k`", text
    )
    assert quoted
    sweep = json.loads(invoke("sweep", "--flops", quoted.group(2), "--seq-len", "128k", "--json"))
    ratio = sum(r["model_flops"] for r in sweep["runs"]) / sum(r["flops"] for r in sweep["runs"])
    assert round(ratio) == int(quoted.group(1))


def test_scaling_md_moe_and_sweep_figures_are_what_the_program_prints(tmp_path, monkeypatch):
    """docs/scaling.md: Mixtral 8x7B at 2T tokens is allocated on C = 6 × 12.62B × 2T = 1.51e23 and its sweep sized
    at 1% of that; the default sweep spends 7.77% of C; at 2e23 its smallest proxy is 103 M parameters; Hoffmann's
    printed law gives 32B and its unrounded form 40B at the Gopher budget."""
    text = flat(DOCS / "scaling.md")
    mixtral = re.search(r"Mixtral 8x7B at 2T tokens: C = 6 × ([\d.]+)B × 2T = ([\d.]+)e23", text)
    assert mixtral
    monkeypatch.chdir(tmp_path)
    (tmp_path / "plan.yaml").write_text(
        invoke("init", "--model", "mixtral-8x7b", "--tokens", "2T", "--gpus", "512")
    )
    plan = json.loads(invoke("plan", "plan.yaml", "--format", "json"))
    assert f"{plan['allocation']['params'] / 1e9:.2f}" == mixtral.group(1)
    assert f"{plan['allocation']['flops'] / 1e23:.2f}" == mixtral.group(2)
    share = re.search(r"7 × \(1% \+ 0\.1% \+ 0\.01%\) = ([\d.]+)% of C in all", text)
    sweep = json.loads(invoke("sweep", "--flops", "2e23", "--json"))
    assert share and f"{100 * sweep['total_fraction']:.2f}" == share.group(1)
    assert plan["sweep"]["total_flops"] == pytest.approx(
        sweep["total_fraction"] * plan["allocation"]["flops"]
    )
    smallest = re.search(r"At 2e23 the smallest budget's smallest proxy is (\d+) M parameters", text)
    assert smallest and f"{min(r['total_params'] for r in sweep['runs']) / 1e6:.0f}" == smallest.group(1)
    gopher = re.search(
        r"Hoffmann's printed law gives (\d+)B and its unrounded form (\d+)B at the Gopher budget", text
    )
    assert gopher
    for law, shown in zip(("hoffmann2022", "hoffmann2022-unrounded"), gopher.groups(), strict=True):
        allocation = json.loads(invoke("allocate", "--flops", "5.76e23", "--law", law, "--json"))
        assert f"{allocation['params'] / 1e9:.0f}" == shown


#: short module names the docs use for runplan's modules (`timing.within_node`), and where they live
SHORT_MODULES = {
    "runplan": "runplan",
    "timing": "runplan.parallel.timing",
    "memory": "runplan.parallel.memory",
    "search": "runplan.parallel.search",
    "calibration": "runplan.calibrate.calibration",
    "calibrate": "runplan.calibrate",
    "catalog": "runplan.catalog",
    "resolved": "runplan.resolved",
    "scaling": "runplan.scaling",
    "cli": "runplan.cli",
}
READ_DOCS = [REPO / "README.md"] + [
    path for path in sorted(DOCS.glob("*.md")) if path.name not in {"validation.md", "export.md"}
]


def _code_name(dotted: str) -> bool:
    """A dotted name whose last part reads as code (a function, constant or class), not a plan or JSON key."""
    last = dotted.rsplit(".", 1)[-1]
    return "_" in last.strip("_") or last.isupper() or last[:1].isupper() or dotted.startswith("runplan.")


@pytest.mark.parametrize("doc", READ_DOCS, ids=lambda path: path.name)
def test_code_names_the_docs_cite_exist(doc):
    """Every `module.name` a doc cites for a formula or a rule (`timing.TORCHTITAN_CP_TIME_RATIO`,
    `runplan.calibrate.fit.own_runs_leave_one_out`, `calibrate.fit.copied_run_warnings`) names something the package
    has, so a rename in src/ that leaves a doc behind fails here."""
    import importlib

    missing = []
    for dotted in re.findall(r"`([A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)+)(?:\([^`]*\))?`", doc.read_text()):
        head, *rest = dotted.split(".")
        if head not in SHORT_MODULES or not _code_name(dotted):
            continue
        parts = SHORT_MODULES[head].split(".") + rest
        for split in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:split]))
            except ImportError:
                continue
            try:
                for attr in parts[split:]:
                    obj = getattr(obj, attr)
            except AttributeError:
                missing.append(dotted)
            break
        else:
            missing.append(dotted)
    assert not missing, f"{doc.name} cites names the package lacks: {missing}"


def test_operations_md_stage_table_names_what_runplan_ops_exports():
    """docs/operations.md's stage table (function, request, result) and its plot helpers are runplan.ops's names."""
    import runplan.ops as ops

    text = (DOCS / "operations.md").read_text()
    table = text[text.index("| stage | function | request | result |") :].split("\n\n", 1)[0]
    fields = {"batch_stages": ops.Schedule, "lr_phases": ops.Schedule, "main": ops.Cost, "sweep": ops.Cost}
    names = set(re.findall(r"`([A-Za-z_]\w*)`", table))
    assert all(name in model.model_fields for name, model in fields.items() if name in names)
    names -= set(fields)
    names |= set(re.findall(r"`(\w+_at_step)\(", text))
    assert {"plan_schedule", "operate", "lr_at_step", "Operations"} <= names
    assert not [n for n in names if not hasattr(ops, n)], [n for n in names if not hasattr(ops, n)]


def test_parallel_md_async_tp_pairs_are_reproduced_as_the_doc_says(published):
    """docs/parallel.md (TP): torchtitan's async-TP pairs, "Llama 3 70B on 256 H100 1.092×, 8B on 64 H100 1.099×".
    The doc said "the model reproduces both within 2%" since 2026-11-29; with the shipped constants the 8B pair is
    5% off (configs/calibration.yaml, residuals.per_run: −5.0% as a step error, a predicted speedup 5.2% above the
    measured one). The doc now quotes the predicted speedups; they are the shipped residuals' and within the
    bound it states."""
    per_run = yaml.safe_load((REPO / "configs" / "calibration.yaml").read_text())["residuals"]["per_run"]
    measured = {p.id: p.run.measured.speedup for p in published[1] if p.run.measured.speedup is not None}
    assert set(measured) == {"tt-asynctp-70b-async", "tt-asynctp-8b-async"}
    # step_error = exp(-log(predicted / measured speedup)) - 1 (runplan.calibrate.fit.step_error)
    predicted = {run: ratio / (1 + per_run[run]) for run, ratio in measured.items()}
    text = flat(DOCS / "parallel.md")
    assert "the model reproduces both within 2%" not in text
    quoted = re.search(
        r"Llama 3 70B on 256 H100 ([\d.]+)×, 8B on 64 H100 ([\d.]+)×; with the shipped constants the model predicts "
        r"([\d.]+)× and ([\d.]+)×, within (\d+)%\)",
        text,
    )
    assert quoted, "docs/parallel.md does not quote the model's async-TP speedups"
    m70, m8, p70, p8, bound = quoted.groups()
    assert f"{measured['tt-asynctp-70b-async']:.3f}" == m70 and f"{measured['tt-asynctp-8b-async']:.3f}" == m8
    assert (
        f"{predicted['tt-asynctp-70b-async']:.2f}" == p70 and f"{predicted['tt-asynctp-8b-async']:.2f}" == p8
    )
    worst = max(abs(predicted[run] / measured[run] - 1) for run in measured)
    assert worst <= int(bound) / 100 < worst + 0.01


def test_parallel_md_moe_held_out_errors_are_validation_mds():
    """docs/parallel.md (EP, and Left out) quotes the held-out MoE rows: Mixtral 8x22B at capacity factor 1 "+A% to
    −B%" (NVIDIA's MoE-folding rows), dropless Mixtral 8x7B "−X% and −Y%" (Megatron-LM's release runs, H100 and
    A100), and in Left out "18-19% slower" and "within 4%"."""
    errors = {row[0].removesuffix(" (fit: false)"): float(row[5].rstrip("%")) for row in _validation_rows()}
    folding = [e for run, e in errors.items() if run.startswith("moe-folding-mixtral-8x22b")]
    dropless = [errors[f"megatron-release-mixtral-8x7b-a2a-128gpu-{gpu}"] for gpu in ("h100", "a100")]
    assert len(folding) == 5
    text = flat(DOCS / "parallel.md")
    capacity = re.search(r"128 to 1,024 H100\): \+([\d.]+)% to −([\d.]+)%", text)
    assert capacity and (float(capacity.group(1)), -float(capacity.group(2))) == (max(folding), min(folding))
    quoted = re.search(r"128 H100 and A100\): −(\d+)% and −(\d+)%", text)
    assert quoted and [-int(x) for x in quoted.groups()] == [round(e) for e in dropless]
    left_out = re.search(
        r"dropless Mixtral 8x7B runs are (\d+)-(\d+)% slower than predicted, the capacity-1 "
        r"Mixtral 8x22B runs within (\d+)%",
        text,
    )
    assert left_out
    low, high, within = (int(x) for x in left_out.groups())
    assert (low, high) == (round(-max(dropless)), round(-min(dropless)))
    assert max(abs(e) for e in folding) <= within < max(abs(e) for e in folding) + 1


def test_parallel_md_405b_fp8_recipe_memory_with_and_without_fp8_weights(validate, published):
    """docs/parallel.md (Calibration rows): without fp8 weights "the 405B recipe would not fit in this memory model
    (77.7 GB against 76 GB), with it 66.5 GB": the dgxc 405B fp8 row on 576 GPUs, its layout as validate.py
    completes it, evaluated with and without `fp8_param_gather`."""
    from runplan.calibrate.fit import complete_layout
    from runplan.parallel.grid import LayoutGrid
    from runplan.parallel.search import evaluate

    quoted = re.search(
        r"without it the 405B recipe would not fit in this memory model \(([\d.]+) GB against (\d+) GB\), with it "
        r"([\d.]+) GB",
        flat(DOCS / "parallel.md"),
    )
    assert quoted, "docs/parallel.md lost the 405B fp8 weights' memory"
    row = next(p for p in published[1] if p.id == "nv-405b-576gpu-fp8")
    assert row.request.stack.fp8_param_gather
    eff = validate.calibrated_efficiency(row)
    layout = LayoutGrid.of([complete_layout(row, eff)])
    with_fp8 = float(evaluate(row.request, layout, eff).memory.total[0])
    stack = row.request.stack.model_copy(update={"fp8_param_gather": False})
    without = float(evaluate(row.request.model_copy(update={"stack": stack}), layout, eff).memory.total[0])
    limit = row.request.gpu.hbm_bytes * 0.95
    assert f"{without / 1e9:.1f}" == quoted.group(1) and f"{limit / 1e9:.0f}" == quoted.group(2)
    assert f"{with_fp8 / 1e9:.1f}" == quoted.group(3)
    assert with_fp8 <= limit < without


@pytest.mark.parametrize(("model", "gpus"), [("mixtral-8x7b", "512"), ("deepseek-v3", "2048")])
def test_operations_md_moe_checkpoint_sizes_are_what_the_plan_saves(model, gpus, tmp_path, monkeypatch):
    """docs/operations.md (Checkpointing, Contents): "Mixtral 8x7B: 14 × 46.70 B = 654 GB; DeepSeek-V3: ..." The
    DeepSeek-V3 figure read "14 × 671 B = 9.39 TB", but the plan saves its multi-token-prediction module too (the
    same section says so): 14 × (671.03 B + 11.61 B) = 9.56 TB."""
    from runplan.catalog import load_catalog

    name = {"mixtral-8x7b": "Mixtral 8x7B", "deepseek-v3": "DeepSeek-V3"}[model]
    quoted = re.search(
        re.escape(name) + r": 14 × \(?([\d.]+) B(?: \+ ([\d.]+) B of its MTP module\))? = ([\d.]+) (GB|TB)",
        flat(DOCS / "operations.md"),
    )
    assert quoted, f"docs/operations.md lost {name}'s checkpoint size"
    params, mtp, size, unit = quoted.groups()
    shape = load_catalog().model(model)
    assert f"{shape.total_params / 1e9:.2f}" == params
    assert (mtp is None) == (shape.mtp_params == 0)
    if mtp is not None:
        assert f"{shape.mtp_params / 1e9:.2f}" == mtp
    monkeypatch.chdir(tmp_path)
    (tmp_path / "plan.yaml").write_text(invoke("init", "--model", model, "--tokens", "1T", "--gpus", gpus))
    saved = json.loads(invoke("plan", "plan.yaml", "--format", "json"))["checkpointing"]["total_bytes"]
    scale = {"GB": 1e9, "TB": 1e12}[unit]
    assert f"{saved / scale:.{len(size.split('.')[1]) if '.' in size else 0}f}" == size


#: dotted names in backticks that start like a plan section but are files, modules or other documents' keys
NOT_PLAN_KEYS = {
    "calibration.yaml",  # a file
    "catalog.published_count_warning",  # runplan.catalog's function
    "catalog.py",
    "model.py",
    "stack.py",
    "resolved.py",
    "training.py",  # Megatron-LM's file
    "parallel.layout",  # the module
    "parallel.overlap_param_gather",  # design.md: the field is a stack field, a pin of it is refused
    "calibration.warnings",  # a key of the calibration file runplan calibrate writes
    "resolved.inputs",  # under a resolved plan's `resolved:`
}


def _schema_has(schema: dict, parts: list[str]) -> bool:
    defs = schema["$defs"]

    def resolve(node: dict) -> dict:
        if "$ref" in node:
            return resolve(defs[node["$ref"].rsplit("/", 1)[1]])
        for key in ("anyOf", "oneOf", "allOf"):
            for sub in node.get(key, []):
                if "properties" in (found := resolve(sub)):
                    return found
        return node

    node = schema
    for part in parts:
        properties = resolve(node).get("properties", {})
        if part not in properties:
            return False
        node = properties[part]
    return True


def _json_has(value: object, parts: list[str]) -> bool:
    for part in parts:
        part = re.sub(r"\[\d*\]", "", part)
        if isinstance(value, list):
            value = value[0] if value else {}
        if not isinstance(value, dict) or part not in value:
            return False
        value = value[part]
    return True


@pytest.mark.parametrize("doc", READ_DOCS, ids=lambda path: path.name)
def test_plan_keys_the_docs_name_are_plan_keys_or_plan_json(doc, plan_70b):
    """Every dotted key a doc names under a plan section (`operations.failures_per_1000_node_days`,
    `stack.kv_repeated_before_attention`, `schedule.batch_stages[].step_seconds`) is a key of the plan schema
    (docs/plan.schema.json) or of a plan's JSON, so renaming a key leaves no doc naming the old one."""
    schema = json.loads((DOCS / "plan.schema.json").read_text())
    unknown = []
    for dotted in re.findall(r"`([a-z_]+(?:\.[a-z_0-9\[\]]+)+)(?:[:=][^`]*)?`", doc.read_text()):
        parts = dotted.split(".")
        if parts[0] not in schema["properties"] or dotted in NOT_PLAN_KEYS:
            continue
        if not (_schema_has(schema, parts) or _json_has(plan_70b, parts)):
            unknown.append(dotted)
    assert not unknown, (
        f"{doc.name} names plan keys that are neither in the schema nor in a plan's JSON: {unknown}"
    )


def test_calibration_md_constant_table_is_in_the_tie_break_order_with_the_fits_bounds():
    """docs/calibration.md: "Of constants the runs cannot tell apart (their columns tie), the one listed first in the
    table above is fitted (`PIVOT_TIE_BREAK`)". The tie goes to the earlier column of the fit's key order,
    runplan.calibrate.constants.FITTED_CONSTANTS; the table listed `eager_elementwise_share` before
    `tp_overlap_fraction` and `dp_overlap_interference`, which come before it there. Each row's bounds and per-family
    mark are the constant's too."""
    from runplan.calibrate.constants import FITTED_CONSTANTS

    text = (DOCS / "calibration.md").read_text()
    assert "the one listed first in the table above is fitted (`PIVOT_TIE_BREAK`)" in " ".join(text.split())
    table = text[text.index("| constant | per GPU family | bounds | what it absorbs |") :].split("\n\n", 1)[0]
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in table.splitlines()[2:]]
    assert [row[0].strip("`") for row in rows] == [c.name for c in FITTED_CONSTANTS]
    for row, constant in zip(rows, FITTED_CONSTANTS, strict=True):
        assert row[1] == ("yes" if constant.per_family else "shared"), constant.name
        low, high = re.match(r"([\d.]+)-([\d.]+)", row[2]).groups()  # type: ignore[union-attr]
        assert (float(low), float(high)) == (constant.low, constant.high), constant.name


def _anchors(markdown: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation but `-` and `_` dropped, spaces as `-`."""
    headings = re.findall(r"^#+\s+(.*)$", markdown.read_text(), flags=re.M)
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-") for heading in headings}


@pytest.mark.parametrize("doc", READ_DOCS, ids=lambda path: path.name)
def test_links_and_paths_the_docs_give_exist(doc):
    """Every relative link ([text](path#anchor)) leads to a file and, for a Markdown file, a heading it has; every
    repository path written in backticks (`tests/...py`, `benchmarks/...`, `configs/...`) exists."""
    text = doc.read_text()
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if target.startswith(("http://", "https://")):
            continue
        path, _, anchor = target.partition("#")
        file = (doc.parent / path) if path else doc
        if not file.exists() or (anchor and file.suffix == ".md" and anchor not in _anchors(file)):
            broken.append(target)
    for path in re.findall(r"`((?:src|tests|benchmarks|examples|configs|docs|\.ci)/[\w./\-]*\w)`", text):
        if not (REPO / path).exists():
            broken.append(path)
    assert not broken, f"{doc.name}: links or paths that lead nowhere: {broken}"
