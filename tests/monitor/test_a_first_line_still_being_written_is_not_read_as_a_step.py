"""A job just launched has logged one line, and that line may still be being written: torchtitan's first line cut
at ``tps: 1`` (of ``tps: 1,118``) was read as 1 token/s per GPU, and ``monitor --plan`` said the run went at
0.00087× the planned speed with an ETA of 44,390 days. The last-line rule (a file that does not end with a newline
has its last line cut, docs/monitor.md "A last line still being written") held only from the second line on; a
log whose only line is cut now waits for it, as an empty log does (exit 2, NoRecords: ``--follow`` waits)."""

from __future__ import annotations

import pytest

from runplan.errors import SpecError
from runplan.monitor.readers import read_logs
from runplan.monitor.series import NoRecords

TITAN = (
    "[rank0]:[titan] 2026-01-01 00:00:00,000 - root - INFO - step:  1  loss:  12.2000  grad_norm:  1.5000  "
    "memory: 30.10GiB(38.00%)  tps: 1,118  tflops: 480.80  mfu: 48.61%"
)
MEGATRON = (
    " iteration      1/ 1000 | elapsed time per iteration (ms): 1064.6 | learning rate: 3.0E-04 | "
    "lm loss: 1.219884E+01 | grad norm: 1.500 |"
)


@pytest.mark.parametrize(
    ("line", "cut_after"),
    [(TITAN, "tps: 1"), (MEGATRON, "(ms): 10"), (MEGATRON, "lm loss: 1.2")],
)
def test_a_log_whose_only_line_is_cut_mid_number_waits_for_it(tmp_path, line, cut_after):
    path = tmp_path / "run.log"
    path.write_text(line[: line.index(cut_after) + len(cut_after)])  # no newline: still being written
    with pytest.raises(NoRecords) as caught:
        read_logs([path])
    assert "its only line (line 1) is cut short (still being written?)" in str(caught.value)


@pytest.mark.parametrize("line", [TITAN, MEGATRON])
def test_a_whole_only_line_without_a_newline_is_still_read(tmp_path, line):
    path = tmp_path / "run.log"
    path.write_text(line)  # ends as its format's whole line does: kept
    log = read_logs([path])
    assert [int(step) for step in log.steps] == [1]
    if line is TITAN:
        assert log.values["tokens_per_second_per_gpu"][0] == pytest.approx(1118.0)
    else:
        assert log.values["step_seconds"][0] == pytest.approx(1.0646)


def test_a_jsonl_log_whose_first_line_is_being_written_waits_for_it(tmp_path):
    """``--follow`` on a JSONL log whose first object is half written ended with "not valid JSON (line 1: Expecting
    value) (check the file: is it complete?)", exit 2, where an empty file is waited for."""
    path = tmp_path / "run.jsonl"
    path.write_text('{"step": 1, "loss": ')
    with pytest.raises(NoRecords) as caught:
        read_logs([path])
    assert "its only line (line 1) is cut short (still being written?)" in str(caught.value)


def test_a_one_line_json_broken_before_its_end_is_still_invalid_json(tmp_path):
    path = tmp_path / "run.jsonl"
    path.write_text('{"step": 1,, "loss": 3.0}')  # broken inside, not cut: no wait makes it whole
    with pytest.raises(SpecError) as caught:
        read_logs([path])
    assert not isinstance(caught.value, NoRecords)
    assert "not valid JSON" in str(caught.value)
