"""`runplan check --update` on a plan file whose resolved section is already current left a different file each
time: the layout search's wall time (`layout.search_seconds`, a timing, never diffed) was measured anew and
written, so a team running --update in CI or a pre-commit hook got a one-line change to commit on every run.
A current section (every value equal but the timings) now leaves the file byte for byte; any other change, an
input or a number, is still written."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.resolved import is_current, resolved_section

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "moe-mixtral-8x7b.yaml"


def run(*args: str):
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})


def _resolved_copy(tmp_path: Path) -> Path:
    path = tmp_path / "plan.yaml"
    path.write_text("# ours\n" + EXAMPLE.read_text())
    assert run("check", str(path), "--update").exit_code == 0
    return path


def test_a_second_update_leaves_the_file_byte_for_byte(tmp_path):
    path = _resolved_copy(tmp_path)
    first = path.read_bytes()
    result = run("check", str(path), "--update")
    assert result.exit_code == 0, result.output
    assert path.read_bytes() == first  # search_seconds used to differ
    assert result.stdout.startswith("updated: ") and "already current" in result.stdout
    record = json.loads(run("check", str(path), "--update", "--json").stdout)
    assert record["status"] == "updated" and record["changes"] == [] and record["inputs"] == []
    assert path.read_bytes() == first


def test_a_changed_timing_alone_is_current_but_a_changed_input_is_not(tmp_path):
    from runplan.cli.common import plan_from_file

    path = _resolved_copy(tmp_path)
    _, spec, result = plan_from_file(path)
    recorded = spec.resolved
    assert recorded is not None and is_current(recorded, result)
    recorded["layout"]["search_seconds"] = 1234.5
    assert is_current(recorded, result)
    renamed = {**recorded, "inputs": {**recorded["inputs"], "name": "another"}}
    assert not is_current(renamed, result)  # the section records the inputs: an edit of one is written
    reworded = json.loads(json.dumps(resolved_section(result)))
    reworded["checkpointing"]["notes"]["interval_steps"] = "reworded by a newer runplan"
    assert not is_current(reworded, result)


def test_an_edited_input_is_still_written(tmp_path):
    path = _resolved_copy(tmp_path)
    path.write_text(path.read_text().replace("name: ", "name: renamed-", 1))
    before = yaml.safe_load(path.read_text())["resolved"]["inputs"]["name"]
    assert run("check", str(path), "--update").exit_code == 0
    after = yaml.safe_load(path.read_text())["resolved"]["inputs"]["name"]
    assert after.startswith("renamed-") and after != before
