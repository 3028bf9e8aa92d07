"""`runplan diff` and `runplan check` print a count of one in the singular, for every unit a number carries.

Found on a review of 04d0a71 (every number diff/check print carries its unit): two plans that differ only in
``budget.days: 1`` and ``cluster.gpus_per_node: 1`` (against 2 and 8) printed ``budget.days: 1 days → 2 days`` and
``cluster.gpus_per_node: 1 GPUs/node``; ``interruptions/day``, ``FLOPs/token``, ``GPU-hours`` and a duration in days
slipped alike, since only some counted nouns named their singular. The rule is now one for the whole unit table
(runplan.resolved._with_unit), a MoE plan's "active params" too: a printed 1 takes the singular of the unit's counted noun, every other number its
plural; unit symbols (s, B, W, MWh, σ, FLOP/s) never change. The singulars below are written by hand."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.resolved import _ACTIVE_UNITS, _UNIT_OF_KEY, _UNITS, Change

#: every plural unit of the table, and its singular, written out (a new unit must be added here)
SINGULAR = {
    "tokens": "token",
    "params": "param",
    "steps": "step",
    "GPUs/node": "GPU/node",
    "GPUs": "GPU",
    "nodes": "node",
    "sequences": "sequence",
    "micro-batches": "micro-batch",
    "layers": "layer",
    "heads": "head",
    "experts": "expert",
    "groups": "group",
    "checkpoints": "checkpoint",
    "evaluations": "evaluation",
    "interruptions/day": "interruption/day",
    "interruptions": "interruption",
    "segments": "segment",
    "layouts": "layout",
    "runs": "run",
    "sizes": "size",
    "shards": "shard",
    "batches": "batch",
    "decades": "decade",
    "days": "day",
    "GPU-hours": "GPU-hour",
    "tokens/param": "token/param",
    "failures per 1,000 node-days": "failure per 1,000 node-days",
    "FLOPs/token": "FLOP/token",
    "FLOPs": "FLOP",
    "tokens/s per GPU": "token/s per GPU",
    "tokens/s": "token/s",
    "nats/token": "nat/token",
    "active params": "active param",  # a MoE plan's law N (test_diff_says_active_params_where_a_plan_is_moe.py)
    "tokens/active param": "token/active param",
}
#: units that are symbols, or no unit at all: the same for one and for many
SYMBOLS = {"", "B", "B/param", "B/s", "s", "MWh", "W", "σ", "FLOP/s", "per GPU-hour"}

FORMATTERS = [fmt for _, fmt in _UNITS] + list(_UNIT_OF_KEY.values()) + list(_ACTIVE_UNITS.values())


def _unit(text: str) -> str:
    """What follows the number (``2.0000 nats/token`` → ``nats/token``; ``200.0%`` → nothing)."""
    return text.split(" ", 1)[1] if " " in text else ""


@pytest.mark.parametrize("fmt", FORMATTERS, ids=lambda fmt: _unit(fmt(2.0, 0, 2.0, "")) or "bare")
def test_one_is_singular_and_every_other_number_plural(fmt):
    plural = _unit(fmt(2.0, 0, 2.0, ""))
    assert plural in SINGULAR or plural in SYMBOLS, f"unit {plural!r} has no singular written in this test"
    one = SINGULAR.get(plural, plural)
    assert _unit(fmt(1.0, 0, 1.0, "")) == one
    assert _unit(fmt(1, 0, 1, "")) == one  # an int, as a plan file's count is
    if plural in SYMBOLS:  # (a byte count or a duration changes its symbol with its scale: 1 MB, 11.6 days)
        return
    for value in (0.0, 0.5, 1.5, 2.0, 1234.0, 1e6):
        # after the number and its scale, if any (1 M tokens)
        assert re.sub(r"^[kMBTP] ", "", _unit(fmt(value, 0, value, ""))) == plural, value


def test_one_day_in_a_pair_printed_in_days():
    # fmt_duration picks days for both sides by the larger, 5 days: 1 day, not "1 days"
    change = Change("reliability.useful_seconds", "changed", 86_400.0, 432_000.0, 4.0)
    assert change.readable() == "reliability.useful_seconds: 1 day → 5 days (+400.00%)"


def test_a_gpu_hour_and_an_interruption_per_day():
    assert Change("cost.main.billed_gpu_hours", "new", None, 1.0).readable() == (
        "cost.main.billed_gpu_hours: (new) → 1 GPU-hour"
    )
    assert Change("reliability.job_interruptions_per_day", "changed", 1, 3, 2.0).readable() == (
        "reliability.job_interruptions_per_day: 1 interruption/day → 3 interruptions/day (+200.00%)"
    )


PLAN = """schema_version: 1
name: days
model: llama-3.1-8b
budget:
  days: {days}
training:
  seq_len: 4096
cluster:
  gpu: h100-sxm
  gpus: 64
  gpus_per_node: {per_node}
"""


def test_diff_of_one_day_and_one_gpu_per_node(tmp_path: Path):
    first, second = tmp_path / "d1.yaml", tmp_path / "d2.yaml"
    first.write_text(PLAN.format(days=1, per_node=1))
    second.write_text(PLAN.format(days=2, per_node=8))
    result = CliRunner().invoke(app, ["diff", str(first), str(second)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert "  budget.days: 1 day → 2 days (+100.00%)" in lines
    assert "  cluster.gpus_per_node: 1 GPU/node → 8 GPUs/node (+700.00%)" in lines
