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


def test_a_user_entry_name_as_kind_keeps_its_catalog_file(tmp_path):
    """A name only a user file holds: the command offered must carry that file, or it answers "unknown GPU"
    (it offered `runplan catalog gpus mi325x`, which exits 2)."""
    mine = tmp_path / "mine.yaml"
    mine.write_text(
        "gpus:\n  - name: mi325x\n    hbm_bytes: 256GB\n    bf16_flops: 1307.4e12\n    fp8_flops: 2614.9e12\n"
        "    hbm_bandwidth_bytes_per_s: 6e12\n    intra_node_bandwidth_bytes_per_s: 448e9\n"
        "    inter_node_bandwidth_bytes_per_s: 50e9\n    gpus_per_node: 8\n    tdp_watts: 1000\n"
    )
    result = run("catalog", "MI325X", "--catalog", str(mine))
    assert result.exit_code == 2
    command = f"runplan catalog gpus mi325x --catalog {mine}"
    assert result.stderr.strip() == (
        f"runplan: error: KIND: unknown catalog 'MI325X' ('mi325x' is in the gpus catalog: `{command}`)"
    )
    shown = run(*command.split()[1:])
    assert shown.exit_code == 0 and "mi325x" in shown.stdout
