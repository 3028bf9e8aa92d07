"""`runplan catalog models mixtral-8x7b` printed ``embedding_params 262,144,000 parameters: embeddings and untied
head (V·h)``, but 262,144,000 is 2·V·h (2 × 32,000 × 4,096): an untied model counts its token embedding and its
output head, V·h each (runplan.model.ModelShape.embedding_params; docs/catalog.md "Counting conventions"). The
meaning now gives both cases, V·h tied and 2·V·h untied, and the learned position rows P·h a GPT-3 adds; the docs'
"Model field units" row says the same."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.cli.catalog import MODEL_FIELD_MEANINGS

DOCS = Path(__file__).resolve().parents[1] / "docs" / "catalog.md"


def _record(name: str) -> dict:
    result = CliRunner().invoke(app, ["catalog", "models", name, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.parametrize(
    ("name", "tied", "expected", "written"),
    [
        # Mixtral 8x7B config.json: vocab_size 32,000, hidden_size 4,096, tie_word_embeddings false: 2·V·h
        ("mixtral-8x7b", False, 2 * 32_000 * 4_096, "262,144,000"),
        # Gemma 2 9B config.json: vocab_size 256,000, hidden_size 3,584, the head tied to the embedding: V·h
        ("gemma-2-9b", True, 256_000 * 3_584, "917,504,000"),
        # GPT-3 175B (Brown et al. 2020 Table 2.1; n_ctx 2,048 learned positions, GPT-2's 50,257 BPE tokens, tied):
        # V·h + P·h
        ("gpt-3-175b", True, 50_257 * 12_288 + 2_048 * 12_288, "642,723,840"),
    ],
)
def test_embedding_params_is_the_count_its_meaning_says(name, tied, expected, written):
    record = _record(name)
    assert record["tied_embeddings"] is tied
    assert f"{record['embedding_params']:,}" == f"{expected:,}" == written


def test_the_meaning_says_tied_and_untied_and_the_docs_row_agrees():
    unit, meaning = MODEL_FIELD_MEANINGS["embedding_params"]
    assert unit == "parameters"
    assert "V·h tied" in meaning and "2·V·h untied" in meaning and "P·h" in meaning
    shown = CliRunner().invoke(app, ["catalog", "models", "mixtral-8x7b"], env={"COLUMNS": "200"}).stdout
    lines = [[cell.strip() for cell in line.split("│")[1:-1]] for line in shown.splitlines() if "│" in line]
    at = lines.index(["embedding_params", "262,144,000"])  # the value, its unit and meaning on the line below
    assert lines[at + 1] == ["", f"parameters: {meaning}"], shown
    row = re.search(r"^\| `embedding_params` \| parameters \| (.*) \|$", DOCS.read_text(), re.MULTILINE)
    assert row is not None and row.group(1) == meaning
