"""A warmup longer than the whole run is refused saying so, and every warmup/cooldown overlap says how long the
warmup may be: the tokens before the cooldown starts (WSD, docs/operations.md §1). Before, `warmup_tokens: 3T` on a
2T run said only that "warmup and cooldown overlap".

Hand numbers (the docs' worked example, D = 4e12, 3,008-sequence main batch): scheduled tokens 3.99999e12; the
default cooldown is the last 0.2 of them, so the warmup may take at most 0.8 × 3.99999e12 = 3.200e12 tokens (80.0%).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from runplan.errors import SpecError
from runplan.ops import ScheduleRequest, ScheduleSpec, plan_schedule

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "70b-512-h100.yaml"


def _schedule(**spec):
    return plan_schedule(
        ScheduleRequest(
            training_tokens=4e12,
            compute_flops=2e23,
            seq_len=4096,
            dp=64,
            micro_batch=1,
            spec=ScheduleSpec(**spec),
        )
    )


def test_the_room_before_the_cooldown_by_hand():
    s = _schedule()
    assert s.scheduled_tokens == pytest.approx(3.99999e12, rel=1e-5)
    assert 0.8 * s.scheduled_tokens == pytest.approx(3.2e12, rel=1e-5)


def test_a_warmup_longer_than_the_run_says_it_is():
    with pytest.raises(SpecError) as info:
        _schedule(warmup_tokens=5e12)
    assert info.value.where == "schedule.warmup_tokens"
    text = str(info.value)
    assert "is longer than the run (4 T tokens)" in text
    assert "at most 3.2 T tokens, 80.0% of the run," in text


def test_an_overlap_inside_the_run_says_how_long_the_warmup_may_be():
    with pytest.raises(SpecError) as info:
        _schedule(warmup_fraction=0.9)
    assert info.value.where == "schedule.warmup_fraction"
    text = str(info.value)
    assert "overlap" in text and "longer than the run" not in text
    assert "at most 3.2 T tokens, 80.0% of the run," in text


def test_runplan_plan_prints_it_on_one_line_with_exit_2(tmp_path):
    from typer.testing import CliRunner

    from runplan.cli.app import app

    plan = tmp_path / "plan.yaml"
    plan.write_text(EXAMPLE.read_text() + "schedule:\n  warmup_tokens: 3T\n")
    result = CliRunner().invoke(app, ["plan", str(plan)])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    assert "schedule.warmup_tokens" in lines[0]
    assert "warmup (3 T tokens) is longer than the run (2 T tokens)" in lines[0]
    assert "at most 1.6 T tokens, 80.0% of the run," in lines[0]
