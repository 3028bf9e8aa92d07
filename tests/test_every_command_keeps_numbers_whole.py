"""Only `runplan plan`'s terminal report kept a number on the line of its unit (commit 6685f65); every other
command still folded them apart at 60 to 80 columns: `parallelize --model 70b --gpus 512` at COLUMNS=76 read
``... the fastest layout for 1.89`` / ``GB more memory margin``, `sweep --flops 2e23` at 60 ``2e+19`` /
``FLOPs, 7 sizes each``, `allocate --flops 2e23 --inference-tokens 2e13` at 60 ``total 1.88e+24`` / ``FLOPs``,
`diff` (folded by report.format.wrap_lines, not rich) at 61 ``allocation for 2e23`` / ``FLOPs worth``, `monitor`
of a straggling run at 74 ``0.9996 → 1.1`` / ``s per step``. Every command now runs with rich's folds kept off
those spaces (runplan.cli.app), and wrap_lines folds the same way; the printed characters and every `--json`
answer are unchanged.

The fold detector: a line (or table cell) that ends with a number whose next line in that cell starts with a
unit, where the same command at 300 columns prints that number, one space and that text: a fold, not a value
and a unit the command prints on lines of their own (`catalog gpus NAME` prints the meaning, unit first, under
each value)."""

from __future__ import annotations

import itertools
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest
import rich.text
from tests.monitor.generate import series, write
from typer.testing import CliRunner

from runplan.report.format import keep_numbers_whole, numbers_kept_whole, wrap_lines

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"

#: what runplan counts after a number (resolved._UNITS' nouns, and the words `plan --detail` writes after one on every
#: example): ``819,200 tokens``, ``8 GPUs/node``, ``4.689 interruptions``, ``12.58 M tokens``, ``182,375 USD``
COUNTED = (
    r"(?:tokens?|GPUs?|USD|steps?|sequences?|interruptions?|params?|parameters?|nats?|nodes?|micro-batch(?:es)?"
    r"|batch(?:es)?|layers?|heads?|experts?|groups?|checkpoints?|evaluations?|segments?|layouts?|runs?|sizes?"
    r"|shards?|decades?|saves?|milestones?|points?|failures?|generations?|bytes?)(?![\w])"
)
#: the units report.format._NUMBER_UNIT_SPACE keeps on their number's line
UNIT = (
    r"(?:(?:[kKMBTP]|[kKMGTP]i?B|s|ms|min|h|days?|[kMG]?Wh|[kM]?W|FLOPs?|FLOP/s|pp|σ)(?![\w/])|d(?![\w·]| ?=)"
    rf"|{COUNTED})"
)
BAR = re.compile(r"[│┃|]")


def _printed(args: list[str], columns: int) -> str:
    from runplan.cli.app import app

    result = CliRunner().invoke(app, args, env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.output
    return result.stdout


def _side_by_side(number: str, rest: str, wide: str) -> bool:
    """Whether ``wide`` prints a number shaped as ``number`` (any digits: a timing differs between runs), one
    space and the first 12 characters of ``rest``."""
    shape = re.sub(r"\d+", r"\\d+", re.escape(number))
    return re.search(shape + " " + re.escape(rest[:12]), wide) is not None


def folds(out: str, wide: str) -> list[tuple[str, str]]:
    """The pairs of lines of ``out`` that part a number from its unit (module docstring)."""
    found = []
    lines = out.splitlines()
    for a, b in itertools.pairwise(lines):
        cells_a, cells_b = BAR.split(a), BAR.split(b)
        if len(cells_a) != len(cells_b):  # a table's border or title against a row: compare whole lines
            cells_a, cells_b = [a], [b]
        for x, y in zip(cells_a, cells_b, strict=True):
            # a number, or a number with its SI suffix before what it counts (``12.58 M`` / ``tokens``)
            scaled = re.search(r"\S*\d [kKMBTP]$", x.rstrip())
            number = scaled.group(0) if scaled else x.rstrip().rsplit(" ", 1)[-1]
            unit = COUNTED if scaled else UNIT
            if (
                re.search(r"\d$|\d [kKMBTP]$", number)
                and re.match(unit, y.strip())
                and _side_by_side(number, y.strip(), wide)
            ):
                found.append((a.rstrip(), b.rstrip()))
    return found


def test_the_detector_finds_a_fold_and_passes_a_value_over_its_meaning():
    meaning = "│ bf16_flops │ 9.89e+14 │\n│ │ FLOP/s: dense bf16 │"
    wide = "the fastest layout for 1.89 GB more memory margin\n" + meaning
    folded = "the fastest layout for 1.89\nGB more memory margin"
    assert folds(folded, wide) == [("the fastest layout for 1.89", "GB more memory margin")]
    assert folds(meaning, wide) == []
    assert folds("0.6\ns)", "converged, 0.5 s)") == [("0.6", "s)")]  # a timing: its digits differ
    # a counted noun after its number, or after the number's SI suffix; a word that only starts like one is no unit
    wide = "global_batch_tokens: 819,200 tokens → 12.58 M tokens; 3 tokenizers"
    assert folds("global_batch_tokens: 819,200\ntokens → 12.58 M\ntokens; 3\ntokenizers", wide) == [
        ("global_batch_tokens: 819,200", "tokens → 12.58 M"),
        ("tokens → 12.58 M", "tokens; 3"),
    ]


@pytest.fixture(scope="module")
def straggler_log(tmp_path_factory) -> Path:
    return write("megatron", series("straggler", 4000), tmp_path_factory.mktemp("logs") / "train.log")


COMMANDS = {
    "parallelize": ["parallelize", "--model", "70b", "--gpus", "512"],
    "sweep": ["sweep", "--flops", "2e23"],
    "allocate": ["allocate", "--flops", "2e23", "--inference-tokens", "2e13"],
    "allocate-plan": ["allocate", str(EXAMPLES / "2e23-inference-optimal.yaml")],
    "diff": [
        "diff",
        str(EXAMPLES / "2e23-compute-optimal.yaml"),
        str(EXAMPLES / "2e23-inference-optimal.yaml"),
    ],
    "monitor": ["monitor", "LOG"],
}


@pytest.mark.parametrize("name", list(COMMANDS))
def test_no_command_folds_a_number_from_its_unit_at_60_to_80_columns(name, straggler_log):
    args = [str(straggler_log) if a == "LOG" else a for a in COMMANDS[name]]
    wide = _printed(args, 300)
    found = {pair: columns for columns in range(60, 81) for pair in folds(_printed(args, columns), wide)}
    assert not found, "\n".join(f"COLUMNS={c}: {a!r} / {b!r}" for (a, b), c in found.items())


def test_rich_folds_as_it_did_once_the_command_returns():
    _printed(COMMANDS["sweep"], 60)
    assert rich.text.divide_line.__module__ == "rich._wrap"
    from runplan.cli.common import _UNDO_WHEN_THE_COMMAND_ENDS

    assert not _UNDO_WHEN_THE_COMMAND_ENDS


def test_a_rich_without_divide_line_is_left_as_it_is():
    """Another rich, whose rich.text folds by something other than ``divide_line``: nothing is set, nothing is put
    back, and its text folds as that rich folds it."""
    other = types.ModuleType("rich.text")
    undo = keep_numbers_whole(other)
    assert vars(other).keys() == {"__name__", "__doc__", "__package__", "__loader__", "__spec__"}
    undo()
    with (
        numbers_kept_whole()
    ):  # nested in a command's own: the outer one keeps numbers whole, and puts it back
        inner = rich.text.divide_line
        with numbers_kept_whole():
            assert rich.text.divide_line is inner
        assert rich.text.divide_line is inner
    assert rich.text.divide_line.__module__ == "rich._wrap"


def test_wrap_lines_folds_around_a_number_and_its_unit():
    line = "the inputs differ: Inference-aware allocation for 2e23 FLOPs worth of quality"
    for width in range(20, 80):
        folded = wrap_lines(line, width)
        assert " ".join(folded.split()) == line
        assert not any(row.endswith("2e23") for row in folded.splitlines()), (width, folded)
    assert wrap_lines("計画 for 2e23 FLOPs worth", 16).splitlines() == ["計画 for", "  2e23 FLOPs", "  worth"]
    assert wrap_lines("a_b 3 GB", 6) == "a_b\n  3 GB"  # an underscore of the text stays one


PROBE = """
import contextlib, io, sys
from runplan.cli.app import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main({args!r})
    except SystemExit as done:
        assert done.code in (0, None), done.code
print("RICH=" + ",".join(sorted(m for m in sys.modules if m.split(".")[0] == "rich")), file=sys.stderr)
"""


@pytest.mark.parametrize(
    "args", [["schema"], ["allocate", "--flops", "2e23", "--json"], ["catalog", "models", "--json"]]
)
def test_a_command_that_prints_no_rich_text_imports_no_rich(args):
    """Keeping numbers whole while a command runs sets rich.text as it loads; it loads nothing itself."""
    result = subprocess.run(
        [sys.executable, "-c", PROBE.format(args=args)], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    line = [ln for ln in result.stderr.splitlines() if ln.startswith("RICH=")]
    assert line == ["RICH="], result.stderr
