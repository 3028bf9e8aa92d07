"""A gradient-norm alert just below the pause factor (100×) is not printed as "100×" beside "watch": the ratio
keeps the decimals that keep it below the factor it did not reach.

Hand-derived: grad norm 0.3 at steps 1-200, 29.9 at step 201: 29.9 / 0.3 = 99.67×, under 100×: watch, printed
"99.7×" (rounded to a whole number it read "100×", the pause factor, with the action watch). BLOOM's 960.4 / 1.19
= 805× stays whole.
"""

from __future__ import annotations

import json

from runplan.monitor.analyse import analyse, checkpoints_for
from runplan.monitor.readers import read_logs
from runplan.monitor.thresholds import Thresholds


def _alert(tmp_path, peak):
    rows = [{"step": s, "loss": 3.0, "grad_norm": peak if s == 201 else 0.3} for s in range(1, 260)]
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    log = read_logs([path])
    (event,) = analyse(log, Thresholds(), checkpoints_for(log, None, None)).events
    return event


def test_a_ratio_just_under_the_pause_factor_keeps_a_decimal(tmp_path):
    event = _alert(tmp_path, 29.9)
    assert event.action == "watch"
    assert "is 99.7× its mean 0.3" in event.why and "100×" not in event.why


def test_a_ratio_far_from_the_factors_stays_whole(tmp_path):
    event = _alert(tmp_path, 5.1)  # 17×
    assert "is 17× its mean 0.3" in event.why
    event = _alert(tmp_path, 60.0)  # 200×: pause
    assert event.action == "pause" and "is 200× its mean 0.3" in event.why
