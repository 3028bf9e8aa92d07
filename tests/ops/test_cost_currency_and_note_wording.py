"""The cost currency is one printable word; notes read right for a one-node, two-hour run."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from runplan.ops import CostSpec, OperationsSpec, ReliabilityRequest, assess_reliability


@pytest.mark.parametrize("bad", ["", "US\nD", "US D", "\x07", "X" * 17])
def test_currency_must_be_one_short_printable_word(bad):
    # printed after every cost: "" printed "5,332 , 2.2 MWh" and a newline split the summary line
    with pytest.raises(ValidationError, match="currency must be 1 to 16 printable characters"):
        CostSpec(currency=bad)


@pytest.mark.parametrize("good", ["USD", "EUR", "€", "kUSD", "X" * 16])
def test_currency_accepts_codes_and_symbols(good):
    assert CostSpec(currency=good).currency == good


def test_small_run_notes_read_right():
    # 1 node at the Llama 3 rate: M = 86,400 × 1,000 / 3.7887 = 2.2804e7 s; a 2-hour run (7,200 s, one segment of
    # τ = W, δ = 2 s, R = 600 s) expects E[T]/M: E[T] ≈ 7,202·(1 + 600/M + 7,202/(2M)) = 7,203.3 s, so
    # 7,203.3 / 2.2804e7 = 3.159e-4 interruptions. The notes printed
    # "0.0 interruptions", "1 nodes", "1 saves" and "0.08 days".
    r = assess_reliability(
        ReliabilityRequest(
            n_nodes=1,
            useful_seconds=7_200.0,
            interval_seconds=7_200.0,
            save_blocking_seconds=2.0,
            spec=OperationsSpec(),
        )
    )
    assert r.expected_interruptions == pytest.approx(r.expected_elapsed_seconds / r.job_mtbf_seconds)
    assert r.expected_interruptions == pytest.approx(3.16e-4, rel=0.01)
    assert r.notes["expected_interruptions"].endswith("= 3.159e-04 interruptions")
    assert r.notes["n_nodes"] == "1 node in the job"
    assert r.notes["save_overhead_seconds"].startswith("1 save × δ")
    # 7,200 s / 86,400 = 0.0833 days (three significant digits below one day)
    assert "= 0.0833 days" in r.notes["useful_days"]
