"""The layout search's batch ceiling (parallel/batch.py, DeepSeek LLM's B_opt at C = M·D) takes M from
``scaling.hyperparams.deepseek_flops_per_token``, which counts a multi-token-prediction module's active weights
(DeepSeek-V3 §2.2): docs/parallel.md "Critical batch" gives M with that term, and the value it cites for
DeepSeek-V3 at 4,096 tokens is the one the search uses (6·(35.70 B + 688.1 M) + 62·6·4096·128·320 = 2.807e11)."""

from pathlib import Path

import pytest

from runplan.catalog import shipped_catalog
from runplan.parallel.batch import critical_batch
from runplan.scaling.hyperparams import deepseek_batch_tokens

DOCS = Path(__file__).resolve().parents[2] / "docs" / "parallel.md"
V3 = shipped_catalog().model("deepseek-v3")


def _critical_batch_section() -> str:
    text = DOCS.read_text(encoding="utf-8")
    start = text.index("## Critical batch")
    return " ".join(text[start : text.index("\n## ", start + 1)].split())


def test_the_search_ceiling_uses_m_with_the_mtp_weights():
    m = 6 * (35_698_939_392 + 688_100_608) + 62 * 6 * 4096 * 128 * (192 + 128)
    assert m == pytest.approx(2.807e11, rel=2e-4)
    crit = critical_batch(V3, 4096, 14.8e12)
    assert crit.compute_flops == pytest.approx(m * 14.8e12, rel=1e-12)
    assert crit.tokens == pytest.approx(deepseek_batch_tokens(m * 14.8e12), rel=1e-12)


def test_the_docs_give_m_with_the_mtp_modules_weights():
    section = _critical_batch_section()
    assert "M = 6·(active non-embedding params + a multi-token-prediction module's active weights)" in section
    assert "M = 2.807e11" in section
