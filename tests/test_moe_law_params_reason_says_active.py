"""A mixture-of-experts model is allocated on the parameters a token uses (plan._law_params: C = 6·N_active·D), so
its "law params" row is an active count and its reason must say so. Mixtral 8x7B (examples/moe-mixtral-8x7b.yaml)
printed "law params 12.62 B: the law counts non_embedding parameters" two rows under "non embedding params
46.44 B": 12.62 B is the active non-embedding count, 12.88 B active less the 262 M of V·h embedding and head."""

from __future__ import annotations

from pathlib import Path

import pytest

from runplan.plan import build_plan
from runplan.spec import load_plan

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.fixture(scope="module")
def mixtral():
    return build_plan(load_plan(EXAMPLES / "moe-mixtral-8x7b.yaml"), EXAMPLES).model


def test_mixtral_law_params_are_active_non_embedding(mixtral):
    # Mixtral 8x7B: 12,879,925,248 active, embedding and head 2 × 32,000 × 4,096 = 262,144,000
    assert mixtral.active_params == 12_879_925_248
    assert mixtral.law_params == 12_879_925_248 - 262_144_000 == 12_617_781_248
    why = mixtral.notes["law_params"]
    assert why.startswith("the law counts active non-embedding parameters")
    assert "C = 6·N_active·D" in why and "non_embedding" not in why


def test_dense_law_params_reason_is_unchanged():
    plan = build_plan(load_plan(EXAMPLES / "70b-512-h100.yaml"), EXAMPLES).model
    assert plan.notes["law_params"] == "the law counts total parameters (allocation N 7.055e+10)"
