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
    "tie_word_embeddings": False, "num_nextn_predict_layers": 1,
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
                  "attention", "n_experts", "top_k", "expert_ffn_hidden", "n_dense_layers", "qk_norm",
                  "mtp_layers"):  # fmt: skip
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


# Qwen/Qwen2.5-7B and Qwen/Qwen2.5-0.5B (tie_word_embeddings true)
QWEN25_7B = {**QWEN2_7B, "rope_theta": 1000000.0, "use_sliding_window": False}
QWEN25_05B = {
    "model_type": "qwen2", "hidden_size": 896, "intermediate_size": 4864, "num_attention_heads": 14,
    "num_hidden_layers": 24, "num_key_value_heads": 2, "vocab_size": 151936, "rms_norm_eps": 1e-06,
    "rope_theta": 1000000.0, "tie_word_embeddings": True,
}  # fmt: skip


def test_qwen25_counts_with_qkv_biases_and_tied_embeddings():
    # Qwen2.5-0.5B: 494,032,768 (the model card's 0.49B; hand count, tied head counted once):
    # 151936·896 + 24·(896·(896 + 2·128) + 896·896 + (896 + 2·128) + 3·896·4864 + 2·896) + 896
    h, q, kv, f, v = 896, 896, 2 * 64, 4864, 151936
    per_layer = h * (q + 2 * kv) + q * h + (q + 2 * kv) + 3 * h * f + 2 * h
    assert shape_from_config(QWEN25_05B).total_params == v * h + 24 * per_layer + h == 494_032_768
    assert shape_from_config(QWEN25_7B).total_params == 7_615_616_512


@pytest.mark.parametrize(
    ("config", "message"),
    [
        # bool("false") is True: the string tied the head and printed 7.50 B for Llama 3.1 8B
        ({**LLAMA_31_8B, "tie_word_embeddings": "false"}, "tie_word_embeddings must be true or false, got 'false'"),
        # int("8") and int(8.7) were taken without a word (8.7 experts became 8)
        ({**MIXTRAL_8X7B, "num_local_experts": "8"}, "num_local_experts must be a whole number above 0, got '8'"),
        ({**MIXTRAL_8X7B, "num_local_experts": 8.7}, "num_local_experts must be a whole number above 0, got 8.7"),
        ({**QWEN3_30B_A3B, "moe_intermediate_size": 767.5}, "moe_intermediate_size must be a whole number"),
        ({**DEEPSEEK_V3, "first_k_dense_replace": 2.5}, "first_k_dense_replace must be a whole number of at least 0"),
        # "invalid literal for int() with base 10: 'one'", naming no key
        ({**DEEPSEEK_V3, "n_shared_experts": "one"}, "n_shared_experts must be a whole number of at least 0, got 'one'"),
        # "Input should be greater than or equal to 0", naming no key
        ({**DEEPSEEK_V3, "q_lora_rank": -3}, "q_lora_rank must be a whole number of at least 0, got -3"),
        # "could not convert string to float: 'x'"
        ({**DEEPSEEK_V3, "routed_scaling_factor": "x"}, "routed_scaling_factor must be a number above 0, got 'x'"),
        ({**LLAMA_31_8B, "rope_theta": "abc"}, "rope_theta must be a number above 0, got 'abc'"),
        # "Input should be a valid number, unable to parse string as a number"
        ({**LLAMA_31_8B, "rms_norm_eps": "x"}, "rms_norm_eps must be a number above 0, got 'x'"),
        ({**LLAMA_31_8B, "initializer_range": -1}, "initializer_range must be a number above 0, got -1"),
        # an internal error (AttributeError: 'str' object has no attribute 'get'), exit 3
        ({**LLAMA_31_8B, "rope_scaling": "yes"}, "rope_scaling must be an object"),
        # "Field required", naming neither rope_scaling nor the key
        (
            {**LLAMA_31_8B, "rope_scaling": {"rope_type": "llama3", "factor": 8.0}},
            "lacks 'rope_scaling.original_max_position_embeddings'",
        ),
        ({**LLAMA_31_8B, "rope_scaling": {**LLAMA_31_8B["rope_scaling"], "factor": "8"}}, "rope_scaling.factor must be a number"),
        # the shape's own field names (top_k, n_experts) where the config says num_experts_per_tok
        ({**MIXTRAL_8X7B, "num_experts_per_tok": 9}, r"num_experts_per_tok \(9\) must be between 1 and num_local_experts \(8\)"),
        ({k: v for k, v in LLAMA_31_8B.items() if k != "model_type"}, "lacks 'model_type'"),
    ],
)  # fmt: skip
def test_wrong_types_are_refused_naming_the_config_key(config, message):
    with pytest.raises(SpecError, match=message) as error:
        shape_from_config(config)
    assert "\n" not in str(error.value)


def test_bias_keys_count_exactly_or_are_refused():
    """LlamaAttention puts ``attention_bias`` on q, k, v and o, LlamaMLP ``mlp_bias`` on all three matrices
    (transformers models/llama/modeling_llama.py): both are every linear layer's bias; one alone the shape
    cannot express (attention_bias became q, k, v biases, 32·4096 o-biases short; mlp_bias was ignored)."""
    both = shape_from_config({**LLAMA_31_8B, "attention_bias": True, "mlp_bias": True})
    h, q, kv, f = 4096, 4096, 1024, 14336
    assert both.total_params == 8_030_261_248 + 32 * ((q + 2 * kv) + h + 2 * f + h) == 8_031_637_504
    for extra, needle in (
        ({"attention_bias": True}, r"attention_bias true .* without mlp_bias is not modelled"),
        ({"mlp_bias": True}, "mlp_bias true without attention_bias is not modelled"),
        ({"mlp_bias": "true"}, "mlp_bias must be true or false"),
    ):
        with pytest.raises(SpecError, match=needle):
            shape_from_config({**LLAMA_31_8B, **extra})
    for config in (QWEN3_30B_A3B, DEEPSEEK_V3):  # q/k/v/o (Qwen3) and MLA down/out biases: not counted
        with pytest.raises(SpecError, match="attention_bias true is not modelled"):
            shape_from_config({**config, "attention_bias": True})
    # Mistral's projections have no bias whatever the key says (MistralAttention), Qwen2's q, k, v always
    assert shape_from_config({**MISTRAL_7B, "attention_bias": True}).total_params == 7_241_732_096
    with pytest.raises(SpecError, match="attention_bias false"):
        shape_from_config({**PYTHIA_160M, "attention_bias": False})


def test_deepseek_moe_layer_frequency_other_than_one_is_refused():
    # DeepseekV3DecoderLayer makes layer i MoE only where i % moe_layer_freq == 0: every layer was counted MoE
    with pytest.raises(SpecError, match="moe_layer_freq other than 1"):
        shape_from_config({**DEEPSEEK_V3, "moe_layer_freq": 2})
    assert shape_from_config({**DEEPSEEK_V3, "moe_layer_freq": 1}).total_params == 671_026_419_200


def test_transformers_v5_rope_parameters_are_read():
    # transformers v5 writes one rope_parameters object and no rope_theta: Llama 3.1's 500000 and its llama3
    # scaling became 10000 and none, and the exports built a different model
    v5 = {k: v for k, v in LLAMA_31_8B.items() if k not in ("rope_theta", "rope_scaling")}
    v5["rope_parameters"] = {**LLAMA_31_8B["rope_scaling"], "rope_theta": 500000.0}
    shape = shape_from_config(v5)
    expected = load_catalog([]).model("llama-3.1-8b")
    assert (shape.rope_theta, shape.rope_scaling) == (500000.0, expected.rope_scaling)
    plain = shape_from_config({**v5, "rope_parameters": {"rope_type": "default", "rope_theta": 1e6}})
    assert (plain.rope_theta, plain.rope_scaling) == (1e6, None)
    # MixtralConfig's default base is 1e6, not LlamaConfig's 1e4
    mixtral = {k: v for k, v in MIXTRAL_8X7B.items() if k != "rope_theta"}
    assert shape_from_config(mixtral).rope_theta == 1e6


def test_unmodelled_rope_scaling_says_it_changes_no_count():
    with pytest.raises(SpecError, match=r"'dynamic' is not modelled.*changes no parameter count"):
        shape_from_config({**LLAMA_31_8B, "rope_scaling": {"type": "dynamic", "factor": 2.0}})


def test_the_model_is_named_after_the_file_or_the_hugging_face_cache_repository(tmp_path):
    # every config.json in one folder was named after the folder, and a cache snapshot after its commit hash
    flat = tmp_path / "Qwen2.5-7B.json"
    flat.write_text(json.dumps(QWEN25_7B))
    assert load_config_shape(flat).name == "qwen2.5-7b"
    snapshot = tmp_path / "models--Qwen--Qwen2.5-7B" / "snapshots" / ("0123abcd" * 5)
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text(json.dumps(QWEN25_7B))
    assert load_config_shape(snapshot / "config.json").name == "qwen2.5-7b"
    (snapshot / "config.json").write_text(
        json.dumps({**QWEN25_7B, "_name_or_path": "Qwen/Qwen2.5-7B-Instruct/"})
    )
    assert load_config_shape(snapshot / "config.json").name == "qwen2.5-7b-instruct"


def test_a_non_object_rope_scaling_is_exit_2_not_an_internal_error(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**LLAMA_31_8B, "rope_scaling": "yes"}))
    result = CliRunner().invoke(app, ["parallelize", "--model", str(path), "--gpus", "8"])
    assert result.exit_code == 2, result.output
    assert "--model" in result.stderr and "rope_scaling must be an object" in result.stderr


def test_a_checkpoint_folder_reads_its_config_json(tmp_path):
    # "unknown model '/path/Meta-Llama-3.1-8B' (known: ...)": a downloaded checkpoint folder was a catalog name
    folder = tmp_path / "Llama-3.1-8B"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(LLAMA_31_8B))
    assert load_config_shape(folder).total_params == 8_030_261_248
    result = CliRunner().invoke(app, ["parallelize", "--model", str(folder), "--gpus", "8", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["model"]["name"] == "llama-3.1-8b"
    result = CliRunner().invoke(app, ["parallelize", "--model", str(tmp_path), "--gpus", "8"])
    assert result.exit_code == 2 and "no config.json in the folder" in result.stderr


def test_an_unread_family_says_what_the_shape_lacks():
    # Qwen2-MoE's shared expert has its own width and a sigmoid gate; Gemma 3's multimodal wrapper nests the text
    # tower under text_config: both refused with the reason
    with pytest.raises(SpecError, match="'qwen2_moe' is not read: its shared expert has a size of its own"):
        shape_from_config({"model_type": "qwen2_moe"})
    with pytest.raises(
        SpecError, match="'gemma3' is not read: it is the multimodal wrapper; plan its text tower"
    ):
        shape_from_config({"model_type": "gemma3"})


def test_qwen3_dense_counts_its_qk_norms():
    # Qwen/Qwen3-8B config.json; 8,190,735,360 in the Hub's safetensors metadata: 36 layers of
    # 4096·(4096 + 2·1024) + 4096·4096 + 2·128 (q/k RMSNorm) + 3·4096·12288 + 2·4096, a final norm, untied V·h twice
    qwen3_8b = {
        "model_type": "qwen3", "hidden_size": 4096, "intermediate_size": 12288, "num_attention_heads": 32,
        "num_key_value_heads": 8, "head_dim": 128, "num_hidden_layers": 36, "vocab_size": 151936,
        "rms_norm_eps": 1e-06, "rope_theta": 1000000, "tie_word_embeddings": False, "attention_bias": False,
    }  # fmt: skip
    per_layer = 4096 * (4096 + 2 * 1024) + 4096 * 4096 + 2 * 128 + 3 * 4096 * 12288 + 2 * 4096
    total = 36 * per_layer + 4096 + 2 * 151936 * 4096
    assert shape_from_config(qwen3_8b).total_params == total == 8_190_735_360


def test_a_plan_file_reads_a_checkpoint_folder_next_to_it(tmp_path):
    # `model: ckpt/Llama-3.1-8B` in a plan file was a catalog name looked up relative to the working directory
    folder = tmp_path / "ckpt" / "Llama-3.1-8B"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(LLAMA_31_8B))
    plan = tmp_path / "plan.yaml"
    body = {"schema_version": 1, "model": "ckpt/Llama-3.1-8B", "budget": {"tokens": "1T"}}
    plan.write_text(yaml.safe_dump(body | {"cluster": {"gpu": "h100-sxm", "gpus": 64}}))
    result = CliRunner().invoke(app, ["plan", str(plan), "-f", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["model"]["total_params"] == 8_030_261_248


def test_deepseek_v3_multi_token_prediction_depth_is_read():
    """num_nextn_predict_layers (DeepSeek-V3 config.json: 1; arXiv 2412.19437 §2.2) becomes mtp_layers, counted
    apart from the 671B main model; absent it is 0, as a checkpoint without MTP layers has none."""
    shape = shape_from_config(DEEPSEEK_V3)
    assert shape.mtp_layers == 1 and shape.total_params == 671_026_419_200
    assert shape.mtp_params == 11_610_068_224  # tests/test_mtp_counts.py derives it by hand
    absent = shape_from_config({k: v for k, v in DEEPSEEK_V3.items() if k != "num_nextn_predict_layers"})
    assert absent.mtp_layers == 0 and absent.mtp_params == 0
    with pytest.raises(SpecError, match="num_nextn_predict_layers"):
        shape_from_config({**DEEPSEEK_V3, "num_nextn_predict_layers": -1})
