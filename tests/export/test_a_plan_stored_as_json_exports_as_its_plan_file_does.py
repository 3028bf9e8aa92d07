"""`runplan export plan.json` of a plan stored by `runplan plan FILE -f json` was refused ("schema_version is
missing"), so a plan checked in as JSON could only be exported by planning its plan file again, with whatever
this runplan plans today. It is exported as stored: the file is byte for byte the export of the plan file it came
from (no line names the input file), warnings and all, the Megatron memory check included (it re-evaluates the
stored layout under Megatron's recomputation from the stored inputs)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "70b-512-h100.yaml"


@pytest.fixture(scope="module")
def stored(stored_70b_plan) -> Path:
    return stored_70b_plan


def _export(plan: Path, target: str) -> dict:
    result = CliRunner().invoke(app, ["export", str(plan), "--to", target, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.parametrize("target", ["megatron", "torchtitan", "deepspeed"])
def test_the_stored_plan_exports_byte_for_byte_as_its_plan_file(stored, target):
    from_json, from_yaml = _export(stored, target), _export(EXAMPLE, target)
    assert str(stored) not in from_json["text"] and str(EXAMPLE) not in from_yaml["text"]
    assert from_json["text"] == from_yaml["text"]
    assert from_json["warnings"] == from_yaml["warnings"]
    assert (
        from_json["filename"]
        == from_yaml["filename"]
        == f"70b-512-h100.{target}."
        + {
            "megatron": "sh",
            "torchtitan": "toml",
            "deepspeed": "json",
        }[target]
    )


def test_the_megatron_memory_check_runs_on_the_stored_plan(stored):
    """The plan's 72.7 GB layout needs 80.1 GB without layernorm and mlp_act recomputed (Megatron-core cannot
    recompute them: test_megatron_memory_warning_is_written_into_the_script.py, the same figures)."""
    script = _export(stored, "megatron")["text"]
    assert (
        "memory: without layernorm, mlp_act recomputed the layout needs 80.1 GB per GPU in Megatron" in script
    )


def test_a_stored_plan_written_to_a_file_says_so(stored, tmp_path):
    out = tmp_path / "train.sh"
    result = CliRunner().invoke(app, ["export", str(stored), "--to", "megatron", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_text() == _export(EXAMPLE, "megatron")["text"]
    assert f"runplan: wrote {out} (megatron, " in result.stderr


def test_a_stored_plan_that_does_not_read_as_one_is_one_line(stored, tmp_path):
    data = json.loads(stored.read_text())
    del data["layout"]
    broken = tmp_path / "plan.json"
    broken.write_text(json.dumps(data))
    result = CliRunner().invoke(app, ["export", str(broken), "--to", "megatron"])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    assert str(broken) in lines[0] and "layout" in lines[0] and "runplan plan" in lines[0]


def test_a_stored_plan_copied_with_its_relative_files_exports(stored, tmp_path):
    """Copied elsewhere, the stored plan needs no plan file beside it (the 70B example names no file)."""
    copy = tmp_path / "sub" / "plan.json"
    copy.parent.mkdir()
    shutil.copy(stored, copy)
    assert _export(copy, "torchtitan")["text"] == _export(EXAMPLE, "torchtitan")["text"]


CATALOG = """gpus:
  - name: h100-ours
    hbm_bytes: 80e9
    bf16_flops: 989e12
    hbm_bandwidth_bytes_per_s: 3.35e12
    intra_node_bandwidth_bytes_per_s: 450e9
    inter_node_bandwidth_bytes_per_s: 50e9
    gpus_per_node: 8
    tdp_watts: 700
    family: hopper
"""
PLAN = """schema_version: 1
model: llama-3.1-70b
budget: {tokens: 1T}
catalog: [catalog.yaml]
cluster: {gpu: h100-ours, gpus: 512}
"""


def test_a_stored_plan_naming_a_catalog_beside_its_plan_file(tmp_path):
    """Beside its plan file the stored plan exports as the plan file does (Megatron's memory check reads the
    catalog its inputs name); stored elsewhere, that relative name reads nothing: one line at the key in the JSON
    (``catalog:``, line 4: its line under ``inputs``) saying where to keep it."""
    (tmp_path / "catalog.yaml").write_text(CATALOG)
    (tmp_path / "plan.yaml").write_text(PLAN)
    beside, elsewhere = tmp_path / "plan.json", tmp_path / "other" / "plan.json"
    for stored in (beside, elsewhere):
        result = CliRunner().invoke(
            app, ["plan", str(tmp_path / "plan.yaml"), "-f", "json", "-o", str(stored)]
        )
        assert result.exit_code == 0, result.output
    assert _export(beside, "megatron")["text"] == _export(tmp_path / "plan.yaml", "megatron")["text"]
    result = CliRunner().invoke(app, ["export", str(elsewhere), "--to", "megatron"])
    assert result.exit_code == 2, result.output
    line = result.output.strip()
    assert line.startswith(f"runplan: error: {elsewhere}:4: catalog: ") and "\n" not in line, result.output
    assert line.endswith(
        "(a stored plan's inputs name files from its plan file's folder: store the JSON beside "
        "its plan file, or make those paths absolute)"
    )
    # the other engines need no input but the stored plan
    assert _export(elsewhere, "torchtitan")["text"] == _export(tmp_path / "plan.yaml", "torchtitan")["text"]
