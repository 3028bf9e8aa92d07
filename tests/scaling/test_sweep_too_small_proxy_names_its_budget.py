"""A sweep whose lower budgets have no proxy shape names the budget and offers fewer budgets when the larger ones fit.

`runplan sweep --flops 3e21` (a 5B-parameter main run) failed with "no proxy shape for 1.47e+07 parameters ...
raise --fraction, narrow --span, or use a smaller vocabulary": the 1.47e7-parameter proxy is the smallest size of
the third budget, 3e17 FLOPs (compute-optimal N there = G·(C/6)^a ≈ 4.6e7, half a decade below it 1.5e7), and the
two larger budgets build; `--budgets 2` plans, and the message neither named the budget nor said so.
"""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.errors import Infeasible
from runplan.scaling.laws import shipped_laws
from runplan.scaling.sweep import SweepRequest, design_sweep

LAW = shipped_laws()["besiroglu2024"]
runner = CliRunner()


def test_the_failing_budget_is_named_and_fewer_budgets_offered():
    with pytest.raises(Infeasible) as caught:
        design_sweep(SweepRequest(flops=3e21, law=LAW))
    assert "budget 3e+17 FLOPs" in caught.value.reason
    assert any("sweep.budgets=2" in s for s in caught.value.suggestions)
    assert len(design_sweep(SweepRequest(flops=3e21, law=LAW, budgets=2)).budgets) == 2


def test_the_cli_names_the_flag():
    result = runner.invoke(app, ["sweep", "--flops", "3e21"])
    assert result.exit_code == 1
    text = result.stderr.replace("\n  ", " ")
    assert "budget 3e+17 FLOPs" in text and "--budgets 2" in text
    assert runner.invoke(app, ["sweep", "--flops", "3e21", "--budgets", "2"]).exit_code == 0


def test_no_fewer_budgets_when_even_the_largest_has_no_shape():
    """1e20: the largest budget, 1e18, already asks for 2.9e7 parameters (below the 3.39e7 smallest shape)."""
    with pytest.raises(Infeasible) as caught:
        design_sweep(SweepRequest(flops=1e20, law=LAW))
    assert not any("sweep.budgets" in s for s in caught.value.suggestions)
    assert "budget 1e+1" in caught.value.reason
