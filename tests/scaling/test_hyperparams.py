"""Batch-size and learning-rate laws: DeepSeek LLM's fit method on a sweep, Kaplan et al. 2020's B_crit(L)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.scaling.hyperfit import fit_hyperparams, read_hyperparam_runs
from runplan.scaling.hyperparams import (
    critical_batch_ramp,
    kaplan_critical_batch_tokens,
    loss_for_critical_batch,
)
from runplan.scaling.laws import shipped_laws


def _sweep_csv(path, lr_coef=0.3, lr_exp=-0.125, batch_coef=0.3, batch_exp=0.33, budgets=(1e17, 1e18, 1e19)):
    """A 5×5 (lr, batch) grid centred on the optimum at each budget; loss = L0(C) + curvature × log-distance²."""
    rows = ["flops,lr,batch,loss"]
    for c in budgets:
        lr0, b0 = lr_coef * c**lr_exp, batch_coef * c**batch_exp
        for i in range(-2, 3):
            for j in range(-2, 3):
                lr, batch = lr0 * 2.0**i, b0 * 2.0**j
                loss = (
                    2.5 * (c / 1e17) ** -0.05
                    + 0.004 * math.log(lr / lr0) ** 2
                    + 0.003 * math.log(batch / b0) ** 2
                )
                rows.append(f"{c:g},{lr:.9g},{batch:.9g},{loss:.9f}")
    path.write_text("\n".join(rows) + "\n")
    return path


def test_deepseek_method_recovers_the_generating_laws(tmp_path):
    """The near-optimal set is symmetric about each budget's optimum in log space, so least squares over it
    returns the generating coefficients exactly (hand-derived): B = 0.3·C^0.33, η = 0.3·C^−0.125."""
    fit = fit_hyperparams(read_hyperparam_runs(_sweep_csv(tmp_path / "hp.csv")), bootstrap=30)
    assert fit.batch_exp.value == pytest.approx(0.33, abs=1e-6)
    assert fit.lr_exp.value == pytest.approx(-0.125, abs=1e-6)
    assert fit.batch_coef.value == pytest.approx(0.3, rel=1e-4)
    assert fit.lr_coef.value == pytest.approx(0.3, rel=1e-4)
    assert all(
        b.near_optimal > 1 for b in fit.budgets
    )  # the 0.25% tolerance of DeepSeek LLM §3.1 admits neighbours
    assert fit.batch_exp.low is not None and fit.batch_exp.low <= 0.33 <= fit.batch_exp.high
    law = fit.law()
    assert law.batch_tokens(1e19) == pytest.approx(0.3 * 1e19**0.33, rel=1e-4)
    assert law.peak_lr(1e19) == pytest.approx(0.3 * 1e19**-0.125, rel=1e-4)


def test_deepseek_published_law_is_what_the_schedule_uses():
    from runplan.scaling.hyperparams import deepseek_batch_tokens, deepseek_peak_lr

    assert deepseek_batch_tokens(1e20) == pytest.approx(0.2920 * 1e20**0.3271)
    assert deepseek_peak_lr(1e20) == pytest.approx(0.3118 * 1e20**-0.1250)


def test_best_run_at_the_grid_edge_and_two_budgets_are_warned(tmp_path):
    path = _sweep_csv(tmp_path / "two.csv", budgets=(1e17, 1e18))
    fit = fit_hyperparams(read_hyperparam_runs(path))
    assert any("rest on 2 budgets" in w for w in fit.warnings)
    assert not any("largest swept" in w for w in fit.warnings)  # centred grid: bracketed
    shifted = tmp_path / "shifted.csv"  # loss rising with lr: the smallest swept lr wins at every budget
    lines = path.read_text().splitlines()
    shifted.write_text("\n".join([lines[0]] + [_with_loss_rising_in_lr(line) for line in lines[1:]]) + "\n")
    edge = fit_hyperparams(read_hyperparam_runs(shifted))
    assert any("lr" in w and "smallest swept" in w for w in edge.warnings)


def _with_loss_rising_in_lr(line: str) -> str:
    flops, lr, batch, loss = line.split(",")
    return f"{flops},{lr},{batch},{float(loss) + 100 * float(lr):.9f}"


def test_fit_hyperparams_cli_json_and_law_file(tmp_path):
    path = _sweep_csv(tmp_path / "hp.csv")
    out = tmp_path / "hp.yaml"
    result = CliRunner().invoke(
        app, ["fit", "--hyperparams", str(path), "--bootstrap", "10", "--json", "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["batch_exp"]["value"] == pytest.approx(0.33, abs=1e-6) and len(data["budgets"]) == 3
    from runplan.scaling.hyperfit import load_hyperparam_law

    law = load_hyperparam_law(out)
    assert law.batch_exp == pytest.approx(0.33, abs=1e-6) and law.flops_min == pytest.approx(1e17)
    assert law.peak_lr(1e18) == pytest.approx(0.3 * 1e18**-0.125, rel=1e-4)


def test_hyperparams_csv_missing_column_is_one_line(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("flops,lr,loss\n1e17,0.001,3.0\n")
    result = CliRunner().invoke(app, ["fit", "--hyperparams", str(path)])
    assert result.exit_code == 2 and "missing column 'batch'" in result.stderr
    assert result.stderr.count("\n") == 1


@pytest.mark.parametrize(
    "flag",
    ["--method", "--params-col", "--tokens-col", "--param-count", "--drop-highest", "--starts", "--plot"],
)
def test_law_fit_flags_are_refused_with_hyperparams(tmp_path, flag):
    """--hyperparams reads none of the law fit's flags: each, given, is a one-line error naming it (exit 2),
    not silently ignored. Every value is one the law fit accepts, so only the mode refuses it."""
    from runplan.cli.fit import LAW_FIT_ONLY_FLAGS

    value = {
        "--method": "parametric",
        "--param-count": "total",
        "--drop-highest": "1",
        "--starts": "4",
        "--plot": str(tmp_path / "fit.png"),
    }.get(flag, "n")
    path = _sweep_csv(tmp_path / "hp.csv")
    result = CliRunner().invoke(app, ["fit", "--hyperparams", str(path), flag, value])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"runplan: error: {flag}: ") and result.stderr.count("\n") == 1
    assert flag in LAW_FIT_ONLY_FLAGS.values()


@pytest.mark.parametrize("flag", ["--lr-col", "--batch-col"])
def test_hyperparam_columns_are_refused_without_hyperparams(flag):
    csv = Path(__file__).resolve().parents[2] / "examples" / "isoflop_synthetic.csv"
    result = CliRunner().invoke(app, ["fit", str(csv), flag, "x"])
    assert result.exit_code == 2 and f"{flag}: applies only with --hyperparams" in result.stderr


def test_kaplan_critical_batch_by_hand():
    """Kaplan et al. 2020 §5.1: B_crit(L) = 2e8/L^(1/0.21). At L = 2: 2e8/2^4.762 = 7.371e6 tokens; at L = 3:
    2e8/3^4.762 = 1.069e6 (hand-computed: 2^(1/0.21) = 27.13, 3^(1/0.21) = 187.07)."""
    assert kaplan_critical_batch_tokens(2.0) == pytest.approx(7.371e6, rel=1e-3)
    assert kaplan_critical_batch_tokens(3.0) == pytest.approx(1.069e6, rel=1e-3)
    assert loss_for_critical_batch(kaplan_critical_batch_tokens(2.5)) == pytest.approx(2.5, rel=1e-12)
    with pytest.raises(ValueError):
        kaplan_critical_batch_tokens(0.0)


def test_critical_batch_ramp_boundaries_are_where_b_crit_doubles():
    law = shipped_laws()["besiroglu2024"]
    n, d = law.compute_optimal(2e23)
    main = 4e6
    stages, warnings = critical_batch_ramp(law, n, d, main)
    assert [f for f, _ in stages] == [0.125, 0.25, 0.5] and not warnings
    ends = [sum(t for _, t in stages[: i + 1]) * d for i in range(3)]
    for (fraction, _), end in zip(stages, ends, strict=True):
        # at the end of the stage at main·f, the loss has fallen to where B_crit = main·2f
        assert kaplan_critical_batch_tokens(law.loss(n, end)) == pytest.approx(main * 2 * fraction, rel=1e-6)
    assert sum(t for _, t in stages) < 0.5


def test_critical_batch_ramp_is_cut_at_half_the_run():
    law = shipped_laws()["besiroglu2024"]
    n, d = law.compute_optimal(2e23)
    stages, warnings = critical_batch_ramp(law, n, d, 1.2e7)
    assert sum(t for _, t in stages) == pytest.approx(0.5, rel=1e-6) and "cut" in warnings[0]
