"""A GPU the user defines without ``family:`` was fitted into the hopper constants silently (GpuSpec's family
unset plans as Hopper), whatever card it was. Its family decides which constants its runs fit, so calibrate reads
it from the GPU's name where the name says it unambiguously (benchmarks/published_runs.yaml's
``h100-grandteton-500w`` is an H100: hopper), and otherwise asks for the key in one line naming the values."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from runplan.catalog import NEAREST_FAMILY_HINT, family_from_names, load_catalog
from runplan.cli.app import app

runner = CliRunner()

SPEC = (
    "{name: NAME, hbm_bytes: 80e9, bf16_flops: 312e12, hbm_bandwidth_bytes_per_s: 2.0e12, "
    "intra_node_bandwidth_bytes_per_s: 300e9, inter_node_bandwidth_bytes_per_s: 25e9, gpus_per_node: 8, "
    "tdp_watts: 400}"
)
RUN = """\
runs:
  - id: r0
    model: llama-3.1-8b
    gpu: GPU
    n_gpus: 8
    seq_len: 8192
    global_batch: 16
    layout: {tp: 1, pp: 1, dp: 8, cp: 1, ep: 1, zero: 1, micro_batch: 1, microbatches: 2, vpp: 1,
             recompute: selective, sequence_parallel: false}
    measured: {step_seconds: 6.0}
"""


def _file(tmp_path: Path, name: str) -> Path:
    """A measured file whose one run names ``name``, defined under ``gpus:`` without a family."""
    path = tmp_path / "measured.yaml"
    path.write_text(f"gpus:\n  {name}: {SPEC.replace('NAME', name)}\n" + RUN.replace("GPU", name))
    return path


def test_a_gpu_under_gpus_without_a_family_is_told_the_key_and_its_values(tmp_path, one_error_line):
    line = one_error_line(runner.invoke(app, ["calibrate", str(_file(tmp_path, "mygpu"))]))
    assert "measured.yaml:2: gpus.mygpu.family: GPU 'mygpu' has no family" in line
    assert f"(add family: ampere, hopper, blackwell or cdna3; {NEAREST_FAMILY_HINT})" in line


def test_an_inline_spec_without_a_family_is_told_at_the_run(tmp_path, one_error_line):
    path = tmp_path / "measured.yaml"
    path.write_text(RUN.replace("GPU", SPEC.replace("NAME", "mygpu")))
    line = one_error_line(runner.invoke(app, ["calibrate", str(path)]))
    assert "runs[0].gpu.family: GPU 'mygpu' has no family" in line


def test_a_user_catalog_gpu_without_a_family_is_told_the_catalog_file(tmp_path, one_error_line):
    catalog = tmp_path / "cat.yaml"
    catalog.write_text("gpus:\n  - " + SPEC.replace("NAME", "mygpu")[1:-1].replace(", ", "\n    ") + "\n")
    path = tmp_path / "measured.yaml"
    path.write_text(RUN.replace("GPU", "mygpu"))
    line = one_error_line(runner.invoke(app, ["calibrate", str(path), "--catalog", str(catalog)]))
    assert "runs[0].gpu: GPU 'mygpu' has no family" in line
    assert f"or cdna3 to its entry in {catalog}" in line


def test_a_name_that_says_ampere_is_fitted_into_the_ampere_constants(tmp_path):
    # it was fitted as hopper: the family column of the report and the file's families
    result = runner.invoke(app, ["calibrate", str(_file(tmp_path, "a100-custom")), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert list(report["calibration"]["families"]) == ["ampere"]
    assert report["runs"][0]["family"] == "ampere"


def test_names_are_read_only_when_unambiguous():
    catalog = load_catalog([])
    assert family_from_names(("h100-grandteton-500w",), catalog) == "hopper"  # published_runs.yaml's entry
    assert family_from_names(("my-a100-sxm4",), catalog) == "ampere"
    assert family_from_names(("b200-nvl",), catalog) == "blackwell"
    assert family_from_names(("mi300x-node",), catalog) == "cdna3"
    assert family_from_names(("h200-custom", "h100-custom"), catalog) == "hopper"  # two chips, one family
    assert family_from_names(("a100-h100-mix",), catalog) is None  # two families
    assert family_from_names(("mygpu", "gpu-80gb-sxm5"), catalog) is None  # no chip: sizes and forms are not
