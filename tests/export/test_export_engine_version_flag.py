"""``runplan export --engine-version``: the engine release the file is for (export/_versions.py). Megatron-LM
takes a Megatron-Core release, 0.15-0.17 (the default target) or 0.18-0.20 (``--step-batch-size-schedule``);
torchtitan and DeepSpeed take their one checked release. Anything else: one line naming the flag and the accepted
values, exit 2, before the plan is built."""

from __future__ import annotations

import json

import pytest
from tests.export._cli import run_export
from tests.export._plans import EXAMPLES

PLAN = str(EXAMPLES / "70b-512-h100.yaml")


_run = run_export


def test_megatron_0_20_writes_the_step_schedule_and_no_ramp_warning() -> None:
    result = _run(PLAN, "--to", "megatron", "--engine-version", "core_v0.18.0", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert "--step-batch-size-schedule '0:" in data["text"] and "--rampup-batch-size" not in data["text"]
    assert "--engine-version 0.20: Megatron-Core 0.18-0.20" in data["text"].splitlines()[3]
    assert not [w for w in data["warnings"] if w.startswith("batch ramp")]
    assert "#4411" not in " ".join(result.stderr.split())


def test_without_the_flag_the_export_is_the_0_17_target() -> None:
    default = _run(PLAN, "--to", "megatron")
    same = _run(PLAN, "--to", "megatron", "--engine-version", "0.17")
    assert default.exit_code == same.exit_code == 0
    assert default.stdout == same.stdout and "--rampup-batch-size" in default.stdout


@pytest.mark.parametrize(
    ("target", "version", "accepted"),
    [
        ("megatron", "0.21", "0.15-0.17 (default) or 0.18-0.20"),
        ("megatron", "0.14", "0.15-0.17 (default) or 0.18-0.20"),
        ("megatron", "a\nb", "0.15-0.17 (default) or 0.18-0.20"),
        ("megatron", "x" * 300, "0.15-0.17 (default) or 0.18-0.20"),
        ("torchtitan", "0.3", "0.2 (default)"),
        ("deepspeed", "0.20", "0.19 (default)"),
    ],
)
def test_an_unchecked_version_is_one_line_naming_the_flag_exit_2(
    target: str, version: str, accepted: str
) -> None:
    result = _run("no-such-plan.yaml", "--to", target, "--engine-version", version)
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("runplan: error: --engine-version: no checked"), lines
    assert accepted in lines[0] and "Traceback" not in result.output
    assert len(lines[0]) < 400  # a long value is cut


def test_torchtitan_and_deepspeed_accept_their_checked_release(tmp_path) -> None:
    for target, version in (("torchtitan", "0.2.2"), ("deepspeed", "0.19.8")):
        plain = _run(PLAN, "--to", target)
        versioned = _run(PLAN, "--to", target, "--engine-version", version)
        assert plain.exit_code == versioned.exit_code == 0
        assert plain.stdout == versioned.stdout
