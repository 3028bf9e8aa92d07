"""`runplan diff A B` and `runplan whatif FILE --gpus LIST` (issue 15)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def run(*args: str):
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})


def test_diff_lists_changed_inputs_and_headline_numbers():
    a, b = EXAMPLES / "405b-16k-h100-8k.yaml", EXAMPLES / "405b-16k-h100-128k.yaml"
    result = run("diff", str(a), str(b), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    inputs = {c["path"]: c for c in data["inputs"]}
    assert inputs["training.seq_len"]["old"] == 8192 and inputs["training.seq_len"]["new"] == 131072
    headline = [c["path"] for c in data["headline"]]
    assert headline[0] == "cost.main.wall_clock_days" and "allocation.tokens" in headline
    # the same file twice: nothing differs
    same = json.loads(run("diff", str(a), str(a), "--json").stdout)
    assert same == {"inputs": [], "headline": []}
    assert "inputs: the same" in run("diff", str(a), str(a)).stdout


def test_diff_headlines_the_model_trained_beside_the_laws_n(tmp_path):
    """A days budget on 256 and on 512 H100: diff headlined only allocation.params, the law's N (54.77 B), where
    whatif and the summary give the model trained (54.91 B, the architect's rung): both now, one after the other."""
    first = tmp_path / "a.yaml"
    first.write_text(run("init", "--days", "30", "--gpus", "256").stdout)
    second = tmp_path / "b.yaml"
    second.write_text(first.read_text().replace("gpus: 256", "gpus: 512"))
    headline = json.loads(run("diff", str(first), str(second), "--json").stdout)["headline"]
    paths = [c["path"] for c in headline]
    assert paths.index("model.total_params") == paths.index("allocation.params") + 1
    trained = headline[paths.index("model.total_params")]
    plan = json.loads(run("plan", str(first), "-f", "json").stdout)
    assert trained["old"] == plan["model"]["total_params"] != plan["allocation"]["params"]


def test_whatif_gives_one_row_per_cluster_size():
    result = run("whatif", str(EXAMPLES / "70b-512-h100.yaml"), "--gpus", "256,512,1024", "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [r["gpus"] for r in rows] == [256, 512, 1024]
    repeated = run("whatif", str(EXAMPLES / "70b-512-h100.yaml"), "--gpus", "512,256,512", "--json")
    assert [r["gpus"] for r in json.loads(repeated.stdout)] == [
        512,
        256,
    ]  # each size once, in the order given
    # a fixed model and token count: the same N and D, and days about halve as the GPUs double
    assert len({r["params"] for r in rows}) == 1
    for small, large in itertools.pairwise(rows):
        assert large["wall_clock_days"] == pytest.approx(small["wall_clock_days"] / 2, rel=0.1)
    table = run("whatif", str(EXAMPLES / "70b-512-h100.yaml"), "--gpus", "256,512").stdout
    assert rows[0]["layout"] in table and rows[1]["layout"] in table and "days" in table


def test_whatif_refuses_a_bad_list():
    result = run("whatif", str(EXAMPLES / "70b-512-h100.yaml"), "--gpus", "256,x")
    assert result.exit_code == 2 and "--gpus" in result.stderr


def test_whatif_refuses_a_count_the_cluster_section_refuses_in_one_line():
    for gpus in ("0", "64,0", "512,,1024"):
        result = run("whatif", str(EXAMPLES / "70b-512-h100.yaml"), "--gpus", gpus)
        assert result.exit_code == 2, (gpus, result.output)
        assert result.stderr.startswith("runplan: error: --gpus:") and result.stderr.count("\n") == 1


def test_whatif_shows_an_infeasible_size_as_a_row_and_fails_only_when_every_size_is():
    plan70 = str(EXAMPLES / "70b-512-h100.yaml")
    result = run("whatif", plan70, "--gpus", "8,512", "--json")
    assert result.exit_code == 0, result.output
    small, large = json.loads(result.stdout)
    assert small["gpus"] == 8 and "memory" in small["infeasible"] and "wall_clock_days" not in small
    assert large["gpus"] == 512 and large["wall_clock_days"] > 0
    # what would make it feasible: 70B's fully sharded states need 18 GPUs (24 in whole nodes), so no memory knob is offered at 8
    # (plan keys rather than flags for a plan file: test_error_paths)
    assert "need at least 24 h100-sxm GPUs" in small["infeasible"] and "--zero" not in small["infeasible"]
    table = run("whatif", plan70, "--gpus", "8,512").stdout
    assert "infeasible at 8 GPUs" in table
    everywhere = run("whatif", plan70, "--gpus", "8,16")
    assert everywhere.exit_code == 1 and "at 8 GPUs" in everywhere.stderr
    # --json still prints every size's record (it printed nothing when no size was feasible)
    everywhere = run("whatif", plan70, "--gpus", "8,16", "--json")
    assert everywhere.exit_code == 1 and [r["gpus"] for r in json.loads(everywhere.stdout)] == [8, 16]


def test_diff_names_the_file_whose_plan_is_infeasible(tmp_path):
    small = tmp_path / "small.yaml"
    small.write_text((EXAMPLES / "70b-512-h100.yaml").read_text().replace("gpus: 512", "gpus: 8"))
    result = run("diff", str(EXAMPLES / "70b-512-h100.yaml"), str(small))
    assert result.exit_code == 1 and f"infeasible: {small}:" in result.stderr


def test_whatif_blames_a_size_the_cluster_refuses_on_the_flag_not_the_file():
    result = run("whatif", str(EXAMPLES / "70b-512-h100.yaml"), "--gpus", "12")
    assert result.exit_code == 2 and result.stderr.startswith("runplan: error: --gpus:"), result.stderr
    assert "whole nodes" in result.stderr


def test_diff_shows_a_change_of_layout_and_memory(tmp_path):
    """Pinning micro_batch 64 moves the 70B example from TP4 DP64 ZeRO-1 to TP8 DP4 CP8 ZeRO-2: the layout is the
    summary's second line, so diff lists each degree that moved (no percentage: TP 4 → 8 is not +100%) and the
    memory per GPU."""
    pinned = tmp_path / "pinned.yaml"
    pinned.write_text((EXAMPLES / "70b-512-h100.yaml").read_text() + "parallel:\n  micro_batch: 64\n")
    result = run("diff", str(EXAMPLES / "70b-512-h100.yaml"), str(pinned))
    assert result.exit_code == 0, result.output
    assert "layout.best.micro_batch: 1 sequence → 64 sequences\n" in result.stdout
    assert "layout.best.tp: 4 → 8\n" in result.stdout and "layout.best.memory_bytes.total:" in result.stdout


def test_whatif_prints_the_model_trained_as_the_plan_summary_does():
    """The generated shape misses the law's N (2e23 compute-optimal: 24.83 B built for N = 24.9 B): whatif's
    params column is the model trained, as `runplan plan`'s summary prints it; the JSON keeps both."""
    from runplan.plan import build_plan
    from runplan.spec import load_plan

    path = EXAMPLES / "2e23-compute-optimal.yaml"
    plan = build_plan(load_plan(path), EXAMPLES)
    gpus = str(plan.inputs["cluster"]["gpus"])
    (record,) = json.loads(run("whatif", str(path), "--gpus", gpus, "--json").stdout)
    assert record["model_params"] == plan.model.total_params
    assert record["params"] == plan.allocation.params != record["model_params"]
    table = run("whatif", str(path), "--gpus", gpus).stdout
    assert "24.83 B" in table and "24.9 B" not in table
