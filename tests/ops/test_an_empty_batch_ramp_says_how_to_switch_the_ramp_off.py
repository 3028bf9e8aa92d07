"""`schedule.batch_ramp: []` is how a user writes "no ramp"; it was refused with pydantic's "must list at least 1,
got 0", which does not say what to write instead. The ramp is switched off with `batch_fraction: 1`
(docs/operations.md §1, "Rounding"), and the error now says so, on one line, exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from runplan.ops import ScheduleSpec

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "70b-512-h100.yaml"


def test_the_spec_error_names_batch_fraction_1():
    with pytest.raises(ValidationError) as raised:
        ScheduleSpec(batch_ramp=[])
    message = str(raised.value)
    assert "batch_fraction: 1" in message
    assert "at least 1" not in message


def test_runplan_plan_says_it_in_one_line_with_exit_2(tmp_path):
    from typer.testing import CliRunner

    from runplan.cli.app import app

    plan = tmp_path / "plan.yaml"
    plan.write_text(EXAMPLE.read_text() + "schedule:\n  batch_ramp: []\n")
    result = CliRunner().invoke(app, ["plan", str(plan)])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    assert "schedule.batch_ramp" in lines[0] and "batch_fraction: 1" in lines[0]
    assert "Traceback" not in result.output


def test_a_one_stage_ramp_at_the_main_batch_is_the_ramp_switched_off():
    # what the message tells the user to write: one stage at the full batch, merged into the main stage
    spec = ScheduleSpec(batch_ramp=[{"batch_fraction": 1, "token_fraction": 0.015}])
    from runplan.ops import ScheduleRequest, plan_schedule

    s = plan_schedule(
        ScheduleRequest(
            training_tokens=4e12, compute_flops=2e23, seq_len=4096, dp=64, micro_batch=1, spec=spec
        )
    )
    assert [b.name for b in s.batch_stages] == ["main"]
    # main batch 3,008 sequences (docs/operations.md §1 worked example): 4e12 / (3,008 × 4,096) = 324,655.0 steps
    assert s.global_batch_sequences == 3008
    assert s.total_steps == round(4e12 / (3008 * 4096)) == 324_655
    assert s.warnings == []
