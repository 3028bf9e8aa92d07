"""``runplan export -o PATH --json``: the JSON's ``filename`` is the path written (it printed the exporter's
suggested name, 70b-512-h100.megatron.sh, while writing custom.sh); without ``-o`` it stays the suggested name
(what ``-o DIR/`` would write). ``-o ''`` wrote into the current directory (Path('') is '.'): it is bad input,
one line naming --output, exit 2, nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.export._cli import run_export

PLAN = str(Path(__file__).resolve().parents[2] / "examples" / "70b-512-h100.yaml")


def _run(*args: str):
    return run_export(PLAN, "--to", "megatron", *args)


def test_json_names_the_file_written(tmp_path: Path) -> None:
    out = tmp_path / "custom.sh"
    result = _run("-o", str(out), "--json")
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    assert printed["filename"] == str(out) and out.read_text(encoding="utf-8") == printed["text"]
    assert f"wrote {out} " in result.stderr


def test_into_a_directory_json_names_the_file_inside_it(tmp_path: Path) -> None:
    result = _run("-o", f"{tmp_path}/", "--json")
    assert result.exit_code == 0, result.output
    written = tmp_path / "70b-512-h100.megatron.sh"
    assert json.loads(result.stdout)["filename"] == str(written) and written.is_file()


def test_without_output_json_gives_the_suggested_name() -> None:
    result = _run("--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["filename"] == "70b-512-h100.megatron.sh"


@pytest.mark.parametrize("empty", ["", "  "])
def test_an_empty_output_is_one_line_naming_the_flag(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, empty: str
) -> None:
    monkeypatch.chdir(tmp_path)
    result = _run("-o", empty)
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("runplan: error: --output:"), lines
    assert list(tmp_path.iterdir()) == []
