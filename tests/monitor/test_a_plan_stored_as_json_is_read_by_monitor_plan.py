"""A plan stored as `runplan plan FILE -f json -o plan.json` (the plan a run was launched from, docs/json.md) given
to `monitor --plan` was read as a plan file and refused with "plan.json:1: schema_version: schema_version is
missing (add 'schema_version: 1' at the top)", a fix that leads nowhere (the JSON's keys are the plan's sections,
not a plan file's). It is read as stored: the same thresholds, checkpoints and predictions as the plan file gives
(the 70B example, planned now, is the same plan)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from runplan.cli.app import app

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "70b-512-h100.yaml"
TITAN = (
    "[rank0]:[titan] 2026-01-01 00:00:00,000 - root - INFO - step: {step:3d}  loss:  3.0000  grad_norm:  0.3000  "
    "memory: 60.50GiB(76.00%)  tps: 1,100  tflops: 494.12  mfu: 49.96%\n"
)


def _monitor(log: Path, plan: Path) -> dict:
    result = CliRunner().invoke(
        app, ["monitor", str(log), "--plan", str(plan), "--stall-seconds", "0", "--json"]
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_a_stored_plan_json_gives_what_its_plan_file_gives(tmp_path, stored_70b_plan):
    stored = stored_70b_plan
    log = tmp_path / "run.log"
    log.write_text("".join(TITAN.format(step=s) for s in range(1, 301)))
    from_json, from_yaml = _monitor(log, stored), _monitor(log, EXAMPLE)
    assert from_json["summary"]["thresholds"] == "plan"
    assert from_json["summary"]["checkpoints"] == from_yaml["summary"]["checkpoints"]
    assert from_json["vs_plan"] == from_yaml["vs_plan"]
    # by hand: 1,100 tokens/s per GPU on 512 GPUs; ramp steps of 2,624 × 4,096 tokens: 19.08 s a step
    assert from_json["vs_plan"]["tokens_per_second"] == 563_200.0
    assert abs(from_json["vs_plan"]["step_seconds"] - 2624 * 4096 / 563_200) < 1e-9


def test_a_plan_json_missing_a_section_is_one_line_naming_the_flag(tmp_path, stored_70b_plan):
    stored = tmp_path / "plan.json"
    data = json.loads(stored_70b_plan.read_text())
    del data["monitoring"]
    stored.write_text(json.dumps(data))
    log = tmp_path / "run.log"
    log.write_text("".join(TITAN.format(step=s) for s in range(1, 31)))
    result = CliRunner().invoke(app, ["monitor", str(log), "--plan", str(stored)])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "--plan" in lines[0] and "monitoring" in lines[0], result.output
    assert "runplan plan" in lines[0] and "Traceback" not in result.output


def test_a_plan_file_written_in_json_is_planned_not_read_as_stored(tmp_path):
    """A plan file in JSON shares model, schedule and monitoring with a stored plan: the first reader took three
    shared keys for a stored plan and refused it ("inputs: field required"). A stored plan has its ``inputs`` and
    no schema_version; this file is planned, its monitoring: thresholds used."""
    plan = {
        "schema_version": 1,
        "model": "llama-3.1-8b",
        "budget": {"tokens": 1e11},
        "cluster": {"gpu": "h100-sxm", "gpus": 64},
        "schedule": {},
        "monitoring": {"grad_norm_factor": 7.5},
    }
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    log = tmp_path / "run.log"
    log.write_text("".join(TITAN.format(step=s) for s in range(1, 31)))
    report = _monitor(log, path)
    assert report["summary"]["thresholds"] == "plan"
    # by hand: 1,100 tokens/s per GPU on 64 GPUs
    assert report["vs_plan"]["tokens_per_second"] == 70_400.0
