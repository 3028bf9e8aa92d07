"""The GB200 NVL72 entry docs/catalog.md tells users to add: its numbers are NVIDIA's rack figures ÷ 72 (sparse FLOP/s
halved), and a 72-GPU NVLink domain plans as one: whole racks, TP up to 72, data parallelism at NVLink inside it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from runplan.catalog import load_catalog
from runplan.cli.app import app
from runplan.parallel.timing import dp_bandwidth

DOC = Path(__file__).resolve().parents[1] / "docs" / "catalog.md"
RACK_GPUS = 72


@pytest.fixture(scope="module")
def nvl72_file(tmp_path_factory) -> Path:
    section = DOC.read_text("utf-8").split("### GB200 NVL72", 1)[1]
    block = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert block, "docs/catalog.md lost its GB200 NVL72 example"
    path = tmp_path_factory.mktemp("nvl72") / "nvl72.yaml"
    path.write_text(block.group(1))
    return path


def test_documented_entry_is_the_rack_figures_per_gpu(nvl72_file):
    gpu = load_catalog([nvl72_file]).gpu("gb200-nvl72")
    # NVIDIA GB200 NVL72 specifications, whole rack: bf16 360 PFLOP/s and fp8 720 PFLOP/s (with sparsity),
    # 13.4 TB HBM3e at 576 TB/s, NVLink 130 TB/s (both directions)
    assert gpu.bf16_flops == pytest.approx(360e15 / RACK_GPUS / 2)
    assert gpu.fp8_flops == pytest.approx(720e15 / RACK_GPUS / 2)
    assert gpu.hbm_bytes == pytest.approx(13.4e12 / RACK_GPUS, rel=0.001)  # 186.1 GB → 186 GB
    assert gpu.hbm_bandwidth_bytes_per_s == pytest.approx(576e12 / RACK_GPUS)
    assert gpu.intra_node_bandwidth_bytes_per_s == pytest.approx(
        130e12 / RACK_GPUS / 2, rel=0.01
    )  # 1.8 TB/s / 2
    assert (gpu.gpus_per_node, gpu.inter_node_bandwidth_bytes_per_s, gpu.family) == (72, 50e9, "blackwell")


def test_data_parallel_inside_the_rack_runs_at_nvlink(nvl72_file):
    gpu = load_catalog([nvl72_file]).gpu("gb200-nvl72")
    nvlink = gpu.intra_node_bandwidth_bytes_per_s
    assert float(dp_bandwidth(gpu, 4, 18, RACK_GPUS)) == nvlink  # 4 × 18 = 72: one rack
    # across racks: min(NVLink, k × NIC) with k = 72 / t members per rack (docs/parallel.md, DP bandwidth)
    assert float(dp_bandwidth(gpu, 4, 144, RACK_GPUS)) == min(nvlink, 18 * 50e9)  # 900e9
    assert float(dp_bandwidth(gpu, 8, 72, RACK_GPUS)) == 9 * 50e9  # 450e9


def test_tp_is_searched_up_to_the_rack(nvl72_file):
    # GPT-3 175B has 96 heads: every TP dividing 96 and the 72-GPU rack is a candidate, not just those up to 8;
    # 16 and 48 divide 96 and 576 but not 72, so their groups would straddle racks (timing.within_node)
    args = ["parallelize", "--model", "gpt-3-175b", "--gpus", "576", "--gpu", "gb200-nvl72"]
    result = CliRunner().invoke(app, [*args, "--catalog", str(nvl72_file), "--top", "1", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["cluster"] == {"gpu": "gb200-nvl72", "n_gpus": 576, "gpus_per_node": 72}
    tps = {row["tp"] for row in data["best_by_tp"]}
    assert tps >= {12, 24} and not tps & {16, 48}


def test_a_gpu_count_that_does_not_fill_racks_exits_2(nvl72_file):
    args = ["parallelize", "--model", "llama-3.1-70b", "--gpus", "512", "--gpu", "gb200-nvl72"]
    result = CliRunner().invoke(app, [*args, "--catalog", str(nvl72_file)])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "--gpus" in lines[0] and "multiple of 72, e.g. 504" in lines[0]
