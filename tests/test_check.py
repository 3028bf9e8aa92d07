"""`runplan check`: an unresolved plan says so, drift leads with days and cost, --json gives records,
--update rewrites the resolved section in place and keeps the user's keys and comments."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.resolved import HEADLINE_PATHS, diff_changes

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "moe-mixtral-8x7b.yaml"


def run(*args: str):
    return CliRunner().invoke(app, list(args))


@pytest.fixture
def plan_copy(tmp_path):
    path = tmp_path / "plan.yaml"
    path.write_text("# my own comment, kept by --update\n" + EXAMPLE.read_text())
    return path


def _set_price(path: Path, price: float) -> None:
    text = path.read_text()
    document = yaml.safe_load(text)
    old = document["cluster"].get("price_per_gpu_hour")
    assert old is not None
    path.write_text(text.replace(f"price_per_gpu_hour: {old}", f"price_per_gpu_hour: {price}", 1))


def test_a_plan_without_resolved_is_not_reported_ok(plan_copy):
    result = run("check", str(plan_copy))
    assert result.exit_code == 0
    assert result.stdout.startswith("unresolved: ") and "--update" in result.stdout
    data = json.loads(run("check", str(plan_copy), "--json").stdout)
    assert data["status"] == "unresolved" and data["resolved"] is False and data["changes"] == []


def test_update_writes_the_resolved_section_and_keeps_comments(plan_copy):
    original = plan_copy.read_text()
    result = run("check", str(plan_copy), "--update")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("updated: ")
    text = plan_copy.read_text()
    assert text.startswith(original.rstrip("\n"))  # the user's keys and comments, byte for byte
    assert "resolved" in yaml.safe_load(text)
    assert run("check", str(plan_copy)).stdout.startswith("ok: ")
    # a changed input: drift (exit 1), then --update (exit 0) makes it ok again; the section is replaced
    _set_price(plan_copy, 4.0)
    assert run("check", str(plan_copy)).exit_code == 1
    updated = run("check", str(plan_copy), "--update")
    assert updated.exit_code == 0 and "cost.main.cost" in updated.stdout
    assert run("check", str(plan_copy)).exit_code == 0
    assert plan_copy.read_text().count("\nresolved:") == 1


def test_drift_lists_days_and_cost_first_and_json_records(plan_copy):
    assert run("check", str(plan_copy), "--update").exit_code == 0
    text = plan_copy.read_text().replace("gpus: 256", "gpus: 512", 1)
    assert text != plan_copy.read_text()
    plan_copy.write_text(text)
    result = run("check", str(plan_copy))
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    assert lines[0].startswith("drift: ")
    assert lines[1].startswith("  ") and "derived value(s) changed" in lines[1]
    # the edit the numbers follow, from the inputs the resolved section records (defaults filled)
    assert lines[2] == "  inputs changed since the file was resolved (1, defaults included):"
    assert lines[3] == "    cluster.gpus: 256 GPUs → 512 GPUs (+100.00%)"
    assert lines[4].startswith("  cost.main.wall_clock_days: ") and lines[5].startswith("  cost.main.cost: ")
    assert "`runplan check --update" in result.stderr  # how to accept an intended change
    data = json.loads(run("check", str(plan_copy), "--json").stdout)
    (edit,) = data["inputs"]
    assert (edit["path"], edit["old"], edit["new"]) == ("cluster.gpus", 256, 512)
    first = data["changes"][0]
    assert first["path"] == "cost.main.wall_clock_days" and first["section"] == "cost"
    # twice the GPUs: close to half the days (the layout and goodput move it a little)
    assert first["new"] == pytest.approx(first["old"] / 2, rel=0.15)
    assert first["relative_change"] == pytest.approx((first["new"] - first["old"]) / first["old"])


def test_drift_without_an_edit_says_no_input_changed_and_an_old_file_says_nothing(plan_copy):
    """A resolved number that no longer matches while every input is as recorded: the drift came with runplan,
    a catalog or the calibration, and check says so. A file resolved before the section recorded its inputs
    has no such line, and JSON `inputs` is null."""
    assert run("check", str(plan_copy), "--update").exit_code == 0
    data = yaml.safe_load(plan_copy.read_text())
    data["resolved"]["cost"]["main"]["cost"] *= 1.5  # as if runplan's cost model had changed
    plan_copy.write_text(yaml.safe_dump(data, sort_keys=False))
    result = run("check", str(plan_copy))
    assert result.exit_code == 1
    assert (
        "no input changed since the file was resolved (defaults included): the numbers moved with runplan"
        in (" ".join(result.stderr.split()))
    )
    assert json.loads(run("check", str(plan_copy), "--json").stdout)["inputs"] == []
    del data["resolved"]["inputs"]
    plan_copy.write_text(yaml.safe_dump(data, sort_keys=False))
    older = run("check", str(plan_copy))
    assert older.exit_code == 1 and "input" not in older.stderr
    assert json.loads(run("check", str(plan_copy), "--json").stdout)["inputs"] is None


def test_diff_changes_orders_headline_then_path():
    old = {"z": {"a": 1.0}, "cost": {"main": {"cost": 10.0, "wall_clock_days": 2.0}}, "b": [1]}
    new = {"z": {"a": 2.0}, "cost": {"main": {"cost": 11.0, "wall_clock_days": 1.0}}, "b": [1, 2]}
    paths = [c.path for c in diff_changes(old, new)]
    assert paths == ["cost.main.wall_clock_days", "cost.main.cost", "b", "z.a"]
    assert HEADLINE_PATHS[:2] == ("cost.main.wall_clock_days", "cost.main.cost")
    assert diff_changes(old, new)[0].record()["relative_change"] == pytest.approx(-0.5)


def test_check_json_gives_ci_a_record_for_an_infeasible_plan(tmp_path):
    plan = tmp_path / "small.yaml"
    text = (EXAMPLE.parent / "70b-512-h100.yaml").read_text().replace("gpus: 512", "gpus: 64")
    plan.write_text(text + "parallel: {tp: 1, pp: 1, zero: 1}\n")  # ZeRO-1 pinned: fully sharded would fit
    result = run("check", str(plan), "--json")
    assert result.exit_code == 1
    record = json.loads(result.stdout)
    assert record["status"] == "infeasible" and "memory" in record["reason"]
    assert any("parallel.zero: 3" in s for s in record["suggestions"])  # plan keys, not parallelize's flags


@pytest.mark.parametrize("key", ["resolved:  # numbers by runplan", '"resolved":'])
def test_update_replaces_a_resolved_block_written_with_a_comment_or_quotes(plan_copy, key):
    """`resolved:  # note` was not recognised: --update appended a second resolved block and the next check
    refused the duplicate key (exit 2) after reporting success."""
    assert run("check", str(plan_copy), "--update").exit_code == 0
    plan_copy.write_text(plan_copy.read_text().replace("\nresolved:\n", f"\n{key}\n"))
    _set_price(plan_copy, 3.0)
    assert run("check", str(plan_copy), "--update").exit_code == 0
    text = plan_copy.read_text()
    assert sum(line.startswith(("resolved", '"resolved"')) for line in text.splitlines()) == 1
    assert run("check", str(plan_copy)).exit_code == 0


def test_update_keeps_a_crlf_file_crlf(tmp_path):
    path = tmp_path / "plan.yaml"
    path.write_bytes(EXAMPLE.read_text().replace("\n", "\r\n").encode())
    assert run("check", str(path), "--update").exit_code == 0
    data = path.read_bytes()
    assert data.count(b"\n") == data.count(b"\r\n")  # no bare LF among the new block's lines
    assert run("check", str(path)).exit_code == 0


def test_a_hand_written_nan_is_drift_in_json_not_a_crash(plan_copy):
    assert run("check", str(plan_copy), "--update").exit_code == 0
    text = plan_copy.read_text()
    at = text.index("\n      hfu: ", text.index("\nresolved:"))
    end = text.index("\n", at + 1)
    plan_copy.write_text(text[:at] + "\n      hfu: .nan" + text[end:])
    result = run("check", str(plan_copy), "--json")
    assert result.exit_code == 1, result.output
    change = json.loads(result.stdout)["changes"][0]
    assert (
        change["path"] == "layout.best.hfu" and change["old"] == ".nan" and change["relative_change"] is None
    )


def test_a_reworded_citation_and_new_default_keys_are_no_drift_a_new_value_is():
    # after a runplan upgrade: a catalog entry's `source` reworded (prose), a field written as null (a dense
    # model's unset MoE balance loss) or a shape field at its default (no window, no post-norms: what older
    # runplans assumed) move no number; a shape field off its default does (a model that now has a window)
    old = {"model": {"shape": {"d_model": 8192, "source": "config.json"}}}
    new = {
        "model": {
            "shape": {
                "d_model": 8192,
                "source": "config.json; transformers' MixtralSparseMoeBlock",
                "router_aux_loss_coef": None,
                "router_topk_norm": True,
                "post_norms": False,
                "sliding_window": 4096,
            }
        },
        "layout": {"new_number": 0},  # a section older files lack: new as a whole
    }
    changes = diff_changes(old, new)
    assert [(c.path, c.kind) for c in changes] == [
        ("layout", "new"),
        ("model.shape.sliding_window", "new"),
    ]


def test_a_layouts_per_stage_memory_totals_are_no_drift_for_a_file_resolved_before_them():
    # each layout's memory_total_bytes_by_stage (first and last pipeline stage) came after files resolved without
    # it; its larger total is the memory_bytes.total those files already hold, so it is no change of the plan;
    # the same key with a moved value in a file that holds it is
    old = {"layout": {"best": {"memory_bytes": {"total": 7.0e10}}}}
    stages = {"first": 7.0e10, "last": 5.5e10}
    new = {"layout": {"best": {"memory_bytes": {"total": 7.0e10}, "memory_total_bytes_by_stage": stages}}}
    assert diff_changes(old, new) == []
    moved = {**new["layout"]["best"], "memory_total_bytes_by_stage": {"first": 7.0e10, "last": 6.0e10}}
    changes = diff_changes(new, {"layout": {"best": moved}})
    assert [(c.path, c.kind) for c in changes] == [
        ("layout.best.memory_total_bytes_by_stage.last", "changed")
    ]
