"""`runplan fit --hyperparams sweep.csv --flops 1e25` (or 1e5) printed B_opt and η_opt far outside the budgets
swept with no word, while `runplan fit` (Approaches 2 and 3) warns beyond 10× outside its runs
(scaling/fit.py, ``EXTRAPOLATION_FACTOR``). It now warns the same way, with the same factor, as a caution: DeepSeek
LLM itself used its law, fitted at budgets up to about 3e20 FLOPs, at C ≈ 9.9e23 (Bi et al. 2024 §3.1)."""

from __future__ import annotations

import json

import pytest
from tests.scaling.test_hyperfit_deepseek_sweep import _deepseek_sweep
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.scaling.fit import EXTRAPOLATION_FACTOR
from runplan.scaling.hyperfit import fit_hyperparams, read_hyperparam_runs

# the sweep's budgets: 8 from 1e17 to 2e19 FLOPs, as DeepSeek LLM §3.1's
LARGEST, SMALLEST = 2e19, 1e17


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return read_hyperparam_runs(_deepseek_sweep(tmp_path_factory.mktemp("s") / "s.csv", noise=0.0))


def _extrapolation(fit) -> list[str]:
    return [w for w in fit.warnings if "extrapolation" in w]


def test_far_above_the_largest_budget_is_warned(runs):
    fit = fit_hyperparams(runs, at_flops=1e25)
    # 1e25 / 2e19 = 5e5
    assert _extrapolation(fit) == [
        "B_opt and η_opt are reported at C = 1e+25, 5e+05× the largest budget (2e+19): an extrapolation of the "
        "fitted power laws (a caution: DeepSeek LLM used its own, fitted at budgets up to about 3e+20 FLOPs, at "
        "C ≈ 9.9e+23 for its 67B model, Bi et al. 2024 §3.1)"
    ]


def test_far_below_the_smallest_budget_is_warned(runs):
    fit = fit_hyperparams(runs, at_flops=1e5)
    (warning,) = _extrapolation(fit)
    # 1e17 / 1e5 = 1e12
    assert warning.startswith(
        "B_opt and η_opt are reported at C = 1e+05, 1e+12× below the smallest budget (1e+17): an extrapolation"
    )


@pytest.mark.parametrize("at", [None, SMALLEST / EXTRAPOLATION_FACTOR, 1e18, LARGEST * EXTRAPOLATION_FACTOR])
def test_within_ten_times_of_the_budgets_is_not(runs, at):
    assert EXTRAPOLATION_FACTOR == 10.0  # the factor `runplan fit` warns at (Approaches 2 and 3)
    assert _extrapolation(fit_hyperparams(runs, at_flops=at)) == []


def test_just_beyond_ten_times_is(runs):
    assert len(_extrapolation(fit_hyperparams(runs, at_flops=LARGEST * EXTRAPOLATION_FACTOR * 1.01))) == 1
    assert len(_extrapolation(fit_hyperparams(runs, at_flops=SMALLEST / EXTRAPOLATION_FACTOR / 1.01))) == 1


def test_the_command_prints_it_and_still_succeeds(tmp_path):
    """A caution, not an error: exit 0, the numbers printed, the warning on stderr and in --json's warnings."""
    path = _deepseek_sweep(tmp_path / "s.csv", noise=0.0)
    result = CliRunner().invoke(
        app, ["fit", "--hyperparams", str(path), "--flops", "1e25"], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0, result.output
    assert "at C = 1e+25: B_opt" in result.stdout
    assert "5e+05× the largest budget (2e+19)" in " ".join(result.stderr.split())
    result = CliRunner().invoke(app, ["fit", "--hyperparams", str(path), "--flops", "1e25", "--json"])
    assert result.exit_code == 0, result.output
    assert any("5e+05× the largest budget" in w for w in json.loads(result.stdout)["warnings"])
