"""Gemma 2/3 shapes (GeGLU, post-norms, q/k norms) counted exactly, and sliding-window attention FLOPs.

Counts are hand-derived per layer: attention h·(a·d_h + 2·k·d_h) + a·d_h·h (+ 2·d_h for Gemma 3's q/k norms),
GeGLU 3·h·F, four RMSNorms 4·h; plus the final norm h and the tied V·h embedding."""

import pytest

from runplan.catalog import shipped_catalog
from runplan.hf_config import shape_from_config
from runplan.model import ModelShape, window_context
from runplan.parallel.memory import ShapeTerms
from runplan.parallel.timing import stage_attention_share

ENTRIES = {e.name: e for e in shipped_catalog().model_entries}


def _gemma(L, h, a, kv, dh, F, V, *, gemma3, window, every):
    return ModelShape(
        n_layers=L, d_model=h, n_heads=a, n_kv_heads=kv, head_dim=dh, ffn_hidden=F, mlp="geglu", vocab_size=V,
        tied_embeddings=True, norm="rmsnorm", post_norms=True, qk_norm=gemma3, sliding_window=window,
        global_every=every,
    )  # fmt: skip


def _by_hand(L, h, a, kv, dh, F, V, *, gemma3):
    per_layer = h * (a * dh + 2 * kv * dh) + a * dh * h + (2 * dh if gemma3 else 0) + 3 * h * F + 4 * h
    return L * per_layer + h, V * h  # (non-embedding, embedding)


# Gemma 2 (arXiv 2408.00118 Table 2 non-embedding; totals in the Hub's safetensors metadata). Table 2's
# embedding column counts 256,128 rows; the checkpoints hold vocab_size 256,000.
GEMMA_2 = {
    "2b": ((26, 2304, 8, 4, 256, 9216, 256000), 2_024_517_888, 2_614_341_888),
    "9b": ((42, 3584, 16, 8, 256, 14336, 256000), 8_324_201_984, 9_241_705_984),
    "27b": ((46, 4608, 32, 16, 128, 36864, 256000), 26_047_480_320, 27_227_128_320),
}


@pytest.mark.parametrize("size", sorted(GEMMA_2))
def test_gemma_2_counts_match_table_1_and_the_checkpoints(size):
    dims, non_embedding, total = GEMMA_2[size]
    shape = _gemma(*dims, gemma3=False, window=4096, every=2)
    assert (shape.non_embedding_params, shape.embedding_params) == _by_hand(*dims, gemma3=False)
    assert shape.non_embedding_params == non_embedding
    assert shape.total_params == total


# Gemma 3 text towers (Gemma 3 report Table 1 non-embedding, in millions; 1B total 999,885,952 in the Hub's
# safetensors metadata; 4B/12B/27B: the model pages' totals, vision included, as they print them (4.3B, 12.2B,
# 27.4B), are the text tower + the SigLIP tower (Table 1: 417M) + the projector, SIGLIP + 1152·h + 1152)
GEMMA_3 = {
    "1b": ((26, 1152, 4, 1, 256, 6912, 262144), 698e6, None),
    "4b": ((34, 2560, 8, 4, 256, 10240, 262208), 3_209e6, 4.3e9),
    "12b": ((48, 3840, 16, 8, 256, 15360, 262208), 10_759e6, 12.2e9),
    "27b": ((62, 5376, 32, 16, 128, 21504, 262208), 25_600e6, 27.4e9),
}
# SigLIP so400m as Gemma 3 builds it: patch conv 3·14·14·1152 + 1152, 4096 positions, 27 layers of
# 4 biased 1152² projections, two LayerNorms and a biased 1152-4304-1152 MLP, a post LayerNorm
SIGLIP = (
    3 * 14 * 14 * 1152 + 1152 + 4096 * 1152
    + 27 * (4 * (1152 * 1152 + 1152) + 2 * 2 * 1152 + 2 * 1152 * 4304 + 4304 + 1152)
    + 2 * 1152
)  # fmt: skip


@pytest.mark.parametrize("size", sorted(GEMMA_3))
def test_gemma_3_text_tower_counts(size):
    dims, non_embedding_millions, hub_total = GEMMA_3[size]
    shape = _gemma(*dims, gemma3=True, window=512 if size == "1b" else 1024, every=6)
    assert (shape.non_embedding_params, shape.embedding_params) == _by_hand(*dims, gemma3=True)
    assert abs(shape.non_embedding_params - non_embedding_millions) <= 0.5e6  # Table 1 rounds to millions
    if hub_total is None:
        assert shape.total_params == 999_885_952
    else:
        h = dims[1]
        assert SIGLIP == 416_866_032 and round(SIGLIP, -6) == 417e6  # Table 1: 417M
        assert abs(shape.total_params + SIGLIP + 1152 * h + 1152 - hub_total) <= 0.05e9  # printed to 0.1B


@pytest.mark.parametrize("name", ["gemma-2-9b", "gemma-2-27b", "gemma-3-12b", "gemma-3-27b"])
def test_catalog_gemma_entries_are_exact(name):
    shape = ENTRIES[name].shape
    expected = {
        "gemma-2-9b": 9_241_705_984,
        "gemma-2-27b": 27_227_128_320,
        "gemma-3-12b": 11_766_034_176,
        "gemma-3-27b": 27_009_346_304,
    }[name]
    assert shape.total_params == expected
    # Gemma 2: the checkpoints' exact totals; Gemma 3: the text tower's, derived from the pages' rounded totals
    assert abs(ENTRIES[name].published_params - expected) <= (0 if name.startswith("gemma-2") else 0.05e9)
    assert shape.mlp == "geglu" and shape.post_norms and shape.sliding_window in (1024, 4096)


# ---- sliding-window attention FLOPs --------------------------------------------------------------------------
def test_window_context_is_twice_the_mean_causal_keys():
    """A query at position i (1..s) of a window-w layer sees min(i, w) keys; twice their mean, brute-forced, is
    2w − w²/s up to the +1 of the discrete sum (the continuous convention gives full attention exactly s)."""
    s, w = 8192, 4096
    brute = 2 * sum(min(i, w) for i in range(1, s + 1)) / s
    assert window_context(s, w) == 2 * 4096 - 4096**2 / 8192 == 6144
    assert abs(brute - window_context(s, w)) <= 1.0
    assert window_context(s, 8192) == window_context(s, 0) == s  # a window of at least s changes nothing


def test_gemma_2_9b_attention_flops_at_8k():
    """21 global layers at s = 8192 and 21 window layers at 6,144: 6·(21·8192 + 21·6144)·a·(d_qk + d_v)."""
    shape = ENTRIES["gemma-2-9b"].shape
    assert shape.global_layers == 21
    assert shape.attention_flops_per_token(8192) == 6 * (21 * 8192 + 21 * 6144) * 16 * 512
    assert shape.attention_flops_per_token(8192, causal=True) == 3 * 21 * (8192 + 6144) * 16 * 512
    full = shape.model_copy(update={"sliding_window": 0, "global_every": 0})
    assert full.attention_flops_per_token(8192) == 6 * 42 * 8192 * 16 * 512
    assert shape.attention_flops_per_token(4096) == full.attention_flops_per_token(4096)  # w ≥ s
    assert (
        shape.model_flops_per_token(8192) == 6 * shape.matmul_params_per_token() + 6 * 21 * 14336 * 16 * 512
    )


def test_mistral_window_applies_to_every_layer():
    """Mistral 7B v0.1 (sliding_window 4096 on all 32 layers): at s = 32,768 each layer's context is
    2·4096 − 4096²/32768 = 7,680 keys."""
    mistral = shape_from_config(
        {
            "model_type": "mistral", "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
            "num_hidden_layers": 32, "num_key_value_heads": 8, "vocab_size": 32000, "sliding_window": 4096,
        }
    )  # fmt: skip
    assert (mistral.sliding_window, mistral.global_every, mistral.global_layers) == (4096, 0, 0)
    assert mistral.total_params == 7_241_732_096
    assert mistral.attention_flops_per_token(32768) == 6 * 32 * 7680 * 32 * 256


def test_stage_attention_share_counts_the_most_global_stage():
    """Gemma 2 9B on 2 stages of 21 layers: layers 1-21 hold 10 global (2, 4, ..., 20), layers 22-42 hold 11;
    at s = 8192 a window layer does 6144/8192 = 0.75 of a global one: (11 + 10·0.75)/21. One stage: 21 of 42."""
    terms = ShapeTerms.from_shape(ENTRIES["gemma-2-9b"].shape)
    assert stage_attention_share(terms, 2, 8192) == pytest.approx((11 + 10 * 0.75) / 21, rel=1e-15)
    assert stage_attention_share(terms, 1, 8192) == pytest.approx((21 + 21 * 0.75) / 42, rel=1e-15)
    assert stage_attention_share(terms, 2, 4096) == 1.0
    llama = ShapeTerms.from_shape(ENTRIES["llama-3-8b"].shape)
    assert stage_attention_share(llama, 4, 8192) == 1.0


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"global_every": 2}, "global_every needs sliding_window > 0"),
        ({"sliding_window": 4096, "global_every": 1}, "global_every 1 makes every layer global"),
    ],
)
def test_window_fields_that_contradict_are_refused(fields, message):
    base = ENTRIES["llama-3-8b"].shape.model_dump()
    with pytest.raises(ValueError, match=message):
        ModelShape(**base | fields)


def test_the_plan_explains_the_window_in_its_flops_note(tmp_path):
    # Gemma 2 9B at 8,192: 21 global layers at s and 21 window layers at 2·4096 − 4096²/8192 = 6,144, so
    # 6 × 9,241,705,984 (tied head: total = matmul weights) + 6 × (21·8192 + 21·6144) × 16 × 512 = 70,247,740,416
    from tests.planned import planned_json

    body = "model: gemma-2-9b\nbudget: {tokens: 1T}\ncluster: {gpu: h100-sxm, gpus: 64}\ntraining: {seq_len: 8192}\n"
    model = planned_json(tmp_path, body)["model"]
    assert model["flops_per_token"] == 6 * 9_241_705_984 + 6 * (21 * 8192 + 21 * 6144) * 16 * 512
    assert model["notes"]["flops_per_token"].endswith(
        "; the layers but every 2nd (global) slide a 4,096-key window and count 2w − w²/s = 6,144 for s (a "
        "query at position i sees min(i, w) keys)"
    )


@pytest.mark.parametrize(
    ("every", "ordinal"), [(2, "2nd"), (6, "6th"), (11, "11th"), (21, "21st"), (22, "22nd")]
)
def test_the_window_note_writes_english_ordinals(every, ordinal):
    from runplan.plan import _window_note

    shape = ENTRIES["gemma-2-9b"].shape.model_copy(update={"global_every": every})
    assert f"the layers but every {ordinal} (global)" in _window_note(shape, 8192)


def test_a_window_on_every_layer_reads_as_english():
    # Mistral-style: no global layers, every layer slides the window (2·4096 − 4096²/8192 = 6,144 at s = 8,192)
    from runplan.plan import _window_note

    shape = ENTRIES["gemma-2-9b"].shape.model_copy(update={"global_every": 0})
    assert _window_note(shape, 8192) == (
        "; every layer slides a 4,096-key window and counts 2w − w²/s = 6,144 for s (a query at position i sees "
        "min(i, w) keys)"
    )
