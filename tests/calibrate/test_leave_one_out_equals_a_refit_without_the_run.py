"""The leave-one-out error `runplan calibrate` prints for a run is the error a user gets by refitting without it
(the same file with that run at ``fit: false``), when every run states its whole layout: the refit starts from
the base constants and re-identifies what the other runs can set, exactly as a fit of the smaller file does."""

from __future__ import annotations

import math

import pytest

from runplan.calibrate.fit import Prepared, calibrate, step_error
from runplan.calibrate.run import base_efficiencies, run_calibration

from .synthetic import synthetic_runs

#: runs of tests/calibrate/synthetic.py's LAYOUTS: TP overlap on and off (2, 3), two global batches (0, 1), one
#: and two nodes (3, 4), a 70B pipeline pair (10, 11): leaving one of a pair out un-identifies a constant
ROWS = (0, 1, 2, 3, 4, 10, 11)


def _noisy(runs: list[Prepared]) -> list[Prepared]:
    """The runs with step times off the generating constants by a fixed ±4% pattern (exact runs would be
    predicted exactly with or without any one of them, and the comparison could not fail)."""
    out = []
    for k, p in enumerate(runs):
        factor = 1 + 0.04 * math.sin(1.7 * k + 0.3)
        step = p.run.measured.step_seconds
        assert step is not None
        measured = p.run.measured.model_copy(update={"step_seconds": step * factor})
        run = p.run.model_copy(update={"measured": measured})
        out.append(Prepared(k, run, p.request, p.family, (p.measured_tps or 0.0) / factor))
    return out


def test_printed_leave_one_out_is_a_refit_of_the_file_without_the_run():
    every = synthetic_runs()
    runs = _noisy([every[i] for i in ROWS])
    report = run_calibration(runs, name="t", measured_file="t.yaml", base="priors")
    base, _ = base_efficiencies("priors")
    printed = [r.leave_one_out_error for r in report.runs]
    assert all(e is not None for e in printed)
    assert max(abs(e or 0.0) for e in printed) > 0.01  # the left-out runs are predicted, not reproduced
    for j, p in enumerate(runs):
        unfitted = p.run.model_copy(update={"fit": False})
        fold = [
            q if k != j else Prepared(q.index, unfitted, q.request, q.family, q.measured_tps)
            for k, q in enumerate(runs)
        ]
        by_hand = step_error(float(calibrate(fold, base).log_errors[j]))
        assert printed[j] == pytest.approx(by_hand, abs=1e-6), p.id
