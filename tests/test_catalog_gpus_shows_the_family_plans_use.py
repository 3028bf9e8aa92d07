"""`runplan catalog gpus NAME` showed a user entry's family as written (null) while every plan timed it with the
family read from its name (runplan.catalog.with_family); and an entry whose family cannot be read (``a800``) was
listed without a word while every planning command refuses it. The record now carries the family plans use and
``family_read_from_name``; an unreadable entry is listed with one warning naming ``family:`` and its file."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from runplan.cli.app import app

runner = CliRunner()

NUMBERS = (
    "hbm_bytes: 80e9, bf16_flops: 312e12, hbm_bandwidth_bytes_per_s: 2039e9, intra_node_bandwidth_bytes_per_s: "
    "300e9, inter_node_bandwidth_bytes_per_s: 25e9, gpus_per_node: 8, tdp_watts: 400"
)


def _catalog(tmp_path: Path, *names: str) -> Path:
    path = tmp_path / "cat.yaml"
    path.write_text("gpus:\n" + "".join(f"  - {{name: {name}, {NUMBERS}}}\n" for name in names))
    return path


def _json(args: list[str]):
    result = runner.invoke(app, ["catalog", "gpus", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout), result.stderr


def test_a_user_entry_shows_the_family_read_from_its_name(tmp_path):
    record, stderr = _json(["a100-custom", "--catalog", str(_catalog(tmp_path, "a100-custom"))])
    assert (record["family"], record["family_read_from_name"]) == ("ampere", True)
    assert stderr == ""


def test_a_shipped_entry_states_its_family(tmp_path):
    record, _ = _json(["b200"])
    assert (record["family"], record["family_read_from_name"]) == ("blackwell", False)


def test_the_table_says_the_family_was_read_from_the_name(tmp_path):
    result = runner.invoke(
        app, ["catalog", "gpus", "a100-custom", "--catalog", str(_catalog(tmp_path, "a100-custom"))]
    )
    assert result.exit_code == 0, result.output
    row = next(line for line in result.stdout.splitlines() if " family " in f" {line} ")
    assert "ampere (read from the name)" in row


def test_an_unreadable_family_is_listed_with_one_warning_naming_the_key_and_file(tmp_path):
    path = _catalog(tmp_path, "a800", "a100-custom")
    records, stderr = _json(["--catalog", str(path)])
    a800 = next(r for r in records if r["name"] == "a800")
    assert (a800["family"], a800["family_read_from_name"]) == (None, False)
    text = " ".join(stderr.replace(f"{tmp_path}/", "").split())  # one warning, folded at the terminal width
    assert text.count("runplan: warning:") == 1, stderr  # a100-custom reads as ampere: no warning for it
    assert text.startswith("runplan: warning: GPU 'a800' has no family")
    assert "every planning command refuses it" in text
    assert "add family: ampere, hopper, blackwell or cdna3 to its entry in cat.yaml" in text


def test_one_unreadable_entry_asked_for_by_name_is_warned_too(tmp_path):
    path = _catalog(tmp_path, "a800")
    result = runner.invoke(app, ["catalog", "gpus", "a800", "--catalog", str(path)])
    assert result.exit_code == 0, result.output
    text = " ".join(result.stderr.split())
    assert "GPU 'a800' has no family" in text
    assert "add family:" in text and str(path) in text


def test_several_unreadable_gpus_give_the_nearest_family_list_once(tmp_path):
    """Each warning repeated the ~550-character nearest-family list: three unreadable GPUs made ~22 lines."""
    from typer.testing import CliRunner

    from runplan.catalog import NEAREST_FAMILY_HINT
    from runplan.cli.app import app

    entry = (
        "  - {{name: {}, hbm_bytes: 80e9, bf16_flops: 312e12, hbm_bandwidth_bytes_per_s: 2e12, "
        "intra_node_bandwidth_bytes_per_s: 300e9, inter_node_bandwidth_bytes_per_s: 25e9, gpus_per_node: 8, "
        "tdp_watts: 400}}\n"
    )
    path = tmp_path / "cat.yaml"
    path.write_text("gpus:\n" + "".join(entry.format(n) for n in ("gpu-one", "gpu-two", "gpu-three")))
    result = CliRunner().invoke(app, ["catalog", "gpus", "--catalog", str(path)])
    assert result.exit_code == 0, result.output
    err = " ".join(result.stderr.split())
    assert err.count(" ".join(NEAREST_FAMILY_HINT.split())) == 1
    assert err.count("nearest family as above") == 2
