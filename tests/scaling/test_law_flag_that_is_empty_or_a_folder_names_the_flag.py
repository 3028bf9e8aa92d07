"""`--law ''` read the current directory ("runplan: error: .: is a directory") and `--law DIR` named only the
folder: both are one line naming --law, exit 2 (README: bad input names the flag)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app

runner = CliRunner()


@pytest.mark.parametrize("command", ["allocate", "sweep"])
@pytest.mark.parametrize("value", ["", "  "])
def test_an_empty_law_names_the_flag(command, value, one_error_line):
    line = one_error_line(runner.invoke(app, [command, "--flops", "2e23", "--law", value]))
    assert "--law" in line and "besiroglu2024" in line  # says what to give instead
    assert ".: is a directory" not in line


def test_a_folder_given_as_the_law_names_the_flag(tmp_path, one_error_line):
    line = one_error_line(runner.invoke(app, ["allocate", "--flops", "2e23", "--law", str(tmp_path)]))
    assert "--law" in line and "directory" in line


def test_an_empty_law_file_in_a_plan_names_its_key(tmp_path, one_error_line):
    # law: {file: ""} resolved to the plan's own folder: "/tmp/x: is a directory", with no file:line or key
    plan = tmp_path / "p.yaml"
    plan.write_text(
        'schema_version: 1\nname: t\nbudget:\n  flops: 2e23\nlaw:\n  file: ""\ncluster: {gpu: h100-sxm, gpus: 8}\n'
    )
    line = one_error_line(runner.invoke(app, ["allocate", str(plan)]))
    assert "p.yaml:6" in line and "law.file" in line
