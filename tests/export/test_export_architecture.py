"""Issue 14: every export carries the whole architecture, and every exported architecture field equals the
catalog's, for every preset an engine can express (the expected values are read from the catalog entries
here, not from the exporters' own Architecture value)."""

from __future__ import annotations

import json
import tomllib

import pytest
from tests.export._plans import golden_plan
from tests.export.test_export_keys import megatron_args

from runplan.catalog import shipped_catalog
from runplan.export import export_plan
from runplan.export._common import engine_data

PRESETS = [shape.name for shape in shipped_catalog().models]
#: Megatron-LM and torchtitan build no GeGLU MLP and no post-norms (Gemma 2/3): those presets are refused
#: (tests/export/test_gemma_and_window_export.py), the rest must carry every field
BUILDABLE = [s.name for s in shipped_catalog().models if s.mlp != "geglu" and not s.post_norms]


def plan_with(name: str):
    """The 2e23 compute-optimal example's plan with preset ``name`` as its model, on the layout runplan planned
    for it, one every preset fits (t 4, p 1, d 256, c 1, e 1 on 1,024 GPUs; d·b·m = 256·2·6 = 3,072 sequences)."""
    shape = shipped_catalog().model(name)
    base = golden_plan("2e23-compute-optimal")
    assert (base.layout.best.tp, base.layout.best.pp, base.layout.best.ep) == (4, 1, 1)
    return base.model_copy(update={"model": base.model.model_copy(update={"shape": shape})})


def test_presets_cover_the_published_values() -> None:
    """Spot checks against the config.json files named in each entry's source."""
    catalog = shipped_catalog()
    llama = catalog.model("llama-3.1-70b")
    assert llama.rope_theta == 500000.0 and llama.norm_eps == 1e-5 and llama.init_std == 0.02
    assert llama.rope_scaling is not None and llama.rope_scaling.type == "llama3"
    assert (llama.rope_scaling.factor, llama.rope_scaling.original_max_position_embeddings) == (8.0, 8192)
    assert catalog.model("llama-3-8b").rope_scaling is None
    assert catalog.model("mixtral-8x7b").rope_theta == 1e6
    assert catalog.model("qwen3-30b-a3b").norm_eps == 1e-6
    v3 = catalog.model("deepseek-v3")
    assert (v3.init_std, v3.router_score, v3.router_groups, v3.router_group_topk) == (0.006, "sigmoid", 8, 4)
    assert v3.rope_scaling is not None and (v3.rope_scaling.type, v3.rope_scaling.factor) == ("yarn", 40.0)
    assert v3.rope_scaling.mscale_all_dim == 1.0 and v3.router_topk_scale == 2.5 and v3.router_expert_bias
    assert catalog.model("gopher-280b").rope_theta is None  # relative positions, nothing published


@pytest.mark.parametrize("name", BUILDABLE)
def test_megatron_flags_carry_every_catalog_field(name: str) -> None:
    shape = shipped_catalog().model(name)
    result = export_plan(plan_with(name), "megatron")
    a = megatron_args(plan_with(name))
    if shape.learned_positions:
        assert a.position_embedding_type == "learned_absolute"
    elif shape.rope_theta is None:  # unpublished (Gopher's relative positions): Megatron's default, said
        assert a.rotary_base == 10000 and any(w.startswith("RoPE base:") for w in result.warnings)
    else:
        assert a.rotary_base == shape.rope_theta
    scaling = shape.rope_scaling
    assert a.use_rope_scaling == (scaling is not None and scaling.type == "llama3")
    if scaling is not None and scaling.type == "llama3":
        assert a.rope_scaling_factor == scaling.factor
    if scaling is not None and scaling.type == "yarn":
        assert a.rotary_scaling_factor == scaling.factor
        assert (a.mscale, a.mscale_all_dim) == (scaling.mscale, scaling.mscale_all_dim)
        assert a.rope_type == "yarn" if shape.attention == "mla" else a.position_embedding_type == "yarn"
    defaults = engine_data("megatron_arguments")["flags"]
    assert a.layernorm_epsilon == (shape.norm_eps or defaults["--norm-epsilon"]["default"])
    assert a.init_method_std == (shape.init_std or defaults["--init-method-std"]["default"])
    assert a.untie_embeddings_and_output_weights == (not shape.tied_embeddings)
    assert a.add_bias_linear == shape.linear_bias
    assert a.add_qkv_bias == (shape.qkv_bias and not shape.linear_bias)
    assert a.qk_layernorm == shape.qk_norm
    if shape.n_experts:
        assert a.moe_router_score_function == shape.router_score
        assert a.moe_router_enable_expert_bias == shape.router_expert_bias
        assert (a.moe_router_num_groups or 0, a.moe_router_group_topk or 0) == (
            shape.router_groups,
            shape.router_group_topk,
        )
        assert (a.moe_router_topk_scaling_factor or 1.0) == shape.router_topk_scale
        # softmax: Megatron renormalises the top-k unless --moe-router-pre-softmax (top-1: always pre-softmax)
        if shape.router_score == "softmax":
            assert a.moe_router_pre_softmax == (shape.top_k == 1 or not shape.router_topk_norm)
        balance = {"micro_batch": "aux_loss", "sequence": "seq_aux_loss", "global_batch": "global_aux_loss"}
        if shape.router_aux_loss_coef is None:  # Megatron's default coefficient 0, said in a warning
            assert a.moe_aux_loss_coeff == 0.0 and any(
                w.startswith("load balancing:") for w in result.warnings
            )
        else:
            assert a.moe_aux_loss_coeff == [shape.router_aux_loss_coef]
            assert a.moe_router_load_balancing_type == [balance[shape.router_aux_loss_scope]]
    if shape.vocab_size % 4 == 0:  # padded V = V: the planned embedding
        multiple = a.make_vocab_size_divisible_by * 4
        assert shape.vocab_size % multiple == 0
    else:
        assert any(w.startswith("vocabulary:") for w in result.warnings)


def _header_fields(text: str, marker: str) -> dict[str, str]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if marker in line) + 1
    out = {}
    for line in lines[start:]:
        if not line.startswith("#   ") or " = " not in line:
            break
        key, value = line[4:].split(" = ", 1)
        out[key] = value
    return out


def _expected_fields(name: str) -> dict[str, object]:
    shape = shipped_catalog().model(name)
    out: dict[str, object] = {
        "positions": "learned" if shape.learned_positions else "rope",
        "rope_theta": shape.rope_theta,
        "norm": shape.norm,
        "norm_eps": shape.norm_eps,
        "init_std": shape.init_std,
        "tied_embeddings": shape.tied_embeddings,
        "linear_bias": shape.linear_bias,
        "qkv_bias": shape.qkv_bias,
        "qk_norm": shape.qk_norm,
        "rope_scaling.type": shape.rope_scaling.type if shape.rope_scaling else None,
    }
    if shape.rope_scaling is not None:
        for key, value in shape.rope_scaling.model_dump(exclude={"type"}, exclude_none=True).items():
            out[f"rope_scaling.{key}"] = value
    if shape.n_experts:
        out |= {
            "router_score": shape.router_score,
            "router_expert_bias": shape.router_expert_bias,
            "router_groups": shape.router_groups,
            "router_group_topk": shape.router_group_topk,
            "router_topk_scale": shape.router_topk_scale,
            "router_topk_norm": shape.router_topk_norm,
            "router_aux_loss_coef": shape.router_aux_loss_coef,
            "router_aux_loss_scope": shape.router_aux_loss_scope,
        }
    return out


@pytest.mark.parametrize("name", BUILDABLE)
@pytest.mark.parametrize("target", ["megatron", "torchtitan"])
def test_file_headers_list_every_catalog_field(name: str, target: str) -> None:
    text = export_plan(plan_with(name), target).text
    listed = _header_fields(text, "Architecture")
    for key, value in _expected_fields(name).items():
        assert listed[key] == ("unpublished" if value is None else str(value)), key


@pytest.mark.parametrize("name", PRESETS)
def test_deepspeed_json_carries_every_catalog_field(name: str) -> None:
    config = json.loads(export_plan(plan_with(name), "deepspeed").text)
    written = config["runplan"]["architecture"]
    for key, value in _expected_fields(name).items():
        assert written[key] == value, key


@pytest.mark.parametrize("name", BUILDABLE)
def test_torchtitan_flavor_matches_the_catalog_or_says_where_not(name: str) -> None:
    """A registered flavor builds the catalog's model, or each differing field is a warning; a preset
    without a flavor is a warning that names the registration."""
    from runplan.export.torchtitan import _FLAVORS

    shape = shipped_catalog().model(name)
    result = export_plan(plan_with(name), "torchtitan")
    doc = tomllib.loads(result.text)
    if name not in _FLAVORS:
        assert any(w.startswith("model: torchtitan 0.2.x has no flavor") for w in result.warnings)
        return
    spec = engine_data("torchtitan_flavors")[doc["model"]["name"]][doc["model"]["flavor"]]
    planned = {
        "n_layers": shape.n_layers,
        "dim": shape.d_model,
        "n_heads": shape.n_heads,
        "n_kv_heads": shape.n_kv_heads,
        "ffn_hidden": shape.ffn_hidden,
        "vocab_size": shape.vocab_size,
        "rope_theta": shape.rope_theta,
        "rope_scaling": shape.rope_scaling.model_dump(exclude_none=True) if shape.rope_scaling else "none",
        "norm_eps": shape.norm_eps,
    }
    for key, value in planned.items():
        flagged = any(w.startswith("architecture:") and f" {key} = " in w for w in result.warnings)
        assert (spec[key] == value) != flagged, key
    if name == "llama-3-8b":  # torchtitan's llama3 flavors always apply Llama 3.1's RoPE scaling
        assert any("rope_scaling" in w for w in result.warnings)


def test_megatron_says_which_rope_scaling_values_it_cannot_set() -> None:
    """Megatron's Llama 3.1 scaling fixes the band factors and the original context; YaRN outside MLA takes
    them as flags."""
    from runplan.model import RopeScaling

    base = plan_with("llama-3.1-8b")
    shape = base.model.shape

    def export_with(scaling: RopeScaling):
        changed = shape.model_copy(update={"rope_scaling": scaling})
        return export_plan(
            base.model_copy(update={"model": base.model.model_copy(update={"shape": changed})}), "megatron"
        )

    odd = RopeScaling(
        type="llama3",
        factor=32.0,
        original_max_position_embeddings=8192,
        low_freq_factor=1.0,
        high_freq_factor=2.0,
    )
    result = export_with(odd)
    warning = next(w for w in result.warnings if w.startswith("RoPE scaling:"))
    assert "high_freq_factor = 2.0" in warning and "low_freq_factor" not in warning.split("the model has")[1]
    assert "--rope-scaling-factor 32.0" in result.text
    yarn = RopeScaling(
        type="yarn",
        factor=4.0,
        original_max_position_embeddings=32768,
        beta_fast=32.0,
        beta_slow=1.0,
        mscale=1.0,
        mscale_all_dim=0.0,
    )
    text = export_with(yarn).text
    assert (
        "--position-embedding-type yarn" in text and "--yarn-original-max-position-embeddings 32768" in text
    )
    assert "--use-rope-scaling" not in text
