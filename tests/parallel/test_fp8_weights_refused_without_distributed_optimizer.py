"""fp8 weights (stack fp8_param_gather, Megatron-LM --fp8-param-gather) with the distributed optimizer turned
off (stack distributed_optimizer: false, ZeRO-0 only): Megatron-LM's validate_args asserts "--fp8-param-gather
only supported with distributed optimizer, torch fsdp2, megatron fsdp" (megatron/training/arguments.py), and
the search (search.build_grid) keeps ZeRO >= 1 for fp8 weights and ZeRO 0 for the stack, so nothing is left.
It must be refused as bad input at the stack key (exit 2, one line), not crash on an empty grid."""

from pathlib import Path

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.parallel.stack import Stack

PLAN = """\
schema_version: 1
name: fp8-weights-zero0
model: llama-3.1-70b
budget:
  tokens: 2T
training:
  seq_len: 4096
cluster:
  gpu: h100-sxm
  gpus: 512
stack: {preset: megatron-core, precision: fp8, fp8_recipe: delayed, fp8_param_gather: true,
        distributed_optimizer: false}
"""


def test_stack_refuses_fp8_weights_without_the_distributed_optimizer():
    with pytest.raises(ValueError, match="fp8_param_gather"):
        Stack(precision="fp8", fp8_param_gather=True, distributed_optimizer=False)


@pytest.mark.parametrize("sharded", [None, True])
def test_fp8_weights_with_the_distributed_optimizer_or_searched_sharding_still_build(sharded):
    assert Stack(precision="fp8", fp8_param_gather=True, distributed_optimizer=sharded).fp8_param_gather


def test_plan_refuses_fp8_weights_at_zero0_in_one_line(tmp_path: Path):
    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN)
    res = CliRunner().invoke(app, ["plan", str(plan)])
    assert res.exit_code == 2, res.output
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert len(lines) == 1, res.output
    assert "stack.distributed_optimizer" in lines[0]
    assert "fp8_param_gather" in lines[0]
    assert "Traceback" not in res.output
