"""`runplan diff A B` prints each number that moved in the unit the plan's report gives it (GB, durations, days,
money in the plan's currency, 12.6 M tokens, a loss in nats/token, every count with what it counts), both sides
in one format, with the relative change; `--json` keeps raw numbers. It printed ``cost.main.cost: 948236 →
1.2107e+06`` and ``memory_bytes.total: 7.26893e+10 → ...``."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.report.format import fmt_bytes, fmt_duration
from runplan.resolved import Change, diff_changes, diff_resolved

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def run(*args: str):
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})


def _line(path: str, old: float, new: float, old_currency: str = "USD", new_currency: str = "USD") -> str:
    (change,) = diff_changes({"x": old}, {"x": new})
    moved = Change(path, change.kind, change.old, change.new, change.relative_change)
    return moved.readable(old_currency, new_currency)


def test_money_bytes_and_counts_carry_their_unit_in_one_format():
    assert (
        _line("cost.main.cost", 948236.0, 1210700.0)
        == "cost.main.cost: 948,236 USD → 1,210,700 USD (+27.68%)"
    )
    assert (
        _line("layout.best.memory_bytes.total", 7.26893e10, 7.26186e10)
        == "layout.best.memory_bytes.total: 72.7 GB → 72.6 GB (-0.10%)"
    )
    # one scale for both sides: not "948,236 → 12.6 M"
    assert (
        _line("allocation.tokens", 948236, 12_600_000)
        == "allocation.tokens: 0.9482 M tokens → 12.6 M tokens (+1228.78%)"
    )
    assert (
        _line("schedule.total_steps", 93333, 96798)
        == "schedule.total_steps: 93,333 steps → 96,798 steps (+3.71%)"
    )
    assert _line("cost.main.gpus", 512, 1024) == "cost.main.gpus: 512 GPUs → 1,024 GPUs (+100.00%)"


def test_durations_days_energy_and_fractions():
    assert (
        _line("layout.best.step_seconds", 36.0701, 17.7009)
        == "layout.best.step_seconds: 36.07 s → 17.7 s (-50.93%)"
    )
    # 119 s and 130 s in one unit, not "119 s → 2.17 min"
    assert (
        _line("layout.best.step_seconds", 119.0, 130.0)
        == "layout.best.step_seconds: 1.98 min → 2.17 min (+9.24%)"
    )
    assert (
        _line("cost.main.wall_clock_days", 38.5838, 19.7055)
        == "cost.main.wall_clock_days: 38.6 days → 19.7 days (-48.93%)"
    )
    assert (
        _line("cost.main.energy_mwh", 398.3, 420.0) == "cost.main.energy_mwh: 398.3 MWh → 420.0 MWh (+5.45%)"
    )
    # a fraction shown as a percentage changes by points first: "−1.80%" alone read as points (MFU fell 0.96)
    assert (
        _line("layout.best.mfu", 0.535148, 0.525542)
        == "layout.best.mfu: 53.5% → 52.6% (-0.96 pp, -1.80% relative)"
    )
    assert (
        _line("constraints.max_bubble_fraction", 0.15, 0.1)
        == "constraints.max_bubble_fraction: 15.0% → 10.0% (-5.00 pp, -33.33% relative)"
    )
    assert _line("cost.main.goodput", 0.001, 0.00102).endswith("(+0.002 pp, +2.00% relative)")
    assert (
        _line("layout.best.time_seconds.overhead", 0.1218, 0.2)
        == "layout.best.time_seconds.overhead: 0.1218 s → 0.2 s (+64.20%)"
    )


def test_two_sides_that_would_print_alike_get_more_digits():
    # 38.58 and 38.59 days are both "38.6 days" at the report's precision
    assert (
        _line("cost.main.wall_clock_days", 38.58, 38.59)
        == "cost.main.wall_clock_days: 38.58 days → 38.59 days (+0.03%)"
    )


def test_new_gone_layout_and_currency_changes():
    assert (
        Change("cost.sweep.cost", "new", None, 89458.0).readable("EUR", "EUR")
        == "cost.sweep.cost: (new) → 89,458 EUR"
    )
    assert Change("checkpointing.total_bytes", "gone", 9.88e11, None).readable() == (
        "checkpointing.total_bytes: 988 GB → (gone)"
    )
    assert Change("layout.best.tp", "changed", 4, 8, 1.0).readable() == "layout.best.tp: 4 → 8"
    # a cost in another currency is not a percentage change
    assert _line("cost.main.cost", 1000.0, 900.0, "USD", "EUR") == "cost.main.cost: 1,000 USD → 900 EUR"


def test_check_lines_keep_raw_numbers():
    assert diff_resolved({"a": {"b": 100.0}}, {"a": {"b": 101.0}}) == ["a.b: 100 → 101 (+1.00%)"]


def test_diff_command_prints_units_and_json_keeps_raw_numbers():
    a, b = EXAMPLES / "405b-16k-h100-8k.yaml", EXAMPLES / "405b-16k-h100-128k.yaml"
    result = run("diff", str(a), str(b))
    assert result.exit_code == 0, result.output
    raw = json.loads(run("diff", str(a), str(b), "--json").stdout)
    head = {c["path"]: c for c in raw["headline"]}
    assert isinstance(head["cost.main.cost"]["old"], float)  # machine output: raw numbers
    memory = head["layout.best.memory_bytes.total"]
    cost = head["cost.main.cost"]
    step = head["layout.best.step_seconds"]
    lines = result.stdout.splitlines()
    assert (
        f"  layout.best.memory_bytes.total: {fmt_bytes(memory['old'])} → {fmt_bytes(memory['new'])} "
        f"({memory['relative_change']:+.2%})"
    ) in lines
    assert (
        f"  cost.main.cost: {cost['old']:,.0f} USD → {cost['new']:,.0f} USD ({cost['relative_change']:+.2%})"
        in lines
    )
    assert (
        f"  layout.best.step_seconds: {fmt_duration(step['old'])} → {fmt_duration(step['new'])} "
        f"({step['relative_change']:+.2%})"
    ) in lines
    assert "  training.seq_len: 8,192 tokens → 131,072 tokens (+1500.00%)" in lines
    assert "e+" not in result.stdout  # no 1.2107e+06 left


def test_diff_of_a_cluster_size_change(tmp_path):
    bigger = tmp_path / "1024.yaml"
    bigger.write_text((EXAMPLES / "70b-512-h100.yaml").read_text().replace("gpus: 512", "gpus: 1024", 1))
    result = run("diff", str(EXAMPLES / "70b-512-h100.yaml"), str(bigger))
    assert result.exit_code == 0, result.output
    assert "  cluster.gpus: 512 GPUs → 1,024 GPUs (+100.00%)" in result.stdout.splitlines()
    assert "  cost.main.gpus: 512 GPUs → 1,024 GPUs (+100.00%)" in result.stdout.splitlines()
    cost = next(line for line in result.stdout.splitlines() if line.startswith("  cost.main.cost: "))
    assert cost.count(" USD") == 2 and "e+" not in cost


def test_a_cost_usd_key_is_in_the_plan_s_currency():
    # sweep.cost_usd is GPU-hours × the plan's price: in a EUR plan it is EUR, whatever its name says
    assert (
        _line("sweep.cost_usd", 3508.0, 5263.0, "EUR", "EUR")
        == "sweep.cost_usd: 3,508 EUR → 5,263 EUR (+50.03%)"
    )


def test_a_fraction_from_zero_changes_by_points_alone():
    # no relative change from 0%, but the points are defined: it printed "0.0% → 10.0%" with no change at all
    assert (
        _line("schedule.final_lr_fraction", 0.0, 0.1)
        == "schedule.final_lr_fraction: 0.0% → 10.0% (+10.00 pp)"
    )
    assert _line("schedule.final_lr_fraction", float("nan"), 0.5) == "schedule.final_lr_fraction: nan → 50.0%"
