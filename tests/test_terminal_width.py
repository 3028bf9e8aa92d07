"""Every human-readable command output fits 80 and 200 columns: no line wider, no name cut to `…`.

Machine outputs (--json, `schema`, `init`'s YAML, export scripts, -f yaml/markdown) are files, not terminal
views, and are left out.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
COMMANDS = (
    *("catalog", "schema", "allocate", "fit", "sweep", "parallelize", "plan", "check", "init", "export"),
    *("diff", "whatif"),
)

VIEWS = [
    ["--help"],
    *([name, "--help"] for name in COMMANDS),
    ["catalog", "gpus"],
    ["catalog", "models"],
    ["catalog", "models", "llama-3.1-70b"],
    ["allocate", "--flops", "2e23", "--gpus", "1024"],
    ["fit", str(EXAMPLES / "isoflop_synthetic.csv")],
    ["sweep", "--flops", "2e23"],
    ["parallelize", "--model", "70b", "--gpus", "512"],
    ["parallelize", "--model", "mixtral-8x7b", "--gpus", "64"],
    ["plan", str(EXAMPLES / "70b-512-h100.yaml")],
    ["plan", str(EXAMPLES / "70b-512-h100.yaml"), "--detail"],
    ["plan", str(EXAMPLES / "moe-mixtral-8x7b.yaml"), "--detail"],
    ["check", str(EXAMPLES / "70b-512-h100.yaml")],
    ["diff", str(EXAMPLES / "405b-16k-h100-8k.yaml"), str(EXAMPLES / "405b-16k-h100-128k.yaml")],
    ["whatif", str(EXAMPLES / "70b-512-h100.yaml"), "--gpus", "256,512,1024"],
]


def _run(args: list[str], columns: int) -> str:
    result = CliRunner().invoke(app, args, env={"COLUMNS": str(columns), "NO_COLOR": "1"})
    assert result.exit_code in (0, 1), (args, result.output)
    return result.stdout


@pytest.mark.parametrize("columns", [80, 200])
@pytest.mark.parametrize("args", VIEWS, ids=lambda a: " ".join(Path(x).name for x in a))
def test_every_view_fits_the_terminal(args, columns):
    text = _run(args, columns)
    assert text.strip()
    assert "…" not in text
    too_wide = [line for line in text.splitlines() if len(line) > columns]
    assert not too_wide, too_wide[:3]


@pytest.mark.parametrize("columns", [80, 200])
def test_catalog_names_are_printed_whole(columns):
    from runplan.catalog import load_catalog

    cat = load_catalog([])
    models = _run(["catalog", "models"], columns).split()
    gpus = _run(["catalog", "gpus"], columns).split()
    assert all(e.shape.name in models for e in cat.model_entries)
    assert all(e.spec.name in gpus for e in cat.gpu_entries)


def test_a_wide_terminal_gets_a_table_and_a_narrow_one_stacked_rows():
    wide = _run(["parallelize", "--model", "70b", "--gpus", "512"], 200)
    narrow = _run(["parallelize", "--model", "70b", "--gpus", "512"], 80)
    assert "tok/s/GPU" in wide and "┃ # ┃ TP ┃" in wide
    assert "┃" not in narrow and re.search(r"\n# 1\n  TP \d", narrow)  # the chosen layout, as pairs


def test_plan_prints_one_screen_and_detail_every_table():
    plan = str(EXAMPLES / "70b-512-h100.yaml")
    short = _run(["plan", plan], 80)
    detail = _run(["plan", plan, "--detail"], 80)
    assert len(short.splitlines()) <= 60 and "Decisions" in short and "Warnings" in short
    assert "--detail" in short and "margin over speed" in short  # the layout trade (throughput_tolerance)
    for title in ("Allocation", "Checkpointing", "Monitoring", "Time and cost", "Best layout and runners-up"):
        assert title not in short and title in detail
    assert len(detail.splitlines()) > 3 * len(short.splitlines())


def test_stacked_rows_pack_pairs_without_splitting_one():
    from runplan.report.tables import pack

    assert pack(["a 1", "bb 22", "ccc 333"], 9, separator="   ") == ["a 1", "bb 22", "ccc 333"]
    assert pack(["a 1", "bb 22"], 11, separator="   ") == ["a 1   bb 22"]
    assert pack(["a very long pair"], 4, separator=" ") == ["a very long pair"]


MEASURED_RUN = """\
  - id: llama-3.1-8b-on-our-h100-cluster-run-{i}
    model: llama-3.1-8b
    gpu: h100-sxm
    n_gpus: 8
    seq_len: 8192
    global_batch: {batch}
    layout: {{tp: 1, pp: 1, dp: 8, cp: 1, ep: 1, zero: 1, micro_batch: 1, microbatches: {m}, vpp: 1,
             recompute: none, sequence_parallel: false}}
    measured: {{step_seconds: {step}}}
"""


@pytest.mark.parametrize("columns", [80, 200])
def test_monitor_and_calibrate_views_fit(columns, tmp_path, shared_data_dir):
    log = shared_data_dir / "training_logs" / "bigscience" / "tr11-176B-ml.spike-31214.log"
    runs = [(16, 2, 5.0), (32, 4, 9.5), (64, 8, 18.0), (8, 1, 2.7)]
    measured = tmp_path / "measured.yaml"
    measured.write_text(
        "runs:\n"
        + "".join(MEASURED_RUN.format(i=i, batch=b, m=m, step=s) for i, (b, m, s) in enumerate(runs))
    )
    for args in (["monitor", str(log), "--checkpoint-interval", "100"], ["calibrate", str(measured)]):
        result = CliRunner().invoke(app, args, env={"COLUMNS": str(columns), "NO_COLOR": "1"})
        text = result.stdout
        assert text.strip(), args
        assert "…" not in text
        assert not [line for line in text.splitlines() if len(line) > columns], args


STDERR_VIEWS = [
    # an infeasible answer with nearest misses and suggestions
    ["parallelize", "--model", "70b", "--gpus", "100000", "--global-batch", "20M"],
    # two long warnings (fp8 on H100, fp8 on a mixture of experts)
    ["parallelize", "--model", "mixtral-8x7b", "--gpus", "64", "--precision", "fp8"],
]


@pytest.mark.parametrize("args", STDERR_VIEWS, ids=lambda a: " ".join(a[:5]))
def test_answers_and_warnings_on_stderr_fold_at_the_terminal_width_without_losing_a_word(args):
    def stderr(columns: int) -> str:
        result = CliRunner().invoke(app, args, env={"COLUMNS": str(columns), "NO_COLOR": "1"})
        assert result.exit_code in (0, 1), result.output
        return result.stderr

    narrow, wide = stderr(80), stderr(1000)
    assert max(len(line) for line in narrow.splitlines()) <= 80
    assert len(narrow.splitlines()) > len(wide.splitlines())
    # the same words in the same order; a continuation line is indented under its first line
    assert narrow.split() == wide.split()
    assert all(line.startswith("  ") for line in narrow.splitlines() if not line.startswith("runplan: "))


def test_a_folded_list_item_hangs_under_its_text():
    from runplan.report.format import wrap_lines

    text = "head line\n    - one two three four\n\n  x"
    assert wrap_lines(text, 14) == "head line\n    - one two\n      three\n      four\n\n  x"
    # a word longer than the width stays whole; an explicit indent replaces the hanging one
    assert wrap_lines("a /very/long/path b", 6, indent="> ") == "a\n> /very/long/path\n> b"
