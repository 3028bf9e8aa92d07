"""`runplan export plan.yaml --to X -o PATH --json` wrote nothing and printed the JSON alone (the synopsis
`[-o PATH] [--json]` says they combine): it writes the file and prints the JSON of what it wrote."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from runplan.cli.app import app

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "2e23-compute-optimal.yaml"


def test_output_and_json_together_write_the_file_and_print_its_json(tmp_path):
    out = tmp_path / "run.toml"
    result = CliRunner().invoke(app, ["export", str(EXAMPLE), "--to", "torchtitan", "-o", str(out), "--json"])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    assert out.read_text(encoding="utf-8") == printed["text"]
    assert printed["target"] == "torchtitan"
    assert f"wrote {out}" in result.stderr
