"""`runplan catalog models PATH/config.json` (or a checkpoint folder) shows the counts runplan reads from a local
Hugging Face config.json, as `--model PATH` elsewhere plans it; it said "unknown model '.../config.json'",
though `runplan parallelize --model path/to/config.json` reads the same file."""

from __future__ import annotations

import json

from tests._hf_configs import LLAMA_31_8B
from typer.testing import CliRunner

from runplan.cli.app import app

runner = CliRunner()
# hand count: embedding and head 2 × 128,256 × 4,096 = 1,050,673,152; per layer attention 4096 × (4096 + 2 × 1024)
# + 4096 × 4096 = 41,943,040, SwiGLU 3 × 4096 × 14,336 = 176,160,768, two norms 8,192; 32 layers and the final
# norm: 32 × 218,112,000 + 4,096 = 6,979,588,096; total 8,030,261,248 (Llama 3.1 8B's published 8.03 B)
TOTAL, EMBEDDING = 8_030_261_248, 1_050_673_152


def _config(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(LLAMA_31_8B))
    return path


def test_a_config_json_path_is_shown_with_its_counts(tmp_path):
    path = _config(tmp_path)
    result = runner.invoke(app, ["catalog", "models", str(path), "--json"])
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert record["total_params"] == TOTAL
    assert record["embedding_params"] == EMBEDDING
    assert record["non_embedding_params"] == TOTAL - EMBEDDING
    assert record["n_layers"] == 32 and record["n_kv_heads"] == 8


def test_a_checkpoint_folder_is_read_as_its_config_and_the_table_fits(tmp_path):
    _config(tmp_path)
    result = runner.invoke(app, ["catalog", "models", str(tmp_path)], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert "8,030,261,248" in result.stdout
    assert max(len(line) for line in result.stdout.splitlines()) <= 80


def test_a_missing_config_is_one_line_at_name(tmp_path):
    result = runner.invoke(app, ["catalog", "models", str(tmp_path / "nope.json")])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.stderr.startswith("runplan: error: NAME: no config.json file at ")


def test_a_config_json_given_as_a_catalog_file_says_where_it_belongs(tmp_path):
    # it said "unknown key 'architectures' (use 'gpus:' and 'models:')", which reads as a catalog to fix
    path = _config(tmp_path)
    result = runner.invoke(app, ["catalog", "models", "--catalog", str(path)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    line = result.stderr.strip()
    assert "\n" not in line and "unknown key 'architectures'" in line
    assert "a Hugging Face config.json, not a catalog" in line
    assert f"`runplan catalog models {path}`" in line
