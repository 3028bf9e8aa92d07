"""The refusal of a GPU without ``family:`` told every name "an A100 is ampere, an H100 hopper", an L40S and an RTX
4090 (Ada), an MI250X (CDNA2) and a TPU alike. It now says which value the nearest parts take, from what each
value changes: ampere picks Ampere's fitted constants and FlashAttention-2's rate (no cuDNN speedup), cdna3
Hopper's constants with FlashAttention-2's rate, hopper and blackwell Hopper's constants with cuDNN attention's
1.58 (runplan.calibrate.calibration.gpu_family; runplan.parallel.timing.attention_kernel_speedup). A name that
carries chips of two families (``a100-h100-mix``, or a name and an alias of two) was told its name "does not say
which"; it is now told which chips of which families it carries."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app

runner = CliRunner()

NUMBERS = (
    "hbm_bytes: 48e9, bf16_flops: 362e12, hbm_bandwidth_bytes_per_s: 864e9, intra_node_bandwidth_bytes_per_s: "
    "32e9, inter_node_bandwidth_bytes_per_s: 25e9, gpus_per_node: 8, tdp_watts: 350"
)
FLAGS = ["--model", "8b", "--gpus", "64"]


def _refusal(tmp_path: Path, one_error_line, name: str, aliases: str = "") -> str:
    path = tmp_path / "cat.yaml"
    listed = f", aliases: [{aliases}]" if aliases else ""
    path.write_text(f"gpus:\n  - {{name: {name}, {NUMBERS}{listed}}}\n")
    result = runner.invoke(app, ["parallelize", *FLAGS, "--gpu", name, "--catalog", str(path)])
    return one_error_line(result).replace(f"{tmp_path}/", "")


@pytest.mark.parametrize("name", ["l40s", "rtx-4090", "mi250x", "tpu-v5p"])
def test_the_hint_names_the_value_for_the_nearest_parts(tmp_path, one_error_line, name):
    line = _refusal(tmp_path, one_error_line, name)
    assert f"--gpu: GPU '{name}' has no family, and its name does not say which" in line
    assert "an A100 is ampere, an H100 hopper" not in line
    assert (
        "ampere for an A100, an Ada card (L40S, RTX 4090) or any other NVIDIA card with FlashAttention-2 but not "
        "Hopper's cuDNN attention"
    ) in line
    assert "cdna3 for any AMD Instinct (MI250X's CDNA2, MI355X's CDNA 4)" in line
    assert "no value fits a TPU" in line


def test_a_name_carrying_two_families_is_told_which(tmp_path, one_error_line):
    line = _refusal(tmp_path, one_error_line, "a100-h100-mix")
    assert (
        "GPU 'a100-h100-mix' has no family, and the chips its names carry are of two families "
        "(a100: ampere (a100-40gb, a100-80gb); h100: hopper (h100-sxm, h100-pcie))"
    ) in line
    assert "does not say which" not in line
    assert "add family: ampere, hopper, blackwell or cdna3 to its entry in cat.yaml" in line


def test_a_name_and_an_alias_of_two_families_are_told_which(tmp_path, one_error_line):
    line = _refusal(tmp_path, one_error_line, "a100-ours", aliases="h100-ours")
    assert (
        "the chips its names carry are of two families (a100: ampere (a100-40gb, a100-80gb); h100: hopper "
        "(h100-sxm, h100-pcie))"
    ) in line


def test_a_user_entry_that_gave_a_chip_another_family_is_named(tmp_path):
    """A user entry b200-weird stating family: hopper makes b200 read as two families; the refusal of another
    b200 entry without a family names the entry that did it (it said only "b200: blackwell, hopper")."""
    from runplan.catalog import load_catalog, with_family
    from runplan.errors import SpecError

    spec = (
        "hbm_bytes: 180e9, bf16_flops: 2250e12, hbm_bandwidth_bytes_per_s: 8e12, intra_node_bandwidth_bytes_per_s: "
        "900e9, inter_node_bandwidth_bytes_per_s: 50e9, gpus_per_node: 8, tdp_watts: 1000"
    )
    path = tmp_path / "cat.yaml"
    path.write_text(
        f"gpus:\n  - {{name: b200-weird, family: hopper, {spec}}}\n  - {{name: b200-x, {spec}}}\n"
    )
    catalog = load_catalog([path])
    gpu = catalog.gpu_entry("b200-x").spec
    with pytest.raises(SpecError) as raised:
        with_family(gpu, ("b200-x",), catalog, where="cluster.gpu")
    assert "(b200: blackwell (b200), hopper (b200-weird))" in raised.value.message
