"""`stack: {preset: [megatron-core]}` (a list where a name goes) stopped runplan with "internal error: TypeError:
unhashable type: 'list'" (exit 3): the preset lookup ran before the field was checked. Stack._preset_defaults now
leaves a non-string preset to the field's own check, so it is bad input at
its line, naming the key and the presets, exit 2."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.errors import SpecError
from runplan.spec import load_plan_text

BASE = "schema_version: 1\nname: x\nbudget:\n  flops: 2e23\ncluster:\n  gpus: 512\n"


@pytest.mark.parametrize("written", ["[megatron-core]", "{name: deepspeed}", "7", "true"])
def test_a_preset_that_is_not_a_name_is_bad_input_at_its_line(written):
    with pytest.raises(SpecError) as info:
        load_plan_text(BASE + f"stack:\n  preset: {written}\n", "plan.yaml")
    text = str(info.value)
    assert text.startswith("plan.yaml:8: stack.preset: ")
    assert "megatron-core" in text and "torchtitan-fsdp2" in text  # the names it takes


def test_the_cli_exits_2_with_one_line(tmp_path):
    path = tmp_path / "plan.yaml"
    path.write_text(BASE + "stack: {preset: [megatron-core]}\n")
    result = CliRunner().invoke(app, ["plan", str(path)])
    assert result.exit_code == 2, result.output
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"runplan: error: {path}:7: stack.preset: ") and "internal" not in line


def test_a_preset_name_still_works():
    assert load_plan_text(BASE + "stack: {preset: deepspeed}\n").stack.preset == "deepspeed"


def test_the_stack_model_itself_refuses_a_list_preset_as_a_validation_error():
    """The guard sits in Stack's own validator too (every reader of a Stack, not only the plan loader):
    `{preset: [x]}` raised TypeError (unhashable list) out of pydantic."""
    import pydantic

    from runplan.parallel.stack import Stack

    with pytest.raises(pydantic.ValidationError, match="preset"):
        Stack.model_validate({"preset": ["megatron-core"]})
