"""A run naming a model or GPU with a typo of one the file defines under ``models:`` / ``gpus:`` is told that
name, not the nearest catalog one ('my-13' was asked "did you mean 'llama-2-13b'?" beside models: my-13b)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from runplan.cli.app import app

runner = CliRunner()

FILE = """\
models:
  my-13b: {n_layers: 40, d_model: 5120, n_heads: 40, n_kv_heads: 40, head_dim: 128, ffn_hidden: 13824,
           mlp: swiglu, vocab_size: 32000, tied_embeddings: false, norm: rmsnorm}
gpus:
  h100-nvl-mine: {name: h100-nvl-mine, hbm_bytes: 94e9, bf16_flops: 835e12, hbm_bandwidth_bytes_per_s: 3.9e12,
                  intra_node_bandwidth_bytes_per_s: 300e9, inter_node_bandwidth_bytes_per_s: 50e9,
                  gpus_per_node: 2, tdp_watts: 400, family: hopper}
runs:
  - id: r0
    model: MODEL
    gpu: GPU
    n_gpus: 8
    seq_len: 4096
    global_batch: 64
    layout: {tp: 2, pp: 1, dp: 4, cp: 1, zero: 1, micro_batch: 1, microbatches: 16}
    measured: {step_seconds: 9.8}
"""


def _line(tmp_path: Path, model: str, gpu: str, one_error_line) -> str:
    path = tmp_path / "measured.yaml"
    path.write_text(FILE.replace("MODEL", model).replace("GPU", gpu))
    return one_error_line(runner.invoke(app, ["calibrate", str(path)]))


def test_a_typo_of_a_model_under_models_suggests_it(tmp_path, one_error_line):
    line = _line(tmp_path, "my-13", "h100-nvl-mine", one_error_line)
    assert (
        "measured.yaml:10: runs[0].model: unknown model 'my-13' (did you mean 'my-13b', under models:?)"
        in line
    )


def test_a_typo_of_a_gpu_under_gpus_suggests_it(tmp_path, one_error_line):
    line = _line(tmp_path, "my-13b", "h100-nvl-min", one_error_line)
    assert (
        "measured.yaml:11: runs[0].gpu: unknown GPU 'h100-nvl-min' (did you mean 'h100-nvl-mine', under gpus:?)"
        in line
    )


def test_a_typo_of_a_catalog_name_still_suggests_the_catalogs(tmp_path, one_error_line):
    line = _line(tmp_path, "my-13b", "h100-sxn", one_error_line)
    assert "runs[0].gpu: unknown GPU 'h100-sxn' (did you mean 'h100-sxm'?)" in line


def test_a_closer_catalog_name_beats_a_farther_name_of_the_file(tmp_path, one_error_line):
    # the catalog's guess for 'h100-sxn' is h100-sxm, a closer spelling than the file's own h100-sxm-mine
    path = tmp_path / "measured.yaml"
    path.write_text(
        FILE.replace("h100-nvl-mine", "h100-sxm-mine").replace("MODEL", "my-13b").replace("GPU", "h100-sxn")
    )
    line = one_error_line(runner.invoke(app, ["calibrate", str(path)]))
    assert "runs[0].gpu: unknown GPU 'h100-sxn' (did you mean 'h100-sxm'?)" in line, line
