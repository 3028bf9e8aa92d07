"""`runplan plan` on a narrow terminal folded a number away from its unit: at COLUMNS=76 the 405B plan's layout
bullet read ``... for 17.7`` / ``GB more memory margin``, and at 80 columns `--detail` on the Mixtral plan read
``= 12.58`` / ``M tokens``. A number and its SI suffix or unit now stay on one line in the terminal; the printed
characters are the same, and JSON, YAML and Markdown (never folded) are untouched.

A no-break space (U+00A0) in the terminal cells would not have done it: rich 15 folds at any whitespace, U+00A0
included (Textualize/rich issue 4196), as the first test shows."""

from __future__ import annotations

import io
import re
from pathlib import Path

import rich.text
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.table import Table
from rich.text import Text
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.report.format import unit_spaces_masked
from runplan.report.terminal import numbers_kept_whole

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _printed(text: str, width: int, *, whole: bool) -> list[str]:
    console = Console(width=width, file=io.StringIO(), color_system=None)
    if whole:
        with numbers_kept_whole():
            console.print(Text(text))
    else:
        console.print(Text(text))
    return console.file.getvalue().splitlines()  # type: ignore[attr-defined]


def test_rich_folds_at_a_no_break_space_but_not_between_a_masked_number_and_its_unit():
    text = "aaaa bbbb ccc 16.78 M tokens more"
    assert _printed(text, 20, whole=False)[0].rstrip() == "aaaa bbbb ccc 16.78"  # the fold this fixes
    assert _printed(text.replace("78 M", "78\u00a0M"), 20, whole=False)[0].rstrip(" ").endswith("16.78\u00a0")
    assert [line.rstrip() for line in _printed(text, 20, whole=True)] == [
        "aaaa bbbb ccc",
        "16.78 M tokens more",
    ]
    assert rich.text.divide_line.__module__ == "rich._wrap"  # put back when the block ends


def test_the_mask_takes_suffixes_and_units_not_words():
    assert unit_spaces_masked("12.58 M tokens, 17.7 GB at 50 GB/s in 2.7 min (1.14 h), 4 days") == (
        "12.58_M_tokens, 17.7_GB at 50_GB/s in 2.7_min (1.14_h), 4_days"
    )
    # what a number counts is its unit too (tests/test_a_counted_noun_stays_on_its_number_s_line.py); a name after a
    # number, or a word that only begins as a unit, is not: those spaces are ordinary
    assert unit_spaces_masked("512 GPUs, 10 steps, 3 sequences, TP 8 heads, 2 h100-sxm, 4 stepwise") == (
        "512_GPUs, 10_steps, 3_sequences, TP 8_heads, 2 h100-sxm, 4 stepwise"
    )


PAIRS = ("17.7 GB", "16.78 M", "2.7 min", "1.14 h", "50 GB/s", "398.3 MWh", "1.5e+19 FLOPs", "6.291 B")


@settings(max_examples=150, deadline=None)
@given(
    words=st.lists(
        st.sampled_from(("tokens", "the", "fastest", "layout", "a", "(margin)", "of", *PAIRS)), max_size=40
    ),
    width=st.integers(min_value=14, max_value=70),
    in_table=st.booleans(),
)
def test_no_width_folds_a_number_from_its_unit(words, width, in_table):
    text = " ".join(words)
    # the table's prose column is at least as wide as the widest pair (13 cells), as a plan's "why" column is
    # (report.tables.PROSE_MIN_CHARS): a narrower one must fold inside a pair
    console = Console(width=width + 24 if in_table else width, file=io.StringIO(), color_system=None)
    with numbers_kept_whole():
        if in_table:  # a folding prose column beside a fixed one, as the plan's "why" column is
            table = Table("what", "why")
            table.columns[0].no_wrap = True
            table.columns[1].overflow = "fold"
            table.add_row("global batch", Text(text))
            console.print(table)
        else:
            console.print(Text(text))
    out = console.file.getvalue()  # type: ignore[attr-defined]
    cells = [re.sub(r"[│┃┏┓┗┛━─┡┩└┘┌┐╷╵|]", " ", line) for line in out.splitlines()]
    if not in_table:
        assert " ".join(out.split()) == " ".join(text.split())  # the same characters, folded elsewhere
    for pair in PAIRS:
        assert sum(line.count(pair) for line in cells) == text.count(pair), (pair, out)


def test_the_plan_s_folds_keep_numbers_whole():
    def plan(example: str, columns: int, *flags: str) -> str:
        result = CliRunner().invoke(
            app, ["plan", str(EXAMPLES / example), *flags], env={"COLUMNS": str(columns)}
        )
        assert result.exit_code == 0, result.output
        return result.stdout

    bullets = plan("405b-16k-h100-8k.yaml", 76)
    assert any("17.7 GB more memory margin" in line for line in bullets.splitlines())
    assert not any(line.rstrip().endswith("17.7") for line in bullets.splitlines())
    detail = plan("moe-mixtral-8x7b.yaml", 80, "--detail")
    assert any("12.58 M tokens; ramp stages" in line for line in detail.splitlines())
    assert any(line.strip().startswith("6.291 M for") for line in detail.splitlines())
