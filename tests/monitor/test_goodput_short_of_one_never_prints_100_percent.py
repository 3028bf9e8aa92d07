"""A goodput short of 1 never prints as 100.0% (report.format.fmt_percent: truncated to two decimals, 0.9996 →
99.96%): a goodput is W / elapsed < 1 whenever a save blocks or a failure can strike (docs/operations.md §3).
``runplan whatif PLAN --gpus 1`` (cli/compare.py ``_render``) and the monitor's "goodput so far … (planned …)"
(monitor/render.py ``vs_plan_text``) printed it with ``:.1%``, so a 1-GPU run's 0.9996 read 100.0%."""

from __future__ import annotations

from pathlib import Path

from runplan.cli.compare import _render
from runplan.monitor.render import vs_plan_text


def test_the_monitor_prints_goodput_and_planned_goodput_below_100_percent():
    vs = {
        "step_seconds": 10.0,
        "planned_step_seconds": 10.0,
        "speed_ratio": 1.0,
        "tokens_per_second": 1e5,
        "mfu": 0.4,
        "planned_mfu": 0.4,
        "remaining_steps": 100,
        "eta_seconds": 86_400.0,
        "goodput": 0.99951,
        "planned_goodput": 0.9996,
        "notes": {},
    }
    text = vs_plan_text(vs)
    assert "goodput so far 99.95% (planned 99.96%)" in text and "100.0%" not in text


def test_whatif_prints_a_one_gpu_goodput_below_100_percent(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "240")
    record = {
        "gpus": 1,
        "params": 1e8,
        "model_params": 1e8,
        "tokens": 2e9,
        "wall_clock_days": 3.0,
        "cost": 144.0,
        "currency": "USD",
        "mfu": 0.45,
        "goodput": 0.9996,
        "layout": "TP1 PP1 DP1 ZeRO-0",
        "micro_batch": 1,
        "vpp": 1,
        "recompute": "none",
        "warnings": 0,
    }
    _render([record], Path("plan.yaml"))
    out = capsys.readouterr().out
    assert "99.96%" in out and "100.0%" not in out
