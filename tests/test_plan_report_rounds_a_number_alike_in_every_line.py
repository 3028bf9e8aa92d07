"""A number the plan report prints twice reads the same both times: the summary's wall-clock days and energy
round as the cost table rounds them (the summary said "4.8 days ... 100 MWh" over a table of "4.83 days" and
"99.8 MWh"), and a duration's value names the unit its reason line names ("save overhead | 96.1 min | 2,829
saves × δ 2.039 s = 5,767 s (1.60 h)")."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from runplan.plan import build_plan
from runplan.report.format import fmt_duration, fmt_row_duration
from runplan.report.sections import plan_sections, summary_lines
from runplan.spec import load_plan

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.fixture(scope="module")
def plan_2e23():
    return build_plan(load_plan(EXAMPLES / "2e23-compute-optimal.yaml"))


def _row(plan, section: str, what: str) -> tuple[str, str, str]:
    rows = next(s for s in plan_sections(plan) if s.title == section).rows
    return next(r for r in rows if r[0] == what)


def test_summary_days_and_energy_are_the_cost_tables(plan_2e23):
    # 417,542 s / 86,400 = 4.833 days; 700 W × 118,768 GPU-h × 1.2 / 1e6 = 99.76 MWh
    days = plan_2e23.cost.main.wall_clock_days
    assert days == pytest.approx(4.8327, rel=1e-3)
    assert plan_2e23.cost.main.energy_mwh == pytest.approx(99.76, rel=1e-3)
    line = summary_lines(plan_2e23)[3]
    assert _row(plan_2e23, "Time and cost", "wall clock days")[1] == "4.83 days"
    assert _row(plan_2e23, "Time and cost", "energy")[1] == "99.8 MWh"
    assert line.startswith("4.83 days on 1,024 GPUs"), line
    assert ", 99.8 MWh;" in line, line


def test_a_duration_and_its_reason_name_one_unit():
    # the reason lines (ops._notes.fmt_seconds) say minutes from 120 s, hours from 3,600 s, days from 2 days
    assert fmt_row_duration(119) == "119 s"
    assert fmt_row_duration(120) == "2 min"
    assert fmt_row_duration(3599) == "60 min"
    assert fmt_row_duration(5767) == "1.6 h"  # 2,829 saves × 2.039 s, the 70B plan's save overhead
    assert fmt_row_duration(1.5 * 86400) == "36 h"
    assert fmt_row_duration(178_161) == "2.06 days"  # a job MTBF the reason writes as (2.06 d)
    assert fmt_row_duration(4.12 * 86400) == fmt_duration(4.12 * 86400) == "4.12 days"
    # the shared fmt_duration (monitor, diff, step times) keeps its units: minutes up to 2 h
    assert fmt_duration(3600) == "60 min"


def test_every_duration_row_agrees_with_its_reason(plan_2e23):
    """Each row whose reason ends a duration in `(N min)`, `(N h)` or `(N d)` prints its value in that unit."""
    units = {"min": "min", "h": "h", "d": "days"}
    checked = 0
    for section in plan_sections(plan_2e23):
        for what, value, why in section.rows:
            said = re.search(r"= [\d,.]+ s \([\d.]+ (min|h|d)\)", why)
            if said and re.fullmatch(r"[\d.,]+ (s|min|h|days)", value):
                checked += 1
                assert value.endswith(" " + units[said.group(1)]), (what, value, why)
    assert checked >= 5
