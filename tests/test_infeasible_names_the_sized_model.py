"""An infeasible plan whose model the budget sizes names that model beside the verdict, not in a layout's line."""

from __future__ import annotations

from typer.testing import CliRunner

from runplan.cli.app import app

PLAN = """schema_version: 1
budget: {flops: 2e23}
cluster: {gpu: h100-sxm, gpus: 8}
parallel: {tp: 1, pp: 1, zero: 0}
"""


def test_the_sized_model_is_named_on_the_verdict_not_on_a_nearest_miss(tmp_path):
    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN)
    result = CliRunner().invoke(app, ["plan", str(plan)])
    assert result.exit_code == 1
    lines = result.output.splitlines()
    note = "(the model the budget sizes: 60 layers × d_model 7168, 41.92 B)"
    assert lines[1].strip() == note  # wrapped under the verdict, above "nearest misses:"
    assert lines[2].strip() == "nearest misses:"
    assert all(note not in line for line in lines[3:])
