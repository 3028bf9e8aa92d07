"""Laws and allocation: published numbers, hand-derived examples, and properties of the closed forms."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from scipy.optimize import minimize_scalar
from tests.parallel.shapes import H100

from runplan.errors import Infeasible, SpecError
from runplan.scaling.allocate import Objective, allocate, inference_optimal_params, with_hardware
from runplan.scaling.budget import checked_mfu, flops_from_hardware, hardware_cost
from runplan.scaling.laws import (
    DEFAULT_LAW,
    LawSpec,
    ParametricLaw,
    law_from_flag,
    load_law_file,
    resolve_law,
    shipped_laws,
)

LAWS = shipped_laws()


def test_shipped_laws_are_the_published_coefficients():
    h = LAWS["hoffmann2022"]
    assert (h.E, h.A, h.B, h.alpha, h.beta) == (1.69, 406.4, 410.7, 0.34, 0.28)
    u = LAWS["hoffmann2022-unrounded"]
    assert pytest.approx(math.exp(6.0073404), rel=1e-6) == u.A
    assert pytest.approx(math.exp(6.0179186), rel=1e-6) == u.B
    assert pytest.approx(math.exp(0.5267228), rel=1e-6) == u.E
    b = LAWS["besiroglu2024"]
    assert (b.E, b.A, b.B, b.alpha, b.beta) == (1.8172, 482.01, 2085.43, 0.3478, 0.3658)
    assert DEFAULT_LAW in LAWS
    assert all(law.source for law in LAWS.values())
    # Chinchilla-data laws count embeddings; the MoE law (Krajewski et al. 2024) counts non-embedding parameters
    assert {name: law.param_count for name, law in LAWS.items()} == {
        "hoffmann2022": "total",
        "hoffmann2022-unrounded": "total",
        "besiroglu2024": "total",
        "krajewski2024-moe": "non_embedding",
    }


def test_rounding_moves_the_gopher_budget_optimum():
    """docs/scaling.md: about 32B (as printed) vs 40B (unrounded) parameters at 5.76e23 FLOPs."""
    assert LAWS["hoffmann2022"].compute_optimal(5.76e23)[0] == pytest.approx(32e9, rel=0.03)
    assert LAWS["hoffmann2022-unrounded"].compute_optimal(5.76e23)[0] == pytest.approx(40e9, rel=0.03)


@pytest.mark.parametrize("name", sorted(LAWS))
@pytest.mark.parametrize("flops", [1e19, 2e23, 1e26])
def test_closed_form_matches_numerical_minimisation(name, flops):
    law = LAWS[name]
    n_closed, d_closed = law.compute_optimal(flops)
    result = minimize_scalar(
        lambda x: law.loss(math.exp(x), flops / (6 * math.exp(x))),
        bounds=(math.log(n_closed) - 3, math.log(n_closed) + 3),
        method="bounded",
        options={"xatol": 1e-12},
    )
    assert math.exp(result.x) == pytest.approx(n_closed, rel=1e-6)
    assert d_closed * n_closed * 6 == pytest.approx(flops, rel=1e-12)


def test_worked_example_twenty_tokens_per_param():
    a = allocate(2e23, Objective(kind="tokens_per_param", tokens_per_param=20), LAWS[DEFAULT_LAW])
    assert a.params == pytest.approx(40.8e9, rel=1e-3)
    assert a.tokens == pytest.approx(816e9, rel=1e-3)
    assert a.flops == pytest.approx(2e23)


def test_worked_example_seven_billion():
    a = allocate(2e23, Objective(kind="fixed_params", params="7b"), LAWS[DEFAULT_LAW])
    assert a.tokens == pytest.approx(4.76e12, rel=1e-3)
    assert a.tokens_per_param == pytest.approx(680, rel=1e-3)
    assert a.loss_penalty > 0
    # the compute-optimal model reaches the 7B model's loss with less compute
    assert a.compute_optimal_flops_same_loss < 2e23
    law = LAWS[DEFAULT_LAW]
    assert law.compute_optimal_loss(a.compute_optimal_flops_same_loss) == pytest.approx(a.loss, rel=1e-12)


def test_sardana_readme_example():
    """Sardana et al. 2024 README: l = 1.947, D_inf = 2e12 gives N ≈ 2.418e10, D_tr ≈ 2.657e12."""
    law = ParametricLaw(name="sardana", E=1.69, A=406.4, B=410.7, alpha=0.336, beta=0.283)
    a = allocate(None, Objective(kind="inference_optimal", inference_tokens=2e12, target_loss=1.947), law)
    assert a.params == pytest.approx(2.418e10, rel=0.005)
    assert a.tokens == pytest.approx(2.657e12, rel=0.005)
    assert a.loss == pytest.approx(1.947, rel=1e-9)
    assert a.total_flops == pytest.approx(6 * a.params * a.tokens + 2 * a.params * 2e12)
    assert 0 < a.total_flops_saving < 1


@settings(max_examples=30, deadline=None)
@given(st.floats(1e20, 1e26), st.sampled_from(sorted(LAWS)))
def test_no_inference_reduces_to_compute_optimal(flops, name):
    law = LAWS[name]
    target = law.compute_optimal_loss(flops)
    n = inference_optimal_params(law, target, 0.0)
    assert n == pytest.approx(law.compute_optimal(flops)[0], rel=1e-4)


@settings(max_examples=30, deadline=None)
@given(st.floats(1e20, 1e26), st.floats(1e11, 1e15))
def test_more_inference_means_a_smaller_model(flops, d_inf):
    law = LAWS[DEFAULT_LAW]
    target = law.compute_optimal_loss(flops)
    n1 = inference_optimal_params(law, target, d_inf)
    n2 = inference_optimal_params(law, target, 10 * d_inf)
    assert n2 < n1 <= law.compute_optimal(flops)[0] * (1 + 1e-6)


@settings(max_examples=50, deadline=None)
@given(st.floats(1e18, 1e27), st.floats(1.0, 1000.0))
def test_any_ratio_is_no_better_than_compute_optimal(flops, ratio):
    law = LAWS[DEFAULT_LAW]
    a = allocate(flops, Objective(kind="tokens_per_param", tokens_per_param=ratio), law)
    assert a.loss >= law.compute_optimal_loss(flops) - 1e-12
    assert a.tokens / a.params == pytest.approx(ratio)


def test_flops_for_loss_inverts_compute_optimal_loss():
    law = LAWS["hoffmann2022-unrounded"]
    for c in (1e20, 5.76e23, 1e27):
        assert law.flops_for_loss(law.compute_optimal_loss(c)) == pytest.approx(c, rel=1e-9)
    assert law.flops_for_loss(law.E) == math.inf


def test_target_below_irreducible_loss_is_infeasible():
    with pytest.raises(Infeasible, match="irreducible"):
        allocate(
            None,
            Objective(kind="inference_optimal", inference_tokens=1e12, target_loss=1.5),
            LAWS["hoffmann2022"],
        )


def test_a_target_loss_only_past_any_trainable_budget_reaches_is_infeasible():
    """1.82 under besiroglu2024 (E = 1.8172) needed N 7.7e15 on D 8e16, 3.7e33 training FLOPs, and was planned
    (exit 0, an overrun warning), where a budget over 1e30 is refused. Infeasible, with the loss floor at 1e30:
    compute-optimal loss E + A'·(C/6)^(-αβ/(α+β)) at C = 1e30 (Hoffmann Eq. 4 substituted into Eq. 2)."""
    law = LAWS["besiroglu2024"]
    with pytest.raises(Infeasible) as refused:
        allocate(None, Objective(kind="inference_optimal", inference_tokens=2e13, target_loss=1.82), law)
    text = str(refused.value)
    assert text.startswith(
        "the target loss 1.82 needs N = 7.74e+15 parameters on D = 8.05e+16 tokens, 3.74e+33"
    )
    floor = law.compute_optimal_loss(1e30)
    assert floor == pytest.approx(1.8294, abs=1e-4)
    assert f"ask for a target loss above {math.ceil(floor * 1e4) / 1e4:.4f}" in text
    # a target above the floor with room to spare is planned
    assert (
        allocate(None, Objective(kind="inference_optimal", inference_tokens=2e13, target_loss=1.9), law).flops
        < 1e30
    )


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"kind": "tokens_per_param"}, "needs 'tokens_per_param'"),
        ({"kind": "compute_optimal", "params": 7e9}, "does not apply"),
        ({"kind": "fixed_params", "params": 7e9, "target_loss": 2.0}, "does not apply"),
        ({"kind": "inference_optimal"}, "needs 'inference_tokens'"),
        ({"kind": "compute_optimal", "bogus": 1}, "Extra inputs"),
    ],
)
def test_objective_validation(kwargs, message):
    with pytest.raises(ValidationError, match=message):
        Objective(**kwargs)


def test_law_spec_forms(tmp_path):
    assert resolve_law(LawSpec(name="hoffmann2022")).alpha == 0.34
    inline = resolve_law(LawSpec(E=1.7, A=400, B=400, alpha=0.3, beta=0.3, param_count="non_embedding"))
    assert inline.param_count == "non_embedding"
    with pytest.raises(ValidationError):
        LawSpec(name="hoffmann2022", E=1.7)
    with pytest.raises(ValidationError):
        LawSpec(E=1.7, A=400)
    path = tmp_path / "law.yaml"
    path.write_text("E: 1.8\nA: 500\nB: 2000\nalpha: 0.35\nbeta: 0.37\nfit: {runs: 3}\n")
    law = resolve_law(LawSpec(file=str(path)))
    assert (law.name, law.beta) == ("law", 0.37)
    path.write_text("E: 1.8\nA: 500\nB: 2000\nalpha: 0.35\nbetta: 0.37\n")
    with pytest.raises(SpecError, match="betta"):
        load_law_file(path)
    with pytest.raises(SpecError, match="did you mean 'hoffmann2022'"):
        law_from_flag("hofmann2022")


def test_hardware_budget_round_trip():
    c = flops_from_hardware(1024, 30, H100, 0.4)
    assert c == pytest.approx(1024 * 989e12 * 0.4 * 30 * 86400)
    cost = hardware_cost(c, H100, 0.4, gpus=1024, price_per_gpu_hour=2.0)
    assert cost.days == pytest.approx(30)
    assert cost.gpu_hours == pytest.approx(1024 * 30 * 24)
    assert cost.cost_usd == pytest.approx(2.0 * 1024 * 30 * 24)
    a = with_hardware(allocate(c, Objective(), LAWS[DEFAULT_LAW]), H100, 0.4, gpus=1024)
    assert a.days == pytest.approx(30)
    with pytest.raises(ValueError, match=r"MFU must be in \[0.01, 1\], got 1.5"):
        checked_mfu(1.5)


def test_loss_is_vectorized():
    law = LAWS[DEFAULT_LAW]
    n = np.array([1e9, 1e10])
    out = law.loss(n, 20 * n)
    assert out.shape == (2,) and out[0] > out[1]
