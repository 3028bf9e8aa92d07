"""A model shape written with another codebase's key names (HuggingFace config.json, Megatron-LM flags, the GPT
papers): the hint is runplan's key for that quantity, not the nearest spelling (`d_ff` was answered 'head_dim')."""

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app

SHAPE = {
    "n_layers": 32, "d_model": 4096, "n_heads": 32, "n_kv_heads": 8, "head_dim": 128, "ffn_hidden": 14336,
    "mlp": "swiglu", "vocab_size": 128256, "tied_embeddings": "false", "norm": "rmsnorm",
}  # fmt: skip


@pytest.mark.parametrize(
    ("written", "ours"),
    [
        ("d_ff", "ffn_hidden"),
        ("intermediate_size", "ffn_hidden"),
        ("ffn_hidden_size", "ffn_hidden"),
        ("hidden_size", "d_model"),
        ("num_hidden_layers", "n_layers"),
        ("num_attention_heads", "n_heads"),
        ("num_key_value_heads", "n_kv_heads"),
        ("num_query_groups", "n_kv_heads"),
        ("kv_channels", "head_dim"),
        ("tie_word_embeddings", "tied_embeddings"),
    ],
)
def test_the_hint_is_our_key_for_that_quantity(tmp_path, written, ours):
    shape = dict(SHAPE)
    shape[written] = shape.pop(ours)
    body = ", ".join(f"{k}: {v}" for k, v in shape.items())
    plan = tmp_path / "p.yaml"
    plan.write_text(
        "schema_version: 1\nname: t\nbudget: {flops: 2e23}\ncluster: {gpu: h100-sxm, gpus: 64}\n"
        f"model:\n  shape: {{{body}}}\n"
    )
    result = CliRunner().invoke(app, ["plan", str(plan)], env={"COLUMNS": "200"})
    assert result.exit_code == 2
    line = " ".join(result.stderr.split())
    assert f"unknown key '{written}'" in line and f"did you mean '{ours}'?" in line, line
