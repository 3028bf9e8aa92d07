"""`runplan allocate` prints every number readably at any size, and says when no shape of N can be generated."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.report.format import fmt_change, fmt_ratio
from runplan.units import format_si


def _allocate(*args: str) -> str:
    result = CliRunner().invoke(app, ["allocate", *args], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return " ".join(result.stdout.split())


def test_large_and_small_numbers_keep_their_scale():
    assert format_si(1.006e18) == "1.01e+18"  # not "1.01e+03 P"
    assert format_si(2.5e15) == "2.5 P"
    assert fmt_ratio(162253078.0) == "1.62e+08" and fmt_ratio(99999.0) == "99999.0"
    # below 10, three significant digits: --params 473B at 2e23 has 0.149 tokens per parameter, not "0.1"
    assert fmt_ratio(0.149) == "0.149" and fmt_ratio(0.588) == "0.588" and fmt_ratio(9.87) == "9.87"
    assert fmt_ratio(18.94) == "18.9" and fmt_ratio(0.033) == "0.033"
    assert fmt_change(0.25) == "+25.0%" and fmt_change(-0.5) == "-50.0%"
    assert fmt_change(1.23e14 - 1.0) == "1.23e+14×"  # a percentage of 1e16 digits says nothing


def test_wall_clock_and_cost_lines():
    # 1,024 H100 for 1e6 days: separators; the price behind the cost is printed with it
    text = _allocate("--gpus", "1024", "--days", "1e6", "--price-per-gpu-hour", "2.5")
    assert "1,000,000.0 days on 1,024 GPUs" in text
    assert "61,440,000,000 USD at 2.5 USD per GPU-hour" in text  # 24,576,000,000 GPU-hours × 2.5
    # 0.001 days = 86.4 s, not "0.0 days"
    assert "wall-clock 86.4 s on 1,024 GPUs" in _allocate("--gpus", "1024", "--days", "0.001")


def test_no_inference_means_no_saving_not_a_negative_zero():
    assert "saving 0.0% of total FLOPs" in _allocate("--flops", "2e23", "--inference-tokens", "0")


def test_an_n_beyond_the_generated_shapes_is_said_and_a_plan_file_refuses_it(tmp_path: Path):
    """N = 1.08e13 at 1e28 FLOPs: the flags path still answers N and D (exit 0) but says why no shape is
    printed; the plan file, which needs a shape, is infeasible (exit 1) with the same range."""
    text = _allocate("--flops", "1e28")
    assert "no generated shape of this size" in text and "between 100 M and 2 T total parameters" in text
    plan = tmp_path / "big.yaml"
    plan.write_text(
        "schema_version: 1\nname: big\nbudget: {flops: 1e28}\ncluster: {gpu: h100-sxm, gpus: 1024}\n"
    )
    result = CliRunner().invoke(app, ["allocate", str(plan)], env={"COLUMNS": "200"})
    assert result.exit_code == 1
    stderr = " ".join(result.stderr.split())
    assert "N lands between 100 M and 2 T" in stderr and "3e12" not in stderr


def test_a_plan_file_s_cost_is_in_its_currency(tmp_path: Path):
    # 1e23 FLOPs at MFU 0.4 on H100: 1e23 / (989e12 × 0.4) / 3600 = 70,217 GPU-hours, priced at 3 EUR each
    plan = tmp_path / "eur.yaml"
    plan.write_text(
        "schema_version: 1\nname: eur\nbudget: {flops: 1e23}\ncluster: {gpu: h100-sxm, gpus: 512, "
        "price_per_gpu_hour: 3}\ncost: {currency: EUR}\n"
    )
    result = CliRunner().invoke(app, ["allocate", str(plan)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "EUR at 3 EUR per GPU-hour" in result.stdout and "USD" not in result.stdout
