"""`runplan whatif`: the warnings column's count says where the warnings themselves are."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from runplan.cli.app import app

PLAN70 = Path(__file__).resolve().parents[1] / "examples" / "70b-512-h100.yaml"


def test_the_warnings_count_is_explained():
    result = CliRunner().invoke(app, ["whatif", str(PLAN70), "--gpus", "256,512"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert "warnings 2" in result.stdout  # a count: which warnings was said nowhere
    text = " ".join(result.stdout.split())
    assert "warnings: how many cautions the plan at that size carries" in text
    assert "set cluster.gpus to that size" in text and "run `runplan plan`" in text
    assert max(len(line) for line in result.stdout.splitlines()) <= 80
