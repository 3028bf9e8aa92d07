"""Bad logs end in one line (exit 2) or are handled and said; never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from runplan.cli.app import main

MEGATRON = (
    " iteration {step:>6}/ 1000 | consumed samples: {s} | elapsed time per iteration (ms): 1000.0 | "
    "learning rate: 3.0E-04 | lm loss: {loss:.6E} | grad norm: 0.300 |"
)


def _megatron(steps):
    return "\n".join(MEGATRON.format(step=s, s=s * 8, loss=3.0) for s in steps) + "\n"


def _wrapped():  # each record cut into three lines, as the BLOOM chronicles print them
    out = []
    for step in range(1, 30):
        line = MEGATRON.format(step=step, s=step * 8, loss=3.0)
        cut1, cut2 = line.index("| elapsed"), line.index("| lm loss")
        out += [line[:cut1], line[cut1:cut2], line[cut2:]]
    return "\n".join(out) + "\n"


CASES = {
    # name: (file bytes, expected exit code, text that must be in stderr (2) or stdout/stderr (0))
    "empty": (b"", 2, "is empty"),
    "whitespace": (b"\n\n  \n", 2, "is empty"),
    "binary": (bytes(range(256)) * 4, 2, "binary"),
    "not utf-8": (b"\xff\xfe\xfa iteration", 2, "not UTF-8"),
    "unknown text": (b"hello\nworld\n", 2, "no known log format"),
    "mixed formats": (
        (_megatron(range(1, 20)) + "".join(f"s:{s} trl:3.0\n" for s in range(20, 40))).encode(),
        2,
        "mixes log formats",
    ),
    "truncated last line": (_megatron(range(1, 30)).encode()[:-40], 0, "cut short"),
    "wrapped lines": (_wrapped().encode(), 0, "healthy"),
    "unsorted steps": (
        _megatron([5, 3, 9, 1, 7, 2, 8, 4, 6, 10] * 1 + list(range(11, 60))[::-1]).encode(),
        0,
        "not in order",
    ),
    "restart": (_megatron(list(range(1, 40)) + list(range(30, 60))).encode(), 0, "restart"),
    "jsonl garbage": (b'{"step": 1, "loss": 3}\n' + b"garbage\n" * 40, 2, "40 lines are not JSON objects"),
    "csv text cell": (b"step,loss\n1,3.0\n2,abc\n", 2, "not a number"),
    # read as one JSONL line whose loss is a list: named like a CSV cell that is not a number
    "json without values": (
        json.dumps({"lm loss": [1, 2]}).encode(),
        2,
        "line 1: 'lm loss' is [1, 2], not a number",
    ),
    "tfevents corrupt": (b"\x10\x00\x00\x00\x00\x00\x00\x00" + b"\x00" * 20, 2, "binary"),
    # JSON the reader refuses other than by JSONDecodeError: an integer past Python's 4,300-digit limit, and
    # nesting past the recursion limit (were internal errors, exit 3)
    "jsonl huge integer": (
        b'{"step": 1, "loss": 3}\n{"step": 2, "loss": ' + b"9" * 5000 + b"}\n",
        0,
        "1 line that is not a JSON object was left out",
    ),
    "jsonl nested too deep": (b"[" * 100_000 + b"]" * 100_000 + b"\n", 2, "no known log format"),
    # a step counter past int64 wrapped to -2^63 on every row; negative and fractional steps passed
    "jsonl step past int64": (
        b'{"step": 1e30, "loss": 3}\n{"step": 2, "loss": 3}\n',
        2,
        "object 1 has step 1e+30",
    ),
    "csv step past int64": (b"step,loss\n99999999999999999999999999,3.0\n2,3.0\n", 2, "row 1 has step 1e+26"),
    "csv negative step": (b"step,loss\n1,3.0\n-3,3.0\n", 2, "row 2 has step -3"),
    "csv fractional step": (b"step,loss\n1.5,3.0\n2,3.0\n", 2, "row 1 has step 1.5"),
    "megatron step past int64": (
        _megatron([1, 2, 10**26]).encode(),
        2,
        "run.log': logged step 3 has step 100000000000000000000000000",  # names the file
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_bad_log(tmp_path, capsys, name):
    content, code, needle = CASES[name]
    path = tmp_path / "run.log"
    path.write_bytes(content)
    with pytest.raises(SystemExit) as exit_info:
        main(["monitor", str(path)])
    out, err = capsys.readouterr()
    assert exit_info.value.code == code, (out, err)
    assert "Traceback" not in err and "internal error" not in err
    if code == 2:
        assert len(err.strip().splitlines()) == 1 and err.startswith("runplan: error: LOG: "), err
        assert needle in err
    else:
        assert needle in out + err


def test_missing_file_and_directory(tmp_path, capsys):
    for target, needle in ((tmp_path / "nope.log", "does not exist"), (tmp_path, "is a directory")):
        with pytest.raises(SystemExit) as exit_info:
            main(["monitor", str(target)])
        err = capsys.readouterr().err
        assert exit_info.value.code == 2 and needle in err and len(err.strip().splitlines()) == 1


def test_bad_flags_are_one_line(tmp_path):
    path = tmp_path / "run.log"
    path.write_text(_megatron(range(1, 10)))
    for args, needle in (
        (["--format", "tensorflow"], "--format: unknown format"),
        (["--checkpoint-interval", "0"], "--checkpoint-interval"),
        (["--report", str(tmp_path)], "--report"),
        (["--max-seconds", "2"], "--max-seconds: --max-seconds limits --follow"),  # was ignored
    ):
        result = subprocess.run(
            [sys.executable, "-m", "runplan", "monitor", str(path), *args],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert (
            result.returncode == 2
            and needle in result.stderr
            and len(result.stderr.strip().splitlines()) == 1
        )


def test_plot_to_an_unknown_file_type_is_one_line(tmp_path, capsys):
    path = tmp_path / "run.log"
    path.write_text(_megatron(range(1, 10)))
    with pytest.raises(SystemExit) as exit_info:
        main(["monitor", str(path), "--plot", str(tmp_path / "run.xyz")])
    err = capsys.readouterr().err
    assert (
        exit_info.value.code == 2
        and err.startswith("runplan: error: --plot: cannot write")
        and len(err.splitlines()) == 1
    )


def test_a_text_log_over_its_cap_is_refused_while_jsonl_of_that_size_is_read(tmp_path, monkeypatch):
    # issue 13's 1,000,000-step JSONL log (192 MB) was refused by the 64 MB cap meant for logs read line by
    # line; the caps are scaled down here so the test writes kilobytes, not hundreds of megabytes
    from runplan.monitor import readers

    monkeypatch.setattr(readers, "MAX_TEXT_LOG_BYTES", 2_000)
    monkeypatch.setattr(readers, "MAX_LOG_BYTES", 8_000)
    text_log = tmp_path / "run.log"
    text_log.write_text(_megatron(range(1, 20)))  # ~3 kB
    jsonl = tmp_path / "run.jsonl"
    jsonl.write_text("".join(json.dumps({"step": s, "loss": 3.0}) + "\n" for s in range(1, 120)))  # ~3 kB
    assert readers.read_logs([jsonl]).steps.size == 119
    with pytest.raises(readers.SpecError, match="MB read for megatron logs"):
        readers.read_logs([text_log])


def test_the_format_flags_help_lists_every_format_the_readers_take():
    # --help spells the list out (no reader import at start-up); a format added to the readers must show there
    from runplan.cli.monitor import FORMATS_HELP
    from runplan.monitor.readers import FORMATS

    assert FORMATS_HELP.split("|") == list(FORMATS)
