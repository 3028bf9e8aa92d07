"""docs/scaling.md: the default law (Besiroglu et al. 2024, arXiv 2404.10102) "agrees with Hoffmann's Approaches
1 and 2 (about 20 tokens per parameter near 1e23 FLOPs)". Checked against Hoffmann et al. 2022 (arXiv
2203.15556) Table 3, the Approach 1 projections (parameters, FLOPs, tokens), and against the allocation
`runplan allocate --flops 2e23` prints, derived by hand from Eq. 4."""

from __future__ import annotations

import math

import pytest

from runplan.scaling.laws import shipped_laws

DEFAULT = shipped_laws()["besiroglu2024"]

# Hoffmann et al. 2022, Table 3: (parameters, FLOPs, tokens); the rows inside and near Chinchilla's own scale
TABLE_3 = [
    (1e9, 1.21e20, 20.2e9),
    (10e9, 1.23e22, 205.1e9),
    (67e9, 5.76e23, 1.5e12),
    (175e9, 3.85e24, 3.7e12),
    (280e9, 9.90e24, 5.9e12),
]


@pytest.mark.parametrize(("params", "flops", "tokens"), TABLE_3)
def test_compute_optimal_size_within_eleven_percent_of_table_3(params, flops, tokens):
    n, d = DEFAULT.compute_optimal(flops)
    # by hand (Eq. 4, A 482.01, B 2085.43, α 0.3478, β 0.3658): 0.941, 1.006, 1.078, 1.093, 1.109 × Table 3's N
    assert n / params == pytest.approx(1.0, abs=0.11)
    assert 16 < d / n < 25  # "about 20 tokens per parameter"; Table 3's rows are 20.2 to 22.4
    assert 6 * n * d == pytest.approx(flops, rel=1e-12)


def test_two_e23_by_hand():
    """Eq. 4: G = (αA/(βB))^(1/(α+β)), N = G·(C/6)^(β/(α+β)); the numbers `runplan allocate --flops 2e23` prints
    (42 B, 793 B, 18.9 tokens per parameter, loss 2.0071)."""
    e, a, b, alpha, beta = 1.8172, 482.01, 2085.43, 0.3478, 0.3658
    g = (alpha * a / (beta * b)) ** (1 / (alpha + beta))
    n_hand = g * (2e23 / 6) ** (beta / (alpha + beta))
    n, d = DEFAULT.compute_optimal(2e23)
    assert n == pytest.approx(n_hand, rel=1e-12)
    assert n == pytest.approx(4.2009e10, rel=1e-4)
    assert d == pytest.approx(7.9349e11, rel=1e-4)
    assert DEFAULT.loss(n, d) == pytest.approx(e + a / n**alpha + b / d**beta, rel=1e-12)
    assert DEFAULT.loss(n, d) == pytest.approx(2.00708, abs=1e-5)
    assert math.isclose(d / n, 18.89, abs_tol=0.01)
