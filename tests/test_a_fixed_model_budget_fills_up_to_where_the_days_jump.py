"""A GPU-time budget on a fixed model (``model:``, objective fixed_params) is filled by D alone, and the days jump
with D where the batch law at C = M·D (Bi et al. 2024, §3.1) moves the ±10% batch window past the chosen layout's
batch: the fill must then plan the largest D whose plan stays within the days (bisecting D over the bracket, as the
fill in C does), not the last D the proportional steps happened to try; the warning says how much of the days
that D fills.

Hand-derived brackets (each D planned alone with ``plan._build_once(spec, inputs, None, D)``, steps of 5e7 tokens):

- Mixtral 8x7B, 0.05 days on 1,024 H100 (4k sequences): on tp1 pp1 dp512 cp2 ep8 (2,097,152 tokens a step, 0.499
  s) D = 1.530e10 takes 0.04249 days, days ∝ D; at 1.535e10 the batch law's target (2.3304 M) is past 2,097,152 /
  0.9 = 2.3302 M, the layout turns to tp2 pp2 dp64 (0.691 s a step) and 0.05283 days. The largest D within 0.05
  days is thus just under 1.535e10: 0.0425-0.0426 days (0.04249 × 1.5343 / 1.530 = 0.04261 at the jump), 85% of
  the days, so the budget warning stays and says 0.0426. Before: 0.0404 days (D = 1.453e10, the first iterate).
- GPT-3 175B, 3 days on 1,024 H100 (tests/test_a_fixed_model_budget_shortfall_names_the_tokens.py's plan): PP4 DP32
  up to D = 9.70e10 (2.9904 days, +0.0304 days per 1e9 tokens), PP8 DP16 from 9.71e10 (3.0251 days). D in
  [9.64e10, 9.71e10) fills 3 days within 1% under (2.97-2.992 days); before, the fill kept 9.63e10 (2.969 days) and
  warned.
- DeepSeek-V3, 100k GPU-hours on 8,192 B200 (0.509 days; slow): tp1 pp8 dp256 cp4 up to D = 3.10e11 (0.3255 days,
  days ∝ D), tp8 pp2 dp256 cp2 from 3.15e11 (0.8644 days). Before: 0.222 days (D = 2.11e11).
"""

from __future__ import annotations

import json
import re

import pytest
import yaml
from tests._small_plan import MIXTRAL_005_DAYS
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.plan import unfilled_reason

MIXTRAL = MIXTRAL_005_DAYS
GPT3 = {
    "schema_version": 1,
    "name": "gpt3-3-days",
    "model": "gpt-3-175b",
    "budget": {"days": 3},
    "training": {"seq_len": 8192},
    "cluster": {"gpu": "h100-sxm", "gpus": 1024},
    "stack": "deepspeed",
    "schedule": {
        "batch_ramp": [
            {"batch_fraction": 0.125, "token_fraction": 0.02},
            {"batch_fraction": 0.75, "token_fraction": 0.05},
        ],
        "cooldown_shape": "linear",
    },
    "operations": {"host_staging": False, "storage_write_bandwidth_bytes_per_s": 5e10},
}
DEEPSEEK = {
    "schema_version": 1,
    "name": "g2",
    "budget": {"gpu_hours": 100000.0},
    "training": {"seq_len": 4096},
    "cluster": {"gpu": "b200", "gpus": 8192, "price_per_gpu_hour": 2.0},
    "stack": {"preset": "megatron-core", "precision": "fp8"},
    "model": "deepseek-v3",
}


def _plan(tmp_path, plan: dict) -> dict:
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(plan))
    result = CliRunner().invoke(app, ["plan", str(path), "-f", "json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["allocation"]["objective"] == "fixed_params"
    return out


def _budget_warning(plan: dict) -> str:
    (budget,) = [w for w in plan["warnings"] if w.startswith("budget:")]
    return budget


def test_mixtral_fills_up_to_the_layout_switch(tmp_path):
    plan = _plan(tmp_path, MIXTRAL)
    days = plan["cost"]["main"]["wall_clock_days"]
    tokens = plan["allocation"]["tokens"]
    assert 1.510e10 <= tokens < 1.535e10  # within 1.6% of the jump, never past it
    assert 0.04190 <= days <= 0.04262  # 0.04249 × tokens / 1.530e10, at most the jump's 0.04261
    assert plan["layout"]["best"]["dp"] == 512
    budget = _budget_warning(plan)
    shown = float(re.match(r"budget: the plan fills ([0-9.]+) of the budget's 0\.05 days", budget).group(1))
    assert shown == pytest.approx(days, rel=2e-3)  # the warning says what the best D fills
    # and names the D just past it that overran (the jump at 1.5343e10), with its days (0.0528-0.0530)
    past = re.search(r"; ([0-9.]+) B \(([0-9.]+)% more\) take ([0-9.]+) days: ", budget)
    assert past is not None, budget
    assert 1.5343e10 <= float(past.group(1)) * 1e9 <= 1.5343e10 * 1.016
    assert float(past.group(2)) / 100 == pytest.approx(float(past.group(1)) * 1e9 / tokens - 1, abs=2e-4)
    assert 0.0528 <= float(past.group(3)) <= 0.0531
    assert budget.endswith(unfilled_reason("fixed_params"))


def test_gpt3_fills_three_days_within_one_percent(tmp_path):
    plan = _plan(tmp_path, GPT3)
    days = plan["cost"]["main"]["wall_clock_days"]
    assert 0.99 * 3 <= days <= 3.0
    assert 9.64e10 <= plan["allocation"]["tokens"] < 9.71e10
    assert not [w for w in plan["warnings"] if w.startswith("budget:")]


@pytest.mark.slow
def test_deepseek_v3_on_8192_b200_fills_up_to_the_layout_switch(tmp_path):
    plan = _plan(tmp_path, DEEPSEEK)
    days = plan["cost"]["main"]["wall_clock_days"]
    assert 0.30 <= days <= 0.331  # 0.3255 × 3.15 / 3.10 = 0.331 bounds the jump; 0.30: within 9% of it
    assert 2.85e11 <= plan["allocation"]["tokens"] < 3.15e11
    assert "fills 0.3" in _budget_warning(plan)
