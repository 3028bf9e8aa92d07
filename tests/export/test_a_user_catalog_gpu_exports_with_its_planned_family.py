"""A GPU only the plan's own `catalog:` file names was exported as Hopper-class (the exporter looked it up in the
shipped catalog only): an A100 entry got Megatron's --tp-comm-overlap, which stops at start-up on Ampere (no
CUDA multicast), while the plan had been timed as Ampere. The plan now records the GPU it was timed on
(`layout.gpu`), and the export reads it."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from runplan.cli.app import app

CATALOG = """gpus:
  - name: a100-custom
    hbm_bytes: 80e9
    bf16_flops: 312e12
    hbm_bandwidth_bytes_per_s: 2.039e12
    intra_node_bandwidth_bytes_per_s: 300e9
    inter_node_bandwidth_bytes_per_s: 25e9
    gpus_per_node: 8
    tdp_watts: 400
"""
PLAN = """schema_version: 1
model: llama-3.1-70b
budget: {tokens: 1T}
catalog: [catalog.yaml]
cluster: {gpu: a100-custom, gpus: 512}
"""


def _export(tmp_path, target: str) -> dict:
    (tmp_path / "catalog.yaml").write_text(CATALOG, encoding="utf-8")
    (tmp_path / "plan.yaml").write_text(PLAN, encoding="utf-8")
    result = CliRunner().invoke(app, ["export", str(tmp_path / "plan.yaml"), "--to", target, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_the_plan_records_the_family_it_timed(tmp_path):
    (tmp_path / "catalog.yaml").write_text(CATALOG, encoding="utf-8")
    (tmp_path / "plan.yaml").write_text(PLAN, encoding="utf-8")
    result = CliRunner().invoke(app, ["plan", str(tmp_path / "plan.yaml"), "-f", "json"])
    assert result.exit_code == 0, result.output
    gpu = json.loads(result.stdout)["layout"]["gpu"]
    assert (gpu["name"], gpu["family"]) == ("a100-custom", "ampere")


def test_megatron_leaves_out_tp_overlap_on_the_ampere_entry(tmp_path):
    exported = _export(tmp_path, "megatron")
    commands = [line for line in exported["text"].splitlines() if not line.lstrip().startswith("#")]
    assert not [line for line in commands if "--tp-comm-overlap" in line]
    warnings = exported["warnings"]
    assert any(w.startswith("TP overlap:") and "Ampere" in w for w in warnings), warnings


def test_torchtitan_does_not_say_the_plan_timed_cudnn_attention(tmp_path):
    exported = _export(tmp_path, "torchtitan")
    assert not [w for w in exported["warnings"] if "cuDNN" in w]
