"""An error's hint is printed in brackets after the message, so a bracket inside it reads as nested
(``(decompress it first (gunzip -k FILE))``): the monitor's errors say the same with one level."""

from __future__ import annotations

import gzip

import pytest

from runplan.cli.app import main


def _error(capsys, path):
    with pytest.raises(SystemExit) as done:
        main(["monitor", str(path)])
    err = capsys.readouterr().err
    assert done.value.code == 2 and len(err.strip().splitlines()) == 1, err
    return err.strip()


def _nested(text):
    depth = deepest = 0
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        deepest = max(deepest, depth)
    return deepest > 1


def test_a_compressed_log_says_the_command_at_one_level(tmp_path, capsys):
    path = tmp_path / "run.log.gz"
    path.write_bytes(gzip.compress(b" iteration 1/ 10 | lm loss: 3.0 |\n"))
    err = _error(capsys, path)
    assert err == (
        f"runplan: error: LOG: '{path}' is gzip-compressed: decompress it first (gunzip -k {path})"
    )
    assert not _nested(err)


def test_an_unknown_format_lists_the_formats_at_one_level(tmp_path, capsys):
    path = tmp_path / "run.log"
    path.write_text("hello\nworld\n")
    err = _error(capsys, path)
    assert "(name the format with --format, one of: megatron, " in err
    assert not _nested(err)


def test_mixed_formats_say_what_is_skipped_at_one_level(tmp_path, capsys):
    megatron = " iteration {s:>6}/ 1000 | elapsed time per iteration (ms): 1000.0 | lm loss: 3.0E+00 |\n"
    llmc = "s:{s} trl:3.0000 lr:0.000100 norm:0.3000\n"
    path = tmp_path / "run.log"
    path.write_text(
        "".join(megatron.format(s=s) for s in range(1, 11)) + "".join(llmc.format(s=s) for s in range(5))
    )
    err = _error(capsys, path)
    assert err.endswith(
        "(split the file per run, or name one format with --format megatron: the other lines are skipped)"
    )
    assert not _nested(err)


def test_printed_trainer_dicts_name_the_state_file_at_one_level(tmp_path, capsys):
    path = tmp_path / "run.log"
    path.write_text("{'loss': 2.5, 'grad_norm': 0.3, 'learning_rate': 0.0001, 'epoch': 0.1}\n" * 3)
    err = _error(capsys, path)
    hint = err.split("which carry no step ", 1)[1]
    assert hint.startswith("(give the run's trainer_state.json, output_dir/checkpoint-N/trainer_state.json")
    assert not _nested(hint)


def test_a_corrupt_step_says_to_fix_the_line_at_one_level(tmp_path, capsys):
    path = tmp_path / "run.jsonl"
    path.write_text('{"step": 1, "loss": 3.0}\n{"step": -5, "loss": 3.0}\n')
    err = _error(capsys, path)
    assert err.endswith("(fix or delete that line: its step counter is corrupt)")
    assert not _nested(err)


def test_a_format_named_wrong_says_the_right_one_at_one_level(tmp_path, capsys):
    path = tmp_path / "run.log"
    line = " iteration {s:>6}/ 1000 | elapsed time per iteration (ms): 1000.0 | lm loss: 3.0E+00 |\n"
    path.write_text("".join(line.format(s=s) for s in range(1, 11)))
    with pytest.raises(SystemExit) as done:
        main(["monitor", str(path), "--format", "torchtitan"])
    err = capsys.readouterr().err.strip()
    assert done.value.code == 2
    assert err.endswith(
        "is not a torchtitan log (--format torchtitan): it reads as a megatron log: drop --format (auto-detects "
        "it) or give --format megatron"
    )
    assert not _nested(err)
