"""A Hugging Face ``config.json`` as a model shape (local files only; runplan never downloads).

The keys are the ones the transformers configuration classes define for each ``model_type``: LlamaConfig,
MistralConfig, MixtralConfig, Qwen2Config, Qwen3Config, Qwen3MoeConfig, DeepseekV2Config/DeepseekV3Config
(the ``configuration_deepseek.py`` shipped with DeepSeek's checkpoints), GPTNeoXConfig and GemmaConfig,
Gemma2Config, Gemma3TextConfig (:func:`_gemma`: GeGLU, post-norms, sliding windows; every key of theirs is read
or ignored by name, :data:`_GEMMA_IGNORED`; a later Gemma's key in an earlier one's file is refused,
:data:`_LATER_GEMMA_KEYS`). Mistral's and Mixtral's ``sliding_window`` is read; Qwen's is used
only with ``use_sliding_window``, which is refused. A key a config
leaves out takes that class's default (``num_key_value_heads`` = ``num_attention_heads``, ``head_dim`` =
``hidden_size / num_attention_heads``; ``rope_theta`` 1e4, Mixtral's 1e6). RoPE is read from ``rope_theta`` and
``rope_scaling``, or from the one ``rope_parameters`` object transformers v5 writes. The router's top-k
renormalisation comes from ``norm_topk_prob`` (each class's default when absent; Mixtral always renormalises) and
its balance loss from ``router_aux_loss_coef`` (DeepSeek: ``aux_loss_alpha`` and ``seq_aux``), left unknown when
absent and for DeepSeek-V3's ``noaux_tc`` router, whose code never trains with it. A shape the mapping cannot
express (Qwen2-MoE's shared expert of its own size, Llama's ``attention_bias`` without ``mlp_bias``, DeepSeek's
``moe_layer_freq`` above 1) is refused, never guessed; a key of the wrong JSON type (``"false"``, ``"8"``,
``8.7`` experts) is refused naming the key, never coerced.
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
GEMMA = ("gemma", "gemma2", "gemma3_text")
MODEL_TYPES = (*LLAMA_LIKE, *MOE_LIKE, *DEEPSEEK, *NEOX, *GEMMA)
#: A config.json is a few kB; anything far larger is not one.
MAX_CONFIG_BYTES = 1_000_000


def is_config_path(text: str) -> bool:
    """Whether a --model value or ``model.config`` names a JSON file, or a local folder (a downloaded Hugging
    Face checkpoint, ``huggingface-cli download --local-dir``), rather than a preset or size."""
    text = text.strip()
    return text.lower().endswith(".json") or (("/" in text or "\\" in text) and Path(text).is_dir())


def load_config_shape(path: str | Path, *, where: str | None = "model") -> ModelShape:
    """The shape of the local config.json at ``path``; every problem is one SpecError naming ``where``."""
    path = Path(path)
    from runplan.fileio import JsonInputError, parse_json, read_text

    if path.is_dir():  # a checkpoint folder: its config.json
        if not (path / "config.json").is_file():
            raise SpecError(
                f"no config.json in the folder '{path}'", where=where, hint="give the config.json path"
            )
        path = path / "config.json"
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
    return shape_from_config(data, name=_model_name(data, path), where=where)


def _model_name(data: dict[str, Any], path: Path) -> str:
    """The config's ``_name_or_path``, else the file's own name (``qwen2.5-7b.json``), else the folder of a
    ``config.json``: a Hugging Face cache snapshot (``models--Org--Name/snapshots/<commit>/config.json``)
    is named by its repository, not by the 40-hex commit folder."""
    given = data.get("_name_or_path")
    if isinstance(given, str) and given.strip("/ ."):  # "." or "./": saved from the working folder
        return given.strip("/ .").split("/")[-1].lower()
    if path.stem.lower() != "config":
        return path.stem.lower()
    folder = path.resolve().parent
    if folder.parent.name == "snapshots" and folder.parent.parent.name.startswith("models--"):
        return folder.parent.parent.name.split("--")[-1].lower()
    return (folder.name or path.stem).lower()


def shape_from_config(
    config: dict[str, Any], *, name: str | None = None, where: str | None = "model"
) -> ModelShape:
    """A ModelShape from a config.json dictionary (``model_type`` picks the family's keys)."""
    from pydantic import ValidationError

    kind = config.get("model_type")
    supported = f"supported: {', '.join(MODEL_TYPES)}; or give the shape (model: {{shape: ...}})"
    if kind is None:
        raise SpecError("config.json lacks 'model_type'", where=where, hint=supported)
    if kind not in MODEL_TYPES:
        why = _NOT_READ_BECAUSE.get(str(kind), "")
        raise SpecError(f"config.json model_type {kind!r} is not read{why}", where=where, hint=supported)
    try:
        fields = _common(kind, config) | _family(kind, config)
        return ModelShape.model_validate({"name": name, **fields})
    except KeyError as error:
        raise SpecError(
            f"config.json ({kind}) lacks {error.args[0]!r}",
            where=where,
            hint="copy it from the model's published config.json",
        ) from None
    except _NotModelled as error:
        raise SpecError(
            f"config.json ({kind}): {_config_message(kind, error)}",
            where=where,
            hint=error.hint,
        ) from None
    except (ValidationError, TypeError, ValueError) as error:
        raise SpecError(
            f"config.json ({kind}) gives an impossible shape: {_config_message(kind, error)}", where=where
        ) from None


#: Why a well-known family is not read (what ModelShape lacks), after "model_type ... is not read".
_NOT_READ_BECAUSE = {
    "gemma3": ": it is the multimodal wrapper; plan its text tower (text_config as a gemma3_text config.json)",
    "qwen2_moe": ": its shared expert has a size of its own and a gate (shared_expert_intermediate_size)",
}


#: ModelShape fields by the config.json key they come from, for messages about the config (per model_type
#: where the families name it differently)
_CONFIG_KEYS = {
    "n_layers": "num_hidden_layers",
    "d_model": "hidden_size",
    "n_heads": "num_attention_heads",
    "n_kv_heads": "num_key_value_heads",
    "ffn_hidden": "intermediate_size",
    "vocab_size": "vocab_size",
    "top_k": "num_experts_per_tok",
    "expert_ffn_hidden": "moe_intermediate_size",
    "n_dense_layers": "first_k_dense_replace",
    "router_groups": "n_group",
    "router_group_topk": "topk_group",
    "router_topk_scale": "routed_scaling_factor",
    "router_topk_norm": "norm_topk_prob",
    "router_aux_loss_coef": "router_aux_loss_coef",
    "norm_eps": "rms_norm_eps",
    "init_std": "initializer_range",
}
_CONFIG_KEYS_BY_TYPE = {
    "mixtral": {"n_experts": "num_local_experts", "expert_ffn_hidden": "intermediate_size"},
    "qwen3_moe": {"n_experts": "num_experts"},
    "deepseek_v2": {
        "n_experts": "n_routed_experts",
        "head_dim": "qk_nope_head_dim",
        "router_aux_loss_coef": "aux_loss_alpha",
    },
    "deepseek_v3": {
        "n_experts": "n_routed_experts",
        "head_dim": "qk_nope_head_dim",
        "router_aux_loss_coef": "aux_loss_alpha",
        "mtp_layers": "num_nextn_predict_layers",
    },
    "gpt_neox": {"norm_eps": "layer_norm_eps"},
}


def _config_message(kind: str, error: Exception) -> str:
    """One line about ``error`` in the config's own keys, not runplan's shape fields (no pydantic prefix)."""
    from pydantic import ValidationError

    keys = _CONFIG_KEYS | _CONFIG_KEYS_BY_TYPE.get(kind, {})
    if isinstance(error, ValidationError):
        first = error.errors()[0]
        loc = ".".join(str(part) for part in first["loc"])
        text = first["msg"].removeprefix("Value error, ")
        text = f"{loc}: {text}" if loc else text
    else:
        text = str(error)
    pattern = r"\b(" + "|".join(map(re.escape, keys)) + r")\b"
    return re.sub(pattern, lambda match: keys[match.group(1)], text)  # one pass: no key renamed twice


class _NotModelled(ValueError):
    """A config.json feature the shape cannot express: refused, never counted as something else."""

    def __init__(
        self, message: str, hint: str = "give the shape (model: {shape: ...}) that the checkpoint has"
    ):
        super().__init__(message)
        self.hint = hint


def _int(c: dict[str, Any], key: str) -> int:
    """``c[key]`` as a whole positive number; anything else is a one-line error naming the key."""
    return _whole(c[key], key)


def _int_or(c: dict[str, Any], key: str, default: int, *, minimum: int = 1) -> int:
    """``c[key]`` as :func:`_int`, or ``default`` when the key is absent or null (as Hugging Face does)."""
    value = c.get(key)
    return default if value is None else _whole(value, key, minimum)


def _whole(value: Any, key: str, minimum: int = 1) -> int:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value != int(value)
        or value < minimum
    ):
        bound = "above 0" if minimum == 1 else f"of at least {minimum}"
        raise ValueError(f"{key} must be a whole number {bound}, got {value!r}")
    return int(value)


def _flag(c: dict[str, Any], key: str, default: bool = False) -> bool:
    """``c[key]`` as a JSON boolean (absent or null: ``default``); the string "false" is refused, not true."""
    value = c.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ValueError(f"{key} must be true or false, got {value!r}")
    return value


def _positive_or_none(value: Any, key: str) -> float | None:
    """A positive finite number, or None for an absent or null key; anything else names the key."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
        raise ValueError(f"{key} must be a number above 0, got {value!r}")
    return float(value)


def _finite(value: Any, key: str) -> float:
    """A finite number (its range is RopeScaling's to check); a string or boolean names the key."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{key} must be a number, got {value!r}")
    return float(value)


#: RoPE base of each configuration class when config.json leaves it out (MixtralConfig: 1e6; the rest 1e4).
_DEFAULT_ROPE_THETA = {"mixtral": 1e6}


def _common(kind: str, c: dict[str, Any]) -> dict[str, Any]:
    heads = (
        _int_or(c, "num_attention_heads", _GEMMA_HEADS[kind][0])
        if kind in GEMMA
        else _int(c, "num_attention_heads")
    )
    hidden = _int(c, "hidden_size")
    if (
        c.get("head_dim") is None and hidden % heads and kind not in (*DEEPSEEK, *GEMMA)
    ):  # Gemma: head_dim 256
        # Hugging Face takes hidden_size // num_attention_heads without head_dim, and its attention modules
        # refuse (older releases) or mis-shape a hidden size that does not split evenly over the heads
        raise ValueError(
            f"hidden_size {hidden} does not split evenly over num_attention_heads {heads} and head_dim is not "
            "given; give head_dim, or check the two numbers"
        )
    theta, scaling = _gemma_rope(c) if kind == "gemma3_text" else _rope(kind, c)
    eps_key = "layer_norm_eps" if kind in NEOX else "rms_norm_eps"
    return {
        "n_layers": _int(c, "num_hidden_layers"),
        "d_model": hidden,
        "n_heads": heads,
        "n_kv_heads": _int_or(c, "num_key_value_heads", heads),
        "head_dim": _int_or(c, "head_dim", hidden // heads),
        "ffn_hidden": _int(c, "intermediate_size"),
        "vocab_size": _int_or(c, "vocab_size", _GEMMA_VOCAB[kind])
        if kind in GEMMA
        else _int(c, "vocab_size"),
        "tied_embeddings": _flag(c, "tie_word_embeddings"),  # False: every class read here defaults to untied
        "rope_theta": theta,
        "norm_eps": _positive_or_none(c.get(eps_key), eps_key),
        "init_std": _positive_or_none(c.get("initializer_range"), "initializer_range"),
        "rope_scaling": scaling,
    }


def _rope(kind: str, c: dict[str, Any]) -> tuple[float, dict[str, Any] | None]:
    """RoPE base and scaling from ``rope_theta``/``rope_scaling`` or, as transformers v5 writes them, one
    ``rope_parameters`` object (``{"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, ...}``)."""
    params = c.get("rope_parameters")
    scaling: Any
    if params is not None:
        if not isinstance(params, dict):
            raise ValueError(
                f"rope_parameters must be an object with rope_type and rope_theta, got {params!r}"
            )
        theta, scaling, key = params.get("rope_theta", c.get("rope_theta")), params, "rope_parameters"
    else:
        theta = c.get("rope_theta") if c.get("rope_theta") is not None else c.get("rotary_emb_base")
        scaling, key = c.get("rope_scaling"), "rope_scaling"
    base = _positive_or_none(theta, "rope_theta")
    return (_DEFAULT_ROPE_THETA.get(kind, 1e4) if base is None else base), _rope_scaling(scaling, key)


def _rope_scaling(scaling: Any, key: str = "rope_scaling", *, linear: bool = False) -> dict[str, Any] | None:
    """Llama 3.1's ``llama3`` and DeepSeek's ``yarn`` scaling as RopeScaling (with ``linear``, Gemma 3's
    ``linear`` too); any other kind is refused."""
    if not scaling:
        return None
    if not isinstance(scaling, dict):
        raise ValueError(
            f'{key} must be an object such as {{"rope_type": "llama3", ...}} or null, got {scaling!r}'
        )
    kind = scaling.get("rope_type") or scaling.get("type")
    if kind == "default" or (kind is None and key.startswith("rope_parameters")):
        return None
    if kind == "linear" and linear:
        return {"type": "linear", "factor": _positive_or_none(scaling.get("factor"), f"{key}.factor") or 1.0}
    if kind not in ("llama3", "yarn"):
        raise _NotModelled(
            f"{key} type {kind!r} is not modelled (llama3 and yarn are)",
            hint=f"it changes no parameter count: plan a copy of the file without {key}, or give the shape",
        )
    keys = (
        *("factor", "original_max_position_embeddings", "low_freq_factor", "high_freq_factor"),
        *("beta_fast", "beta_slow", "mscale", "mscale_all_dim"),
    )
    for needed in keys[:2]:
        if scaling.get(needed) is None:
            raise KeyError(f"{key}.{needed}")
    values = {k: _finite(scaling[k], f"{key}.{k}") for k in keys if scaling.get(k) is not None}
    values["original_max_position_embeddings"] = _whole(
        scaling["original_max_position_embeddings"], f"{key}.original_max_position_embeddings"
    )
    return {"type": kind, **values}


def _family(kind: str, c: dict[str, Any]) -> dict[str, Any]:
    if kind in GEMMA:
        return _gemma(kind, c)
    if kind in NEOX:  # Pythia / GPT-NeoX-20B: GeLU MLP, LayerNorm, biases everywhere, untied head
        if not _flag(c, "attention_bias", True):
            raise _NotModelled("attention_bias false (no attention biases beside the MLP's) is not modelled")
        return {"mlp": "gelu", "norm": "layernorm", "linear_bias": True}
    swiglu = {"mlp": "swiglu", "norm": "rmsnorm"} | _mistral_window(kind, c)
    if kind in LLAMA_LIKE:
        return swiglu | _llama_biases(kind, c) | {"qk_norm": kind == "qwen3"}
    if kind in ("qwen3_moe", *DEEPSEEK):
        _no_attention_bias(kind, c)
    if kind in MOE_LIKE:
        if kind == "qwen3_moe" and (c.get("mlp_only_layers") or _int_or(c, "decoder_sparse_step", 1) != 1):
            raise _NotModelled("dense layers among the MoE layers (mlp_only_layers, decoder_sparse_step)")
        mixtral = kind == "mixtral"
        return (
            swiglu
            | {
                "qk_norm": kind == "qwen3_moe",
                "n_experts": _int(c, "num_local_experts" if mixtral else "num_experts"),
                "top_k": _int(c, "num_experts_per_tok"),
                "expert_ffn_hidden": _int(c, "intermediate_size" if mixtral else "moe_intermediate_size"),
            }
            | _router_balance(kind, c)
        )
    return swiglu | _deepseek(kind, c) | _router_balance(kind, c)


#: ``norm_topk_prob`` when config.json leaves it out: MixtralSparseMoeBlock always divides the top-k weights by
#: their sum (transformers modeling_mixtral, no key); Qwen3MoeConfig and DeepSeek-V2's DeepseekV2Config default
#: to false, DeepSeek-V3's DeepseekV3Config to true (configuration_deepseek.py in each checkpoint).
_DEFAULT_TOPK_NORM = {"mixtral": True, "qwen3_moe": False, "deepseek_v2": False, "deepseek_v3": True}
#: Tokens the balance loss counts, by family: transformers' load_balancing_loss_func (Mixtral) counts the
#: micro-batch it sees; Qwen3 balances over the global batch (arXiv 2505.09388 §2, Qiu et al. 2025); DeepSeek's
#: ``seq_aux`` (default true) has their MoEGate compute it per sequence (modeling_deepseek.py; DeepSeek-V3's
#: sequence-wise balance loss, arXiv 2412.19437 §2.1.2), else over the micro-batch.
_AUX_SCOPE = {"mixtral": "micro_batch", "qwen3_moe": "global_batch"}


def _router_balance(kind: str, c: dict[str, Any]) -> dict[str, Any]:
    """Top-k renormalisation and the balance loss (coefficient from ``router_aux_loss_coef``, DeepSeek's
    ``aux_loss_alpha``; None when the key is absent: a class default is no published training value)."""
    norm = True if kind == "mixtral" else _flag(c, "norm_topk_prob", _DEFAULT_TOPK_NORM[kind])
    if norm and kind in MOE_LIKE and _int(c, "num_experts_per_tok") == 1:
        # transformers divides a top-1 weight by itself (MixtralSparseMoeBlock, Qwen3MoeSparseMoeBlock): a gate of 1
        raise _NotModelled("a top-1 router whose weight is renormalised to a constant 1 is not modelled")
    if kind in DEEPSEEK:
        key, scope = "aux_loss_alpha", "sequence" if _flag(c, "seq_aux", True) else "micro_batch"
    else:
        key, scope = "router_aux_loss_coef", _AUX_SCOPE[kind]
    coef = c.get(key)
    if kind in DEEPSEEK and c.get("topk_method") == "noaux_tc":
        # DeepSeek-V3's config.json carries aux_loss_alpha 0.001, but its MoEGate asserts `not self.training` for
        # noaux_tc (modeling_deepseek.py) and the paper trains alpha = 0.0001 (arXiv 2412.19437 §4.2): unknown
        coef = None
    elif coef is not None and (
        isinstance(coef, bool) or not isinstance(coef, int | float) or not 0 <= coef < math.inf
    ):
        raise ValueError(f"{key} must be a number of at least 0, got {coef!r}")
    return {
        "router_topk_norm": norm,
        "router_aux_loss_coef": None if coef is None else float(coef),
        "router_aux_loss_scope": scope,
    }


def _llama_biases(kind: str, c: dict[str, Any]) -> dict[str, Any]:
    """Qwen2: q, k, v biases always (Qwen2Attention). Llama and Qwen3: ``attention_bias`` puts biases on q, k,
    v *and* o, Llama's ``mlp_bias`` on the MLP (LlamaAttention, LlamaMLP); both together are ``linear_bias``,
    one alone the shape cannot express. Mistral's projections have none (MistralAttention)."""
    if kind == "qwen2":
        return {"qkv_bias": True}
    attention = _flag(c, "attention_bias") if kind in ("llama", "qwen3") else False
    mlp = _flag(c, "mlp_bias") if kind == "llama" else False
    if attention and mlp:
        return {"linear_bias": True}
    if attention or mlp:
        raise _NotModelled(
            "attention_bias true (biases on q, k, v and o) without mlp_bias is not modelled"
            if attention
            else "mlp_bias true without attention_bias is not modelled"
        )
    return {}


def _no_attention_bias(kind: str, c: dict[str, Any]) -> None:
    """Qwen3-MoE and DeepSeek attention biases (on q, k, v, o / the MLA down-projections and o) are refused."""
    if _flag(c, "attention_bias"):
        raise _NotModelled(f"attention_bias true is not modelled for {kind}")


def _deepseek(kind: str, c: dict[str, Any]) -> dict[str, Any]:
    """DeepSeek-V2/V3: MLA attention (DeepSeek-AI 2024, arXiv 2405.04434 §2.1) and DeepSeekMoE layers. V3's
    multi-token-prediction depth ``num_nextn_predict_layers`` (arXiv 2412.19437 §2.2; 1 in DeepSeek-V3's
    config.json, absent = 0) is read as ``mtp_layers``: counted apart from the 671B main model (model.py)."""
    if _int_or(c, "moe_layer_freq", 1) != 1:  # DeepseekV3DecoderLayer: MoE where layer % freq == 0
        raise _NotModelled("moe_layer_freq other than 1 (dense layers among the MoE layers) is not modelled")
    mtp = _int_or(c, "num_nextn_predict_layers", 0, minimum=0)
    if (
        mtp and kind == "deepseek_v2"
    ):  # DeepseekV2Config has no such key: a V3 file relabelled would lose its module
        raise _NotModelled(
            f"num_nextn_predict_layers {mtp} is a DeepSeek-V3 key (DeepseekV3Config), which model_type "
            "'deepseek_v2' ignores",
            hint="set model_type deepseek_v3 if the checkpoint trains MTP modules, or remove the key",
        )
    grouped = kind == "deepseek_v3" or c.get("topk_method") == "group_limited_greedy"
    return {
        "attention": "mla",
        "n_kv_heads": _int(c, "num_attention_heads"),  # MLA: every head has its own (decompressed) K and V
        "head_dim": _int(c, "qk_nope_head_dim"),
        "q_lora_rank": _int_or(c, "q_lora_rank", 0, minimum=0),  # null in V2-Lite: a full-rank q projection
        "kv_lora_rank": _int(c, "kv_lora_rank"),
        "qk_rope_head_dim": _int(c, "qk_rope_head_dim"),
        "v_head_dim": _int(c, "v_head_dim"),
        "n_experts": _int(c, "n_routed_experts"),
        "top_k": _int(c, "num_experts_per_tok"),
        "expert_ffn_hidden": _int(c, "moe_intermediate_size"),
        "n_shared_experts": _int_or(c, "n_shared_experts", 0, minimum=0),
        "n_dense_layers": _int_or(c, "first_k_dense_replace", 0, minimum=0),
        "router_score": "sigmoid" if c.get("scoring_func") == "sigmoid" else "softmax",
        "router_expert_bias": c.get("topk_method") == "noaux_tc",
        "router_topk_scale": _positive_or_none(c.get("routed_scaling_factor"), "routed_scaling_factor")
        or 1.0,
        "router_groups": _int_or(c, "n_group", 0, minimum=0) if grouped else 0,
        "router_group_topk": _int_or(c, "topk_group", 0, minimum=0) if grouped else 0,
        "mtp_layers": mtp,
    }


def _mistral_window(kind: str, c: dict[str, Any]) -> dict[str, Any]:
    """Mistral's and Mixtral's ``sliding_window`` (MistralAttention, MixtralAttention: every layer; null = none;
    Mistral 7B v0.1: 4,096, Jiang et al. 2023, arXiv 2310.06825 §2). Qwen2/Qwen3 use theirs only with
    ``use_sliding_window`` and from ``max_window_layers`` on, a split the shape does not express: refused."""
    if kind in ("mistral", "mixtral"):
        return {"sliding_window": _int_or(c, "sliding_window", 0, minimum=0)}
    if kind in ("qwen2", "qwen3", "qwen3_moe") and _flag(c, "use_sliding_window"):
        raise _NotModelled("use_sliding_window true (a window on the layers from max_window_layers on)")
    return {}


#: Keys of GemmaConfig, Gemma2Config and Gemma3TextConfig (transformers configuration_gemma*.py) that change no
#: parameter count and no FLOP count runplan makes, each with why; any key neither read nor here is refused, so
#: a new Gemma feature is never silently dropped.
_GEMMA_IGNORED = {
    **dict.fromkeys(
        ("architectures", "_name_or_path", "model_type", "transformers_version", "torch_dtype", "dtype"),
        "bookkeeping",
    ),
    **dict.fromkeys(
        ("bos_token_id", "eos_token_id", "pad_token_id", "use_cache", "cache_implementation"), "inference"
    ),
    "max_position_embeddings": "RoPE has no position table: the trained context is the plan's seq_len",
    "attention_dropout": "the plan's stack sets dropout (stack.attention_dropout)",
    "hidden_act": "the GeGLU gate (checked: a GeLU)",
    "hidden_activation": "the GeGLU gate (checked: a GeLU)",
    "query_pre_attn_scalar": "a scalar on the scores (Gemma 2 §2): no parameters, no matrix products",
    "attn_logit_softcapping": "tanh soft-capping of the scores (Gemma 2 §2): elementwise, inside the kernel",
    "final_logit_softcapping": "tanh soft-capping of the logits (Gemma 2 §2): elementwise",
    "sliding_window_size": "an older copy of sliding_window",
    "rope_local_base_freq": "read as rope_local_theta",
    "sliding_window_pattern": "read as global_every",
    "_sliding_window_pattern": "read as global_every",
    "layer_types": "read as global_every",
    "use_bidirectional_attention": "checked: false (causal attention)",
}
#: What _common and _gemma read from a Gemma config.json.
_GEMMA_READ = (
    *("num_hidden_layers", "hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim"),
    *(
        "intermediate_size",
        "vocab_size",
        "tie_word_embeddings",
        "rope_theta",
        "rope_scaling",
        "rope_parameters",
    ),
    *("rms_norm_eps", "initializer_range", "attention_bias", "sliding_window"),
)
#: GeLU names transformers' ACT2FN maps a Gemma gate to (GemmaMLP uses the tanh approximation for "gelu" too).
_GELU_NAMES = (None, "gelu", "gelu_pytorch_tanh", "gelu_new", "gelu_fast", "gelu_python")


#: A Gemma checkpoint's text_config may leave vocab_size to the class default, the one every release uses:
#: Gemma3TextConfig 262,208, GemmaConfig and Gemma2Config 256,000 (transformers configuration_gemma*.py)
_GEMMA_VOCAB = {"gemma": 256_000, "gemma2": 256_000, "gemma3_text": 262_208}
#: Query and KV heads of each Gemma class when config.json leaves them out, as Gemma 3 4B's text_config does (8 and
#: 4): GemmaConfig 16 and 16 (7B's), Gemma2Config and Gemma3TextConfig 8 and 4 (transformers configuration_gemma*.py)
_GEMMA_HEADS = {"gemma": (16, 16), "gemma2": (8, 4), "gemma3_text": (8, 4)}


#: Keys only a later Gemma's configuration class defines (transformers configuration_gemma.py has none of the first
#: group, configuration_gemma2.py none of the second): the earlier family's model ignores them, so a file with one
#: set is another family's, relabelled, and would be planned without its window, post-norms or local RoPE base.
_LATER_GEMMA_KEYS = {
    **dict.fromkeys(
        (
            *("sliding_window", "sliding_window_size", "layer_types", "query_pre_attn_scalar"),
            *("attn_logit_softcapping", "final_logit_softcapping"),
        ),
        ("Gemma 2/3", "Gemma2Config, Gemma3TextConfig", ("gemma",)),
    ),
    **dict.fromkeys(
        ("rope_local_base_freq", "sliding_window_pattern", "_sliding_window_pattern"),
        ("Gemma 3", "Gemma3TextConfig", ("gemma", "gemma2")),
    ),
}


def _later_gemma_key(kind: str, c: dict[str, Any]) -> None:
    """Refuse a non-null key of a later Gemma (:data:`_LATER_GEMMA_KEYS`) in an earlier one's config.json."""
    for key in sorted(c):
        family, classes, earlier = _LATER_GEMMA_KEYS.get(key, ("", "", ()))
        if kind in earlier and c[key] is not None:
            raise _NotModelled(
                f"key {key!r} is a {family} key ({classes}), which transformers' model_type {kind!r} ignores",
                hint="set model_type to the checkpoint's family (gemma2, gemma3_text), or remove the key",
            )


def _gemma(kind: str, c: dict[str, Any]) -> dict[str, Any]:
    """Gemma (Gemma Team 2024, arXiv 2403.08295 §2), Gemma 2 (arXiv 2408.00118 §2) and Gemma 3's text tower (Gemma
    3 technical report, arXiv 2503.19786 §2): a GeGLU MLP (GemmaMLP: act(gate)·up, down), RMSNorm, tied
    embeddings by default (Gemma*Config tie_word_embeddings=True); Gemma 2/3 add post_attention_layernorm and
    post_feedforward_layernorm and sliding windows (Gemma 2: every other layer, from the first; Gemma 3: five of
    six), Gemma 3 q/k RMSNorms of head_dim (Gemma3Attention q_norm, k_norm)."""
    unknown = sorted(set(c) - set(_GEMMA_READ) - set(_GEMMA_IGNORED))
    if unknown:
        raise _NotModelled(
            f"key {unknown[0]!r} is neither read nor known to change no count for {kind}",
            hint=f"plan a copy of the file without {unknown[0]!r} if it changes no weight, or give the shape",
        )
    _later_gemma_key(kind, c)
    if _flag(c, "attention_bias"):
        raise _NotModelled(f"attention_bias true is not modelled for {kind}")
    if _flag(c, "use_bidirectional_attention"):
        raise _NotModelled("use_bidirectional_attention true (not a causal decoder) is not modelled")
    act = c.get("hidden_activation") or c.get("hidden_act")
    if act not in _GELU_NAMES:
        raise _NotModelled(f"hidden_activation {act!r} is not a GeLU: the MLP is not GeGLU")
    shape: dict[str, Any] = {
        "mlp": "geglu",
        "norm": "rmsnorm",
        "n_kv_heads": _int_or(c, "num_key_value_heads", _GEMMA_HEADS[kind][1]),  # the class's, not MHA's
        "head_dim": _int_or(c, "head_dim", 256),  # Gemma*Config default 256
        "tied_embeddings": _flag(c, "tie_word_embeddings", True),
        "post_norms": kind != "gemma",
        "qk_norm": kind == "gemma3_text",
    }
    if kind == "gemma":
        return shape
    layers = _gemma_layers(kind, c)
    if kind == "gemma3_text" and layers["sliding_window"]:  # no window layers: no local RoPE base to carry
        shape["rope_local_theta"] = _gemma_local_theta(c)
    return shape | layers


def _gemma_layers(kind: str, c: dict[str, Any]) -> dict[str, Any]:
    """The window and which layers attend globally: ``layer_types`` when given (transformers >= 4.53), else
    Gemma2Config's alternation (Gemma2DecoderLayer: layer_idx % 2 == 0 slides) or Gemma3TextConfig's
    ``sliding_window_pattern`` (default 6: (layer_idx + 1) % 6 != 0 slides). Layers k, 2k, ... (from 1) global is
    the one pattern the shape holds (Megatron-core is_layer_window_attention's integer form)."""
    layers = _int(c, "num_hidden_layers")
    if (
        "sliding_window" in c and c["sliding_window"] is None
    ):  # null: no window, as for Mistral (_mistral_window)
        return {"sliding_window": 0}
    window = _int_or(c, "sliding_window", 4096)  # absent: Gemma2Config's and Gemma3TextConfig's default
    types = c.get("layer_types")
    if types is None:
        pattern = c.get("sliding_window_pattern", c.get("_sliding_window_pattern"))
        every = (
            2 if kind == "gemma2" else (6 if pattern is None else _whole(pattern, "sliding_window_pattern"))
        )
        types = ["full_attention" if (i + 1) % every == 0 else "sliding_attention" for i in range(layers)]
    if (
        not isinstance(types, list)
        or len(types) != layers
        or not all(isinstance(name, str) for name in types)
    ):
        shown = types if not isinstance(types, list) else f"a list of {len(types)}"
        raise ValueError(f"layer_types must be a list of num_hidden_layers ({layers}) names, got {shown}")
    full = [i for i, name in enumerate(types) if name == "full_attention"]
    if set(types) - {"full_attention", "sliding_attention"}:
        raise _NotModelled(
            f"layer_types other than full_attention and sliding_attention: {sorted(set(types))}"
        )
    if len(full) == layers:
        return {"sliding_window": 0}
    every = full[0] + 1 if full else 0
    if full and full != list(range(every - 1, layers, every)):
        raise _NotModelled("layer_types with global layers other than every k-th (layers k, 2k, ... from 1)")
    return {"sliding_window": window, "global_every": every}


def _gemma_rope(c: dict[str, Any]) -> tuple[float, dict[str, Any] | None]:
    """Gemma 3's two RoPE bases (global layers ``rope_theta`` with ``rope_scaling``, window layers
    ``rope_local_base_freq``; Gemma 3 report §2), or transformers v5's ``rope_parameters`` per layer type."""
    params = c.get("rope_parameters")
    if isinstance(params, dict) and "full_attention" in params:
        full = params["full_attention"] or {}
        theta = _positive_or_none(full.get("rope_theta"), "rope_parameters.full_attention.rope_theta")
        return theta or 1e6, _rope_scaling(full, "rope_parameters.full_attention", linear=True)
    base = _positive_or_none(c.get("rope_theta"), "rope_theta")
    return base or 1e6, _rope_scaling(c.get("rope_scaling"), linear=True)


def _gemma_local_theta(c: dict[str, Any]) -> float | None:
    params = c.get("rope_parameters")
    if isinstance(params, dict) and "sliding_attention" in params:
        local = params["sliding_attention"] or {}
        return _positive_or_none(local.get("rope_theta"), "rope_parameters.sliding_attention.rope_theta")
    return _positive_or_none(c.get("rope_local_base_freq"), "rope_local_base_freq") or 1e4
