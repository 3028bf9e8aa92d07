"""A whole last line that lacks only its newline is kept: a CSV exported by a spreadsheet (no newline after its
last row) keeps that row when it has the header's field count and every cell reads, and a Megatron log whose last
line is no metric record (``[after training is done] datetime: ...``, printed by ``pretrain`` at the end) is not
said to be cut short. A last line that starts like a record and lacks its ending is still left out."""

from __future__ import annotations

from runplan.monitor.analyse import analyse, checkpoints_for
from runplan.monitor.readers import read_logs
from runplan.monitor.thresholds import Thresholds

MEGATRON = (
    " iteration {step:>6}/ 1000 | elapsed time per iteration (ms): 1000.0 | learning rate: 3.0E-04 | "
    "lm loss: 3.000000E+00 | grad norm: 0.300 |"
)


def _read(tmp_path, body, name="run.log"):
    path = tmp_path / name
    path.write_text(body)
    log = read_logs([path])
    return log, analyse(log, Thresholds(), checkpoints_for(log, None, None)).summary["warnings"]


def _cut(warnings):
    return [w for w in warnings if "cut short" in w]


def _csv(last_row):
    """A header (line 1) and steps 1-50 (lines 2-51) at loss 3.0 and 12,345 tokens/s; ``last_row`` is line 52."""
    rows = "".join(f"{s},3.0,12345\n" for s in range(1, 51))
    return "step,loss,tokens_per_second\n" + rows + last_row


def test_a_csv_without_a_final_newline_keeps_its_whole_last_row(tmp_path):
    log, warnings = _read(tmp_path, _csv("51,3.0,12345"), "run.csv")
    assert int(log.steps[-1]) == 51
    assert log.values["tokens_per_second"][-1] == 12345.0
    assert not _cut(warnings)


def test_a_csv_last_row_short_of_fields_or_cut_mid_number_is_left_out(tmp_path):
    for last in ("51,3.0", "51,3.0,1.2e"):  # two fields of three; "1.2e" of "1.2e+04" is no number
        log, warnings = _read(tmp_path, _csv(last), "run.csv")
        assert int(log.steps[-1]) == 50
        assert _cut(warnings) == ["the last line (line 52) is cut short (still being written?); left out"]


def test_a_csv_text_column_does_not_make_a_whole_last_row_cut(tmp_path):
    """A column of text (a run name) reads in no row as a number: it does not say the last row is cut."""
    rows = "".join(f"{s},3.0,run-a\n" for s in range(1, 51))
    log, warnings = _read(tmp_path, "step,loss,name\n" + rows + "51,3.0,run-a", "run.csv")
    assert int(log.steps[-1]) == 51 and not _cut(warnings)


def test_a_megatron_log_ending_in_a_line_that_is_no_record_is_not_cut(tmp_path):
    body = "".join(MEGATRON.format(step=s) + "\n" for s in range(1, 31))
    log, warnings = _read(tmp_path, body + "[after training is done] datetime: 2026-01-01 12:00:00 ")
    assert int(log.steps[-1]) == 30
    assert not _cut(warnings)


def test_a_megatron_record_or_validation_line_without_its_ending_is_still_cut(tmp_path):
    body = "".join(MEGATRON.format(step=s) + "\n" for s in range(1, 31))
    record = MEGATRON.format(step=31)
    log, warnings = _read(tmp_path, body + record[: record.index("lm loss: ") + 12])  # "lm loss: 3.0"
    assert int(log.steps[-1]) == 30
    assert _cut(warnings) == ["the last line (line 31) is cut short (still being written?); left out"]
    log, warnings = _read(tmp_path, body + " validation loss at iteration 30 | lm loss value: 3.1")
    assert "val_loss" not in log.values
    assert _cut(warnings) == ["the last line (line 31) is cut short (still being written?); left out"]


def test_a_last_cell_as_short_as_its_columns_shortest_is_whole_in_a_crlf_export(tmp_path):
    """Loss last, written 2.95 and 3.0 by turns (3 and 4 characters), CRLF rows as spreadsheets write them: a last
    row ending in 3.1 (3 characters, the column's shortest) is whole; one ending in 3 (1 character, shorter than
    any before it: a cut 3.xx) is not."""
    rows = "".join(f"{s},12345,{'2.95' if s % 2 else '3.0'}\r\n" for s in range(1, 51))
    log, warnings = _read(tmp_path, "step,tokens_per_second,loss\r\n" + rows + "51,12345,3.1", "run.csv")
    assert int(log.steps[-1]) == 51 and log.values["loss"][-1] == 3.1 and not _cut(warnings)
    log, warnings = _read(tmp_path, "step,tokens_per_second,loss\r\n" + rows + "51,12345,3", "run.csv")
    assert int(log.steps[-1]) == 50
    assert _cut(warnings) == ["the last line (line 52) is cut short (still being written?); left out"]
