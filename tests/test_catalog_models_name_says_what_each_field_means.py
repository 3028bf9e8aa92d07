"""`runplan catalog models NAME` showed raw field names (``d_model 8192``, ``kv_lora_rank 512``, ``top_k 8``) with no
word of what they are or what they count, where `catalog gpus NAME` says it under each value. Each shown field now
has a one-line meaning with its unit (layers, heads, dims, tokens, experts, parameters), the one docs/catalog.md's
"Model field units" table gives it (checked against that table, so the two cannot drift)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests._hf_configs import LLAMA_31_8B
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.cli.catalog import MODEL_FIELD_MEANINGS
from runplan.model import ModelShape

DOCS = Path(__file__).resolve().parents[1] / "docs" / "catalog.md"


def _rows(text: str) -> dict[str, str]:
    """The table's rows: field → its value cell, the lines of a folded cell joined by a space."""
    rows: dict[str, str] = {}
    last = ""
    for line in text.splitlines():
        if not line.startswith("│"):
            continue
        field, value = (cell.strip() for cell in line.strip()[1:-1].split("│"))
        last = field or last
        rows[last] = f"{rows[last]} {value}" if field == "" else value
    return rows


def _meaning(field: str) -> str:
    unit, meaning = MODEL_FIELD_MEANINGS[field]
    return f"{unit}: {meaning}" if unit else meaning


def _shown(*args: str, columns: int = 250) -> dict[str, str]:
    result = CliRunner().invoke(app, ["catalog", "models", *args], env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.output
    return _rows(result.stdout)


def test_each_shown_field_of_a_preset_has_its_meaning_and_unit():
    rows = _shown("deepseek-v3")
    assert rows["n_layers"] == "61 layers: Transformer blocks L"
    assert rows["d_model"] == "7168 dims: hidden size h, each token's vector"
    assert rows["n_heads"] == "128 heads: query heads a"
    assert rows["kv_lora_rank"] == "512 dims: MLA compressed key/value rank"
    assert rows["top_k"] == "8 experts: routed experts each token uses"
    assert rows["vocab_size"] == "129280 tokens: vocabulary V, padded as trained"
    assert rows["total_params"] == "671,026,419,200 parameters: every weight, embeddings included"
    assert rows["mtp_layers"] == "1 modules: multi-token prediction (DeepSeek-V3)"
    assert rows["attention"] == "mla gqa (MHA, MQA, GQA) or mla (DeepSeek latent)"
    # a field the entry leaves unset says so before its meaning (DeepSeek-V3 windows no layer: one RoPE base)
    assert rows["rope_local_theta"] == "(none) " + _meaning("rope_local_theta")
    # every shown field says what it is: the JSON record's fields, each with its meaning, none left out
    record = json.loads(CliRunner().invoke(app, ["catalog", "models", "deepseek-v3", "--json"]).stdout)
    assert list(rows) == list(record)
    assert [field for field, cell in rows.items() if not cell.endswith(_meaning(field))] == []


def test_a_hugging_face_config_shows_the_same_meanings(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(LLAMA_31_8B))
    rows = _shown(str(path))
    assert rows["n_kv_heads"] == "8 heads: key/value heads; n_heads for MHA"
    assert rows["family"] == "(none) " + _meaning("family")  # a config.json belongs to no catalog family
    assert [field for field, cell in rows.items() if not cell.endswith(_meaning(field))] == []


def test_every_model_field_has_a_meaning_and_the_docs_give_the_same_unit():
    counts = ("total_params", "embedding_params", "non_embedding_params", "active_params", "mtp_params")
    catalog_only = ("family", "published_params", "published_active_params", "aliases", "note")
    fields = set(ModelShape.model_fields) | set(counts) | set(catalog_only)
    assert sorted(fields - set(MODEL_FIELD_MEANINGS)) == []
    assert sorted(set(MODEL_FIELD_MEANINGS) - fields) == []
    section = DOCS.read_text().split("### Model field units", 1)[1].split("\n###", 1)[0]
    documented = {
        match.group(1): match.group(2).strip()
        for match in re.finditer(r"^\| `([a-z_0-9]+)` \|([^|]*)\|", section, re.MULTILINE)
    }
    assert {field: unit for field, (unit, _) in MODEL_FIELD_MEANINGS.items()} == documented
    # a count of parameters says so; a width or rank is in dims, a depth in layers
    assert {f for f, (unit, _) in MODEL_FIELD_MEANINGS.items() if unit == "parameters"} == {
        *counts,
        "published_params",
        "published_active_params",
    }


def test_each_meaning_fits_below_its_value_at_80_columns():
    """A meaning fits the value column of an 80-column terminal on one line (50 cells beside the longest field
    name, `published_active_params`): no meaning folds."""
    result = CliRunner().invoke(app, ["catalog", "models", "mixtral-8x7b"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    for field in MODEL_FIELD_MEANINGS:
        assert any(line.split("│")[2].strip() == _meaning(field) for line in lines if line.count("│") == 3), (
            field
        )
