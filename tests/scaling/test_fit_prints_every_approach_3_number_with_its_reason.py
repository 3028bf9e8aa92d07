"""`runplan fit` printed Approach 3's coefficients and optimum as bare `name value` rows (E 1.847, N_opt 4.77e+09):
no formula and nothing to compare them with, against the rule that every printed number carries its one-line
reason. Each row now says what it is, the formula behind it (Hoffmann et al. 2022, Eq. 2, Eq. 4, App. D.2) and the
published values a reader checks a fit against (Chinchilla's Eq. 10 and Besiroglu et al. 2024's refit)."""

from __future__ import annotations

import re
from pathlib import Path

from typer.testing import CliRunner

from runplan.cli.app import app

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "isoflop_synthetic.csv"
runner = CliRunner()


def _approach_3_rows(columns: int) -> dict[str, list[str]]:
    args = ["fit", str(EXAMPLE), "--bootstrap", "0", "--method", "parametric"]
    result = runner.invoke(app, args, env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Approach 3")) + 1
    return {
        cells[0]: cells[1:] for cells in (re.split(r"\s{2,}", line.strip()) for line in lines[start:] if line)
    }


def test_every_row_has_a_reason_beside_it():
    rows = _approach_3_rows(250)
    names = [
        "E",
        "A",
        "B",
        "α",
        "β",
        "at C = 1e+21: N_opt",
        "D_opt",
        "tokens per parameter",
        "Huber objective",
    ]
    assert list(rows) == names
    assert all(len(cells) == 2 and cells[1] for cells in rows.values()), rows
    assert "Eq. 4" in rows["at C = 1e+21: N_opt"][1] and "G·(C/6)^a" in rows["at C = 1e+21: N_opt"][1]
    assert "Epoch 0.3478" in rows["α"][1] and "Chinchilla 0.28" in rows["β"][1]
    assert "App. D.2" in rows["Huber objective"][1]


def test_at_80_columns_the_reason_goes_under_its_row():
    result = runner.invoke(app, ["fit", str(EXAMPLE), "--bootstrap", "0"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines)
    at = next(i for i, line in enumerate(lines) if line.startswith("E "))
    assert lines[at].split() == ["E", "1.847"] and "irreducible loss" in lines[at + 1]
