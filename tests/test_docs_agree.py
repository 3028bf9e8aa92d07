"""The README and docs/ agree with the program: the commands they show run, the JSON keys they document exist,
the plan keys and defaults they state are the schema's, and the numbers they quote are the ones printed now.

Each test reads the doc it guards, so a doc edit that drifts from the program fails here, and so does a program
change that leaves a doc behind. Everything runs in process (no network, no shared data) in a few seconds.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from runplan.cli.app import app

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
EXAMPLE_70B = str(REPO / "examples" / "70b-512-h100.yaml")
COMMANDS = {
    "allocate",
    "fit",
    "sweep",
    "parallelize",
    "plan",
    "check",
    "init",
    "diff",
    "whatif",
    "export",
    "monitor",
}
IDENT = re.compile(r"^([a-z_][a-z0-9_]*|[A-Z])$")  # snake_case keys, or one capital (a law's E, A, B)


def invoke(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, f"runplan {' '.join(args)}: exit {result.exit_code}\n{result.output}"
    return result.stdout


def backticked(text: str) -> list[str]:
    """Identifiers written in backticks (`name` or `name[]`), in order."""
    names = [tok.removesuffix("[]") for tok in re.findall(r"`([^`]+)`", text)]
    return [name for name in names if IDENT.match(name)]


def all_keys(value: object) -> set[str]:
    """Every dict key at any depth (through lists)."""
    keys: set[str] = set()
    if isinstance(value, dict):
        for key, item in value.items():
            keys.add(key)
            keys |= all_keys(item)
    elif isinstance(value, list):
        for item in value:
            keys |= all_keys(item)
    return keys


def table_rows(text: str, heading: str) -> list[list[str]]:
    """The cells of the first Markdown table after `heading` (header and rule rows dropped)."""
    lines = text[text.index(heading) :].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip())[1:-1]])
    return rows


@pytest.fixture(scope="module")
def plan_json() -> dict:
    return json.loads(invoke("plan", EXAMPLE_70B, "-f", "json"))


@pytest.fixture(scope="module")
def parallelize_json() -> dict:
    return json.loads(invoke("parallelize", "--model", "70b", "--gpus", "512", "--json"))


# --- docs/json.md ---------------------------------------------------------------------------------------------


def test_json_md_plan_top_level_keys_are_the_real_ones_in_order(plan_json):
    rows = table_rows((DOCS / "json.md").read_text(), "Top-level keys, in this order")
    documented = [backticked(row[0])[0] for row in rows]
    assert documented == list(plan_json)


def test_json_md_plan_section_keys_exist(plan_json):
    rows = table_rows((DOCS / "json.md").read_text(), "Top-level keys, in this order")
    for row in rows:
        section = backticked(row[0])[0]
        present = all_keys(plan_json[section])
        missing = [key for key in backticked(row[1]) if key not in present | COMMANDS | {"null"}]
        assert not missing, f"docs/json.md: plan JSON section {section!r} has no {missing}"


def test_json_md_parallelize_row_keys_exist(parallelize_json):
    row = next(
        r for r in table_rows((DOCS / "json.md").read_text(), "| command |") if "runplan parallelize" in r[0]
    )
    missing = [key for key in backticked(row[1]) if key not in all_keys(parallelize_json)]
    assert not missing, f"docs/json.md parallelize row names keys the JSON lacks: {missing}"


def test_parallel_md_documents_every_parallelize_key(parallelize_json):
    text = (DOCS / "parallel.md").read_text()
    contract = text[text.index("## `--json` contract") : text.index("## Left out")]
    documented = set(backticked(contract))
    layout = parallelize_json["layouts"][0]
    undocumented = [key for key in [*parallelize_json, *layout] if key not in documented]
    assert not undocumented, f"docs/parallel.md § --json contract does not name {undocumented}"
    assert parallelize_json["best_by_tp"] and set(parallelize_json["best_by_tp"][0]) == {
        "tp",
        "layout",
        "tokens_per_second",
        "mfu",
        "behind_best",
    }


def test_scaling_md_lists_exactly_the_allocate_keys():
    text = (DOCS / "scaling.md").read_text()
    paragraph = text[text.index("- `allocate --json`:") : text.index("- `fit --json`:")]
    real = json.loads(invoke("allocate", "--flops", "2e23", "--json"))
    documented = set(backticked(paragraph)) - {"null"}
    top_level = documented & set(real)
    assert set(real) == top_level, f"undocumented: {set(real) - top_level}"
    assert documented - top_level <= {"value", "low", "high", "std", "resamples", "percentiles"} | set(
        real["intervals"] or {}
    )


def test_json_md_monitor_row_keys_exist(tmp_path):
    log = tmp_path / "train.jsonl"
    losses = [2.0 + 0.002 * ((7 * step) % 5) for step in range(300)]
    losses[150:153] = [4.0, 4.2, 4.1]  # a spike that never recovers within the log
    log.write_text(
        "".join(json.dumps({"step": s, "loss": x, "grad_norm": 1.0}) + "\n" for s, x in enumerate(losses))
    )
    real = json.loads(invoke("monitor", str(log), "--json"))
    assert real["events"], "the synthetic spike must raise an event"
    row = next(
        r for r in table_rows((DOCS / "json.md").read_text(), "| command |") if "runplan monitor" in r[0]
    )
    documented = [key for key in backticked(row[1]) if key not in {"healthy", "watch", "act"}]
    missing = [key for key in documented if key not in all_keys(real)]
    assert not missing and set(real) <= set(documented), missing


# --- docs/plan-file.md ----------------------------------------------------------------------------------------


def _schema_section(schema: dict, section: dict) -> dict:
    for ref_holder in [section, *section.get("anyOf", [])]:
        if "$ref" in ref_holder:
            return schema["$defs"][ref_holder["$ref"].rsplit("/", 1)[-1]]
    return section


def test_plan_file_md_keys_exist_in_the_schema():
    schema = json.loads(invoke("schema"))
    enum_values = set(re.findall(r'"([^"]+)"', json.dumps(schema)))
    for row in table_rows((DOCS / "plan-file.md").read_text(), "| section |"):
        sections = backticked(row[0])
        for name in sections:
            assert name in schema["properties"], f"docs/plan-file.md: no plan key {name!r}"
        resolved = _schema_section(schema, schema["properties"][sections[0]])
        if "properties" not in resolved:
            continue
        unknown = [k for k in backticked(row[1]) if k not in resolved["properties"] and k not in enum_values]
        assert not unknown, f"docs/plan-file.md row {sections[0]!r}: not in the schema: {unknown}"


# Defaults the docs state in words, against the schema: (section, key, default, doc, the doc's words).
STATED_DEFAULTS = [
    ("cluster", "price_per_gpu_hour", 2.0, "docs/operations.md", "default 2 USD/h"),
    ("constraints", "memory_headroom_fraction", 0.05, "docs/parallel.md", "headroom default 5%"),
    ("constraints", "reserve_bytes", 3e9, "docs/parallel.md", "reserve (default 3 GB)"),
    ("constraints", "throughput_tolerance", 0.01, "README.md", "`constraints.throughput_tolerance` (1%)"),
    ("schedule", "cooldown_fraction", 0.2, "docs/operations.md", "`cooldown_fraction` (default 0.2)"),
    ("schedule", "cooldown_shape", "1-sqrt", "docs/operations.md", "shape `1-sqrt` (default; beats linear)"),
    (
        "operations",
        "storage_write_bandwidth_bytes_per_s",
        2e12,
        "docs/operations.md",
        "Defaults: storage 2 TB/s",
    ),
    ("operations", "node_write_bandwidth_bytes_per_s", 25e9, "docs/operations.md", "node 25 GB/s"),
    ("operations", "host_link_bandwidth_bytes_per_s", 50e9, "docs/operations.md", "host link 50 GB/s"),
    ("operations", "save_fixed_seconds", 2.0, "docs/operations.md", "fixed 2 s per"),
    ("operations", "retention_generations", 3, "docs/operations.md", "3 validated generations remain"),
    ("monitoring", "canary_examples", 1024, "docs/operations.md", "batch of 1,024 sequences"),
    ("monitoring", "canary_every_steps", 100, "docs/operations.md", "every 100 steps"),
    ("monitoring", "grad_norm_factor", 5.0, "docs/operations.md", "grad norm > 5 × its 1,000-step mean"),
    (
        "monitoring",
        "grad_norm_window_steps",
        1000,
        "docs/operations.md",
        "grad norm > 5 × its 1,000-step mean",
    ),
    ("monitoring", "canary_sigma", 2.0, "docs/operations.md", "mean ± 2σ over 500 steps"),
    ("monitoring", "canary_window_steps", 500, "docs/operations.md", "mean ± 2σ over 500 steps"),
    (
        "monitoring",
        "spike_recovery_steps",
        200,
        "docs/operations.md",
        "within 5% of its pre-spike loss in 200 steps",
    ),
    ("monitoring", "rollback_margin_steps", 100, "docs/operations.md", "newest checkpoint ≥ 100 steps"),
    ("monitoring", "skip_batches_min", 200, "docs/operations.md", "skip 200-500 batches"),
    ("monitoring", "skip_batches_max", 500, "docs/operations.md", "skip 200-500 batches"),
    ("cost", "pue", 1.2, "docs/operations.md", "PUE default 1.2"),
]


@pytest.mark.parametrize(("section", "key", "default", "doc", "words"), STATED_DEFAULTS)
def test_stated_defaults_are_the_schema_defaults(section, key, default, doc, words):
    schema = json.loads((DOCS / "plan.schema.json").read_text())
    fields = _schema_section(schema, schema["properties"][section])["properties"]
    assert fields[key]["default"] == default
    assert words in " ".join((REPO / doc).read_text().split())


# --- numbers the docs quote -----------------------------------------------------------------------------------


def test_calibration_md_quotes_the_shipped_calibration_line(plan_json):
    text = " ".join((DOCS / "calibration.md").read_text().split())
    quoted = re.search(r"`… (\(published-runs, [^`]+)`", text)
    assert quoted, "docs/calibration.md lost its quoted calibration line"
    assert plan_json["layout"]["calibration"].endswith(quoted.group(1))


def test_readme_accuracy_numbers_are_validation_md_numbers():
    """README's "How far to trust the step times" paragraph against the generated docs/validation.md."""
    validation = " ".join((DOCS / "validation.md").read_text().split())
    readme = " ".join((REPO / "README.md").read_text().split())
    loso = re.search(
        r"All GPUs: step time median ([\d.]+)%, worst ([\d.]+)% over (\d+) runs from (\d+) sources .*?"
        r"memory median ([\d.]+)% over (\d+) runs",
        validation,
    )
    own = re.search(r"Pooled: median ([\d.]+)%, worst [\d.]+% over (\d+) runs from (\d+) sources", validation)
    assert loso and own
    median, worst, runs, sources, memory, memory_runs = loso.groups()
    assert f"{runs} published runs from {sources} sources" in readme
    assert f"the median error is {median}% (worst {round(float(worst))}%)" in readme
    assert f"it is {own.group(1)}% on a run left out of the fit (the median over {own.group(2)}" in readme
    assert f"runs of {own.group(3)} sources)" in readme
    assert (
        f"Memory is off by a median of {memory}%, and every one of the {memory_runs} logged peaks" in readme
    )
    shipped = yaml.safe_load((REPO / "configs" / "calibration.yaml").read_text())
    peaks = [family["peak_memory"] for family in shipped["families"].values() if family.get("peak_memory")]
    assert sum(p["runs"] for p in peaks) == sum(p["under"] for p in peaks) == int(memory_runs)


# --- README tour ----------------------------------------------------------------------------------------------

SLOW_OR_EXTERNAL = {"fit", "calibrate", "monitor", "--install-completion"}


def tour_lines() -> list[list[str]]:
    readme = (REPO / "README.md").read_text()
    block = readme[readme.index("## Tour") :]
    block = block[block.index("```sh") + len("```sh") : block.index("```", block.index("```sh") + 5)]
    return [shlex.split(line, comments=True) for line in block.strip().splitlines()]


def test_readme_tour_commands_exit_0(tmp_path, monkeypatch):
    """Every Tour line runs as written, in a directory with the files the tour assumes (a Hugging Face
    config.json; plan.yaml comes from the tour's own `runplan init`). Fits, calibration and log reading are
    left to their own tests (they take seconds)."""
    monkeypatch.chdir(tmp_path)
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    config = tmp_path / "path" / "to" / "config.json"
    config.parent.mkdir(parents=True)
    config.write_text(
        json.dumps(
            {
                "architectures": ["LlamaForCausalLM"],
                "model_type": "llama",
                "hidden_size": 4096,
                "intermediate_size": 14336,
                "num_attention_heads": 32,
                "num_key_value_heads": 8,
                "num_hidden_layers": 32,
                "vocab_size": 128256,
                "rms_norm_eps": 1e-5,
                "rope_theta": 500000.0,
                "tie_word_embeddings": False,
            }
        )
    )
    ran = 0
    for args in tour_lines():
        assert args[0] == "runplan", args
        if args[1] in SLOW_OR_EXTERNAL:
            continue
        redirect = args[args.index(">") + 1] if ">" in args else None
        output = invoke(*args[1 : args.index(">") if redirect else None])
        if redirect:
            (tmp_path / redirect).write_text(output)
        ran += 1
    assert ran >= 25
    assert "resolved:" in (tmp_path / "plan.yaml").read_text()  # `check --update` wrote it
    assert (tmp_path / "PLAN.md").read_text().startswith("#")


#: files the Tour reads that a user brings, each with the words of its line's comment that say so
USER_FILES = {
    "sweep.csv": "from your own sweep",
    "measured.yaml": "your own step times",
    "train.log": "after launch",
    "path/to/config.json": "a local Hugging Face config.json",
}


def test_readme_tour_reads_only_files_it_ships_makes_or_says_are_yours():
    """A new user runs the Tour from a clone: every file a line reads is in the repository, written by an earlier
    line (`-o FILE`, `> FILE`), or one the line's comment says the user brings. `runplan diff a.yaml b.yaml` read
    two files nothing made (exit 2 as written); it now compares two shipped examples."""
    readme = (REPO / "README.md").read_text()
    block = readme[readme.index("## Tour") :]
    block = block[block.index("```sh") + len("```sh") : block.index("```", block.index("```sh") + 5)]
    made: set[str] = set()
    for raw in block.strip().splitlines():
        args = shlex.split(raw, comments=True)
        comment = raw.split("#", 1)[1] if "#" in raw else ""
        outputs = {args[i + 1] for i, a in enumerate(args[:-1]) if a in ("-o", ">")}
        for arg in args[1:]:
            if arg in outputs or not re.search(r"\.(yaml|csv|log|json)$", arg):
                continue
            if arg in USER_FILES:
                assert USER_FILES[arg] in comment, raw
            else:
                assert (REPO / arg).is_file() or arg in made, (
                    f"README Tour reads {arg}, which nothing made: {raw}"
                )
        made |= outputs


def test_readme_init_alternatives_run():
    """The Tour's `runplan init` comment offers other budgets, `(or --days 30, ...)`: each must run in place of
    `--flops 2e23` (a bare `--tokens` needs `--model`, which the comment once left out)."""
    line = next(args for args in tour_lines() if args[:2] == ["runplan", "init"])
    readme = (REPO / "README.md").read_text()
    comment = next(raw for raw in readme.splitlines() if raw.startswith(shlex.join(line[:4])))
    alternatives = re.search(r"\(or (--[^)]*)\)", comment)
    assert alternatives, comment
    for alternative in alternatives.group(1).split(", "):
        args = ["init", *shlex.split(alternative), "--gpus", "1024"]
        assert invoke(*args).count("schema_version: 1") == 1


def test_json_md_names_the_commands_without_json():
    """docs/json.md says which commands print data without `--json`; every other command takes it."""
    from typer.main import get_command

    commands = get_command(app).commands
    without = {
        name
        for name, command in commands.items()
        if "--json" not in {o for p in command.params for o in p.opts}
    }
    first = " ".join((DOCS / "json.md").read_text().split("\n\n")[1].split())
    assert first.startswith("Every command that prints data takes `--json`")
    found = re.findall(r"`runplan (\w+)` prints JSON anyway|`runplan (\w+)` writes YAML", first)
    named = {name for pair in found for name in pair if name}
    assert without == named == {"init", "schema"}, (without, named)
