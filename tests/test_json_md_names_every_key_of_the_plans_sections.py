"""docs/json.md's `runplan plan --format json` table names every key a plan's sections hold, not only the
headline ones: a script reading `cost.currency`, `reliability.useful_seconds`, `schedule.scheduled_tokens` or
`checkpointing.bytes_per_param` found them in no document (68 keys of eight sections were unnamed). `inputs` is
the plan file (docs/plan-file.md, `runplan schema`) and `sweep` is `runplan sweep`'s (docs/scaling.md)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app

ROOT = Path(__file__).resolve().parents[1]
SECTIONS = ("allocation", "model", "layout", "schedule", "checkpointing", "reliability", "monitoring", "cost")


def _rows() -> dict[str, str]:
    text = (ROOT / "docs" / "json.md").read_text()
    table = text.split("## `runplan plan --format json`")[1].split("## `warnings` and `notes`")[0]
    return {m.group(1): m.group(2) for m in re.finditer(r"^\| `(\w+)` \| (.*) \| `[\w.]+` \|$", table, re.M)}


@pytest.mark.parametrize("example", ["2e23-inference-optimal.yaml", "moe-mixtral-8x7b.yaml"])
def test_every_section_key_is_named_in_its_row(example):
    result = CliRunner().invoke(app, ["plan", str(ROOT / "examples" / example), "-f", "json"])
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    rows = _rows()
    named = {section: set(re.findall(r"`(\w+)(?:\[\])?`", rows[section])) for section in SECTIONS}
    missing = {s: [k for k in plan[s] if k not in named[s]] for s in SECTIONS}
    missing["cost"] += [f"main.{k}" for k in plan["cost"]["main"] if k not in named["cost"]]
    assert not any(missing.values()), {s: keys for s, keys in missing.items() if keys}
