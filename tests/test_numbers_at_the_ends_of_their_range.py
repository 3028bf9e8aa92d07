"""Numbers at the ends of their range read as numbers: 13 kWh as 0.013 MWh (not 0.0), 1.356e15 steps (not 1.356 P)."""

from __future__ import annotations

import re

from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.report.format import fmt_mwh, fmt_value


def test_energy_below_one_mwh_keeps_two_significant_digits():
    assert fmt_mwh(0.01341) == "0.013" and fmt_mwh(398.34) == "398.3" and fmt_mwh(0.0) == "0.0"
    assert fmt_value("energy_mwh", 0.01341) == "0.013 MWh"


def test_a_small_plans_energy_rows_are_not_zero(tmp_path):
    plan = tmp_path / "small.yaml"
    plan.write_text(
        "schema_version: 1\nmodel: llama-3-8b\nbudget: {gpu_hours: 16}\n"
        "cluster: {gpu: h100-sxm, gpus: 8, price_per_gpu_hour: 2}\n"
    )
    result = CliRunner().invoke(app, ["plan", str(plan), "--detail"], env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    # 700 W × 15.97 GPU-h × PUE 1.2 / 1e6 = 0.01341 MWh
    assert "0.0 MWh" not in result.output and re.search(r"total energy\s+0\.013 MWh", result.output)


def test_counts_past_a_thousand_trillion_read_in_powers_of_ten():
    # a milestone every 1e21 tokens at 737,280 tokens per step is 1.356e15 steps, not "1.356 P" steps
    from runplan.report.format import fmt_count

    assert fmt_count(1.356e15) == "1.356e+15" and fmt_count(70_553_706_496) == "70.55 B"


def test_a_count_takes_the_suffix_of_the_value_as_printed():
    # budget.tokens 1T comes back through C = 6·N·D as 999,999,999,999.9999; to 4 digits that is 1 T, and
    # "1000 B" would be a trillion written in the next unit down. Likewise 999.99996e12 rounds to 1.000e+15.
    from runplan.report.format import fmt_count

    assert fmt_count(999_999_999_999.9999) == "1 T"
    assert fmt_count(999_949_999_999.0) == "999.9 B"
    assert fmt_count(999_999_600.0) == "1 B"
    assert fmt_count(999.99996e12) == "1.000e+15"
