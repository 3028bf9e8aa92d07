"""Random and mangled logs: a SpecError (one line, exit 2) or a report, never another exception."""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runplan.errors import SpecError
from runplan.monitor.analyse import analyse, checkpoints_for
from runplan.monitor.readers import read_logs
from runplan.monitor.thresholds import Thresholds

PIECES = [
    " iteration 12/ 100 | lm loss: 2.5E+00 | grad norm: 0.3 | elapsed time per iteration (ms): 100.0 |",
    " iteration 13/ 100 | lm loss: nan | grad norm: inf | loss scale: 1.0 |",
    "validation loss at iteration 12 | lm loss value: 2.4E+00 |",
    "step: 5  loss: 3.1  grad_norm: 0.5  tps: 1,234  mfu: 30.1%",
    "s:7 trl:3.3 lr:0.0003 norm:0.7",
    "s:7 tel:3.4",
    "Training epoch 0, iteration 3/9 | global_step: 3 | reduced_train_loss: 2.0 | train_step_timing in s: 1.5",
    '{"step": 4, "loss": 2.0, "grad_norm": null}',
    '{"step": "x", "loss": [1]}',
    "step,loss,grad_norm",
    "5,2.0,0.3",
    "6,,nan",
    "",
    "\x1b[31mgarbage\x1b[0m | : |",
    '{"lm loss": {"values": {"1": 2.0, "2": "nan"}}}',
    '{"log_history": [{"step": 1, "loss": 2.0}]}',
]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.sampled_from(PIECES), min_size=0, max_size=30),
    st.integers(0, 200),
    st.sampled_from(["auto", "megatron", "jsonl", "csv", "llmc", "torchtitan", "nemo", "hf", "scalars-json"]),
)
def test_mangled_logs_never_crash(lines, cut, fmt):
    text = "\n".join(lines)
    text = text[: max(0, len(text) - cut)] if cut < len(text) else text
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "run.log"
        path.write_text(text)
        try:
            log = read_logs([path], fmt)
        except SpecError:
            return
        report = analyse(log, Thresholds(), checkpoints_for(log, 10, None))
        assert report.verdict in ("healthy", "watch", "act")


@settings(max_examples=100, deadline=None)
@given(st.binary(min_size=0, max_size=300))
def test_random_bytes_never_crash(data):
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "events.out.tfevents.x"
        path.write_bytes(data)
        with contextlib.suppress(SpecError):  # anything else fails the test
            read_logs([path])


@settings(max_examples=150, deadline=None)
@given(st.binary(min_size=0, max_size=120), st.integers(0, 40))
def test_framed_garbage_never_crashes(payload, cut):
    """Valid TFRecord framing around random bytes (not an Event), and real events cut at random."""
    from tests.monitor.generate import event_bytes, file_version_record, record

    whole = file_version_record() + record(payload) + record(event_bytes(3, "loss", 2.0))
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "events.out.tfevents.y"
        path.write_bytes(whole[: len(whole) - cut])
        try:
            log = read_logs([path])
        except SpecError:
            return
        assert log.format == "tensorboard"
