"""The end of a batch ramp doubles the step time with the batch: no slowdown. Every run with a ramp got
"throughput_drop ... quarantine ... find and exclude the slow GPU" (verdict act) when its ramp ended, even one
exactly on plan. The throughput baseline now starts afresh at each batch change: the log's printed global batch,
else the plan's batch stages (examples/70b-512-h100.yaml: ramp 18.25 s to step 2,791, then 36.07 s)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from runplan.cli.app import app

PLAN = "examples/70b-512-h100.yaml"
runner = CliRunner()


def _log(tmp_path, ramp_s: float, main_s: float, batch: bool = False, slow_from: int | None = None):
    rng = np.random.default_rng(0)
    rows = []
    for step in range(1, 4001):
        seconds = (ramp_s if step < 2791 else main_s) * (1 + 0.005 * rng.standard_normal())
        if slow_from is not None and step >= slow_from:
            seconds *= 1.2  # a straggler: 20% slower from here on
        row = {"step": step, "loss": 3.0 - 1e-5 * step, "step_seconds": seconds}
        if batch:
            row["global_batch_size"] = 2624 if step < 2791 else 5312
        rows.append(row)
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _kinds(path, *flags):
    result = runner.invoke(app, ["monitor", str(path), "--json", "--stall-seconds", "0", *flags])
    data = json.loads(result.stdout)
    return [e["kind"] for e in data["events"]], data["verdict"]


def test_a_ramp_on_plan_is_no_drop_with_the_plan(tmp_path):
    kinds, verdict = _kinds(_log(tmp_path, 18.25, 36.07), "--plan", PLAN)
    assert "throughput_drop" not in kinds and verdict == "healthy"


def test_a_ramp_printed_in_the_log_is_no_drop_without_a_plan(tmp_path):
    kinds, verdict = _kinds(_log(tmp_path, 18.25, 36.07, batch=True))
    assert "throughput_drop" not in kinds and verdict == "healthy"


def test_without_a_plan_or_a_printed_batch_the_doubling_is_still_a_drop(tmp_path):
    """Nothing says the batch changed: a doubled step time is a slowdown as far as the log shows."""
    kinds, _ = _kinds(_log(tmp_path, 18.25, 36.07))
    assert "throughput_drop" in kinds


@pytest.mark.parametrize("flags", [("--plan", PLAN), ()])
def test_a_straggler_after_the_ramp_is_still_found(tmp_path, flags):
    path = _log(tmp_path, 18.25, 36.07, batch=not flags, slow_from=3500)
    kinds, _ = _kinds(path, *flags)
    assert "throughput_drop" in kinds
