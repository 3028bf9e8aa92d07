"""The JSON Schema editors check plan files with (`runplan schema`) accepts what `runplan plan` accepts and refuses
what it refuses, for the two forms the docs name that it used to get wrong: `stack:` written as a preset name
(docs/plan-file.md: "a preset (...) or {preset: ..., <field>: override}"), and a plan with no `budget:` (every
plan needs one: plan.py refuses it, "a plan needs a budget")."""

from __future__ import annotations

import jsonschema
import pytest
import yaml

from runplan.errors import SpecError
from runplan.parallel.stack import PRESETS
from runplan.spec import load_plan_text, plan_json_schema

BASE = "schema_version: 1\nname: x\nbudget:\n  flops: 2e23\ncluster:\n  gpu: h100-sxm\n  gpus: 512\n"


def _schema_errors(text: str) -> list[str]:
    validator = jsonschema.Draft202012Validator(plan_json_schema())
    return [error.message for error in validator.iter_errors(yaml.safe_load(text))]


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_a_stack_preset_name_is_valid_for_the_schema_as_for_runplan(preset):
    text = BASE + f"stack: {preset}\n"
    assert load_plan_text(text).stack.preset == preset  # runplan reads it ...
    assert _schema_errors(text) == []  # ... and an editor does not flag it


def test_an_unknown_stack_preset_name_is_refused_by_both():
    text = BASE + "stack: megatron\n"
    assert _schema_errors(text) != []
    with pytest.raises(SpecError):
        load_plan_text(text)


def test_the_mapping_form_of_stack_still_validates():
    assert _schema_errors(BASE + "stack: {preset: deepspeed, flash_attention: false}\n") == []
    assert _schema_errors(BASE + "stack: {preset: deepspeed, flash_atention: false}\n") != []  # misspelt


def test_a_plan_without_a_budget_is_flagged_by_the_schema():
    text = BASE.replace("budget:\n  flops: 2e23\n", "")
    assert "budget" in plan_json_schema()["required"]
    assert any("'budget' is a required property" in message for message in _schema_errors(text))
    assert _schema_errors(BASE) == []


def test_the_budget_description_says_it_is_always_required():
    # a fixed model's tokens are themselves a budget key (budget.tokens): no plan goes without budget:
    description = plan_json_schema()["properties"]["budget"]["description"]
    assert "unless" not in description and "required" in description


def test_an_empty_budget_is_flagged_by_the_schema_as_runplan_refuses_it():
    """`budget:` left empty is null in YAML: runplan refuses it ("a plan needs a budget"), so the schema may not
    take null for it (it did: anyOf [Budget, null])."""
    text = BASE.replace("budget:\n  flops: 2e23\n", "budget:\n")
    assert _schema_errors(text)
    assert {"type": "null"} not in plan_json_schema()["properties"]["budget"]["anyOf"]
