"""A user catalog entry that overrides a shipped GPU without ``family:`` (docs/catalog.md recommends one: the B200
with 800 Gb/s NICs, ``inter_node_bandwidth_bytes_per_s: 100e9``) was refused: "GPU 'b200' has no family, and its
name does not say which". The chips a name is read by came only from the merged catalog's entries that state a
family, and the override had replaced the one entry carrying ``b200`` (likewise ``h200``, ``mi300x``). Chip names
are now read from the shipped catalog as well (runplan.catalog.chip_families), so the override plans with the
shipped entry's family: the same step time as the shipped entry when its numbers are the shipped ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from runplan.catalog import family_from_names, load_catalog, shipped_catalog
from runplan.cli.app import app

runner = CliRunner()
FLAGS = ["--model", "8b", "--gpus", "64", "--json"]


def _override(tmp_path: Path, name: str, **changes: float) -> Path:
    """A user catalog replacing the shipped ``name`` with its own numbers (``changes`` over them), no family."""
    spec = shipped_catalog().gpu_entry(name).spec.model_dump(mode="json", exclude={"family"})
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"gpus": [{**spec, **changes}]}))
    return path


def _step(args: list[str]) -> float:
    result = runner.invoke(app, ["parallelize", *FLAGS, *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["fastest"]["step_seconds"]


@pytest.mark.parametrize(("name", "family"), [("b200", "blackwell"), ("h200", "hopper"), ("mi300x", "cdna3")])
def test_an_override_without_family_plans_as_the_shipped_entry(tmp_path, name, family):
    path = _override(tmp_path, name)
    assert load_catalog([path]).gpu(name).family == family
    assert _step(["--gpu", name, "--catalog", str(path)]) == pytest.approx(_step(["--gpu", name]), rel=1e-12)


def test_the_family_moves_the_mi300x_step_so_the_check_above_can_fail(tmp_path):
    # cdna3 keeps FlashAttention-2's rate, hopper takes cuDNN's 1.58 (parallel/timing.attention_kernel_speedup)
    path = tmp_path / "as-hopper.yaml"
    spec = shipped_catalog().gpu_entry("mi300x").spec.model_dump(mode="json")
    path.write_text(yaml.safe_dump({"gpus": [{**spec, "family": "hopper"}]}))
    assert _step(["--gpu", "mi300x", "--catalog", str(path)]) != pytest.approx(
        _step(["--gpu", "mi300x"]), rel=0.005
    )


def test_the_docs_b200_with_800g_nics_plans_as_blackwell(tmp_path):
    path = _override(tmp_path, "b200", inter_node_bandwidth_bytes_per_s=100e9)
    catalog = load_catalog([path])
    assert catalog.gpu("b200").family == "blackwell"
    assert catalog.gpu("b200").inter_node_bandwidth_bytes_per_s == 100e9
    assert family_from_names(("b200-800g",), catalog) == "blackwell"  # other b200 names still read
    _step(["--gpu", "b200", "--catalog", str(path)])


def test_a_plan_file_listing_the_override_plans(tmp_path):
    path = _override(tmp_path, "h200")
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        f"schema_version: 1\nname: t\ncatalog: [{path.name}]\nbudget: {{flops: 1e21}}\n"
        "cluster:\n  gpus: 64\n  gpu: h200\n"
    )
    result = runner.invoke(app, ["plan", str(plan), "--format", "json"])
    assert result.exit_code == 0, result.output
