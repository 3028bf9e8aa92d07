"""A ZeRO stage given as ``--pin zero=2`` over a plan whose ``stack.distributed_optimizer: false`` keeps the optimizer
states whole (ZeRO-0 only, request_rules.zero_against_stack) is refused naming ``--pin zero=2`` and the way out
``--pin zero=0``, the flag the user typed, not ``--zero`` (which they did not); ``--zero 2`` still names ``--zero``."""

from pathlib import Path

from tests._small_plan import small_8b_plan
from typer.testing import CliRunner

from runplan.cli.app import app

PLAN = small_8b_plan(
    "zero-pin-vs-stack",
    """stack:
  distributed_optimizer: false
""",
)


def _run(*args: str):
    return CliRunner().invoke(app, list(args), terminal_width=400)


def test_pin_zero_2_is_refused_naming_the_pin(tmp_path: Path):
    path = tmp_path / "plan.yaml"
    path.write_text(PLAN)
    result = _run("parallelize", str(path), "--pin", "zero=2")
    assert result.exit_code == 2
    (line,) = result.output.strip().splitlines()
    assert line.startswith("runplan: error: --pin: zero=2: ZeRO-2 shards the optimizer states")
    assert "--zero" not in line
    assert "to keep --pin zero=2, or use --pin zero=0" in line
    assert _run("parallelize", str(path), "--pin", "zero=0").exit_code == 0


def test_the_zero_flag_still_names_the_flag(tmp_path: Path):
    path = tmp_path / "plan.yaml"
    path.write_text(PLAN)
    result = _run("parallelize", str(path), "--zero", "3")
    assert result.exit_code == 2
    assert result.output.startswith("runplan: error: --zero: ZeRO-3 shards the optimizer states")
    assert "to keep --zero 3, or use --zero 0" in result.output and "--pin" not in result.output
