"""`runplan check` prints the layout cautions `runplan plan` prints (a fully pinned layout that breaks the bubble
cap is answered with a warning, parallel/search.py), the same lines, and keeps its exit code (0 when the numbers
match); a bad --rtol is one line that leads with the flag, as every numeric flag's (cli.common.flag_value)."""

from pathlib import Path

from tests._small_plan import PINNED_BUBBLE_PLAN, PINNED_BUBBLE_WARNING
from typer.testing import CliRunner

from runplan.cli.app import app

PLAN, BUBBLE = PINNED_BUBBLE_PLAN, PINNED_BUBBLE_WARNING


def _run(*args: str):
    return CliRunner().invoke(app, list(args), terminal_width=200)


def test_check_prints_the_bubble_warning_plan_prints_and_still_exits_0(tmp_path: Path):
    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN)
    resolved = tmp_path / "resolved.yaml"
    planned = _run("plan", str(plan), "-f", "yaml", "-o", str(resolved))
    assert planned.exit_code == 0, planned.output
    report = _run("plan", str(plan))
    assert BUBBLE in " ".join(report.output.split())
    checked = _run("check", str(resolved))
    assert checked.exit_code == 0, checked.output
    assert checked.output.startswith("ok: ")
    assert f"warning: {BUBBLE}" in " ".join(checked.output.split())


def test_check_of_a_layout_within_the_bubble_cap_prints_no_bubble_warning(tmp_path: Path):
    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN.replace("  microbatches: 4\n", "  microbatches: 64\n"))
    checked = _run("check", str(plan))
    assert checked.exit_code == 0, checked.output
    assert "bubble" not in checked.output


def test_a_bad_rtol_leads_with_the_flag(tmp_path: Path):
    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN)
    result = _run("check", str(plan), "--rtol", "abc")
    assert result.exit_code == 2
    line = result.output.strip().splitlines()
    assert len(line) == 1 and line[0].startswith("runplan: error: --rtol: expected a number, got 'abc'")
    assert _run("check", str(plan), "--rtol", "2").output.startswith(
        "runplan: error: --rtol: must be positive"
    )
