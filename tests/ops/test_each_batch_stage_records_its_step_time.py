"""Each batch stage of a plan records the chosen layout's step time at its micro-batch count
(`schedule.batch_stages[].step_seconds`): the numbers the failure-free training time sums (ops.training_seconds)
and `runplan monitor --plan` compares a log in the ramp with. Before, only the main step was written, and a
monitor scaled it by the batch (70B example: 17.82 s for the ramp instead of 18.25 s: the bubble and the
per-step fixed costs do not shrink with the batch)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from runplan.cli.app import app

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "70b-512-h100.yaml"
runner = CliRunner()


@pytest.fixture(scope="module")
def plan() -> dict:
    result = runner.invoke(app, ["plan", str(EXAMPLE), "-f", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_the_main_stage_is_the_layouts_step_and_the_ramp_is_longer_than_proportional(plan):
    best = plan["layout"]["best"]
    *ramp, main = plan["schedule"]["batch_stages"]
    assert main["step_seconds"] == best["step_seconds"]
    assert main["microbatches_per_replica"] == best["microbatches"]
    assert ramp, "the example ramps its batch"
    for stage in ramp:
        proportional = best["step_seconds"] * stage["global_batch_tokens"] / main["global_batch_tokens"]
        # the bubble (p-1)/v micro-batch times and the fixed per-step costs stay: longer than proportional, and
        # shorter than the main step (fewer micro-batches)
        assert proportional < stage["step_seconds"] < main["step_seconds"]
        assert stage["notes"]["step_seconds"].startswith(
            f"the chosen layout timed at {stage['microbatches_per_replica']:,} micro-batches per replica"
        )


def test_the_failure_free_time_is_the_sum_of_steps_times_stage_steps(plan):
    stages = plan["schedule"]["batch_stages"]
    total = sum(s["steps"] * s["step_seconds"] for s in stages)
    assert plan["reliability"]["useful_seconds"] == pytest.approx(total, rel=1e-12)


def test_a_plan_resolved_before_the_key_existed_checks_clean(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text(EXAMPLE.read_text().replace("../docs/", "docs/"))
    assert runner.invoke(app, ["check", "--update", str(path)]).exit_code == 0
    document = yaml.safe_load(path.read_text())
    for stage in document["resolved"]["schedule"]["batch_stages"]:  # as an older runplan wrote it
        del stage["step_seconds"]
        del stage["notes"]["step_seconds"]
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    result = runner.invoke(app, ["check", str(path)])
    assert result.exit_code == 0 and result.output.startswith("ok: "), result.output
