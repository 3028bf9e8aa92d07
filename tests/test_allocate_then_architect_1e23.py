"""The journey `runplan allocate --flops 1e23` → the generated shape: every printed number re-derived by hand.

Allocation (besiroglu2024, Hoffmann Eq. 4): N = G·(C/6)^a = 2.945e10 total parameters. The architect's answer
(runplan.architect rules, docs/catalog.md): h = 6144 (48 heads of 128, 8 KV), L = 56, SwiGLU F = 1024·⌈int(1.3·
int(8·6144/3))/1024⌉ = 1024·⌈21299/1024⌉ = 21504, V = 128,256 untied.
"""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from runplan.architect import TOLERANCE, shape_for_params, target_aspect_ratio
from runplan.cli.app import app
from runplan.scaling.allocate import Objective, allocate
from runplan.scaling.laws import get_shipped_law

H, L, HEADS, KV, D_H, F, V = 6144, 56, 48, 8, 128, 21504, 128256
ATTENTION = H * (HEADS * D_H + 2 * KV * D_H) + HEADS * D_H * H  # q, k, v and o, no biases
PER_LAYER = ATTENTION + 3 * H * F + 2 * H  # + SwiGLU and two RMSNorm weights
NON_EMBEDDING = L * PER_LAYER + H  # + the final norm
TOTAL = NON_EMBEDDING + 2 * V * H  # untied embedding and output head


def test_hand_counts():
    assert (ATTENTION, PER_LAYER) == (88_080_384, 484_454_400)
    assert (NON_EMBEDDING, TOTAL) == (27_129_452_544, 28_705_462_272)


def test_the_generated_shape_for_1e23_is_the_hand_derived_one_within_tolerance():
    n = allocate(1e23, Objective(), get_shipped_law("besiroglu2024")).params
    assert n == pytest.approx(2.945e10, rel=1e-3)
    shape = shape_for_params(n)
    assert (shape.d_model, shape.n_layers, shape.n_heads, shape.n_kv_heads, shape.head_dim, shape.ffn_hidden) == (
        H, L, HEADS, KV, D_H, F,
    )  # fmt: skip
    assert (shape.non_embedding_params, shape.total_params) == (NON_EMBEDDING, TOTAL)
    assert abs(shape.total_params / n - 1) <= TOLERANCE  # 2.5% below N, the stated bound is 7.5%
    # buildable: TP 2/4/8 split the 48 query and 8 KV heads, PP 2/4/8 the 56 layers; h/L within 1.5x of r*(h)
    assert all(HEADS % t == 0 and KV % t == 0 and L % t == 0 for t in (2, 4, 8))
    assert 1 / 1.5 <= (H / L) / target_aspect_ratio(H) <= 1.5


def test_model_flops_per_token_is_6_matmul_params_plus_the_attention_term():
    """PaLM App. B: 6 × (non-embedding + V·h head) + 12·L·s·(a·d_h); the embedding lookup multiplies nothing."""
    shape = shape_for_params(2.945e10)
    s = 4096
    matmul = NON_EMBEDDING + V * H
    assert shape.matmul_params_per_token() == matmul == 27_917_457_408
    assert (
        shape.model_flops_per_token(s)
        == 6 * matmul + 12 * L * s * HEADS * D_H
        == pytest.approx(1.844e11, rel=1e-3)
    )


def test_allocate_prints_the_hand_derived_shape():
    result = CliRunner().invoke(app, ["allocate", "--flops", "1e23"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    assert "56 layers, d_model 6144, 48 heads (8 KV), FFN 21504: 28.7 B total, 27.1 B non-embedding" in text
    assert re.search(r"parameters N\s+29\.4 B \(2\.945e\+10\)", text)
