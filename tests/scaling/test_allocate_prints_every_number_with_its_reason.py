"""`runplan allocate` printed its numbers as bare `name value` rows ("compute-optimal FLOPs for the same loss
6.9e+22", "saving 48.3% of total FLOPs"): no formula, no source, against the project rule that every printed
number comes with its one-line reason (README; `runplan plan --detail` prints them for the same allocation).
Each row now has a third column, the formula and its source; at 80 columns a row too wide is stacked as
`value ... why ...` (runplan.report.tables) instead of cut."""

from __future__ import annotations

import itertools
import re

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app

runner = CliRunner()


def _rows(*args: str, columns: int = 250) -> dict[str, str]:
    """The allocation table as {name: rest of the line}, checked to have a value and a reason on every row."""
    result = runner.invoke(app, ["allocate", *args], env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("  law: ")) + 1
    table = list(itertools.takewhile(lambda line: re.match(r"\S.*?\s{2,}\S", line), lines[start:]))
    rows = {}
    for line in table:
        cells = re.split(r"\s{2,}", line.strip())
        assert len(cells) >= 3, f"no reason on the row {line!r}"
        rows[cells[0]] = "  ".join(cells[1:])
    return rows


@pytest.mark.parametrize(
    "args",
    [
        ["--flops", "2e23"],
        ["--flops", "2e23", "--tokens-per-param", "20"],
        ["--flops", "2e23", "--params", "7b"],
        ["--flops", "2e23", "--inference-tokens", "2e13"],
        ["--inference-tokens", "2e13", "--target-loss", "2.1"],
        ["--gpus", "1024", "--days", "30", "--price-per-gpu-hour", "2"],
    ],
)
def test_every_row_has_a_reason(args):
    assert len(_rows(*args)) >= 6


def test_the_reasons_name_the_formula_and_its_source():
    rows = _rows("--flops", "2e23", "--gpus", "1024", "--price-per-gpu-hour", "2")
    assert "G·(C/6)^a" in rows["parameters N"] and "Eq. 4" in rows["parameters N"]
    assert "a = β/(α+β) = 0.513" in rows["parameters N"]  # besiroglu2024: 0.3658 / (0.3478 + 0.3658)
    assert "C/(6·N)" in rows["tokens D"]
    assert "E + A/N^α + B/D^β" in rows["predicted loss"] and "Eq. 2" in rows["predicted loss"]
    assert "6·N·D" in rows["training FLOPs 6ND"]
    assert "peak" in rows["GPU-hours"] and "MFU" in rows["GPU-hours"]
    fixed = _rows("--flops", "2e23", "--params", "7b")
    assert "(K/(L − E))" in fixed["compute-optimal FLOPs for the same loss"]
    assert "Eq. 4" in fixed["compute-optimal at this budget"]
    ratio = _rows("--flops", "2e23", "--tokens-per-param", "20")
    assert "sqrt(C/(6·r))" in ratio["parameters N"]
    inference = _rows("--flops", "2e23", "--inference-tokens", "2e13")
    assert "Sardana et al. 2024" in inference["parameters N"]
    assert "Sardana et al. 2024" in inference["inference FLOPs 2·N·D_inf"]
    assert "compute-optimal loss at the budget" in inference["target loss"]
    assert "given" in _rows("--inference-tokens", "2e13", "--target-loss", "2.1")["target loss"]
    assert "1 − total" in inference["saving"]


@pytest.mark.parametrize("columns", [40, 60, 80])
def test_on_a_narrow_terminal_nothing_is_cut(columns):
    """At 40 columns the value column of a name-and-value grid had no room left and printed empty."""
    args = ["allocate", "--flops", "2e23", "--params", "7b"]
    result = runner.invoke(app, args, env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.output
    assert all(len(line) <= columns for line in result.stdout.splitlines())
    text = " ".join(result.stdout.split())
    assert "…" not in text
    assert "compute-optimal FLOPs for the same loss" in text and "6.9e+22 (+190.0% spent here)" in text


def test_a_plan_file_s_budget_says_which_key_set_it():
    """examples/70b-512-h100.yaml fixes llama-3.1-70b on `budget: {tokens: 2T}`: C = 6 × 70.55 B × 2 T = 8.47e23."""
    rows = _rows("examples/70b-512-h100.yaml")
    assert rows["budget"].startswith("8.47e+23 FLOPs") and "budget.tokens" in rows["budget"]
    assert "the plan's model" in rows["parameters N"]
