"""A CP pin on a stack that runs no ring attention (DeepSpeed) is timed, and says how it was timed."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from runplan.cli.app import app


def _warnings(*stack: str) -> list[str]:
    args = ["parallelize", "--model", "llama-3.1-8b", "--gpus", "64", "--seq-len", "131072", "--cp", "8"]
    result = CliRunner().invoke(app, [*args, *stack, "--json"])
    assert result.exit_code == 0, result.output
    return [w for w in json.loads(result.stdout)["warnings"] if w.startswith("context parallelism")]


def test_a_cp_pin_on_deepspeed_says_it_was_timed_as_transformer_engines_ring():
    (warning,) = _warnings("--stack", "deepspeed")
    assert "cp = 8 is pinned, but this stack runs no ring-attention CP" in warning
    assert "timed as TransformerEngine's ring" in warning
    assert not _warnings("--stack", "megatron-core")  # a stack with CP: nothing to say


def test_a_cp_pin_on_megatron_2022_does_not_blame_deepspeed_and_names_the_flag():
    (warning,) = _warnings("--stack", "megatron-2022")
    assert "Megatron-LM before its context parallelism" in warning
    assert "megatron-core or torchtitan-fsdp2 preset (--stack, or stack: in the plan)" in warning
