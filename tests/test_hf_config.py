"""A local Hugging Face config.json as the model (issue 15). The configs below are written here with the values
of the published files (huggingface.co/<repo>/blob/main/config.json, the repo named on each); the shapes they
give are checked against the catalog presets built from the same files, or against published parameter counts.
"""

from __future__ import annotations

import json

import pytest
import yaml
from typer.testing import CliRunner

from runplan.catalog import load_catalog
from runplan.cli.app import app
from runplan.errors import SpecError
from runplan.hf_config import load_config_shape, shape_from_config

# meta-llama/Llama-3.1-8B
LLAMA_31_8B = {
    "model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
    "num_hidden_layers": 32, "num_key_value_heads": 8, "vocab_size": 128256, "rms_norm_eps": 1e-05,
    "rope_theta": 500000.0, "tie_word_embeddings": False, "initializer_range": 0.02,
    "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
}  # fmt: skip
# mistralai/Mistral-7B-v0.1
MISTRAL_7B = {
    "model_type": "mistral", "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
    "num_hidden_layers": 32, "num_key_value_heads": 8, "vocab_size": 32000, "rms_norm_eps": 1e-05,
    "rope_theta": 10000.0, "sliding_window": 4096, "tie_word_embeddings": False,
}  # fmt: skip
# mistralai/Mixtral-8x7B-v0.1
MIXTRAL_8X7B = {
    "model_type": "mixtral", "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
    "num_hidden_layers": 32, "num_key_value_heads": 8, "vocab_size": 32000, "num_local_experts": 8,
    "num_experts_per_tok": 2, "rms_norm_eps": 1e-05, "rope_theta": 1e6, "tie_word_embeddings": False,
}  # fmt: skip
# Qwen/Qwen2-7B
QWEN2_7B = {
    "model_type": "qwen2", "hidden_size": 3584, "intermediate_size": 18944, "num_attention_heads": 28,
    "num_hidden_layers": 28, "num_key_value_heads": 4, "vocab_size": 152064, "rms_norm_eps": 1e-06,
    "rope_theta": 1000000.0, "tie_word_embeddings": False,
}  # fmt: skip
# Qwen/Qwen3-30B-A3B
QWEN3_30B_A3B = {
    "model_type": "qwen3_moe", "hidden_size": 2048, "intermediate_size": 6144, "moe_intermediate_size": 768,
    "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128, "num_hidden_layers": 48,
    "num_experts": 128, "num_experts_per_tok": 8, "decoder_sparse_step": 1, "mlp_only_layers": [],
    "vocab_size": 151936, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "tie_word_embeddings": False,
}  # fmt: skip
# deepseek-ai/DeepSeek-V3
DEEPSEEK_V3 = {
    "model_type": "deepseek_v3", "hidden_size": 7168, "intermediate_size": 18432, "moe_intermediate_size": 2048,
    "num_attention_heads": 128, "num_key_value_heads": 128, "num_hidden_layers": 61, "vocab_size": 129280,
    "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
    "v_head_dim": 128, "n_routed_experts": 256, "n_shared_experts": 1, "num_experts_per_tok": 8,
    "first_k_dense_replace": 3, "scoring_func": "sigmoid", "topk_method": "noaux_tc", "n_group": 8,
    "topk_group": 4, "routed_scaling_factor": 2.5, "rms_norm_eps": 1e-06, "rope_theta": 10000,
    "tie_word_embeddings": False,
}  # fmt: skip
# EleutherAI/pythia-160m
PYTHIA_160M = {
    "model_type": "gpt_neox", "hidden_size": 768, "intermediate_size": 3072, "num_attention_heads": 12,
    "num_hidden_layers": 12, "vocab_size": 50304, "layer_norm_eps": 1e-05, "rotary_emb_base": 10000,
    "tie_word_embeddings": False,
}  # fmt: skip


@pytest.mark.parametrize(
    ("config", "preset"),
    [
        (LLAMA_31_8B, "llama-3.1-8b"),
        (MIXTRAL_8X7B, "mixtral-8x7b"),
        (QWEN3_30B_A3B, "qwen3-30b-a3b"),
        (DEEPSEEK_V3, "deepseek-v3"),
    ],
)
def test_config_gives_the_catalog_preset_built_from_the_same_file(config, preset):
    shape = shape_from_config(config, name=preset)
    expected = load_catalog([]).model(preset)
    assert shape.total_params == expected.total_params
    assert shape.active_params == expected.active_params
    for field in ("n_layers", "d_model", "n_heads", "n_kv_heads", "head_dim", "ffn_hidden", "vocab_size",
                  "attention", "n_experts", "top_k", "expert_ffn_hidden", "n_dense_layers", "qk_norm"):  # fmt: skip
        assert getattr(shape, field) == getattr(expected, field), field


@pytest.mark.parametrize(
    ("config", "total"),
    [
        # Mistral 7B: 7,241,732,096 parameters (hand count: 2·32000·4096 + 32·(2·4096² + 2·4096·1024
        # + 3·4096·14336 + 2·4096) + 4096)
        (MISTRAL_7B, 7_241_732_096),
        # Qwen2-7B: 7,615,616,512 (Qwen2 technical report Table 1 "7B"; hand count with q, k, v biases)
        (QWEN2_7B, 7_615_616_512),
        # Pythia-160M: 162,322,944 (Biderman et al. 2023, Table 1 lists 162,322,944 total parameters)
        (PYTHIA_160M, 162_322_944),
    ],
)
def test_config_gives_the_published_parameter_count(config, total):
    assert shape_from_config(config).total_params == total


def test_model_flag_and_plan_key_read_a_config_file(tmp_path):
    path = tmp_path / "llama" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(LLAMA_31_8B))
    assert load_config_shape(path).total_params == load_catalog([]).model("llama-3.1-8b").total_params
    result = CliRunner().invoke(app, ["parallelize", "--model", str(path), "--gpus", "64", "--json"])
    assert result.exit_code == 0, result.output
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        yaml.safe_dump(
            {
                "schema_version": 1,
                "name": "hf",
                "model": {"config": "llama/config.json"},  # relative to the plan file
                "budget": {"tokens": "1T"},
                "cluster": {"gpu": "h100-sxm", "gpus": 64},
            }
        )
    )
    result = CliRunner().invoke(app, ["plan", str(plan), "-f", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["model"]["total_params"] == 8_030_261_248


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"model_type": "bloom"}, "model_type 'bloom' is not read"),
        ({k: v for k, v in LLAMA_31_8B.items() if k != "hidden_size"}, "lacks 'hidden_size'"),
        ({**LLAMA_31_8B, "num_hidden_layers": 0}, "num_hidden_layers must be a whole number above 0, got 0"),
        ({**LLAMA_31_8B, "hidden_size": "big"}, "hidden_size must be a whole number above 0, got 'big'"),
        ({**LLAMA_31_8B, "vocab_size": 1.5}, "vocab_size must be a whole number above 0"),
        ({**LLAMA_31_8B, "hidden_size": float("inf")}, "hidden_size must be a whole number above 0, got inf"),
        ({**LLAMA_31_8B, "num_key_value_heads": 0.5}, "num_key_value_heads must be a whole number above 0"),
        ({**LLAMA_31_8B, "rope_scaling": {"type": "linear", "factor": 2.0}}, "'linear' is not modelled"),
        ({**QWEN3_30B_A3B, "mlp_only_layers": [0]}, "dense layers among the MoE layers"),
        # head_dim was floored to 132 (31 x 132 = 4092) without a word
        ({**LLAMA_31_8B, "num_attention_heads": 31}, "hidden_size 4096 does not split evenly over"),
        # the config's own keys, not runplan's shape fields, and no pydantic "Value error," prefix
        (
            {**LLAMA_31_8B, "num_key_value_heads": 5},
            r"impossible shape: num_attention_heads \(32\) must be a multiple of num_key_value_heads \(5\)$",
        ),
    ],
)
def test_bad_configs_are_one_line_errors(config, message):
    with pytest.raises(SpecError, match=message):
        shape_from_config(config)


def test_missing_and_non_json_files_name_the_flag(tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text("{not json")
    for path in (bad, tmp_path / "none.json"):
        result = CliRunner().invoke(app, ["parallelize", "--model", str(path), "--gpus", "8"])
        assert result.exit_code == 2 and "--model" in result.stderr and "Traceback" not in result.output


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),  # RecursionError in json.loads
        ('{"hidden_size": ' + "9" * 5000 + "}", "more digits than can be read"),  # int conversion limit
    ],
)
def test_json_the_reader_refuses_otherwise_is_one_line(tmp_path, text, needle):
    path = tmp_path / "config.json"
    path.write_text(text)
    with pytest.raises(SpecError, match=needle) as error:
        load_config_shape(path)
    assert error.value.where == "model"
