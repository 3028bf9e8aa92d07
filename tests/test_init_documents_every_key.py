"""`runplan init`: the starter documents every top-level key (the model too), shows each default exactly as the
plan reads it, and refuses at once a budget `runplan plan` would refuse.

Found on a user journey: without --model the starter had no `model:` key at all (the one key that fixes N); it
showed ``failures_per_1000_node_days: 3.7887`` for the default 3.788700810185185 (uncommented, the plan changed);
and ``init --flops 1e40`` or ``--days 1e9`` wrote a file that `runplan plan` then refused (exit 2)."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.ops.reliability import OperationsSpec
from runplan.spec import PlanSpec, load_plan_text
from runplan.starter import _model_class

runner = CliRunner()


def _init(*args: str) -> str:
    result = runner.invoke(app, ["init", *args])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_every_top_level_key_is_in_the_starter():
    text = _init()
    for key in PlanSpec.model_fields:
        if key == "resolved":  # written by `runplan plan -f yaml`, never by hand
            continue
        assert re.search(rf"^(# )?{key}:", text, re.MULTILINE), key  # model was missing
    # commented out, with the field's own help and a preset it can take
    assert "\n# model: llama-3.1-70b\n" in text
    assert "omitted: a shape is generated for the allocated N." in _help(text)
    assert "\n# omitted:" not in text  # folded there, it read as a key to uncomment
    assert load_plan_text(text).model is None  # and the starter still sizes the model itself


def test_with_model_the_key_is_active_with_the_same_help():
    text = _init("--model", "llama-3.1-8b", "--tokens", "1T", "--gpus", "64")
    assert "\nmodel: llama-3.1-8b\n" in text
    assert "omitted: a shape is generated for the allocated N." in _help(text)
    assert "\n# omitted:" not in text


def _help(text: str) -> str:
    """The top-level comments of ``text`` as one line, their folds undone."""
    return " ".join(line.removeprefix("# ") for line in text.splitlines() if line.startswith("# "))


def _uncommented(text: str) -> str:
    """``text`` with every commented-out default of a section's own field made active (the fp8-only fields
    left out: they apply with precision fp8 only, as their help says)."""
    sections = {key: _model_class(field.annotation) for key, field in PlanSpec.model_fields.items()}
    lines, cls, keyed = [], None, set()
    for line in text.splitlines():
        header = re.match(r"^(# )?([a-z_]+):(.*)$", line)
        if header and header.group(2) in sections:
            cls = sections[header.group(2)]
            lines.append(line)
            continue
        field = re.match(r"^  # ([a-z_0-9]+): (.+)$", line)
        known = cls is not None and field is not None and field.group(1) in cls.model_fields
        if known and field and "{...}" not in line and not field.group(1).startswith("fp8"):
            lines.append(f"  {field.group(1)}: {field.group(2)}")
            keyed.add(len(lines) - 1)
            continue
        lines.append(line)
    # a section header left commented whose defaults are now active becomes active itself
    for index in sorted(keyed):
        back = index
        while not re.match(r"^#? ?[a-z_]+:", lines[back]):
            back -= 1
        lines[back] = lines[back].removeprefix("# ")
    return "\n".join(lines) + "\n"


def test_uncommenting_every_default_changes_no_input():
    text = _init("--gpus", "512")
    full = _uncommented(text)
    assert "\n  failures_per_1000_node_days: 3.788700810185185\n" in full  # was 3.7887
    as_given = load_plan_text(text).model_dump(mode="json")
    with_defaults = load_plan_text(full).model_dump(mode="json")
    assert with_defaults == as_given
    assert OperationsSpec().failures_per_1000_node_days == 3.788700810185185


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["--flops", "1e40"], "--flops"),
        (["--days", "1e9", "--gpus", "512"], "--days"),
        (["--model", "70b", "--tokens", "1e28"], "--tokens"),
    ],
)
def test_a_budget_beyond_any_run_is_refused_by_init(args, flag):
    result = runner.invoke(app, ["init", *args])
    assert result.exit_code == 2, result.output  # was 0, and `runplan plan` refused the file
    assert result.stdout == ""
    line = result.stderr.strip()
    assert line.startswith(f"runplan: error: {flag}: a budget of ") and "beyond any trainable run" in line
    assert "\n" not in line and "Traceback" not in result.output


def test_a_budget_runplan_can_plan_is_written():
    assert "flops: 1e30" in _init("--flops", "1e30")


def test_the_keys_inside_a_list_are_documented_too():
    """schedule.batch_ramp is a list of stages: their keys (batch_fraction, token_fraction) had no help."""
    from runplan.ops.schedule import RampStage

    text = " ".join(
        line.strip().removeprefix("# ") for line in _init().splitlines() if line.startswith("  # ")
    )
    for key, field in RampStage.model_fields.items():
        assert f"`{key}`: {(field.description or '').rstrip('.')}" in text, key
