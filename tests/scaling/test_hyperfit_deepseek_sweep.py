"""`runplan fit --hyperparams` on a sweep generated from DeepSeek LLM's published laws (Bi et al. 2024, arXiv
2401.02954, §3.1: B_opt = 0.2920·C^0.3271 tokens, η_opt = 0.3118·C^−0.1250), 8 budgets 1e17..2e19 as theirs; what
is left out of the fit is said, not silent; bad input is one line naming the row and column; the JSON keys are the
ones docs/scaling.md lists."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.errors import SpecError
from runplan.scaling.hyperfit import fit_hyperparams, read_hyperparam_runs
from runplan.scaling.hyperparams import (
    DEEPSEEK_BATCH_COEF,
    DEEPSEEK_BATCH_EXP,
    DEEPSEEK_LR_COEF,
    DEEPSEEK_LR_EXP,
)

REPO = Path(__file__).resolve().parents[2]
BUDGETS = tuple(np.geomspace(1e17, 2e19, 8))  # DeepSeek LLM §3.1 swept 1e17 to 2e19 FLOPs
runner = CliRunner()


def _deepseek_sweep(path: Path, *, noise: float, budgets=BUDGETS, skip=lambda c, b, lr: False) -> Path:
    """A 13×13 grid of batch and LR in half-octaves around DeepSeek's optimum at each budget; loss a bowl in
    (ln B, ln η), L0(C)·(1 + 0.004·ln²(B/B_opt) + 0.006·ln²(η/η_opt)), times lognormal noise of ``noise``."""
    rng = np.random.default_rng(20240105)
    rows = ["flops,lr,batch,loss"]
    for c in budgets:
        b_opt = DEEPSEEK_BATCH_COEF * c**DEEPSEEK_BATCH_EXP
        lr_opt = DEEPSEEK_LR_COEF * c**DEEPSEEK_LR_EXP
        for i in np.arange(-3, 3.5, 0.5):
            for j in np.arange(-3, 3.5, 0.5):
                batch, lr = b_opt * 2.0**i, lr_opt * 2.0**j
                if skip(c, batch, lr):
                    continue
                bowl = 0.004 * math.log(batch / b_opt) ** 2 + 0.006 * math.log(lr / lr_opt) ** 2
                loss = (2.0 + 30 * c**-0.1) * (1 + bowl) * math.exp(rng.normal(0, noise))
                rows.append(f"{c:.6g},{lr:.9g},{batch:.9g},{loss:.7f}")
    path.write_text("\n".join(rows) + "\n")
    return path


def test_noiseless_sweep_returns_deepseek_s_published_coefficients(tmp_path):
    fit = fit_hyperparams(read_hyperparam_runs(_deepseek_sweep(tmp_path / "s.csv", noise=0.0)))
    assert fit.batch_exp.value == pytest.approx(0.3271, abs=1e-5)
    assert fit.lr_exp.value == pytest.approx(-0.1250, abs=1e-5)
    assert fit.batch_coef.value == pytest.approx(0.2920, rel=1e-3)
    assert fit.lr_coef.value == pytest.approx(0.3118, rel=1e-3)
    # at the largest budget, 2e19: B_opt = 0.2920·(2e19)^0.3271 = 6.008e5 tokens, η = 0.3118·(2e19)^−0.125 = 1.206e-3
    assert fit.batch_opt.value == pytest.approx(0.2920 * 2e19**0.3271, rel=1e-4)
    assert fit.batch_opt.value == pytest.approx(6.008e5, rel=1e-3)
    assert fit.lr_opt.value == pytest.approx(1.206e-3, rel=1e-3)
    assert fit.warnings == []


def test_noisy_sweep_brackets_the_published_exponents(tmp_path):
    """0.03% loss noise (an eighth of the 0.25% band) moves the near-optimal sets; the 10th-90th percentile
    bootstrap intervals still hold 0.3271 and −0.125, and the point estimates stay within 0.03 of them."""
    path = _deepseek_sweep(tmp_path / "s.csv", noise=3e-4)
    fit = fit_hyperparams(read_hyperparam_runs(path), bootstrap=40, seed=1)
    assert fit.batch_exp.low <= 0.3271 <= fit.batch_exp.high
    assert fit.lr_exp.low <= -0.125 <= fit.lr_exp.high
    assert fit.batch_exp.value == pytest.approx(0.3271, abs=0.03)
    assert fit.lr_exp.value == pytest.approx(-0.125, abs=0.03)


def test_a_budget_with_too_few_settings_is_named_not_dropped_silently(tmp_path):
    # Was: the 2e19 budget with 2 runs left the fit without a word, and the optimum was still reported at 2e19
    kept = {"n": 0}

    def two_runs_at_the_top(c, batch, lr):
        if c < 1.9e19:
            return False
        kept["n"] += 1
        return kept["n"] > 2

    path = _deepseek_sweep(tmp_path / "s.csv", noise=0.0, skip=two_runs_at_the_top)
    fit = fit_hyperparams(read_hyperparam_runs(path))
    assert len(fit.budgets) == 7
    (left,) = [w for w in fit.warnings if "left out" in w]
    assert left.startswith("budget 2e+19 (2 runs, lines ")
    assert "2 distinct (batch, lr) setting(s), and a budget needs 3 or more" in left


def test_a_budget_that_fixed_the_batch_is_warned(tmp_path):
    """A budget that swept only the LR gives the fit the batch the user chose, not one the loss picked."""
    path = _deepseek_sweep(
        tmp_path / "s.csv",
        noise=0.0,
        skip=lambda c, batch, lr: c > 1.9e19 and abs(math.log2(batch / (0.2920 * c**0.3271))) > 0.01,
    )
    fit = fit_hyperparams(read_hyperparam_runs(path))
    assert any(
        w.startswith("budget 2e+19: every run has batch 6.01e+05, so the fit takes it as given")
        for w in fit.warnings
    )


def test_too_few_budgets_names_what_was_left_out(tmp_path):
    path = tmp_path / "tiny.csv"
    path.write_text(
        "flops,lr,batch,loss\n1e17,1e-3,1e5,2.5\n1e17,2e-3,1e5,2.4\n1e18,1e-3,2e5,2.3\n1e18,2e-3,2e5,2.2\n"
    )
    with pytest.raises(SpecError) as error:
        fit_hyperparams(read_hyperparam_runs(path))
    message = error.value.message
    assert message.startswith("a hyperparameter fit needs at least 2 budgets with 3+ distinct (batch, lr)")
    assert "budget 1e+17 (2 runs, lines 2, 3) left out: 2 distinct (batch, lr) setting(s)" in message
    assert "budget 1e+18 (2 runs, lines 4, 5) left out" in message


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda rows: [rows[0], *[r for r in rows[1:] if r.startswith("1e+17,")]], "found 1 (exact budgets)"),
        (
            lambda rows: [rows[0].replace("batch", "bs"), *rows[1:]],
            "missing column 'batch' (columns are flops, lr, bs",
        ),
        (
            lambda rows: [rows[0], "1e+17,-0.001,1e5,2.5", *rows[2:]],
            "row 1 (line 2), column 'lr': must be a positive",
        ),
        (
            lambda rows: [rows[0], "1e+17,0.001,0,2.5", *rows[2:]],
            "row 1 (line 2), column 'batch': must be a positive",
        ),
        (
            lambda rows: [rows[0], "0,0.001,1e5,2.5", *rows[2:]],
            "row 1 (line 2), column 'flops': must be a positive",
        ),
        (
            lambda rows: [rows[0], "1e+17,0.001,1e5,-2", *rows[2:]],
            "row 1 (line 2), column 'loss': must be a positive",
        ),
    ],
)
def test_bad_sweeps_are_one_line_exit_2(tmp_path, one_error_line, edit, expected):
    rows = _deepseek_sweep(tmp_path / "s.csv", noise=0.0).read_text().splitlines()
    bad = tmp_path / "bad.csv"
    bad.write_text("\n".join(edit(rows)) + "\n")
    line = one_error_line(runner.invoke(app, ["fit", "--hyperparams", str(bad), "--bootstrap", "0"]))
    assert line.startswith("runplan: error: ") and expected in line


def test_json_keys_are_the_ones_docs_scaling_lists(tmp_path):
    path = _deepseek_sweep(tmp_path / "s.csv", noise=0.0)
    result = runner.invoke(app, ["fit", "--hyperparams", str(path), "--bootstrap", "5", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    docs = (REPO / "docs" / "scaling.md").read_text()
    entry = docs.split("- `fit --hyperparams --json`:", 1)[1].split("\n- ", 1)[0]
    budget_keys = re.search(r"`budgets` \[\{(.*?)\}\]", entry, re.DOTALL)
    assert budget_keys is not None
    listed = set(re.findall(r"`(\w+)`", entry.replace(budget_keys.group(0), "`budgets`")))
    assert set(data) == listed - {"value", "low", "high", "std"}
    assert set(data["budgets"][0]) == set(re.findall(r"`(\w+)`", budget_keys.group(1)))
    assert set(data["batch_exp"]) == {"value", "low", "high", "std"}


@pytest.mark.parametrize("flops", ["-1", "0", "1e40"])
def test_a_bad_report_budget_is_one_line_exit_2(tmp_path, one_error_line, flops):
    # Was: --flops -1 or 0 with --hyperparams: "internal error: ValueError: math domain error", exit 3
    path = _deepseek_sweep(tmp_path / "s.csv", noise=0.0)
    line = one_error_line(
        runner.invoke(app, ["fit", "--hyperparams", str(path), "--bootstrap", "0", "--flops", flops])
    )
    assert line.startswith("runplan: error: --flops: ")


def test_a_batch_column_in_sequences_is_warned(tmp_path):
    """DeepSeek's B is tokens; their smallest budget's B_opt is 0.2920·(1e17)^0.3271 = 1.06e5 tokens. A column
    of sequences (tokens / 4096) still fits the same exponent, but k_B is 4096× too small: say so."""
    tokens = _deepseek_sweep(tmp_path / "t.csv", noise=0.0).read_text().splitlines()
    rows = [tokens[0]]
    for row in tokens[1:]:
        flops, lr, batch, loss = row.split(",")
        rows.append(f"{flops},{lr},{float(batch) / 4096:.9g},{loss}")
    (tmp_path / "s.csv").write_text("\n".join(rows) + "\n")
    fit = fit_hyperparams(read_hyperparam_runs(tmp_path / "s.csv"))
    assert fit.batch_exp.value == pytest.approx(0.3271, abs=1e-5)
    assert fit.batch_coef.value == pytest.approx(0.2920 / 4096, rel=1e-3)
    assert any(w.startswith("every batch is below 4,096 tokens (largest 1173)") for w in fit.warnings), (
        fit.warnings
    )
    assert not any(
        "every batch" in w for w in fit_hyperparams(read_hyperparam_runs(tmp_path / "t.csv")).warnings
    )
