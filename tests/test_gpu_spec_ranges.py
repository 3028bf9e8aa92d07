"""A GPU spec (catalog entry or a plan's inline cluster.gpu) refuses numbers no accelerator has, naming the field:
fp8_flops written in TFLOP/s, fp8 below bf16, and an NVLink domain beyond any built (hardware.GpuSpec)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from runplan.catalog import load_catalog
from runplan.cli.app import app
from runplan.defaults import MAX_GPUS_PER_NODE
from runplan.errors import SpecError

# GB200 NVL72 per GPU (NVIDIA GB200 NVL72 spec page: 72 GPUs, bf16 360 PFLOP/s and fp8 720 PFLOP/s with
# sparsity → 2.5e15 / 5e15 dense per GPU; 13.4 TB HBM3e → 186 GB; 576 TB/s → 8 TB/s; NVLink 130 TB/s → 1.8 TB/s
# per GPU, 900 GB/s each way)
GB200 = {
    "name": "gb200-test",
    "hbm_bytes": "186GB",
    "bf16_flops": 2.5e15,
    "fp8_flops": 5.0e15,
    "hbm_bandwidth_bytes_per_s": 8.0e12,
    "intra_node_bandwidth_bytes_per_s": 900e9,
    "inter_node_bandwidth_bytes_per_s": 50e9,
    "gpus_per_node": 72,
    "tdp_watts": 1200,
    "family": "blackwell",
}


def _catalog_error(tmp_path: Path, **changes: object) -> str:
    path = tmp_path / "gpus.yaml"
    path.write_text(yaml.safe_dump({"gpus": [{**GB200, **changes}]}, sort_keys=False))
    with pytest.raises(SpecError) as error:
        load_catalog([path])
    return str(error.value)


def test_fp8_flops_in_tflops_is_refused_naming_the_field(tmp_path):
    text = _catalog_error(tmp_path, fp8_flops=5000)  # meant 5000e12
    assert "gpus[0].fp8_flops" in text and "outside" in text and "FLOP/s" in text


def test_fp8_below_bf16_is_refused(tmp_path):
    # every fp8 tensor core runs at least the bf16 rate (H100/H200/B200/MI300X datasheets: twice it)
    text = _catalog_error(tmp_path, fp8_flops=1.0e15)
    assert "gpus[0].fp8_flops" in text and "bf16_flops" in text


def test_fp8_null_is_still_allowed(tmp_path):
    path = tmp_path / "gpus.yaml"
    path.write_text(yaml.safe_dump({"gpus": [{**GB200, "fp8_flops": None}]}))
    assert load_catalog([path]).gpu("gb200-test").fp8_flops is None


def test_gpus_per_node_beyond_any_nvlink_domain_is_refused_at_the_entry(tmp_path):
    text = _catalog_error(tmp_path, gpus_per_node=MAX_GPUS_PER_NODE + 1)
    assert "gpus[0].gpus_per_node" in text and f"{MAX_GPUS_PER_NODE:,}" in text


def test_inline_gpu_fp8_units_mistake_exits_2_naming_cluster_gpu(tmp_path):
    plan = {
        "schema_version": 1,
        "model": "llama-3.1-70b",
        "cluster": {"gpus": 576, "gpu": {**GB200, "fp8_flops": 5000}},
    }
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(plan, sort_keys=False))
    result = CliRunner().invoke(app, ["parallelize", str(path), "--precision", "fp8", "--top", "1"])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "cluster.gpu.fp8_flops" in lines[0] and "Traceback" not in result.output


def test_inline_gpu_nvlink_domain_too_large_names_cluster_gpu_gpus_per_node(tmp_path):
    plan = {
        "schema_version": 1,
        "model": "llama-3.1-70b",
        "cluster": {"gpus": 576, "gpu": {**GB200, "gpus_per_node": 100_000}},
    }
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(plan, sort_keys=False))
    result = CliRunner().invoke(app, ["parallelize", str(path), "--top", "1"])
    assert result.exit_code == 2
    assert "cluster.gpu.gpus_per_node" in result.output
