"""A GPU the user defines without ``family:`` (a ``catalog:`` file's entry, an inline ``cluster.gpu`` spec, a ``--gpu``
name from ``--catalog``) was planned as Hopper silently in every command but calibrate: an ``a100-custom`` entry was
timed with Hopper's constants and without the Ampere FlashAttention-2 rule (parallel/timing.py). Its family is now read
from its name as calibrate reads it (runplan.catalog.with_family, one rule), and a name that does not say it is refused
in one line naming the key and its values, in every command (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from runplan.catalog import NEAREST_FAMILY_HINT, load_catalog
from runplan.cli.app import app

runner = CliRunner()

#: the shipped a100-80gb's numbers (configs/gpus.yaml), under a name of the user's and without family
A100_NUMBERS = (
    "hbm_bytes: 80e9, bf16_flops: 312e12, hbm_bandwidth_bytes_per_s: 2039e9, intra_node_bandwidth_bytes_per_s: "
    "300e9, inter_node_bandwidth_bytes_per_s: 25e9, gpus_per_node: 8, tdp_watts: 400"
)
FLAGS = ["--model", "8b", "--gpus", "64", "--json"]


def _catalog(tmp_path: Path, name: str, family: str = "") -> Path:
    path = tmp_path / "cat.yaml"
    path.write_text(f"gpus:\n  - {{name: {name}, {A100_NUMBERS}{family}}}\n")
    return path


def _plan(tmp_path: Path, gpu: str, catalog: Path | None = None) -> Path:
    path = tmp_path / "plan.yaml"
    listed = f"catalog: [{catalog.name}]\n" if catalog else ""
    path.write_text(
        f"schema_version: 1\nname: t\n{listed}budget: {{flops: 1e21}}\ncluster:\n  gpus: 64\n  gpu: {gpu}\n"
    )
    return path


def _step(args: list[str]) -> float:
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["fastest"]["step_seconds"]


def _plan_step(path: Path) -> float:
    result = runner.invoke(app, ["plan", str(path), "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["layout"]["best"]["step_seconds"]


def test_an_a100_custom_catalog_entry_is_timed_as_the_shipped_a100(tmp_path):
    shipped = _step(["parallelize", *FLAGS, "--gpu", "a100-80gb"])
    as_hopper = _step(
        [
            "parallelize",
            *FLAGS,
            "--gpu",
            "a100-custom",
            "--catalog",
            str(_catalog(tmp_path, "a100-custom", ", family: hopper")),
        ]
    )
    assert as_hopper != pytest.approx(
        shipped, rel=0.01
    )  # the family moves the step time: the check below can fail
    custom = _step(
        ["parallelize", *FLAGS, "--gpu", "a100-custom", "--catalog", str(_catalog(tmp_path, "a100-custom"))]
    )
    assert custom == pytest.approx(shipped, rel=1e-12)


def test_a_plan_with_a_catalog_entry_or_an_inline_a100_plans_as_the_shipped_a100(tmp_path):
    shipped = _plan_step(_plan(tmp_path, "a100-80gb"))
    catalog = _catalog(tmp_path, "a100-custom")
    assert _plan_step(_plan(tmp_path, "a100-custom", catalog)) == pytest.approx(shipped, rel=1e-12)
    assert _plan_step(_plan(tmp_path, f"{{name: a100-custom, {A100_NUMBERS}}}")) == pytest.approx(
        shipped, rel=1e-12
    )


def test_the_family_read_from_the_name_is_the_one_the_spec_carries(tmp_path):
    catalog = load_catalog([_catalog(tmp_path, "my-h100-sxm5-custom")])
    assert catalog.gpu("my-h100-sxm5-custom").family == "hopper"
    assert (
        catalog.gpu_entry("my-h100-sxm5-custom").spec.family is None
    )  # as written: listed as the user wrote it


@pytest.mark.parametrize("name", ["gb300", "mi355x", "mygpu"])  # unreleased or renamed parts: no chip we know
def test_a_flag_gpu_whose_name_says_no_family_is_told_the_key(tmp_path, name, one_error_line):
    catalog = _catalog(tmp_path, name)
    line = one_error_line(
        runner.invoke(app, ["parallelize", *FLAGS, "--gpu", name, "--catalog", str(catalog)])
    )
    assert f"--gpu: GPU '{name}' has no family, and its name does not say which" in line
    assert f"(add family: ampere, hopper, blackwell or cdna3 to its entry in {catalog}; " in line


def test_a_plan_file_gpu_whose_name_says_no_family_is_told_the_key_in_every_command(tmp_path, one_error_line):
    path = _plan(tmp_path, "gb300", _catalog(tmp_path, "gb300"))
    commands = (
        ["plan"],
        ["check"],
        ["whatif", "--gpus", "64,128"],
        ["parallelize"],
        ["allocate"],
        ["diff", str(path)],
    )
    for command in commands:
        line = one_error_line(runner.invoke(app, [*command, str(path)]))
        assert "plan.yaml:7: cluster.gpu: GPU 'gb300' has no family" in line, command
        assert "or cdna3 to its entry in" in line, command


def test_an_inline_spec_whose_name_says_no_family_is_told_the_key(tmp_path, one_error_line):
    path = _plan(tmp_path, f"{{name: mi355x, {A100_NUMBERS}}}")
    line = one_error_line(runner.invoke(app, ["plan", str(path)]))
    assert "cluster.gpu.family: GPU 'mi355x' has no family" in line
    assert f"(add family: ampere, hopper, blackwell or cdna3; {NEAREST_FAMILY_HINT})" in line


def test_a_stated_family_plans_whatever_the_name(tmp_path):
    path = _plan(tmp_path, "gb300", _catalog(tmp_path, "gb300", ", family: blackwell"))
    result = runner.invoke(app, ["plan", str(path), "--format", "json"])
    assert result.exit_code == 0, result.output


def test_docs_catalog_md_quotes_the_refusal_as_printed(tmp_path, monkeypatch, one_error_line):
    monkeypatch.chdir(tmp_path)
    _plan(tmp_path, "gb300", _catalog(tmp_path, "gb300"))
    line = one_error_line(runner.invoke(app, ["plan", "plan.yaml"]))
    doc = " ".join((Path(__file__).resolve().parents[1] / "docs" / "catalog.md").read_text("utf-8").split())
    assert f"`{line.replace(f'{tmp_path}/', '')}`" in doc  # the catalog file is named by its full path
