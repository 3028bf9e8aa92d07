"""`runplan export --to megatron` of ZeRO-3 with FSDP mixed precision writes Megatron's PyTorch FSDP2 path, where
Float16OptimizerWithFloat16Params keeps an fp32 master beside each bf16 shard: 2 bytes per parameter more than the
plan counted (its fp32 shards are the master), sharded over d·c (export/megatron.py ``_torch_fsdp2_precision``).
The Megatron memory check (``memory_as_megatron_runs_it``) adds them, from the same count the warning states
(``torch_fsdp2_master_bytes``), so a layout the extra bytes push over the limit is said to be over it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.export._cli import run_export

from runplan.export.megatron import memory_as_megatron_runs_it
from runplan.plan import build_plan
from runplan.spec import load_plan

PLAN = """schema_version: 1
name: fsdp2
model: llama-3.1-8b
budget:
  tokens: 100B
training:
  seq_len: 4096
cluster:
  gpu: h100-sxm
  gpus: 8
parallel: {{tp: 1, pp: 1, cp: 1, dp: 8, zero: 3, micro_batch: 1, recompute: full}}
stack: torchtitan-fsdp2
{constraints}"""
PARAMS = 8_030_261_248  # Llama 3.1 8B: every weight on each GPU at t = p = 1 (untied embedding and head)


def _plan(tmp_path: Path, constraints: str = ""):
    path = tmp_path / "plan.yaml"
    path.write_text(PLAN.format(constraints=constraints))
    spec = load_plan(path)
    return path, spec, build_plan(spec, tmp_path)


def test_the_check_adds_two_bytes_per_parameter_over_the_eight_shards(tmp_path: Path):
    _, spec, plan = _plan(tmp_path)
    extra = 2 * PARAMS / 8  # 2.008 GB per GPU
    planned = plan.layout.best.memory_bytes.total
    warning = memory_as_megatron_runs_it(spec, plan, tmp_path)
    assert warning is not None and warning.startswith("memory: with the fp32 master its FSDP2 keeps")
    assert f"needs {(planned + extra) / 1e9:.1f} GB per GPU in Megatron" in warning
    assert warning.endswith("within the limit")


def test_a_layout_the_master_pushes_over_the_limit_is_said_to_be_over_it(tmp_path: Path):
    _, _, plan = _plan(tmp_path)
    planned = plan.layout.best.memory_bytes.total
    # the limit 1 GB above the plan's memory: fits as planned, not with Megatron's 2.008 GB more
    headroom = 1 - (planned + 1e9) / 80e9
    path, spec, plan = _plan(tmp_path, f"constraints: {{memory_headroom_fraction: {headroom:.6f}}}\n")
    assert plan.layout.best.memory_bytes.total == pytest.approx(planned, rel=1e-12)
    warning = memory_as_megatron_runs_it(spec, plan, tmp_path)
    assert warning is not None
    # the remedy is re-planned before it is offered: Megatron FSDP (fsdp_mixed_precision false) keeps fp32
    # gradients, which the plan counts: 29.9 GB against the 28.8 GB limit, so that plan is infeasible
    assert (
        "over the limit: no one change fits, re-planned: set stack.fsdp_mixed_precision: false is infeasible"
        in warning
    )
    result = run_export(str(path), "--to", "megatron", "--json")
    assert result.exit_code == 0, result.output
    assert warning in json.loads(result.stdout)["warnings"]
