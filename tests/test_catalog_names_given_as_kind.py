"""`runplan catalog`: a GPU or model name given where the kind goes is answered with the command that shows it,
and one entry's table spells booleans as a catalog file does (``false``, not Python's ``False``)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app


def run(*args: str):
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "120"})


@pytest.mark.parametrize(
    ("name", "command"),
    [
        ("h100-sxm", "runplan catalog gpus h100-sxm"),
        ("H100", "runplan catalog gpus h100-sxm"),  # an alias, any case
        ("llama-3.1-8b", "runplan catalog models llama-3.1-8b"),
    ],
)
def test_an_entry_name_as_kind_says_which_catalog_holds_it(name, command):
    result = run("catalog", name)
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        f"runplan: error: KIND: unknown catalog '{name}' ('{command.split()[-1]}' is in the "
        f"{command.split()[2]} catalog: `{command}`)"
    )  # was "(use 'gpus' or 'models')"
    shown = run(*command.split()[1:])
    assert shown.exit_code == 0 and command.split()[-1] in shown.stdout


def test_a_misspelt_kind_keeps_its_did_you_mean():
    result = run("catalog", "gpuz")
    assert result.exit_code == 2
    assert "(did you mean 'gpus'?)" in result.stderr


def test_one_entry_spells_booleans_as_yaml():
    result = run("catalog", "models", "llama-3.1-70b")
    assert result.exit_code == 0, result.output
    rows = {
        line.split("│")[1].strip(): line.split("│")[2].strip()
        for line in result.stdout.splitlines()
        if line.count("│") == 3
    }
    assert rows["tied_embeddings"] == "false"  # was False
    assert rows["qk_norm"] == "false"
    assert "True" not in result.stdout and "False" not in result.stdout
