"""A Hugging Face ``config.json`` as a model shape (local files only; runplan never downloads).

The keys are the ones the transformers configuration classes define for each ``model_type``: LlamaConfig,
MistralConfig, MixtralConfig, Qwen2Config, Qwen3Config, Qwen3MoeConfig, DeepseekV2Config/DeepseekV3Config
(the ``configuration_deepseek.py`` shipped with DeepSeek's checkpoints) and GPTNeoXConfig. A key a config
leaves out takes that class's default (``num_key_value_heads`` = ``num_attention_heads``, ``head_dim`` =
``hidden_size / num_attention_heads``). A shape the mapping cannot express (Qwen2-MoE's shared expert of its
own size, GPT-NeoX's partial rotary) is refused or noted, never guessed.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from runplan.errors import SpecError
from runplan.model import ModelShape

#: The families read, by config.json ``model_type``.
LLAMA_LIKE = ("llama", "mistral", "qwen2", "qwen3")
MOE_LIKE = ("mixtral", "qwen3_moe")
DEEPSEEK = ("deepseek_v2", "deepseek_v3")
NEOX = ("gpt_neox",)
MODEL_TYPES = (*LLAMA_LIKE, *MOE_LIKE, *DEEPSEEK, *NEOX)
#: A config.json is a few kB; anything far larger is not one.
MAX_CONFIG_BYTES = 1_000_000


def is_config_path(text: str) -> bool:
    """Whether a --model value or ``model.config`` names a JSON file rather than a preset or size."""
    return text.strip().lower().endswith(".json")


def load_config_shape(path: str | Path, *, where: str | None = "model") -> ModelShape:
    """The shape of the local config.json at ``path``; every problem is one SpecError naming ``where``."""
    path = Path(path)
    from runplan.fileio import JsonInputError, parse_json, read_text

    if not path.exists():
        raise SpecError(f"no config.json file at '{path}'", where=where, hint="give a local file path")
    try:
        text = read_text(path, MAX_CONFIG_BYTES)  # regular files only, at most the cap (runplan.fileio)
    except SpecError as error:
        raise SpecError(error.message, where=where, hint=error.hint) from None
    try:
        data = parse_json(text)
    except JsonInputError as error:
        raise SpecError(f"'{path}' is not JSON: {error}", where=where) from None
    if not isinstance(data, dict):
        raise SpecError(f"'{path}' is not a config.json object", where=where)
    name = data.get("_name_or_path") or path.parent.name or path.stem
    return shape_from_config(data, name=str(name).split("/")[-1].lower(), where=where)


def shape_from_config(
    config: dict[str, Any], *, name: str | None = None, where: str | None = "model"
) -> ModelShape:
    """A ModelShape from a config.json dictionary (``model_type`` picks the family's keys)."""
    from pydantic import ValidationError

    kind = config.get("model_type")
    if kind not in MODEL_TYPES:
        raise SpecError(
            f"config.json model_type {kind!r} is not read",
            where=where,
            hint=f"supported: {', '.join(MODEL_TYPES)}; or give the shape (model: {{shape: ...}})",
        )
    try:
        fields = _common(config) | _family(kind, config)
        return ModelShape.model_validate({"name": name, **fields})
    except KeyError as error:
        raise SpecError(f"config.json ({kind}) lacks {error.args[0]!r}", where=where) from None
    except (ValidationError, TypeError, ValueError) as error:
        first = error.errors()[0]["msg"] if isinstance(error, ValidationError) else str(error)
        first = first.removeprefix("Value error, ")
        for field, key in _CONFIG_KEYS.items():  # the config's own keys, not runplan's shape fields
            first = re.sub(rf"\b{field}\b", key, first)
        raise SpecError(f"config.json ({kind}) gives an impossible shape: {first}", where=where) from None


#: ModelShape fields by the config.json key they come from (_common), for messages about the config
_CONFIG_KEYS = {
    "n_layers": "num_hidden_layers",
    "d_model": "hidden_size",
    "n_heads": "num_attention_heads",
    "n_kv_heads": "num_key_value_heads",
    "ffn_hidden": "intermediate_size",
}


def _int(c: dict[str, Any], key: str) -> int:
    """``c[key]`` as a whole positive number; anything else is a one-line error naming the key."""
    return _whole(c[key], key)


def _int_or(c: dict[str, Any], key: str, default: int) -> int:
    """``c[key]`` as :func:`_int`, or ``default`` when the key is absent or null (as Hugging Face does)."""
    value = c.get(key)
    return default if value is None else _whole(value, key)


def _whole(value: Any, key: str) -> int:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value != int(value)
        or value <= 0
    ):
        raise ValueError(f"{key} must be a whole number above 0, got {value!r}")
    return int(value)


def _common(c: dict[str, Any]) -> dict[str, Any]:
    heads, hidden = _int(c, "num_attention_heads"), _int(c, "hidden_size")
    if c.get("head_dim") is None and hidden % heads:
        # Hugging Face takes hidden_size // num_attention_heads without head_dim, and its attention modules
        # refuse (older releases) or mis-shape a hidden size that does not split evenly over the heads
        raise ValueError(
            f"hidden_size {hidden} does not split evenly over num_attention_heads {heads} and head_dim is not "
            "given; give head_dim, or check the two numbers"
        )
    return {
        "n_layers": _int(c, "num_hidden_layers"),
        "d_model": _int(c, "hidden_size"),
        "n_heads": heads,
        "n_kv_heads": _int_or(c, "num_key_value_heads", heads),
        "head_dim": _int_or(c, "head_dim", hidden // heads),
        "ffn_hidden": _int(c, "intermediate_size"),
        "vocab_size": _int(c, "vocab_size"),
        "tied_embeddings": bool(c.get("tie_word_embeddings", False)),
        "rope_theta": float(c.get("rope_theta") or c.get("rotary_emb_base") or 10000.0),
        "norm_eps": c.get("rms_norm_eps") or c.get("layer_norm_eps"),
        "init_std": c.get("initializer_range"),
        "rope_scaling": _rope_scaling(c.get("rope_scaling")),
    }


def _rope_scaling(scaling: dict[str, Any] | None) -> dict[str, Any] | None:
    """Llama 3.1's ``llama3`` and DeepSeek's ``yarn`` scaling as RopeScaling; any other kind is refused."""
    if not scaling:
        return None
    kind = scaling.get("rope_type") or scaling.get("type")
    if kind not in ("llama3", "yarn"):
        raise ValueError(f"rope_scaling type {kind!r} is not modelled (llama3 and yarn are)")
    keys = (
        *("factor", "original_max_position_embeddings", "low_freq_factor", "high_freq_factor"),
        *("beta_fast", "beta_slow", "mscale", "mscale_all_dim"),
    )
    return {"type": kind, **{k: scaling[k] for k in keys if scaling.get(k) is not None}}


def _family(kind: str, c: dict[str, Any]) -> dict[str, Any]:
    if kind in NEOX:  # Pythia / GPT-NeoX-20B: GeLU MLP, LayerNorm, biases everywhere, untied head
        return {"mlp": "gelu", "norm": "layernorm", "linear_bias": True}
    swiglu = {"mlp": "swiglu", "norm": "rmsnorm"}
    if kind in LLAMA_LIKE:
        return swiglu | {
            "qkv_bias": kind == "qwen2" or bool(c.get("attention_bias", False)),
            "qk_norm": kind == "qwen3",
        }
    if kind in MOE_LIKE:
        if kind == "qwen3_moe" and (c.get("mlp_only_layers") or int(c.get("decoder_sparse_step", 1)) != 1):
            raise ValueError("dense layers among the MoE layers (mlp_only_layers, decoder_sparse_step)")
        experts = int(c["num_local_experts"] if kind == "mixtral" else c["num_experts"])
        expert_ffn = int(c["intermediate_size"] if kind == "mixtral" else c["moe_intermediate_size"])
        return swiglu | {
            "qk_norm": kind == "qwen3_moe",
            "n_experts": experts,
            "top_k": _int(c, "num_experts_per_tok"),
            "expert_ffn_hidden": expert_ffn,
        }
    return swiglu | _deepseek(kind, c)


def _deepseek(kind: str, c: dict[str, Any]) -> dict[str, Any]:
    """DeepSeek-V2/V3: MLA attention (DeepSeek-AI 2024, arXiv 2405.04434 §2.1) and DeepSeekMoE layers."""
    v3 = kind == "deepseek_v3"
    return {
        "attention": "mla",
        "n_kv_heads": _int(c, "num_attention_heads"),  # MLA: every head has its own (decompressed) K and V
        "head_dim": _int(c, "qk_nope_head_dim"),
        "q_lora_rank": int(c.get("q_lora_rank") or 0),  # null in V2-Lite: a full-rank q projection
        "kv_lora_rank": _int(c, "kv_lora_rank"),
        "qk_rope_head_dim": _int(c, "qk_rope_head_dim"),
        "v_head_dim": _int(c, "v_head_dim"),
        "n_experts": _int(c, "n_routed_experts"),
        "top_k": _int(c, "num_experts_per_tok"),
        "expert_ffn_hidden": _int(c, "moe_intermediate_size"),
        "n_shared_experts": int(c.get("n_shared_experts") or 0),
        "n_dense_layers": int(c.get("first_k_dense_replace") or 0),
        "router_score": "sigmoid" if c.get("scoring_func") == "sigmoid" else "softmax",
        "router_expert_bias": c.get("topk_method") == "noaux_tc",
        "router_topk_scale": float(c.get("routed_scaling_factor") or 1.0),
        "router_groups": int(c.get("n_group") or 0)
        if v3 or c.get("topk_method") == "group_limited_greedy"
        else 0,
        "router_group_topk": int(c.get("topk_group") or 0)
        if v3 or c.get("topk_method") == "group_limited_greedy"
        else 0,
    }
