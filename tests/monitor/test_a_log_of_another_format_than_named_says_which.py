"""A log given with ``--format`` naming another engine says what the file is and which flag reads it, in one line
(exit 2), instead of "no torchtitan log lines found (... or name its format with --format)", which tells a user
who did name one to do so."""

from __future__ import annotations

import json

import pytest

from runplan.cli.app import main

MEGATRON = (
    " iteration {step:>6}/ 1000 | consumed samples: {s} | elapsed time per iteration (ms): 1000.0 | "
    "learning rate: 3.0E-04 | lm loss: 3.000000E+00 | grad norm: 0.300 |"
)


def _error(tmp_path, capsys, name, body, fmt):
    path = tmp_path / name
    path.write_text(body)
    with pytest.raises(SystemExit) as exit_info:
        main(["monitor", str(path), "--format", fmt])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    return err


@pytest.mark.parametrize(
    "fmt", ["torchtitan", "nemo", "llmc", "deepspeed", "csv", "jsonl", "hf", "tensorboard"]
)
def test_a_megatron_log_read_as_another_format_says_it_is_megatron(tmp_path, capsys, fmt):
    body = "".join(MEGATRON.format(step=s, s=8 * s) + "\n" for s in range(1, 20))
    err = _error(tmp_path, capsys, "run.log", body, fmt)
    assert f"--format {fmt}" in err and "it reads as a megatron log" in err
    assert "drop --format (auto-detects it) or give --format megatron" in err
    assert "or name its format with --format" not in err


def test_a_scalars_export_read_as_jsonl_says_it_is_a_scalars_export(tmp_path, capsys):
    body = json.dumps({"lm loss": {"start_step": 1, "end_step": 2, "values": {"1": 3.0, "2": 2.9}}})
    err = _error(tmp_path, capsys, "run.json", body, "jsonl")
    assert "it reads as a scalars-json log" in err and "give --format scalars-json" in err


def test_a_file_no_format_recognises_keeps_its_own_error(tmp_path, capsys):
    err = _error(tmp_path, capsys, "run.log", "hello\nworld\n", "torchtitan")
    assert "no torchtitan log lines found" in err and "it reads as" not in err
    assert "name its format with --format" not in err  # it was named: check the file instead
