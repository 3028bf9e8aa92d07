"""``stack.distributed_optimizer: false`` keeps the optimizer states whole (ZeRO-0 only, parallel/stack.py;
docs/parallel.md), so a pinned ZeRO >= 1 (which shards them, Rajbhandari et al. 2020 §5) contradicts it: one
line naming both keys (or the flag) and the two ways out, exit 2, instead of planning ZeRO-3 without a word."""

from pathlib import Path

import pytest
from tests._small_plan import small_8b_plan
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.parallel.request_rules import zero_against_stack

PLAN = small_8b_plan(
    "zero-vs-stack",
    """parallel:
  zero: {zero}
stack:
  distributed_optimizer: false
""",
)


def _run(*args: str):
    return CliRunner().invoke(app, list(args), terminal_width=400)


@pytest.mark.parametrize("command", ["plan", "parallelize", "check"])
def test_a_plan_pinning_zero_3_beside_false_is_refused_at_the_pin(tmp_path: Path, command: str):
    path = tmp_path / "plan.yaml"
    path.write_text(PLAN.format(zero=3))
    result = _run(command, str(path))
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(
        f"runplan: error: {path}:12: parallel.zero: ZeRO-3 shards the optimizer states"
    )
    assert "stack.distributed_optimizer: false" in lines[0] and "parallel.zero: 0" in lines[0]


def test_the_zero_flag_over_such_a_plan_is_refused_naming_the_flag(tmp_path: Path):
    path = tmp_path / "plan.yaml"
    path.write_text(PLAN.replace("parallel:\n  zero: {zero}\n", ""))
    result = _run("parallelize", str(path), "--zero", "2")
    assert result.exit_code == 2
    assert result.output.startswith("runplan: error: --zero: ZeRO-2 shards the optimizer states")
    assert "--zero 0" in result.output and "stack.distributed_optimizer: false" in result.output
    assert _run("parallelize", str(path), "--zero", "0").exit_code == 0


def test_zero_0_and_unpinned_go_with_false():
    assert zero_against_stack(0, False) is None
    assert zero_against_stack(None, False) is None
    assert zero_against_stack(3, None) is None
    assert zero_against_stack(1, True) is None
    assert zero_against_stack(1, False) is not None


def test_the_plan_with_zero_0_pinned_plans(tmp_path: Path):
    path = tmp_path / "plan.yaml"
    path.write_text(PLAN.format(zero=0))
    assert _run("plan", str(path)).exit_code == 0
