"""A goodput below 1 is never printed as 100.0%: a 1-node, 1-day run loses 0.05% of its time to saves and failures,
and `runplan plan` printed "goodput 100.0%" in the summary and the failures table while the JSON said 0.9995.

Hand check of that goodput (Daly 2006 renewal formula, docs/operations.md §3): one 8-GPU node at Llama 3's 3.79
failures per 1,000 node-days has M = 86,400 / 0.003789 = 2.280e7 s; ten segments of about τ = 9,527 s work and
δ = 2.05 s save each add (τ+δ)·((τ+δ)/2M + R/M) ≈ 9,529 × (2.09e-4 + 2.6e-5) ≈ 2.2 s of expected failure loss, so
elapsed ≈ W + 10 × (2.05 + 2.2) s and goodput ≈ 1 − 42.5 / 86,125 ≈ 0.99951: "99.95%", not "100.0%".
"""

from __future__ import annotations

import math

import pytest

from runplan.report.format import fmt_percent, fmt_value

TINY = """\
schema_version: 1
name: tiny
budget:
  days: 1
training:
  seq_len: 4096
cluster:
  gpu: h100-sxm
  gpus: 8
  price_per_gpu_hour: 2.0
"""


def test_fractions_just_below_one_keep_the_digits_that_show_it():
    assert fmt_value("goodput", 0.99953) == "99.95%"  # truncated: never rounded up to a full 100%
    assert fmt_value("goodput", 0.999999) == "99.99%"
    assert fmt_value("first_order_goodput", 0.99949) == "99.9%"  # one decimal already below 100
    # unchanged where one decimal already shows the shortfall, and at exactly 1
    assert fmt_value("goodput", 0.995) == "99.5%"
    assert fmt_value("goodput", 0.9949) == "99.5%"
    assert fmt_value("goodput", 1.0) == "100.0%"
    assert fmt_value("canary_overhead_fraction", 0.00064) == "0.064%"
    assert fmt_percent(0.0816) == "8.2%"


def test_a_one_node_one_day_plan_prints_its_goodput_below_100_percent(tmp_path):
    from runplan.plan import build_plan
    from runplan.report.sections import plan_sections, summary_lines
    from runplan.spec import load_plan

    path = tmp_path / "tiny.yaml"
    path.write_text(TINY)
    plan = build_plan(load_plan(path), tmp_path)
    r = plan.reliability
    assert r.n_nodes == 1
    assert r.job_mtbf_seconds == pytest.approx(86_400 / (419 / (54 * 2048)), rel=1e-9)  # 2.280e7 s
    # the renewal sum by hand: full segments of τ and a last one of the rest
    m, tau, delta, restart = (
        r.job_mtbf_seconds,
        r.interval_seconds,
        r.save_blocking_seconds,
        r.restart_seconds,
    )

    def segment(work: float) -> float:
        return m * math.exp(restart / m) * math.expm1((work + delta) / m)

    full = math.floor(r.useful_seconds / tau * (1 + 1e-12))
    rest = r.useful_seconds - full * tau
    elapsed = full * segment(tau) + (segment(rest) if rest > 1e-9 * r.useful_seconds else 0.0)
    assert r.goodput == pytest.approx(r.useful_seconds / elapsed, rel=1e-12)
    assert 0.999 < r.goodput < 0.9999
    shown = f"{math.floor(r.goodput * 1e4) / 100:.2f}%"  # 99.95%
    rows = {(s.title, what): value for s in plan_sections(plan) for what, value, _ in s.rows}
    assert rows["Failures and goodput", "goodput"] == shown
    assert rows["Failures and goodput", "first order goodput"] != "100.0%"
    summary = " ".join(summary_lines(plan))
    assert f"(goodput {shown})" in summary and "100.0%" not in summary
