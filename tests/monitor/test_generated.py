"""Every injected event, in every format that can carry it, is found at its step (within the logging interval)
with the right action; clean 100,000-step logs give no alarm."""

from __future__ import annotations

import pytest
from tests.monitor.generate import CANARY_EVERY, CARRIES, EXPECTED, INTERVAL, series, write

from runplan.monitor.analyse import analyse, checkpoints_for
from runplan.monitor.readers import read_logs
from runplan.monitor.thresholds import Thresholds

CASES = [
    (scenario, fmt)
    for scenario, expected in EXPECTED.items()
    for fmt, carries in CARRIES.items()
    if expected.metric_needed in carries
]


@pytest.fixture(scope="module")
def data():
    return {scenario: series(scenario, seed=7) for scenario in EXPECTED}


@pytest.mark.parametrize(("scenario", "fmt"), CASES)
def test_injected_event_found(tmp_path, data, scenario, fmt):
    path = write(fmt, data[scenario], tmp_path / f"{scenario}.log")
    log = read_logs([path])
    assert log.format == fmt  # auto-detected from the content
    report = analyse(log, Thresholds(), checkpoints_for(log, 500, None))
    expected = EXPECTED[scenario]
    found = [e for e in report.events if e.kind == expected.kind]
    assert len(found) == 1, [(e.kind, e.start_step, e.action) for e in report.events]
    tolerance = CANARY_EVERY if scenario == "canary_drift" else INTERVAL.get(fmt, 1)
    assert abs(found[0].start_step - expected.step) <= tolerance
    assert found[0].action == expected.action
    if expected.action == "rollback":
        assert found[0].rollback_to_step == 2500  # newest multiple of the 500-step interval early enough


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "scalars-json", "megatron"])
def test_clean_100k_steps_no_alarm(tmp_path, fmt):
    path = write(fmt, series("clean", steps=100_000, seed=11), tmp_path / "clean.log")
    log = read_logs([path])
    report = analyse(log, Thresholds(), checkpoints_for(log, 500, None))
    alarms = [(e.kind, e.start_step, e.action) for e in report.events if e.action != "none"]
    assert alarms == [] and report.verdict == "healthy"
    assert log.steps[-1] == 100_000
