"""`runplan calibrate` on hostile measured-runs files and output flags: one line naming the key or flag (exit 2),
hints about this file (not a plan file's tools), and stdout that holds one document."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from runplan.cli.app import app

runner = CliRunner()

RUN = """\
  - id: {id}
    model: llama-3.1-8b
    gpu: h100-sxm
    n_gpus: 8
    seq_len: 8192
    global_batch: 16
    layout: {{tp: 1, pp: 1, dp: 8, cp: 1, ep: 1, zero: 1, micro_batch: 1, microbatches: 2, vpp: 1,
             recompute: none, sequence_parallel: false}}
    measured: {{step_seconds: {step}}}
"""
ONE = "runs:\n" + RUN.format(id="r0", step=2.0)


def _file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "measured.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("run_id", ["''", "'   '"])
def test_a_blank_run_id_is_refused(tmp_path, run_id, one_error_line):
    # it was accepted: a report row and a file entry named by nothing
    path = _file(tmp_path, ONE.replace("id: r0", f"id: {run_id}"))
    line = one_error_line(runner.invoke(app, ["calibrate", str(path)]))
    assert "measured.yaml:2: runs[0].id: a run id is empty" in line


def test_a_duplicate_run_id_names_the_run_it_repeats(tmp_path, one_error_line):
    text = (
        "runs:\n"
        + RUN.format(id="r0", step=2.0)
        + RUN.format(id="r1", step=2.1)
        + RUN.format(id="r0", step=2)
    )
    line = one_error_line(runner.invoke(app, ["calibrate", str(_file(tmp_path, text))]))
    assert "runs[2].id: duplicate run id 'r0' (also runs[0]) (give each run its own id)" in line


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda t: t + "extra: 1\n", "extra: unknown key 'extra' (allowed: models, gpus, runs)"),
        (
            lambda t: t + "    peak_memory: {gib: 50, total: 3}\n",
            "runs[0].peak_memory.total: unknown key 'total' (allowed: gib, kind, rank, stage)",
        ),
        (
            lambda t: t + "    colour: red\n",
            "runs[0].colour: unknown key 'colour' (allowed: id, source, model,",
        ),
        # a layout's and a stack's keys: they pointed at the docs, which list the layout's and not the stack's
        (
            lambda t: t.replace("micro_batch: 1,", "mbs: 1,"),
            "runs[0].layout.mbs: unknown key 'mbs' (allowed: tp, pp, dp, ep, cp, zero, micro_batch, microbatches,",
        ),
        (
            lambda t: t + "    stack: {preset: megatron-core, colour: red}\n",
            "runs[0].stack.colour: unknown key 'colour' (allowed: preset, flash_attention,",
        ),
        (
            lambda t: "models: {m: {n_layers: 2}}\n" + t,
            "models.m.d_model: required key is missing (also missing: n_heads, n_kv_heads, head_dim, ffn_hidden, mlp,"
            " vocab_size, tied_embeddings, norm) (add it; docs/calibration.md (MEASURED.yaml) shows",
        ),
    ],
)
def test_hints_name_this_files_keys_not_a_plan_files_tools(tmp_path, edit, expected, one_error_line):
    # they said "see `runplan schema` for the allowed keys" and "`runplan init` writes every key": the tools of a
    # plan file, which list none of a measured-runs file's keys
    line = one_error_line(runner.invoke(app, ["calibrate", str(_file(tmp_path, edit(ONE)))]))
    assert expected in line
    assert "runplan schema" not in line and "runplan init" not in line


def test_json_and_output_to_stdout_together_are_refused(tmp_path, one_error_line):
    # YAML then JSON on one stdout: neither parsed
    line = one_error_line(runner.invoke(app, ["calibrate", str(_file(tmp_path, ONE)), "--json", "-o", "-"]))
    assert line.startswith("runplan: error: --output: -o - and --json both write to standard output")


@pytest.mark.parametrize("name", ["", "   ", "a\nb"])
def test_a_blank_or_multiline_name_is_refused(tmp_path, name, one_error_line):
    line = one_error_line(runner.invoke(app, ["calibrate", str(_file(tmp_path, ONE)), "--name", name]))
    assert line.startswith("runplan: error: --name: the name ")


def test_output_to_stdout_is_the_calibration_file_alone_and_one_run_says_why_no_leave_one_out(tmp_path):
    # the report's tables followed the YAML on stdout, so `-o - > cal.yaml` wrote a file that did not load
    result = runner.invoke(app, ["calibrate", str(_file(tmp_path, ONE)), "-o", "-"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    document = yaml.safe_load(result.stdout)
    assert document["families"]["hopper"]["runs"] == ["r0"]
    # the report went to stderr, folded at the terminal width
    assert "Calibration on" in result.stderr
    assert "leave-one-out: none (it needs 2 or more fitted runs" in result.stderr
    assert "unmarked: not" in result.stderr  # the constants not fitted are explained
    assert max(len(line) for line in result.stderr.splitlines()) <= 80


def test_a_peak_far_below_the_prediction_is_refused_at_its_key(tmp_path, one_error_line):
    # 0.05 (TiB, or a fraction of the GPU) went into the file as a +197,474% memory error every plan then quoted
    path = _file(tmp_path, ONE + "    peak_memory: {gib: 0.05}\n")
    line = one_error_line(runner.invoke(app, ["calibrate", str(path), "--json"]))
    assert "measured.yaml:11: runs[0].peak_memory.gib: peak memory 0.05 GiB is under a tenth of the" in line
    assert "not TiB" in line


def test_a_plausible_peak_is_reported_as_its_error(tmp_path):
    path = _file(tmp_path, ONE + "    peak_memory: {gib: 60}\n")
    result = runner.invoke(app, ["calibrate", str(path), "--json"])
    assert result.exit_code == 0, result.output
    (run,) = json.loads(result.stdout)["runs"]
    assert run["memory_error"] is not None and 0 < run["memory_error"] < 9


def test_a_sequence_length_in_k_is_4096_per_k_as_in_plan_files(tmp_path):
    """`seq_len: 8k` read 8000 here and 8192 in plan files: a run fitted at the wrong length, silently."""
    from runplan.calibrate.measured import MeasuredFile

    data = yaml.safe_load(ONE.replace("seq_len: 8192", "seq_len: 8k"))
    assert MeasuredFile.model_validate(data).runs[0].seq_len == 8192


def test_an_attention_kernel_without_a_benchmark_ratio_is_refused(tmp_path, one_error_line):
    """`attention_kernel: cudnn` fitted a ratio named cudnn that soaked up 3% of the user's slowdown and is never
    planned with; only the kernels with a published ratio are fitted apart, and both names agree with it."""
    from typing import get_args

    from runplan.calibrate.constants import KERNEL_BENCHMARK_RATIOS
    from runplan.calibrate.measured import MeasuredRun

    text = ONE.replace("    measured:", "    attention_kernel: cudnn\n    measured:")
    line = one_error_line(runner.invoke(app, ["calibrate", str(_file(tmp_path, text))]))
    assert "measured.yaml:10: runs[0].attention_kernel: 'cudnn' is not one of 'flash-attention-1' or" in line
    annotation = MeasuredRun.model_fields["attention_kernel"].annotation
    named = {arg for union in get_args(annotation) for arg in get_args(union)}
    assert named == set(KERNEL_BENCHMARK_RATIOS)


def test_a_fitted_run_on_a_gpu_without_its_own_constants_is_refused(tmp_path, one_error_line):
    """A B200 run was fitted into the hopper constants (an H100 plan then inherited them under a label that
    called them Hopper's). Fitted: refused, naming the run's gpu; fit: false: predicted with Hopper's."""
    text = (
        "runs:\n" + RUN.format(id="r0", step=2.0) + RUN.format(id="b", step=1.0).replace("h100-sxm", "b200")
    )
    line = one_error_line(runner.invoke(app, ["calibrate", str(_file(tmp_path, text))]))
    assert (
        "measured.yaml:13: runs[1].gpu: b200 is a blackwell GPU: calibrate fits constants for ampere" in line
    )
    assert "set fit: false on this run" in line
    predicted_only = text.replace(
        "    measured: {step_seconds: 1.0}", "    measured: {step_seconds: 1.0}\n    fit: false"
    )
    result = runner.invoke(
        app, ["calibrate", str(_file(tmp_path, predicted_only)), "-o", str(tmp_path / "c.yaml")]
    )
    assert result.exit_code == 0, result.output


def test_a_run_whose_layout_the_memory_model_cannot_fit_is_warned(tmp_path):
    """70B at TP1 DP64 ZeRO-1 was fitted without a word (its peak error, 545%, then printed under every plan):
    the memory model predicts about 390 GB per GPU for it, over an H100's 80 GB."""
    big = (
        RUN.format(id="big", step=12.0)
        .replace("llama-3.1-8b", "llama-3.1-70b")
        .replace("n_gpus: 8", "n_gpus: 64")
        .replace("dp: 8", "dp: 64")
        .replace("global_batch: 16", "global_batch: 128")
    )
    text = "runs:\n" + RUN.format(id="r0", step=2.0) + big
    result = runner.invoke(app, ["calibrate", str(_file(tmp_path, text)), "-o", str(tmp_path / "c.yaml")])
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.split())
    assert "run 'big': the memory model predicts " in out
    assert "GB per GPU for its layout, above the 80 GB of one h100-sxm" in out


def test_the_docs_example_is_a_valid_file_with_a_complete_gpu_entry():
    """The error for a GPU entry missing a field points at docs/calibration.md's example, which showed
    `gpus: {}`: it now holds a complete entry, and the whole example validates."""
    from runplan.calibrate.measured import MeasuredFile

    docs = (Path(__file__).resolve().parents[2] / "docs" / "calibration.md").read_text()
    block = docs.split("## MEASURED.yaml", 1)[1].split("```yaml", 1)[1].split("```", 1)[0]
    measured = MeasuredFile.model_validate(yaml.safe_load(block))
    (gpu,) = measured.gpus.values()
    assert gpu.tdp_watts == 400 and gpu.family == "hopper" and len(measured.runs) == 1
