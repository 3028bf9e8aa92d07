"""One plan file planned through the CLI, for tests that check a number or a note the plan prints."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from runplan.cli.app import app


def planned_json(folder: Path, body: str) -> dict[str, Any]:
    """``runplan plan FILE -f json`` of ``folder/plan.yaml`` holding ``schema_version: 1`` and ``body`` (plan keys,
    one per line; relative paths in it are the folder's); asserts exit 0."""
    path = folder / "plan.yaml"
    path.write_text("schema_version: 1\n" + body, encoding="utf-8")
    result = CliRunner().invoke(app, ["plan", str(path), "-f", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)
