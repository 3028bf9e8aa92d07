"""Mistakes a user makes writing a sliding-window (Gemma-like) shape or config.json are read as meant or refused in
one line naming the key, never planned as something else: a window written '4k' is 4,096 tokens as seq_len's '8k'
is 8,192 (it read 4,000); a window-layer RoPE base without a window, and a global-layer period beyond the depth
(no layer global, yet the FLOPs note said 'the layers but every 100th (global)') are refused; a Gemma 2/3 key in a
config.json of an earlier Gemma (a Gemma 2 file relabelled 'gemma' lost its window and post-norms) is refused."""

from __future__ import annotations

import pytest
from tests.test_gemma_and_window_configs_are_read import GEMMA_2_9B, GEMMA_3_1B
from typer.testing import CliRunner

from runplan.catalog import shipped_catalog
from runplan.cli.app import app
from runplan.errors import SpecError
from runplan.hf_config import shape_from_config
from runplan.model import ModelShape

GEMMA_2_9B_SHAPE = shipped_catalog().model("gemma-2-9b").model_dump()


@pytest.mark.parametrize(
    ("written", "tokens"), [("4k", 4096), ("1k", 1024), ("4096", 4096), ("1e3", 1000), (0, 0)]
)
def test_a_window_reads_k_as_1024_like_seq_len(written, tokens):
    fields = GEMMA_2_9B_SHAPE | {"sliding_window": written}
    if not tokens:
        fields["global_every"] = 0
    assert ModelShape(**fields).sliding_window == tokens


def test_a_window_of_4k_in_a_plan_counts_4096_keys(tmp_path):
    # Gemma 2 9B's shape with the window written as a model card does: 2·4096 − 4096²/8192 = 6,144 for s = 8k
    from tests.planned import planned_json

    shape = (
        ", ".join(f"{k}: {v}" for k, v in GEMMA_2_9B_SHAPE.items() if k in _SHAPE_KEYS)
        + ", sliding_window: 4k"
    )
    body = f"model: {{shape: {{{shape}}}}}\nbudget: {{tokens: 1T}}\ncluster: {{gpus: 64}}\ntraining: {{seq_len: 8k}}\n"
    model = planned_json(tmp_path, body)["model"]
    assert model["flops_per_token"] == 6 * 9_241_705_984 + 6 * (21 * 8192 + 21 * 6144) * 16 * 512
    assert "slide a 4,096-key window and count 2w − w²/s = 6,144" in model["notes"]["flops_per_token"]


_SHAPE_KEYS = (
    *("n_layers", "d_model", "n_heads", "n_kv_heads", "head_dim", "ffn_hidden", "mlp", "vocab_size"),
    *("tied_embeddings", "norm", "post_norms", "global_every"),
)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {"sliding_window": 0, "global_every": 0, "rope_local_theta": 1e4},
            "rope_local_theta needs sliding_window",
        ),
        ({"global_every": 43}, "global_every 43 is more than n_layers 42: no layer would attend globally"),
    ],
)
def test_window_keys_that_mean_nothing_are_refused(fields, message):
    with pytest.raises(ValueError, match=message):
        ModelShape(**GEMMA_2_9B_SHAPE | fields)


def test_a_global_layer_period_equal_to_the_depth_keeps_one_global_layer():
    assert ModelShape(**GEMMA_2_9B_SHAPE | {"global_every": 42}).global_layers == 1


def test_a_plan_with_a_global_period_beyond_the_depth_exits_2_in_one_line(tmp_path):
    shape = ", ".join(f"{k}: {v}" for k, v in GEMMA_2_9B_SHAPE.items() if k in _SHAPE_KEYS[:-1])
    path = tmp_path / "plan.yaml"
    path.write_text(
        "schema_version: 1\n"
        f"model: {{shape: {{{shape}, sliding_window: 4096, global_every: 100}}}}\n"
        "budget: {tokens: 1T}\ncluster: {gpus: 64}\n"
    )
    result = CliRunner().invoke(app, ["plan", str(path)])
    assert result.exit_code == 2
    (line,) = result.output.strip().splitlines()
    assert "model.shape: global_every 100 is more than n_layers 42" in line


@pytest.mark.parametrize(
    ("config", "key", "family"),
    [
        (GEMMA_2_9B | {"model_type": "gemma"}, "attn_logit_softcapping", "Gemma 2/3"),
        (GEMMA_2_9B | {"sliding_window_pattern": 6}, "sliding_window_pattern", "Gemma 3"),
        (GEMMA_2_9B | {"rope_local_base_freq": 10000}, "rope_local_base_freq", "Gemma 3"),
        (GEMMA_3_1B | {"model_type": "gemma2"}, "rope_local_base_freq", "Gemma 3"),
    ],
)
def test_a_later_gemmas_key_in_an_earlier_gemmas_config_is_refused(config, key, family):
    """transformers' GemmaConfig has no window, post-norm or soft-capping keys and Gemma2Config no
    rope_local_base_freq or sliding_window_pattern (configuration_gemma*.py); their models ignore such a key, so
    a relabelled file would be planned without the window or post-norms it was written for."""
    with pytest.raises(SpecError) as caught:
        shape_from_config(config)
    message = caught.value.message
    assert f"key {key!r} is a {family} key" in message
    assert config["model_type"] in message


def test_a_null_later_gemma_key_is_no_feature():
    # Gemma 3 1B writes "attn_logit_softcapping": null; a Gemma 1 file with a null window is Gemma 1
    gemma = GEMMA_2_9B | {"model_type": "gemma", "sliding_window": None, "sliding_window_size": None}
    for key in (
        "attn_logit_softcapping",
        "final_logit_softcapping",
        "query_pre_attn_scalar",
        "cache_implementation",
    ):
        gemma[key] = None
    shape = shape_from_config(gemma)
    assert (shape.post_norms, shape.sliding_window) == (False, 0)
    assert shape.total_params == 9_241_705_984 - 42 * 2 * 3584  # no post-norms: 2h fewer per layer


def test_a_gemma_3_config_without_a_window_carries_no_local_rope_base():
    # sliding_window null: no window layers, so rope_local_base_freq describes none (and ModelShape refuses a
    # window-layer base without a window)
    shape = shape_from_config(GEMMA_3_1B | {"sliding_window": None})
    assert (shape.sliding_window, shape.global_every, shape.rope_local_theta) == (0, 0, None)
    assert shape.total_params == 999_885_952  # the count does not depend on the window


_GEMMA_ENTRY = """\
models:
  - name: my-gemma
    n_layers: 42
    d_model: 3584
    n_heads: 16
    n_kv_heads: 8
    head_dim: 256
    ffn_hidden: 14336
    mlp: {mlp}
    vocab_size: 256000
    tied_embeddings: true
    norm: rmsnorm
    post_norms: {post_norms}
    sliding_window: 4k
    global_every: 2
    published_params: {published}
"""


@pytest.mark.parametrize(
    ("mlp", "post_norms", "published", "switch"),
    [
        # Gemma 2 9B without its post-norms: 2·h fewer per layer, 42 × 7,168 = 301,056 short of the exact count
        ("geglu", "false", "9241705984", "post_norms: true would count 9,241,705,984"),
        # 'Gemma uses GeLU', written as the ungated mlp: gelu: 42 × h·F = 2,157,969,408 fewer (7.08B)
        ("gelu", "true", "9.24B", "mlp: geglu would count 9,241,705,984"),
    ],
)
def test_a_gemma_entry_names_the_switch_it_missed(tmp_path, mlp, post_norms, published, switch):
    from runplan.catalog import load_catalog

    path = tmp_path / "mine.yaml"
    path.write_text(_GEMMA_ENTRY.format(mlp=mlp, post_norms=post_norms, published=published))
    (warning,) = load_catalog([path]).warnings
    assert switch in warning


def test_an_mtp_entry_says_the_modules_are_not_in_the_total(tmp_path):
    """DeepSeek-V3's Hugging Face page says 685B: the 671B main model plus the MTP module (model card); the shape's
    total is the main model, mtp_params (11,610,068,224) apart."""
    import yaml

    from runplan.catalog import load_catalog

    shape = shipped_catalog().model("deepseek-v3").model_dump(exclude={"name", "source"})
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump({"models": [shape | {"name": "my-v3", "published_params": "685B"}]}))
    (warning,) = load_catalog([path]).warnings
    assert "the shape's 1 MTP module(s) (mtp_params 11,610,068,224) are not in its total" in warning


@pytest.mark.parametrize(
    "model",
    [
        "{name: deepseek-v3, shape: {mtp_layers: 0}}",
        "{name: gemma-2-9b, shape: {sliding_window: 0}}",
        "{name: mixtral-8x7b, config: mixtral.json}",
    ],
)
def test_a_preset_with_a_field_changed_is_one_line_saying_how(tmp_path, model):
    """It said 'model.shape.n_layers: required key is missing (also missing: d_model, ...)': the shape was
    validated before the name-or-shape rule, as if the user wanted to write a whole shape."""
    path = tmp_path / "plan.yaml"
    path.write_text(f"schema_version: 1\nmodel: {model}\nbudget: {{tokens: 1T}}\ncluster: {{gpus: 64}}\n")
    result = CliRunner().invoke(app, ["plan", str(path)])
    assert result.exit_code == 2
    (line,) = result.output.strip().splitlines()
    assert f"{path}:2: model: give one of name" in line
    assert "runplan catalog models" in line and "required key is missing" not in line


def test_the_config_key_names_the_gemma_families():
    from runplan.spec import ModelChoice

    assert "Gemma" in (ModelChoice.model_fields["config"].description or "")


def test_a_null_window_in_a_shape_is_no_window_as_in_config_json():
    # config.json "sliding_window": null is no window (MistralConfig, Gemma2Config); a shape copied from it says so
    fields = GEMMA_2_9B_SHAPE | {"sliding_window": None, "global_every": 0}
    assert ModelShape(**fields).sliding_window == 0


def test_more_mtp_modules_than_layers_is_refused_not_infeasible():
    """'mtp_layers: 1k' (1,000 modules, each a whole block) was planned and came back 'infeasible: every candidate
    breaks the memory constraint ... more GPUs: at least 384', never naming the typo; DeepSeek-V3 trains 1."""
    mixtral = shipped_catalog().model("mixtral-8x7b").model_dump()
    with pytest.raises(ValueError, match="mtp_layers 1,000 is more than n_layers 32"):
        ModelShape(**mixtral | {"mtp_layers": "1k"})
    assert ModelShape(**mixtral | {"mtp_layers": 32}).mtp_layers == 32


def test_a_deepseek_config_with_more_mtp_modules_than_layers_names_its_keys():
    from tests.test_hf_config import DEEPSEEK_V3 as DEEPSEEK_V3_CONFIG

    with pytest.raises(SpecError) as caught:
        shape_from_config(
            DEEPSEEK_V3_CONFIG
            | {"num_hidden_layers": 4, "first_k_dense_replace": 1, "num_nextn_predict_layers": 5}
        )
    assert "num_nextn_predict_layers 5 is more than num_hidden_layers 4" in caught.value.message


def test_a_catalog_entrys_window_of_4k_is_4096(tmp_path):
    """The catalog parses its numbers before the shape does: a count read '4k' as 4,000 there too."""
    from runplan.catalog import load_catalog

    path = tmp_path / "mine.yaml"
    path.write_text(_GEMMA_ENTRY.format(mlp="geglu", post_norms="true", published="9241705984"))
    catalog = load_catalog([path])
    assert catalog.model("my-gemma").sliding_window == 4096
    assert catalog.warnings == ()


def test_a_moe_entrys_published_active_count_is_checked_too(tmp_path):
    """Mixtral 8x7B with top_k 1 by mistake: the total (46,702,792,704 = "46.7B") is right, the active count is
    7,242,780,672 (one expert of 3·4096·14336 per layer fewer: 32 × 176,160,768 = 5,637,144,576 less than the
    12,879,925,248 of top-2) where the card says 12.9B; it was silent."""
    import yaml

    from runplan.catalog import load_catalog

    shape = shipped_catalog().model("mixtral-8x7b").model_dump(exclude={"name", "source"})
    entry = shape | {
        "name": "my-moe",
        "top_k": 1,
        "published_params": "46.7B",
        "published_active_params": "12.9B",
    }
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump({"models": [entry]}))
    (warning,) = load_catalog([path]).warnings
    assert "the shape's active count is 7,242,780,672, published_active_params 12,900,000,000" in warning
    assert "top_k: 2 would count 12,879,925,248" in warning
    right = entry | {"top_k": 2}
    path.write_text(yaml.safe_dump({"models": [right]}))
    assert load_catalog([path]).warnings == ()


@pytest.mark.parametrize(
    ("args", "members"),
    [
        (["catalog", "models", "gemma-2"], "gemma-2-9b, gemma-2-27b"),
        (["parallelize", "--model", "gemma-3", "--gpus", "64"], "gemma-3-12b, gemma-3-27b"),
    ],
)
def test_a_family_name_lists_its_models(args, members):
    """'gemma-2' answered "did you mean 'gemma-3-27b'?", another family's model."""
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    (line,) = result.output.strip().splitlines()
    assert f"is a model family, not one model (name one of its models: {members})" in line


def test_mtp_modules_in_a_deepseek_v2_config_are_refused_not_dropped():
    """DeepseekV2Config has no num_nextn_predict_layers: a V3 file relabelled deepseek_v2 planned without its
    11.6B-parameter MTP module (FLOPs, memory, checkpoints), silently."""
    from tests.test_hf_config import DEEPSEEK_V3

    with pytest.raises(SpecError) as caught:
        shape_from_config(DEEPSEEK_V3 | {"model_type": "deepseek_v2"})
    assert "num_nextn_predict_layers 1 is a DeepSeek-V3 key" in caught.value.message
    assert shape_from_config(DEEPSEEK_V3 | {"model_type": "deepseek_v2", "num_nextn_predict_layers": 0})


# google/gemma-3-4b-pt config.json text_config: every key it leaves out is Gemma3TextConfig's default (8 heads,
# 4 KV heads, head_dim 256, vocab 262,208; transformers configuration_gemma3.py)
GEMMA_3_4B_TEXT = {
    "hidden_size": 2560, "intermediate_size": 10240, "model_type": "gemma3_text", "num_hidden_layers": 34,
    "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "sliding_window": 1024,
}  # fmt: skip


def test_the_text_config_of_gemma_3_4b_takes_its_class_defaults():
    """It said "lacks 'num_attention_heads' (copy it from the model's published config.json)", which has none.
    By hand: per layer q,o 2·2560·2048 + k,v 2·2560·1024 + q/k norms 2·256 + GeGLU 3·2560·10240 + four norms
    4·2560 = 94,382,592; × 34 + final norm 2560 = 3,209,010,688 (Gemma 3 report Table 1: 3,209M non-embedding);
    + tied embedding 262,208 × 2560 = 671,252,480."""
    shape = shape_from_config(GEMMA_3_4B_TEXT)
    assert (shape.n_heads, shape.n_kv_heads, shape.head_dim) == (8, 4, 256)
    assert shape.non_embedding_params == 3_209_010_688
    assert shape.total_params == 3_209_010_688 + 671_252_480
    assert (shape.sliding_window, shape.global_every) == (1024, 6)


def test_catalog_json_gives_the_mtp_parameters_apart_from_the_total():
    """DeepSeek-V3's MTP module (11,610,068,224 by hand: the MoE block with MLA 11,507,286,272 + the 2h×h projection
    102,760,448 + three RMSNorms 21,504) was only in the note's prose; a JSON reader could not get it."""
    import json

    def record(name):
        result = CliRunner().invoke(app, ["catalog", "models", name, "--json"])
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    v3 = record("deepseek-v3")
    assert (v3["total_params"], v3["mtp_params"]) == (671_026_419_200, 11_507_286_272 + 102_760_448 + 21_504)
    assert record("gemma-2-9b")["mtp_params"] == 0
    assert "11,610,068,224" in CliRunner().invoke(app, ["catalog", "models", "deepseek-v3"]).output
