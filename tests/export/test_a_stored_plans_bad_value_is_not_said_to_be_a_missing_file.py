"""`runplan export plan.json --to megatron` reads a stored plan's inputs again for Megatron's memory check, and
every error there without a hint was given the hint "a stored plan's inputs name files from its plan file's
folder: store the JSON beside its plan file, or make those paths absolute". That fix is for a file the inputs
name (a catalog beside the plan file); a stored plan whose inputs hold a bad value (an edited
``stack.fp8_recipe: bogus``) was sent to move the JSON, which changes nothing. Only a file that cannot be read
gets that hint now; a bad value keeps its own one line, at its key under ``inputs``."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from runplan.cli.app import app

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "70b-512-h100.yaml"
FOLDER_HINT = "a stored plan's inputs name files from its plan file's folder"


def test_a_bad_value_in_a_stored_plans_inputs_is_not_sent_to_move_the_json(tmp_path):
    path = tmp_path / "plan.json"
    result = CliRunner().invoke(app, ["plan", str(EXAMPLE), "-f", "json", "-o", str(path)])
    assert result.exit_code == 0, result.output
    data = json.loads(path.read_text())
    data["inputs"]["stack"] = {"fp8_recipe": "bogus"}
    path.write_text(json.dumps(data, indent=1))
    result = CliRunner().invoke(app, ["export", str(path), "--to", "megatron"])
    assert result.exit_code == 2, result.output
    (error,) = [line for line in result.output.splitlines() if line.startswith("runplan: error:")]
    assert "stack.fp8_recipe: 'bogus' is not one of" in error
    assert FOLDER_HINT not in result.output


def test_a_catalog_missing_beside_a_stored_plan_still_says_where_to_put_it(tmp_path):
    (tmp_path / "plans").mkdir()
    catalog = (
        "gpus:\n  - name: ours\n    hbm_bytes: 80e9\n    bf16_flops: 312e12\n    hbm_bandwidth_bytes_per_s: 2e12\n"
        "    intra_node_bandwidth_bytes_per_s: 300e9\n    inter_node_bandwidth_bytes_per_s: 25e9\n"
        "    gpus_per_node: 8\n    tdp_watts: 400\n    family: ampere\n"
    )
    (tmp_path / "plans" / "catalog.yaml").write_text(catalog)
    plan = "schema_version: 1\nmodel: llama-3.1-8b\nbudget: {tokens: 100B}\ncatalog: [catalog.yaml]\n"
    (tmp_path / "plans" / "plan.yaml").write_text(plan + "cluster: {gpu: ours, gpus: 64}\n")
    stored = tmp_path / "plan.json"
    result = CliRunner().invoke(
        app, ["plan", str(tmp_path / "plans" / "plan.yaml"), "-f", "json", "-o", str(stored)]
    )
    assert result.exit_code == 0, result.output
    result = CliRunner().invoke(app, ["export", str(stored), "--to", "megatron"])
    assert result.exit_code == 2, result.output
    assert "cannot read file" in result.output and FOLDER_HINT in " ".join(result.output.split())
