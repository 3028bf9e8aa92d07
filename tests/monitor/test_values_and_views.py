"""Values a log holds that are not numbers, a JSON document cut short, plan-file wording of an infeasible
plan's fixes, and monitor's views at 80 columns. Every log is a tiny hand-made one written in tmp_path."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.monitor.analyse import analyse, checkpoints_for
from runplan.monitor.readers import read_logs
from runplan.monitor.render import EVENT_HEADERS, WHY_MIN_CHARS, event_block, why_width
from runplan.monitor.thresholds import Thresholds

MEGATRON = (
    " iteration {step:>6}/ 1000 | consumed samples: {samples} | elapsed time per iteration (ms): {ms} | "
    "learning rate: 3.0E-04 | global batch size: 8 | lm loss: {loss} | grad norm: {norm} | TFLOPs: 100.0 | "
    "samples per second: 3.0 | num zeros: 0.0 |"
)


def _megatron(step: int, loss: str = "3.0E+00", norm: str = "0.300", ms: float = 1000.0) -> str:
    return MEGATRON.format(step=step, samples=step * 8, ms=ms, loss=loss, norm=norm)


def _monitor(args: list[str], columns: int = 200):
    result = CliRunner().invoke(app, ["monitor", *args], env={"COLUMNS": str(columns), "NO_COLOR": "1"})
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr, result.stderr
    return result


# 1. scalars-json: a value that is not a number names the file, the tag and the step (was an internal error)


@pytest.mark.parametrize(
    ("value", "shown"),
    [('"abc"', "'abc'"), ("[1]", "[1]"), ('{"a": 1}', '{"a": 1}')],
    ids=["text", "list", "object"],
)
def test_scalars_json_value_that_is_not_a_number_is_one_line(tmp_path, value, shown):
    path = tmp_path / "v.json"
    path.write_text('{"lm loss": {"values": {"1": 2.0, "2": ' + value + ', "3": 3.0}}}')
    result = _monitor([str(path)])
    assert result.exit_code == 2
    assert result.stderr == (
        f"runplan: error: LOG: '{path}': tag 'lm loss' step 2: the value is {shown}, not a number "
        "(fix or delete that value)\n"
    )


def test_scalars_json_nan_string_and_null_are_still_read(tmp_path):
    path = tmp_path / "v.json"
    path.write_text('{"lm loss": {"values": {"1": 2.0, "2": "nan", "3": null, "4": 2.0}}}')
    log = read_logs([path])
    assert log.format == "scalars-json"
    assert log.steps.tolist() == [1, 2, 3, 4]
    assert log.nonfinite["loss"].tolist() == [False, True, True, False]


def test_scalars_json_step_key_that_is_not_a_whole_number_names_tag_and_key(tmp_path):
    path = tmp_path / "v.json"
    path.write_text('{"lm loss": {"values": {"1": 2.0, "x2": 3.0}}}')
    result = _monitor([str(path)])
    assert result.exit_code == 2
    assert result.stderr == (
        f"runplan: error: LOG: '{path}': tag 'lm loss' has step key 'x2', not a whole number "
        "(fix or delete that entry of its 'values' map)\n"
    )


# 2. JSONL refuses a metric value that is not a number, as the CSV reader does; text logs note it


def test_jsonl_value_that_is_not_a_number_names_the_line_and_key(tmp_path):
    path = tmp_path / "a.jsonl"
    # the blank line counts as a line of the file, not as an object
    path.write_text('{"step":1,"loss":2.0}\n\n{"step":2,"loss":"abc"}\n{"step":3,"loss":2.1}\n')
    result = _monitor([str(path)])
    assert result.exit_code == 2
    assert result.stderr == (
        f"runplan: error: LOG: '{path}' line 3: 'loss' is 'abc', not a number (fix or delete that line)\n"
    )


def test_jsonl_line_numbers_count_lines_that_are_not_objects_and_say_how_many_more(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text(
        '{"step":1,"loss":2.0}\ngarbage\n{"step":2,"loss":[1]}\n{"step":3,"loss":{"a":1}}\n{"step":4,"loss":2.1}\n'
    )
    result = _monitor([str(path)])
    assert result.exit_code == 2
    assert result.stderr == (
        f"runplan: error: LOG: '{path}' line 3: 'loss' is [1], not a number "
        "(fix or delete that line; 1 more line is like it)\n"
    )


def test_jsonl_text_under_a_key_monitor_does_not_use_is_not_an_error(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text("".join(json.dumps({"step": s, "loss": 2.0, "run": "abc"}) + "\n" for s in (1, 2, 3)))
    log = read_logs([path])
    assert log.steps.tolist() == [1, 2, 3]
    assert "not used: run" in log.notes


def test_jsonl_step_that_is_text_names_the_line(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text('{"step":1,"loss":2.0}\n\n{"step":"x","loss":2.0}\n')
    result = _monitor([str(path)])
    assert result.exit_code == 2
    assert result.stderr == (
        f"runplan: error: LOG: '{path}' line 3: no whole number under 'step' (every line needs its step)\n"
    )


def test_megatron_values_that_are_not_numbers_are_left_out_and_noted(tmp_path):
    lines = [_megatron(s) for s in range(1, 4)]
    lines += [" iteration      4/ 1000 | lm loss: GARBAGE | grad norm: abc |"]
    lines += [_megatron(s) for s in range(5, 9)]
    path = tmp_path / "run.log"
    path.write_text("\n".join(lines) + "\n")
    log = read_logs([path])
    assert log.steps.tolist() == [1, 2, 3, 5, 6, 7, 8]  # step 4 had nothing readable
    assert log.notes[0] == (
        "2 metric values could not be read as a number and were left out (the first at line 4: lm loss 'GARBAGE')"
    )
    result = _monitor([str(path)])
    assert result.exit_code == 0
    assert "note: 2 metric values could not be read as a number" in result.stderr


def test_megatron_log_without_bad_values_has_no_such_note(tmp_path):
    path = tmp_path / "run.log"
    path.write_text("\n".join(_megatron(s) for s in range(1, 9)) + "\n")
    assert not [note for note in read_logs([path]).notes if "could not be read" in note]


def test_nemo_value_that_is_not_a_number_is_noted(tmp_path):
    path = tmp_path / "nemo.log"
    row = "Training epoch 0, iteration {s}/9 | global_step: {s} | reduced_train_loss: {loss} | train_step_timing in s: {t}"
    path.write_text(
        "\n".join(
            [
                row.format(s=1, loss="2.0", t="1.5"),
                row.format(s=2, loss="X", t="1.5"),
                row.format(s=3, loss="2.0", t="abc"),
                row.format(s=4, loss="2.0", t="1.5"),
            ]
        )
        + "\n"
    )
    log = read_logs([path])
    assert log.format == "nemo"
    assert log.notes[0] == (
        "2 metric values could not be read as a number and were left out "
        "(the first at line 2: reduced_train_loss 'X')"
    )


def test_a_loss_logged_as_nan_does_not_stretch_the_logging_interval(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text('{"step":1,"loss":2.0}\n{"step":2,"loss":"nan"}\n{"step":3,"loss":2.1}\n')
    log = read_logs([path])
    assert log.interval_steps == 1  # was 2: the nan step was taken for a step not logged
    assert not [note for note in log.notes if note.startswith("logged every")]


# 3. a scalars-json document cut short is said to be invalid JSON, not JSONL with bad lines


def _scalars_document() -> str:
    return json.dumps(
        {"lm loss": {"step_interval": 1, "values": {str(s): 2.0 for s in range(1, 51)}}}, indent=4
    )


def test_a_scalars_json_document_cut_short_is_invalid_json_not_jsonl(tmp_path):
    text = _scalars_document()
    path = tmp_path / "trunc.json"
    path.write_text(text[: text.index('"30": ') + len('"30": ')])  # cut after a key, before its value
    auto = _monitor([str(path)])
    named = _monitor([str(path), "--format", "scalars-json"])
    expected = f"runplan: error: LOG: '{path}': not valid JSON (line 34: Expecting value) (check the file: is it complete?)\n"
    assert (auto.exit_code, auto.stderr) == (2, expected)
    assert (named.exit_code, named.stderr) == (2, expected)


def test_a_one_line_json_document_cut_short_is_invalid_json(tmp_path):
    path = tmp_path / "trunc.json"
    path.write_text(json.dumps(json.loads(_scalars_document()))[:300])
    result = _monitor([str(path)])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"runplan: error: LOG: '{path}': not valid JSON (line 1: ")


def test_a_json_document_that_is_not_a_metric_log_says_so(tmp_path):
    path = tmp_path / "ds_config.json"
    path.write_text(json.dumps({"train_batch_size": 512, "bf16": {"enabled": True}}, indent=2))
    result = _monitor([str(path)])
    assert result.exit_code == 2
    assert result.stderr == (
        f"runplan: error: LOG: '{path}' is a JSON document but not a metric log: no 'log_history' (a trainer "
        """state) and not {"<tag>": {"values": {...}}} (Megatron's scalars export) (give the run's metric log)\n"""
    )


def test_jsonl_whose_first_line_is_cut_is_still_jsonl(tmp_path):
    whole = "".join(json.dumps({"step": s, "loss": 2.0}) + "\n" for s in range(1, 21))
    path = tmp_path / "tail.jsonl"
    path.write_text(whole[10:])  # `tail -c`: the first line starts mid-object
    log = read_logs([path])
    assert log.format == "jsonl"
    assert log.steps.tolist() == list(range(2, 21))
    assert log.notes[0] == "1 line that is not a JSON object was left out"


def test_one_json_line_at_the_top_of_a_text_log_does_not_make_it_jsonl(tmp_path):
    path = tmp_path / "run.log"
    path.write_text(
        "launcher start\n" + '{"zero_stage": 1}\n' + "\n".join(_megatron(s) for s in range(1, 6)) + "\n"
    )
    log = read_logs([path])
    assert log.format == "megatron"
    assert log.steps.tolist() == [1, 2, 3, 4, 5]


# 4. an infeasible --plan is said in plan keys, as `runplan plan` says it, not flags monitor does not have; the
# log is still read (the run is under way whatever the planner says now)

INFEASIBLE_PLAN = """\
schema_version: 1
name: pinned
model: llama-3.1-70b
budget:
  tokens: 2T
training:
  seq_len: 4096
cluster:
  gpu: h100-sxm
  gpus: 512
parallel:
  tp: 1
  pp: 1
  zero: 0
"""


def test_an_infeasible_plan_is_said_in_a_warning_and_the_log_is_read(tmp_path):
    plan = tmp_path / "pinned.yaml"
    plan.write_text(INFEASIBLE_PLAN)
    log = tmp_path / "run.log"
    log.write_text("\n".join(_megatron(s) for s in range(1, 9)) + "\n")
    result = _monitor([str(log), "--plan", str(plan)], columns=80)
    planned = CliRunner().invoke(app, ["plan", str(plan)], env={"COLUMNS": "80", "NO_COLOR": "1"})
    assert result.exit_code == 0 and planned.exit_code == 1
    warning = " ".join(result.stderr.split())
    reason = "every one of the 120 candidates breaks the memory constraint"
    assert reason in " ".join(planned.stderr.split())  # the planner's answer, said in the warning
    assert (
        f"is infeasible as runplan plans it now ({reason}); the log is read with its monitoring:" in warning
    )
    assert "--zero" not in warning and "--tp" not in warning
    assert "verdict:" in result.stdout  # the log was read


# 5. 80 columns: notes fold under their "note:", events at a narrow width are name-value lines


def test_notes_fold_at_80_columns_and_each_reads_as_one_note(tmp_path):
    path = tmp_path / "run.log"
    path.write_text("\n".join(_megatron(s) for s in range(1, 9)) + "\n")
    wide = _monitor([str(path)], columns=200)
    narrow = _monitor([str(path)], columns=80)
    assert wide.exit_code == narrow.exit_code == 0
    lines = narrow.stderr.splitlines()
    assert all(len(line) <= 80 for line in lines), lines
    assert all(line.startswith(("note: ", "  ")) for line in lines), lines
    assert len(lines) > len(wide.stderr.splitlines())  # something was folded
    # folding loses no word: the notes joined back are the wide ones
    assert " ".join(narrow.stderr.split()) == " ".join(wide.stderr.split())


def _slowing_log(path):
    # 50 steps at 1.0 s, then 10 at 1.1 s to the end of the log: an open throughput drop with a long why
    path.write_text("\n".join(_megatron(s, ms=1000.0 if s <= 50 else 1100.0) for s in range(1, 61)) + "\n")


def test_events_at_80_columns_are_name_value_lines(tmp_path):
    path = tmp_path / "run.log"
    _slowing_log(path)
    result = _monitor([str(path)], columns=80)
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines), lines
    start = lines.index("start 51")
    assert lines[start + 1] == "  peak 51   end open   event throughput_drop   action quarantine"
    assert lines[start + 2].startswith("  why throughput down 9.1% from step 51 ")
    why = lines[start + 2 :]
    assert len(why) == 4 and all(line.startswith("      ") for line in why[1:]), why
    assert "rollback to" not in result.stdout  # no table header: not a table


def test_events_on_a_wide_terminal_stay_a_table(tmp_path):
    path = tmp_path / "run.log"
    _slowing_log(path)
    result = _monitor([str(path)], columns=160)
    assert result.exit_code == 0, result.stderr
    header = next(line for line in result.stdout.splitlines() if "rollback to" in line)
    assert header.split() == ["start", "peak", "end", "event", "action", "rollback", "to", "why"]


def test_why_width_counts_every_other_column_padding_and_separators():
    rows = [["42,783", "42,784", "open", "throughput_drop", "watch", "", "long prose"]]
    # widest cell or header + 2 each: 8 + 8 + 6 + 17 + 8 + 13 = 60; why's padding 2; 8 separators and edges
    assert why_width(EVENT_HEADERS, rows, 80) == 80 - 60 - 2 - 8 == 10
    assert why_width(EVENT_HEADERS, rows, 120) == 50
    assert why_width(EVENT_HEADERS, rows, 80) < WHY_MIN_CHARS <= why_width(EVENT_HEADERS, rows, 120)


def test_event_block_packs_short_cells_and_hangs_the_why():
    row = ["10", "12", "open", "loss_spike", "watch", "", "one two three four five six seven eight nine ten"]
    assert event_block(EVENT_HEADERS, row, 30) == [
        "start 10",
        "  peak 12   end open",
        "  event loss_spike",
        "  action watch",
        "  why one two three four five",
        "      six seven eight nine ten",
    ]


# 6. wording: counts agree with their nouns, and no checkpoints said as "listed in the log" when none are


def test_one_logged_step_and_no_saved_checkpoints_are_worded_as_such(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text('{"step": 7, "loss": 2.0}\n')
    log = read_logs([path])
    report = analyse(log, Thresholds(), checkpoints_for(log, None, None))
    assert (
        "only 1 logged step: baselines rest on few points, so ratios and levels are rough"
        in report.summary["warnings"]
    )
    assert report.summary["checkpoints"] == (
        "none known (the log lists no saved step; give --checkpoint-interval or --plan)"
    )


def test_saved_steps_in_the_log_are_counted(tmp_path):
    path = tmp_path / "run.log"
    lines = [_megatron(s) for s in range(1, 9)] + ["saving checkpoint at iteration       4 to /ckpt"]
    path.write_text("\n".join(lines) + "\n")
    log = read_logs([path])
    assert log.saved_steps == [4]
    assert checkpoints_for(log, None, None).source == "1 saved step listed in the log"


def test_what_an_abandoned_attempt_logged_past_the_restart_is_left_out(tmp_path):
    """Steps 1-9 with a loss spike at 8-9, then the job restarted from step 5 and has reached step 7: steps 8 and
    9 belong to an attempt the run did not go on from, so the spike there is not the run's; the overlapping
    steps 5-7 take the later values (as before)."""
    lines = [_megatron(s, loss="9.0E+00" if s >= 8 else "3.0E+00") for s in range(1, 10)]
    lines += [_megatron(s, loss="2.9E+00") for s in range(5, 8)]
    path = tmp_path / "run.log"
    path.write_text("\n".join(lines) + "\n")
    log = read_logs([path])
    assert log.steps.tolist() == [1, 2, 3, 4, 5, 6, 7]
    assert log.values["loss"].tolist() == [3.0, 3.0, 3.0, 3.0, 2.9, 2.9, 2.9]
    assert [(r.last_step, r.resumed_step) for r in log.restarts] == [(9, 5)]
    assert any(
        n.startswith("2 rows an abandoned attempt logged past where the run has reached (steps 8-9)")
        for n in log.notes
    )
