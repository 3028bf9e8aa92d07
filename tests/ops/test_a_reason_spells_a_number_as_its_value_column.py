"""A reason spells each number the way the value column beside it does, so a reader can follow its arithmetic.

The 405B plan's cost row read "56,031,818 USD | 2.802e+07 GPU-h × 2 USD/h = 5.603e+07 USD", its total cost
"main 5.603e+07 + sweep 4,730,759", and its energy "23,533.4 MWh | ... = 23,533 MWh": ops._notes.fmt switched
to e-notation from 1e7 and rounded MWh to four digits, while the value column (report.format.fmt_value) writes
counts as fmt_count (``28.02 M``), money whole (``56,031,818``) and energy to one decimal (``2,346.5``).
"""

from __future__ import annotations

import re

import pytest

from runplan.ops import CostRequest, CostSpec, estimate_cost
from runplan.ops._notes import fmt, fmt_seconds
from runplan.report.format import fmt_count, fmt_value

HOUR = 3600.0


def _cost(gpus: int, hours: float, tdp: float = 700.0, pue: float = 1.2, price: float = 2.0):
    """A cost stage with no failures (elapsed = useful) for ``gpus`` GPUs running ``hours`` hours."""
    return estimate_cost(
        CostRequest(
            n_gpus=gpus,
            tdp_watts=tdp,
            useful_seconds=hours * HOUR,
            price_per_gpu_hour=price,
            spec=CostSpec(pue=pue),
        )
    )


def test_ten_million_usd_reads_as_the_cost_column():
    # 1,000 GPUs × 5,000 h = 5,000,000 GPU-h (value column "5 M"); × 2 USD/h = 10,000,000 USD
    cost = _cost(1000, 5000.0)
    assert cost.main.cost == pytest.approx(1e7)
    assert fmt_value("cost", cost.main.cost) == "10,000,000"
    assert cost.main.notes["cost"] == "5 M GPU-h × 2 USD/h = 10,000,000 USD"
    assert cost.notes["total_cost"] == "main 10,000,000 = 10,000,000 USD"


def test_28_million_gpu_hours_read_as_the_gpu_hours_column():
    # 16,000 GPUs × 1,750 h = 28,000,000 GPU-h: fmt_count writes "28 M"; the cost is 56,000,000 USD
    cost = _cost(16_000, 1750.0)
    assert cost.main.billed_gpu_hours == pytest.approx(2.8e7)
    assert fmt_value("billed_gpu_hours", cost.main.billed_gpu_hours) == "28 M"
    assert cost.main.notes["billed_gpu_hours"] == "16,000 GPUs × 1,750 h elapsed = 28 M GPU-hours"
    assert cost.main.notes["useful_gpu_hours"] == "16,000 GPUs × 1,750 h = 28 M GPU-hours"
    assert cost.main.notes["cost"] == "28 M GPU-h × 2 USD/h = 56,000,000 USD"


def test_2346_5_mwh_reads_as_the_energy_column():
    # 1,000 W × 2,346,500 GPU-h × PUE 1 / 1e6 = 2,346.5 MWh (1,000 GPUs × 2,346.5 h); the column prints one decimal
    cost = _cost(1000, 2346.5, tdp=1000.0, pue=1.0)
    assert cost.main.energy_mwh == pytest.approx(2346.5)
    assert fmt_value("energy_mwh", cost.main.energy_mwh) == "2,346.5 MWh"
    assert cost.main.notes["energy_mwh"].startswith("1000 W × 2.346 M GPU-h × PUE 1 / 1e6 = 2,346.5 MWh (")
    assert cost.main.notes["gpu_only_energy_mwh"] == "1000 W × 2.346 M GPU-h / 1e6 = 2,346.5 MWh at the GPUs"
    assert cost.notes["total_energy_mwh"] == "main 2,346.5 = 2,346.5 MWh"


def test_every_number_after_an_equals_sign_is_the_value_column_of_its_field():
    # the 405B example's main run: 16,384 GPUs × 1,710 h = 28,016,640 GPU-h, 56,033,280 USD, 23,534 MWh
    cost = _cost(16_384, 1710.0)
    for name in ("useful_gpu_hours", "billed_gpu_hours", "cost", "energy_mwh", "gpu_only_energy_mwh"):
        shown = fmt_value(name, getattr(cost.main, name)).removesuffix(" MWh")
        assert f"= {shown} " in cost.main.notes[name] + " ", (name, shown, cost.main.notes[name])
    for name in ("total_cost", "total_energy_mwh"):
        shown = fmt_value(name, getattr(cost, name)).removesuffix(" MWh")
        assert f"= {shown} " in cost.notes[name] + " ", (name, shown, cost.notes[name])
    assert not any("e+" in why for why in [*cost.notes.values(), *cost.main.notes.values()])


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (16_777_216.0, "16.78 M"),  # a global batch of tokens, as "global batch tokens 16.78 M"
        (1.56e13, "15.6 T"),  # scheduled tokens, as "scheduled tokens 15.6 T"
        (4.059e11, "405.9 B"),  # parameters, as "parameters N 405.9 B"
        (4.076e25, "4.076e+25"),  # FLOPs: past trillions the column writes powers of ten too
        (4_730_759.4, "4.731 M"),
        (552.8, "552.8"),
    ],
)
def test_a_count_in_a_reason_is_the_count_column(value, text):
    assert fmt(value) == text == fmt_count(value)


def test_seconds_in_a_reason_stay_whole_seconds_past_ten_million():
    # 139 days of wall clock: 12,000,000 s, not "1.200e+07 s"
    assert fmt_seconds(12_000_000.0) == "12,000,000 s (138.89 d)"
    assert fmt_seconds(6_155_839.4) == "6,155,839 s (71.25 d)"
    cost = _cost(1000, 12_000_000.0 / HOUR)
    assert cost.main.notes["wall_clock_days"] == "12,000,000 s / 86,400 = 138.89 days with goodput"


def test_no_reason_of_a_long_run_switches_to_e_notation_below_1e15():
    cost = _cost(16_384, 5000.0)  # 81.92 M GPU-h, 163.8 M USD
    reasons = [*cost.notes.values(), *cost.main.notes.values()]
    numbers = [float(m) for why in reasons for m in re.findall(r"\d\.\d+e[+-]\d+", why)]
    assert all(abs(n) >= 1e15 for n in numbers), reasons
