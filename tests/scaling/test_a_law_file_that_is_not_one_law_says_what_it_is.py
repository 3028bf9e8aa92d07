"""`--law FILE` with a YAML that is not one law, or with a law whose fitted range is upside down.

* A plan file or the shipped list `configs/laws.yaml` given as `--law` was refused as "unknown key 'laws' (+4 more)
  (did you mean 'beta'?)": a suggestion that fixes nothing. It now says what the file is and what to give.
* `fitted_range: {params_min: 1e9, params_max: 1e8, ...}` was accepted and every allocation then warned
  "N = 2.03e+10, 203× above the fitted 1e+09..1e+08": min above max is a typo, refused (exit 2) naming the key.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app

runner = CliRunner()
REPO = Path(__file__).resolve().parents[2]
LAW = "E: 1.8\nA: 400\nB: 400\nalpha: 0.34\nbeta: 0.28\n"


def _allocate_with(law: str, one_error_line) -> str:
    return one_error_line(runner.invoke(app, ["allocate", "--flops", "2e23", "--law", law]))


def test_the_shipped_list_of_laws_is_not_one_law(one_error_line):
    line = _allocate_with(str(REPO / "configs" / "laws.yaml"), one_error_line)
    assert "did you mean 'beta'" not in line
    assert "list of laws" in line and "--law besiroglu2024" in line  # what to give instead


def test_a_plan_file_is_not_a_law(one_error_line):
    line = _allocate_with(str(REPO / "examples" / "2e23-compute-optimal.yaml"), one_error_line)
    assert "did you mean 'beta'" not in line
    assert "plan file" in line and "runplan fit -o" in line


@pytest.mark.parametrize(
    ("fitted", "key"),
    [
        ("{params_min: 1e9, params_max: 1e8, tokens_min: 1e9, tokens_max: 1e10}", "params"),
        ("{params_min: 1e8, params_max: 1e9, tokens_min: 5e11, tokens_max: 5e9}", "tokens"),
    ],
)
def test_a_fitted_range_upside_down_is_refused(tmp_path, one_error_line, fitted, key):
    path = tmp_path / "law.yaml"
    path.write_text(LAW + f"fitted_range: {fitted}\n")
    line = _allocate_with(str(path), one_error_line)
    assert "law.yaml:6" in line and "fitted_range" in line and f"{key}_min" in line and f"{key}_max" in line


def test_a_fitted_range_of_one_size_is_allowed(tmp_path):
    """min = max (one model size, every run at it) is a range, if a narrow one: not refused."""
    path = tmp_path / "law.yaml"
    path.write_text(
        LAW + "fitted_range: {params_min: 1e9, params_max: 1e9, tokens_min: 1e9, tokens_max: 1e10}\n"
    )
    result = runner.invoke(app, ["allocate", "--flops", "2e23", "--law", str(path), "--json"])
    assert result.exit_code == 0, result.output


def test_a_law_missing_keys_is_not_sent_to_runplan_init(tmp_path, one_error_line):
    """`runplan init` writes plan files, not laws: a law file missing B, alpha and beta was told "`runplan init`
    writes every key"."""
    path = tmp_path / "law.yaml"
    path.write_text("E: 1.8\nA: 400\n")
    line = one_error_line(runner.invoke(app, ["allocate", "--flops", "2e23", "--law", str(path)]))
    assert "B: required key is missing (also missing: alpha, beta)" in line
    assert "runplan init" not in line
