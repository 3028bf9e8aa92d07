"""Inference-optimal allocation against the numbers Sardana et al. 2024 published (arXiv 2401.00448).

Their law is Chinchilla's with α = 0.336, β = 0.283 (repository nikhilsardana/beyond-chinchilla, utils.py,
ChinchillaConstants at commit 190f70e), cost 6·N·D_tr + 2·N·D_inf at fixed loss (§2). Two published cases:

* the repository README: loss 1.947, 2e12 inference tokens: 2.418e10 parameters on 2.657e12 tokens, "70.96% of
  the parameters", "146.77% of the tokens" and "95.22%" of the FLOPs of an equal-quality Chinchilla-style model;
* the paper's Figure 1: a 13B Chinchilla-optimal model with 2e12 tokens of inference demand is better replaced
  by a 7B model trained longer, saving 1.7e22 FLOPs (17%).
"""

from __future__ import annotations

import pytest

from runplan.scaling.allocate import Objective, allocate
from runplan.scaling.laws import ParametricLaw

SARDANA = ParametricLaw(name="sardana", E=1.69, A=406.4, B=410.7, alpha=0.336, beta=0.283)


def _inference_optimal(loss: float, d_inf: float):
    return allocate(
        None, Objective(kind="inference_optimal", inference_tokens=d_inf, target_loss=loss), SARDANA
    )


def test_readme_ratios_to_the_chinchilla_style_model():
    a = _inference_optimal(1.947, 2e12)
    assert a.compute_optimal_params is not None and a.compute_optimal_tokens is not None
    assert round(100 * a.params / a.compute_optimal_params, 2) == 70.96
    assert round(100 * a.tokens / a.compute_optimal_tokens, 2) == 146.77
    assert round(100 * (1 - (a.total_flops_saving or 0.0)), 2) == 95.22


def test_figure_1_thirteen_billion_becomes_seven():
    # the 13B Chinchilla-optimal model: C = 6·(N/G)^(1/a) (Hoffmann Eq. 4 inverted), its loss the target
    c13 = 6 * (13e9 / SARDANA.G) ** (1 / SARDANA.a)
    target = SARDANA.loss(13e9, c13 / (6 * 13e9))
    a = _inference_optimal(target, 2e12)
    assert a.compute_optimal_params == pytest.approx(13e9, rel=1e-9)
    assert a.params == pytest.approx(7e9, rel=0.01)  # "a 7B model"
    saved = (a.compute_optimal_total_flops or 0.0) - (a.total_flops or 0.0)
    assert saved == pytest.approx(1.7e22, rel=0.01)  # "1.7 × 10^22 FLOPs"
    assert a.total_flops_saving == pytest.approx(0.17, abs=0.005)  # "(17%)"
