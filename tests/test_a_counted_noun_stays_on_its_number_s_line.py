"""The mask that keeps a number on the line of its unit (report.format._NUMBER_UNIT_SPACE, commits 6685f65, 94532b7,
d36dc81) took SI suffixes, bytes, time, energy and FLOPs, but not what runplan counts: `runplan check` of a plan
whose global batch drifted, at COLUMNS=60, read ``... 91,187 GPU-hours → 93,326`` / ``GPU-hours (+2.35%)``;
`plan X --detail` at COLUMNS=100 read ``expected interruptions 4.177 ... = 4.177`` / ``interruptions``; `diff`
at COLUMNS=40 read ``1 GPU/node → 8`` / ``GPUs/node (+700.00%)``, and ``global_batch_tokens: 3.146 M`` /
``tokens → 3.932 M tokens``. A counted noun (resolved._UNITS' nouns: tokens, GPUs, GPU/node, GPU-hours, USD,
steps, sequences, interruptions, params, nats/token, ...; and the words `plan --detail` writes after a number on
every example: saves, parameters, milestones, points, ...), singular or plural, as a whole word, now stays on its
number's line, and so does one after the number's SI suffix (``12.58 M tokens``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.test_every_command_keeps_numbers_whole import _printed, folds

from runplan.report.format import cell_width, unit_spaces_masked
from runplan.report.tables import PROSE_MIN_CHARS

ROOT = Path(__file__).resolve().parents[1]


def test_a_counted_noun_after_a_number_or_its_suffix_is_a_unit():
    assert unit_spaces_masked(
        "819,200 tokens → 835,584 tokens; 1 GPU/node → 8 GPUs/node; 4.689 interruptions, 1 interruption/day; "
        "91,187 GPU-hours × 2 USD/h = 182,375 USD; 2.2457 nats/token; 12.58 M tokens; 406 B parameters; "
        "1 step, 18 steps, 3,072 sequences, 7 params, 5 evaluations, -1.07 pp"
    ) == (
        "819,200_tokens → 835,584_tokens; 1_GPU/node → 8_GPUs/node; 4.689_interruptions, 1_interruption/day; "
        "91,187_GPU-hours × 2_USD/h = 182,375_USD; 2.2457_nats/token; 12.58_M_tokens; 406_B_parameters; "
        "1_step, 18_steps, 3,072_sequences, 7_params, 5_evaluations, -1.07_pp"
    )
    # a word that only begins as a counted noun, a name after a number, a noun after a word: ordinary spaces
    assert unit_spaces_masked("3 tokenizers, 2 h100-sxm, 4 stepwise, Approach 3 refitted, the M tokens") == (
        "3 tokenizers, 2 h100-sxm, 4 stepwise, Approach 3 refitted, the M tokens"
    )


def _plan_copy(tmp_path: Path) -> Path:
    """The 2e23 compute-optimal plan resolved, then run on half its GPUs: its global batch drifts (12.58 M tokens →
    13.11 M tokens, 3,072 sequences → 3,200 sequences) and so do its GPU-hours, steps and interruptions."""
    text = (ROOT / "examples" / "2e23-compute-optimal.yaml").read_text()
    plan = tmp_path / "plan.yaml"
    plan.write_text(text.replace("isoflop_synthetic.csv", str(ROOT / "examples" / "isoflop_synthetic.csv")))
    _printed(["check", str(plan), "--update"], 200)
    plan.write_text(plan.read_text().replace("gpus: 1024", "gpus: 512", 1))
    return plan


def _run(args: list[str], columns: int) -> str:
    """Stdout and stderr of `runplan` (check reports drift on stderr, exit 1)."""
    from typer.testing import CliRunner

    from runplan.cli.app import app

    result = CliRunner().invoke(app, args, env={"COLUMNS": str(columns)})
    assert result.exit_code in (0, 1), result.output
    return result.output


def test_check_keeps_each_count_with_its_noun_at_40_to_80_columns(tmp_path):
    args = ["check", str(_plan_copy(tmp_path))]
    wide = _run(args, 300)
    assert "schedule.global_batch_tokens: 12.58 M tokens → 13.11 M tokens" in wide  # the drift this checks
    found = {pair: columns for columns in range(40, 81) for pair in folds(_run(args, columns), wide)}
    assert not found, "\n".join(f"COLUMNS={c}: {a!r} / {b!r}" for (a, b), c in found.items())
    narrow = _run(args, 60).splitlines()
    assert not any(line.rstrip().endswith(("→ 93,326", "12.58 M")) for line in narrow), narrow


PER_NODE = """schema_version: 1
name: days
model: llama-3.1-8b
budget:
  days: {days}
training:
  seq_len: 4096
cluster:
  gpu: h100-sxm
  gpus: 64
  gpus_per_node: {per_node}
"""


def test_diff_keeps_gpus_per_node_with_its_number_at_40_columns(tmp_path):
    first, second = tmp_path / "d1.yaml", tmp_path / "d2.yaml"
    first.write_text(PER_NODE.format(days=1, per_node=1))
    second.write_text(PER_NODE.format(days=2, per_node=8))
    args = ["diff", str(first), str(second)]
    wide = _printed(args, 300)
    for columns in range(36, 81):
        out = _printed(args, columns)
        assert folds(out, wide) == [], (columns, out)
    lines = [line.strip() for line in _printed(args, 40).splitlines()]
    assert "8 GPUs/node (+700.00%)" in lines, lines  # folded before 8, not after it
    assert "tokens → 3.932 M tokens (+25.00%)" not in lines  # was folded after 3.146 M


@pytest.mark.parametrize(
    "example", ["2e23-7b-overtrained.yaml", "2e23-compute-optimal.yaml", "moe-mixtral-8x7b.yaml"]
)
def test_plan_detail_keeps_expected_interruptions_whole_at_100_columns(example):
    args = ["plan", f"examples/{example}", "--detail"]
    out = _printed(args, 100)
    assert not any(line.strip() == "interruptions" for line in out.splitlines()), out
    assert folds(out, _printed(args, 300)) == []


def test_the_widest_masked_pair_the_plans_print_fits_the_prose_column():
    """report.tables.fitted_table stacks a table whose prose column cannot hold its widest pair; every pair the
    examples' `plan --detail` prints (``56,031,818_USD``, ``4.526e+24_FLOPs,``) is narrower than PROSE_MIN_CHARS,
    so a prose column at its minimum holds each one."""
    widest = max(
        (
            (cell_width(word), word)
            for example in sorted((ROOT / "examples").glob("*.yaml"))
            for word in unit_spaces_masked(_printed(["plan", str(example), "--detail"], 400)).split()
            if "_" in word and any(ch.isdigit() for ch in word.split("_")[0])
        ),
    )
    assert widest[0] < PROSE_MIN_CHARS, widest
