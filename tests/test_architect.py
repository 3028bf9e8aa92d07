"""Generated shapes (shape_for_params) and size/name resolution (resolve_model)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runplan.architect import (
    candidate_widths,
    ffn_for,
    is_size_shorthand,
    resolve_model,
    shape_for_params,
    target_aspect_ratio,
)
from runplan.catalog import shipped_catalog
from runplan.errors import SpecError

CATALOG = shipped_catalog()


def _counted(shape, count):
    return shape.total_params if count == "total" else shape.non_embedding_params


log_total = st.floats(min_value=math.log(1e8), max_value=math.log(1e12))
log_non_embedding = st.floats(min_value=math.log(1e7), max_value=math.log(1e12))


@settings(max_examples=150, deadline=None)
@given(log_target=log_total, mlp=st.sampled_from(["swiglu", "gelu"]))
def test_total_within_3_percent(log_target, mlp):
    target = math.exp(log_target)
    shape = shape_for_params(target, mlp=mlp)
    assert abs(shape.total_params / target - 1) <= 0.03
    assert shape.mlp == mlp and shape.vocab_size == 128256


@settings(max_examples=150, deadline=None)
@given(log_target=log_non_embedding, vocab=st.sampled_from([32000, 50257, 128256, 151936]))
def test_non_embedding_within_3_percent(log_target, vocab):
    target = math.exp(log_target)
    shape = shape_for_params(target, vocab_size=vocab, count="non_embedding")
    assert abs(shape.non_embedding_params / target - 1) <= 0.03


@settings(max_examples=150, deadline=None)
@given(a=log_total, b=log_total, count=st.sampled_from(["total", "non_embedding"]))
def test_monotone_in_target(a, b, count):
    lo, hi = sorted((math.exp(a), math.exp(b)))
    assert _counted(shape_for_params(lo, count=count), count) <= _counted(
        shape_for_params(hi, count=count), count
    )


@settings(max_examples=100, deadline=None)
@given(log_target=log_non_embedding)
def test_rules_hold(log_target):
    shape = shape_for_params(math.exp(log_target), count="non_embedding")
    h = shape.d_model
    assert h in candidate_widths()
    assert h % 128 == 0
    assert shape.n_heads * shape.head_dim == h
    assert shape.head_dim == (64 if h <= 2048 else 128)
    assert shape.n_kv_heads == (shape.n_heads if shape.n_heads < 16 else 8)
    assert shape.ffn_hidden % 256 == 0 and 8 * h / 3 <= shape.ffn_hidden < 8 * h / 3 + 256
    assert not shape.tied_embeddings and shape.norm == "rmsnorm" and not shape.is_moe


def test_deterministic_and_sourced():
    assert shape_for_params(7e9) == shape_for_params(7e9)
    assert "architect" in (shape_for_params(7e9).source or "")


@pytest.mark.parametrize("target", [5e7, 1e8, 3e8, 1e9, 3e9, 1e10])
def test_proxy_sizes(target):
    """The proxy sweep's range, in non-embedding parameters, with a sensible aspect ratio above 1e8."""
    shape = shape_for_params(target, count="non_embedding")
    assert shape.non_embedding_params == pytest.approx(target, rel=0.03)
    ratio = shape.d_model / shape.n_layers
    assert 0.25 * target_aspect_ratio(shape.d_model) <= ratio <= 4 * target_aspect_ratio(shape.d_model)
    if target >= 1e8:
        assert 0.5 * target_aspect_ratio(shape.d_model) <= ratio <= 2 * target_aspect_ratio(shape.d_model)


@pytest.mark.parametrize("name", ["llama-2-7b", "llama-2-13b", "llama-3-70b", "llama-3.1-405b"])
def test_close_to_published_llama_shapes(name):
    """Width within 15% and depth within 20% of the Llama preset of equal non-embedding size.

    The generator uses GQA-8 and F = 8h/3 where Llama 2 7B/13B use MHA and Llama 3 a 1.3x wider FFN, so the
    depth absorbs the difference."""
    preset = CATALOG.model(name)
    shape = shape_for_params(preset.non_embedding_params, vocab_size=preset.vocab_size, count="non_embedding")
    assert shape.d_model == pytest.approx(preset.d_model, rel=0.15)
    assert shape.n_layers == pytest.approx(preset.n_layers, rel=0.2)


def test_large_models_use_llama_like_proportions():
    shape = shape_for_params(405e9)
    assert 100 <= shape.d_model / shape.n_layers <= 160
    assert shape.n_kv_heads == 8 and shape.head_dim == 128


def test_ffn_rule_matches_llama_2():
    assert ffn_for(4096, "swiglu") == 11008  # Llama 2 7B
    assert ffn_for(5120, "swiglu") == 13824  # Llama 2 13B
    assert ffn_for(4096, "gelu") == 16384


def test_aspect_rule_values():
    assert target_aspect_ratio(512) == pytest.approx(32)
    assert target_aspect_ratio(4096) == pytest.approx(128)
    assert target_aspect_ratio(16384) == 128


@pytest.mark.parametrize(
    ("target", "kwargs", "pattern"),
    [
        (1e7, {}, "embeddings alone are larger"),
        (1e14, {}, "between 1e7 and 3e12"),
        (-5, {}, "positive finite"),
        (float("nan"), {}, "positive finite"),
        (1e9, {"count": "all"}, "unknown parameter count"),
        (1e9, {"mlp": "relu"}, "unknown MLP kind"),
    ],
)
def test_bad_targets(target, kwargs, pattern):
    with pytest.raises(SpecError, match=pattern):
        shape_for_params(target, **kwargs)


# ---- resolve_model --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("70b", "llama-3.1-70b"),
        ("70B", "llama-3.1-70b"),
        ("405b", "llama-3.1-405b"),
        ("8b", "llama-3.1-8b"),
        ("7.5e9", "llama-3.1-8b"),
        ("75b", "llama-3.1-70b"),
        ("llama-2-7b", "llama-2-7b"),
        ("Mixtral", "mixtral-8x7b"),
    ],
)
def test_resolves_to_preset(text, name):
    shape, why = resolve_model(text, CATALOG)
    assert shape.name == name
    assert why.startswith(f"{text} → {name}")
    assert "\n" not in why


def test_resolution_message_for_size():
    _, why = resolve_model("70b", CATALOG)
    assert why == "70b → llama-3.1-70b (70.6 B parameters, within 10% of 70 B)"


@pytest.mark.parametrize("text", ["7b", "13b", "1.3e9", "175b", "1T"])
def test_generates_when_no_preset_within_10_percent(text):
    shape, why = resolve_model(text, CATALOG)
    target = float(text[:-1]) * {"b": 1e9, "T": 1e12}[text[-1]] if text[-1] in "bT" else float(text)
    assert shape.total_params == pytest.approx(target, rel=0.03)
    assert shape.vocab_size == 128256  # the default family's vocabulary
    assert "generated shape" in why and "no llama-3.1 preset within 10%" in why
    assert shape.name == f"generated-{text.lower()}"


def test_other_default_family():
    shape, _ = resolve_model("7b", CATALOG, default_family="llama-2")
    assert shape.name == "llama-2-7b"
    shape, _ = resolve_model("30b", CATALOG, default_family="llama-2")
    assert shape.vocab_size == 32000 and shape.name == "generated-30b"


def test_unknown_name_suggests():
    with pytest.raises(SpecError) as info:
        resolve_model("llama-3.1-70", CATALOG, where="model.name")
    assert str(info.value) == "model.name: unknown model 'llama-3.1-70' (did you mean 'llama-3.1-70b'?)"


def test_tiny_size_is_refused():
    with pytest.raises(SpecError, match="write a size with a suffix"):
        resolve_model("70", CATALOG)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("7b", True),
        ("1.3e9", True),
        ("405B", True),
        ("70", True),
        ("llama-3-8b", False),
        ("b7", False),
        ("7bb", False),
    ],
)
def test_size_shorthand(text, expected):
    assert is_size_shorthand(text) is expected


def test_numpy_scalars_are_accepted():
    import numpy as np

    assert (
        shape_for_params(np.int64(7_000_000_000))
        == shape_for_params(7e9)
        == shape_for_params(np.float64(7e9))
    )
    with pytest.raises(SpecError, match="positive finite"):
        shape_for_params(True)
