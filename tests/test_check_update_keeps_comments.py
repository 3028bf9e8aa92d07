"""`runplan check --update` keeps the user's keys and comments (its --help says so) even when a key follows the
``resolved:`` section: a user who added ``cost:`` at the end of a resolved file lost every comment (the
file was written again from its parsed keys)."""

from __future__ import annotations

from pathlib import Path

import yaml
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.resolved import updated_text

PLAN70 = Path(__file__).resolve().parents[1] / "examples" / "70b-512-h100.yaml"


def run(*args: str):
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})


def test_a_key_after_resolved_keeps_every_comment(tmp_path):
    path = tmp_path / "plan.yaml"
    path.write_text(PLAN70.read_text())
    assert run("check", str(path), "--update").exit_code == 0
    edited = path.read_text() + "# why this run\ncost:\n  pue: 1.1\n"
    path.write_text(edited)
    result = run("check", str(path), "--update")
    assert result.exit_code == 0, result.output
    text = path.read_text()
    comments = [line for line in PLAN70.read_text().splitlines() if line.startswith("#")]
    for line in [*comments, "# why this run"]:
        assert line in text.splitlines(), line  # all were gone
    assert text.index("# why this run\ncost:\n  pue: 1.1") < text.index("\nresolved:")
    data = yaml.safe_load(text)
    assert data["cost"] == {"pue": 1.1} and data["resolved"]["cost"]["pue"] == 1.1
    assert run("check", str(path)).exit_code == 0


def test_the_cut_keeps_what_follows_the_block():
    original = "a: 1\nresolved:\n  x: 1\n  y: [1,\n    2]\n# about b\nb: 2\n"

    class Plan:  # updated_text only asks resolved_section for the numbers
        pass

    import runplan.resolved as resolved

    real = resolved.resolved_section
    resolved.resolved_section = lambda plan: {"x": 3}
    try:
        text = updated_text(original, Plan())  # type: ignore[arg-type]
    finally:
        resolved.resolved_section = real
    assert text == "a: 1\n# about b\nb: 2\nresolved:\n  x: 3\n"
