"""Commands write files through one helper: it refuses the input file and directories, and -o keeps the report."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.errors import SpecError


def test_write_output_refuses_the_input_and_directories(tmp_path):
    from runplan.cli.common import write_output

    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text("x: 1\n")
    with pytest.raises(SpecError, match="overwrite"):
        write_output("text", tmp_path / "." / "plan.yaml", "-o", not_over=plan_file)
    with pytest.raises(SpecError, match="is a directory"):
        write_output("text", tmp_path, "-o")
    with pytest.raises(SpecError, match="is a file, not a directory") as info:
        write_output("text", plan_file / "out.txt", "-o")
    assert info.value.where == "-o"
    written = write_output("text", tmp_path / "new" / "out.txt", "-o")
    assert written.read_text() == "text\n" and plan_file.read_text() == "x: 1\n"


def test_plan_to_a_file_in_terminal_format_renders_the_report(tmp_path):
    plan70 = str(__import__("pathlib").Path(__file__).resolve().parents[1] / "examples" / "70b-512-h100.yaml")
    out = tmp_path / "report.txt"
    result = CliRunner().invoke(app, ["plan", plan70, "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    assert "70b-512-h100" in out.read_text() and result.stdout == ""


def test_a_name_ending_in_a_slash_is_a_directory(tmp_path):
    """`export -o out/` writes <plan>.<target>.<ext> inside a new out/ (its help says so); a command that
    writes one named file refuses the slash in one line, and an empty name is named as such, not as '.'."""
    plan70 = str(__import__("pathlib").Path(__file__).resolve().parents[1] / "examples" / "70b-512-h100.yaml")
    runner = CliRunner()
    out = runner.invoke(app, ["export", plan70, "--to", "deepspeed", "-o", f"{tmp_path}/sub/"])
    assert out.exit_code == 0, out.output
    assert (tmp_path / "sub" / "70b-512-h100.deepspeed.json").is_file()
    refused = runner.invoke(app, ["plan", plan70, "-o", f"{tmp_path}/report/"])
    assert refused.exit_code == 2 and "names a directory, not a file" in refused.output
    assert not (tmp_path / "report").exists()
    empty = runner.invoke(app, ["plan", plan70, "-o", ""])
    assert empty.exit_code == 2 and "--output: the file name is empty" in empty.output
