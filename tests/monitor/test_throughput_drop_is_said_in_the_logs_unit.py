"""A throughput drop in a log with no step time (torchtitan's ``tps``, a JSONL ``tokens_per_second``) is said in
the log's own unit (tokens/s), not as "step time 0.001 → 0.001667" of the inverse the detector works on.

Hand-derived: 1,000 tokens/s per GPU for steps 1-30, 600 for steps 31-35, 1,000 after. The detector works on
1/tps: baseline 0.001, slow level 1/600; the drop is 1 − 600/1,000 = 40.0% and the step time +66.7% (1,000/600).
"""

from __future__ import annotations

import json

import pytest

from runplan.monitor.analyse import analyse, checkpoints_for
from runplan.monitor.readers import read_logs
from runplan.monitor.thresholds import Thresholds


def _events(tmp_path, name, scale=1.0):
    rows = [
        {"step": s, "loss": 3.0, name: scale * (600.0 if 31 <= s <= 35 else 1000.0)} for s in range(1, 61)
    ]
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    log = read_logs([path])
    return analyse(log, Thresholds(), checkpoints_for(log, None, None)).events


def test_a_drop_in_tokens_per_second_per_gpu_is_said_in_tokens_per_second_per_gpu(tmp_path):
    (event,) = _events(tmp_path, "tokens_per_second_per_gpu")
    assert (event.kind, event.start_step, event.end_step) == ("throughput_drop", 31, 35)
    assert event.value == pytest.approx(600.0) and event.baseline == pytest.approx(1000.0)
    assert "throughput down 40.0% from step 31" in event.why
    assert "tokens/s per GPU 1,000 → 600" in event.why
    assert "step time +66.7%" in event.why
    assert "(1/" not in event.why and "0.001" not in event.why


def test_a_drop_in_whole_job_tokens_per_second_is_said_in_tokens_per_second(tmp_path):
    (event,) = _events(tmp_path, "tokens_per_second")
    assert "tokens/s 1,000 → 600" in event.why and "per GPU" not in event.why


def test_a_whole_jobs_rate_is_written_out_not_in_exponent_form(tmp_path):
    """572,000 → 343,200 tokens/s (the 70B plan's 512 GPUs at 1,117 and 670 each): 40.0% down."""
    (event,) = _events(tmp_path, "tokens_per_second", scale=572.0)
    assert "tokens/s 572,000 → 343,200, step time +66.7%" in event.why and "e+05" not in event.why
