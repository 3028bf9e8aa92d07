"""`runplan init --model hf/config.json > plans/p.yaml`: the path init checked (from the working folder) is the
one the plan reads. A plan's model path is read relative to the plan file, so the relative path init wrote
failed (`plans/p.yaml:17: model: no config.json file at '.../plans/hf/config.json'`); init now writes the
config's absolute path (a checkpoint folder as its config.json, which `model:` reads as a config)."""

from __future__ import annotations

import json

import pytest
from tests._hf_configs import LLAMA_31_8B
from typer.testing import CliRunner

from runplan.cli.app import app

runner = CliRunner()


@pytest.mark.parametrize("given", ["hf/config.json", "./hf"])
def test_the_plan_init_writes_reads_the_config_it_checked(given, tmp_path, monkeypatch):
    (tmp_path / "hf").mkdir()
    (tmp_path / "hf" / "config.json").write_text(json.dumps(LLAMA_31_8B))
    (tmp_path / "plans").mkdir()
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["init", "--model", given, "--gpus", "64"])
    assert result.exit_code == 0, result.output
    assert f"\nmodel: {tmp_path / 'hf' / 'config.json'}\n" in result.stdout
    # an absolute path is not what a plan file checked into a repository should hold: init says so beside it
    assert "make it relative to this\n# plan file's folder" in result.stdout
    (tmp_path / "plans" / "p.yaml").write_text(result.stdout)
    planned = runner.invoke(app, ["plan", "plans/p.yaml", "--json"])
    assert planned.exit_code == 0, planned.output
    # Llama 3.1 8B's shape: 8,030,261,248 parameters (tests/test_catalog_models_shows_a_hugging_face_config.py)
    assert json.loads(planned.stdout)["model"]["total_params"] == 8_030_261_248


def test_a_path_with_a_hash_is_quoted_so_yaml_keeps_it_whole(tmp_path, monkeypatch):
    folder = tmp_path / "run #2"  # unquoted, `# 2/config.json` would be a YAML comment
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(LLAMA_31_8B))
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["init", "--model", "run #2/config.json", "--gpus", "64"])
    assert result.exit_code == 0, result.output
    (tmp_path / "p.yaml").write_text(result.stdout)
    planned = runner.invoke(app, ["plan", str(tmp_path / "p.yaml"), "--json"])
    assert planned.exit_code == 0, planned.output
    assert json.loads(planned.stdout)["model"]["total_params"] == 8_030_261_248
