"""A stored RunPlan JSON without ``layout.gpu`` (written before that field; a library caller of the exporters)
whose cluster.gpu only a user catalog held was exported as Hopper-class silently: an 'a100-ours' plan, timed as
Ampere, got Megatron's --tp-comm-overlap (which stops at start-up on Ampere: no CUDA multicast) and torchtitan's
"the plan timed cuDNN's fused attention" warning. The family is now read from the chip in the name by the rule
every command uses (catalog.family_from_names: a100 → ampere); a name that says nothing is exported with a
warning naming the GPU, layout.gpu and the fix."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.export import export_plan
from runplan.plan import RunPlan

ENTRY = """  - name: {name}
    hbm_bytes: 80e9
    bf16_flops: 312e12
    hbm_bandwidth_bytes_per_s: 2.039e12
    intra_node_bandwidth_bytes_per_s: 300e9
    inter_node_bandwidth_bytes_per_s: 25e9
    gpus_per_node: 8
    tdp_watts: 400
    family: ampere
"""
PLAN = """schema_version: 1
model: llama-3.1-70b
budget: {{tokens: 1T}}
catalog: [catalog.yaml]
cluster: {{gpu: {name}, gpus: 512}}
"""


def _stored(tmp_path, name: str, *, drop_gpu: bool = True) -> RunPlan:
    """The plan as `runplan plan -f json` stores it, less ``layout.gpu`` (a plan from before that field)."""
    (tmp_path / "catalog.yaml").write_text("gpus:\n" + ENTRY.format(name=name), encoding="utf-8")
    (tmp_path / "plan.yaml").write_text(PLAN.format(name=name), encoding="utf-8")
    result = CliRunner().invoke(app, ["plan", str(tmp_path / "plan.yaml"), "-f", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["layout"]["best"]["tp"] > 1 and data["layout"]["best"]["sequence_parallel"]
    if drop_gpu:
        del data["layout"]["gpu"]
    return RunPlan.model_validate(data)


def _commands(text: str) -> list[str]:
    return [line for line in text.splitlines() if not line.lstrip().startswith("#")]


@pytest.fixture(scope="module")
def a100_ours(tmp_path_factory) -> RunPlan:
    return _stored(tmp_path_factory.mktemp("a100"), "a100-ours")


@pytest.fixture(scope="module")
def nameless(tmp_path_factory) -> RunPlan:
    return _stored(tmp_path_factory.mktemp("nameless"), "ours-gpu-x")


def test_megatron_reads_ampere_from_the_chip_name(a100_ours):
    exported = export_plan(a100_ours, "megatron")
    assert not [line for line in _commands(exported.text) if "--tp-comm-overlap" in line]
    assert any(w.startswith("TP overlap:") and "Ampere (a100-ours)" in w for w in exported.warnings)
    assert not [w for w in exported.warnings if "layout.gpu" in w]


def test_torchtitan_does_not_say_the_a100_plan_timed_cudnn(a100_ours):
    exported = export_plan(a100_ours, "torchtitan")
    assert not [w for w in exported.warnings if "cuDNN" in w]


@pytest.mark.parametrize("target", ["megatron", "torchtitan"])
def test_a_name_that_says_nothing_is_exported_with_a_warning(nameless, target):
    exported = export_plan(nameless, target)
    said = [w for w in exported.warnings if "layout.gpu" in w]
    assert len(said) == 1, exported.warnings
    assert "'ours-gpu-x'" in said[0] and "Hopper-class" in said[0] and "runplan plan" in said[0]
    assert said[0] in exported.text  # written into the file's warnings block too


def test_the_nameless_guess_is_still_hopper_class(nameless):
    """Nothing says otherwise: the flags stay those of a Hopper-class GPU (the warning says so)."""
    assert [line for line in _commands(export_plan(nameless, "megatron").text) if "--tp-comm-overlap" in line]


def test_a_shipped_gpu_plan_without_layout_gpu_exports_as_before(tmp_path):
    """A shipped GPU's plan exports byte-identically with or without layout.gpu, and with no warning added."""
    (tmp_path / "plan.yaml").write_text(
        "schema_version: 1\nmodel: llama-3.1-70b\nbudget: {tokens: 1T}\ncluster: {gpu: h100-sxm, gpus: 512}\n",
        encoding="utf-8",
    )
    result = CliRunner().invoke(app, ["plan", str(tmp_path / "plan.yaml"), "-f", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    with_gpu = RunPlan.model_validate(data)
    del data["layout"]["gpu"]
    without = RunPlan.model_validate(data)
    for target in ("megatron", "torchtitan", "deepspeed"):
        assert export_plan(without, target).text == export_plan(with_gpu, target).text
