"""A file a plan names under ``law: {file: X}`` or ``catalog: [X]`` that cannot be read is an error at the plan's
``file:line`` and key, as ``calibration:``, ``schedule.hyperparams:`` and ``model: config.json`` are: it said only
"/abs/path/missing.yaml: cannot read file", with no hint of which plan key named it."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app

HEAD = "schema_version: 1\nname: t\n"
LAW_PLAN = (
    HEAD + "budget: {flops: 2e23}\nlaw:\n  file: missinglaw.yaml\ncluster: {gpu: h100-sxm, gpus: 512}\n"
)
CATALOG_PLAN = HEAD + "model: 7b\ncatalog: [missingcat.yaml]\nbudget: {tokens: 1T}\ncluster: {gpus: 64}\n"
TWO_CATALOGS = (
    HEAD
    + "model: 7b\ncatalog:\n  - cat.yaml\n  - missingcat.yaml\nbudget: {tokens: 1T}\ncluster: {gpus: 64}\n"
)
GOOD_CATALOG = "gpus: []\n"

COMMANDS = [
    ["plan"],
    ["allocate"],
    ["parallelize"],
    ["check"],
    ["export", "--to", "megatron"],
    ["whatif", "--gpus", "64,128"],  # its catalog cautions are read before any size is planned
]


def _error(tmp_path, body: str, argv: list[str], one_error_line) -> str:
    (tmp_path / "cat.yaml").write_text(GOOD_CATALOG)
    path = tmp_path / "p.yaml"
    path.write_text(body)
    result = CliRunner().invoke(app, [argv[0], str(path), *argv[1:]], env={"COLUMNS": "200"})
    return one_error_line(result)


@pytest.mark.parametrize("argv", COMMANDS, ids=[c[0] for c in COMMANDS])
def test_a_missing_law_file_names_law_file_at_its_line(tmp_path, argv, one_error_line):
    line = _error(tmp_path, LAW_PLAN, argv, one_error_line)
    assert line.startswith(f"runplan: error: {tmp_path / 'p.yaml'}:5: law.file: "), line
    assert line.endswith("missinglaw.yaml: cannot read file: No such file or directory"), line


@pytest.mark.parametrize("argv", COMMANDS, ids=[c[0] for c in COMMANDS])
def test_a_missing_catalog_file_names_catalog_at_its_line(tmp_path, argv, one_error_line):
    line = _error(tmp_path, CATALOG_PLAN, argv, one_error_line)
    assert line.startswith(f"runplan: error: {tmp_path / 'p.yaml'}:4: catalog: "), line
    assert line.endswith("missingcat.yaml: cannot read file: No such file or directory"), line


def test_the_second_of_two_catalogs_is_named_by_its_index_and_line(tmp_path, one_error_line):
    line = _error(tmp_path, TWO_CATALOGS, ["plan"], one_error_line)
    assert line.startswith(f"runplan: error: {tmp_path / 'p.yaml'}:6: catalog[1]: "), line
    assert "missingcat.yaml: cannot read file" in line


def test_a_bad_entry_in_a_law_file_keeps_its_own_file_and_line(tmp_path, one_error_line):
    """The law file's own ``file:line`` stays in the message after the plan's key."""
    (tmp_path / "missinglaw.yaml").write_text("name: mine\nE: 1.8\nA: 400\nB: 400\nalpha: 0.3\nbeta: -1\n")
    line = _error(tmp_path, LAW_PLAN, ["plan"], one_error_line)
    assert line.startswith(f"runplan: error: {tmp_path / 'p.yaml'}:5: law.file: "), line
    assert "missinglaw.yaml:6: beta" in line, line
