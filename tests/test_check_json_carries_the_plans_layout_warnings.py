"""`runplan check --json` carries the layout warnings its text output prints (244d266: a fully pinned layout that
breaks the bubble cap, parallel/search.py), as ``warnings``, the same lines; docs/json.md lists every key it
prints. Found on a review: the text said ``warning: layout: the pinned layout breaks a constraint: bubble 1.750 >
0.15`` while the JSON a CI script reads had no such key."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests._small_plan import PINNED_BUBBLE_PLAN, PINNED_BUBBLE_WARNING
from typer.testing import CliRunner

from runplan.cli.app import app

ROOT = Path(__file__).resolve().parents[1]
PLAN, BUBBLE = PINNED_BUBBLE_PLAN, PINNED_BUBBLE_WARNING


def _run(*args: str):
    return CliRunner().invoke(app, list(args), terminal_width=200)


def _check_json(path: Path) -> dict:
    result = _run("check", str(path), "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_check_json_lists_the_bubble_warning_the_text_prints(tmp_path: Path):
    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN)
    text = " ".join(_run("check", str(plan)).output.split())
    record = _check_json(plan)
    assert record["status"] == "unresolved"
    assert [w for w in record["warnings"] if w.startswith("layout: ")] == record["warnings"]
    assert any(w.startswith(BUBBLE) for w in record["warnings"])
    for warning in record["warnings"]:  # the same lines as the text output
        assert f"warning: {' '.join(warning.split())}" in text


def test_check_json_of_a_plan_with_no_layout_warning_has_none():
    # examples/70b-512-h100.yaml: a searched layout within every constraint; its text prints no warning either
    example = ROOT / "examples" / "70b-512-h100.yaml"
    record = _check_json(example)
    assert (record["status"], record["warnings"]) == ("unresolved", [])
    assert "warning:" not in _run("check", str(example)).output


def test_json_md_names_every_key_check_json_prints(tmp_path: Path):
    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN)
    keys = set(_check_json(plan))
    doc = (ROOT / "docs" / "json.md").read_text()
    listed = re.search(r"`runplan check --json` prints `\{([^}]*)\}`", doc)
    assert listed is not None
    assert set(re.findall(r'"(\w+)"', listed.group(1))) == keys
