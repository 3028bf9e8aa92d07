"""An inline `cluster.gpu` spec without `family:` is timed with the family its name says (runplan.catalog
.with_family: a100-custom is ampere); the export read it as Hopper-class (family None), so its attention-kernel
rate and GPU family disagreed with the plan's timing."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.export._common import facts
from runplan.plan import RunPlan

PLAN = """schema_version: 1
model: llama-3.1-8b
budget: {tokens: 20B}
cluster:
  gpus: 64
  gpu: {name: a100-custom, hbm_bytes: 80e9, bf16_flops: 312e12, hbm_bandwidth_bytes_per_s: 2.039e12,
        intra_node_bandwidth_bytes_per_s: 300e9, inter_node_bandwidth_bytes_per_s: 25e9, gpus_per_node: 8,
        tdp_watts: 400}
"""


def test_the_inline_a100_exports_as_ampere(tmp_path):
    path = tmp_path / "plan.yaml"
    path.write_text(PLAN, encoding="utf-8")
    result = CliRunner().invoke(app, ["plan", str(path), "-f", "json"])
    assert result.exit_code == 0, result.output
    f = facts(RunPlan.model_validate(json.loads(result.stdout)))
    assert f.gpu_family == "ampere"
    assert f.attention_speedup == 1.0  # FlashAttention-2 on Ampere (timing.attention_kernel_speedup)
