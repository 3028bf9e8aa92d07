"""A JSONL log whose last line is cut mid-record (still being written: the engines end every line with a
newline) was read with the note "1 line that is not a JSON object was left out", where a text or CSV log says
"the last line (line N) is cut short (still being written?); left out"; a record cut mid-file (a crash
mid-write, the restart appending after it) was counted the same way, where Megatron's text log says "line N
(step S) is cut short; left out". Both now say so in those words; a line that is no JSON at all (a stray print)
keeps its own note."""

from __future__ import annotations

import json

from runplan.monitor.readers import read_logs

RECORDS = [json.dumps({"step": s, "loss": 3.0 - s / 1000, "grad_norm": 0.3}) for s in range(1, 301)]


def test_a_last_line_cut_short_is_said_as_a_text_log_says_it(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text("\n".join(RECORDS) + '\n{"step": 301, "loss": 2.')  # line 301, no newline yet
    log = read_logs([path])
    assert log.steps.tolist() == list(range(1, 301))
    assert "the last line (line 301) is cut short (still being written?); left out" in log.notes
    assert not any("not a JSON object" in note for note in log.notes), log.notes


def test_the_same_words_as_a_csv_log(tmp_path):
    jsonl, csv = tmp_path / "m.jsonl", tmp_path / "m.csv"
    jsonl.write_text('{"step": 1, "loss": 3.0}\n{"step": 2, "loss": 2.9}\n{"step": 3, "lo')
    csv.write_text("step,loss\n1,3.0\n2,2.9\n3,2.")
    note = "the last line (line 3) is cut short (still being written?); left out"
    assert note in read_logs([jsonl]).notes
    assert read_logs([csv]).notes[0] == note.replace("line 3", "line 4")  # the header is the CSV's line 1


def test_a_whole_last_line_without_its_newline_is_kept(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text("\n".join(RECORDS))
    log = read_logs([path])
    assert log.steps.tolist() == list(range(1, 301))
    assert not any("cut short" in note or "JSON object" in note for note in log.notes), log.notes


def test_a_record_cut_mid_file_is_said_by_its_line(tmp_path):
    path = tmp_path / "metrics.jsonl"
    lines = [*RECORDS[:150], '{"step": 151, "loss": 2.84', *RECORDS[150:]]  # the restart re-logs step 151
    path.write_text("\n".join(lines) + "\n")
    log = read_logs([path])
    assert "line 151 is cut short; left out" in log.notes
    assert not any("not a JSON object" in note for note in log.notes), log.notes
    assert log.steps.size == 300


def test_two_cut_records_and_a_stray_line_are_each_said(tmp_path):
    path = tmp_path / "metrics.jsonl"
    lines = [*RECORDS[:100], '{"step": 101, "lo', *RECORDS[100:200], "saving checkpoint", '{"step"']
    lines += RECORDS[200:]
    path.write_text("\n".join(lines) + "\n")
    notes = read_logs([path]).notes
    assert "2 lines are cut short and left out (the first: line 101)" in notes
    assert "1 line that is not a JSON object was left out" in notes
