"""The search leaves out ZeRO stages a stack's engine does not have (Stack.zero_stages); a pinned one is still
evaluated (a pin wins), and now says so in one line: Megatron-LM 2021-22 (the megatron-2022 preset) had only
the distributed optimizer (Megatron-LM 329fe582, February 2022) and torchtitan has no ZeRO-1/2."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app

BASE = ["parallelize", "--model", "llama-3.1-8b", "--gpus", "8", "--json"]


def _search(*extra: str) -> dict:
    result = CliRunner().invoke(app, [*BASE, *extra])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_the_megatron_2022_preset_searches_zero_0_and_1_only():
    assert {row["zero"] for row in _search("--stack", "megatron-2022")["layouts"]} <= {0, 1}


@pytest.mark.parametrize(
    ("stack", "zero", "have"),
    [("megatron-2022", "3", "ZeRO 0, 1 only"), ("torchtitan-fsdp2", "1", "ZeRO 0, 3 only")],
)
def test_a_pinned_stage_the_engine_lacks_is_evaluated_with_a_warning(stack, zero, have):
    found = _search("--stack", stack, "--zero", zero)
    assert {row["zero"] for row in found["layouts"]} == {int(zero)}
    (line,) = [w for w in found["warnings"] if "stack.zero_stages" in w]
    assert f"the pinned ZeRO-{zero} is evaluated, but this stack's engine has {have}" in line


def test_a_stage_the_engine_has_is_not_warned():
    found = _search("--stack", "megatron-2022", "--zero", "1")
    assert not [w for w in found["warnings"] if "stack.zero_stages" in w]
