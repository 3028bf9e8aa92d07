"""A key written in the wrong section of a plan file is pointed to the section it belongs in."""

from __future__ import annotations

from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.spec import PlanSpec
from runplan.validation import key_paths

PLAN = """schema_version: 1
model: llama-3-8b
budget: {tokens: 1T}
cluster: {gpu: h100-sxm, gpus: 64}
cost: {price_per_gpu_hour: 3}
"""


def test_a_key_in_the_wrong_section_names_where_it_belongs(tmp_path):
    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN)
    result = CliRunner().invoke(app, ["plan", str(plan)])
    assert result.exit_code == 2
    assert "plan.yaml:5: cost.price_per_gpu_hour: unknown key 'price_per_gpu_hour'" in result.output
    assert "belongs at cluster.price_per_gpu_hour" in result.output
    assert "Traceback" not in result.output


def test_key_paths_finds_every_section_a_field_lives_in():
    assert key_paths(PlanSpec, "price_per_gpu_hour") == ["cluster.price_per_gpu_hour"]
    assert key_paths(PlanSpec, "no_such_key") == []


def _error(tmp_path, cluster: str) -> str:
    plan = tmp_path / "plan.yaml"
    plan.write_text(f"schema_version: 1\nmodel: llama-3-8b\nbudget: {{tokens: 1T}}\ncluster: {cluster}\n")
    result = CliRunner().invoke(app, ["plan", str(plan)])
    assert result.exit_code == 2
    return result.output


def test_a_near_exact_spelling_beats_a_missing_required_key(tmp_path):
    # gpus is missing too, but "gpus_per_nod" is gpus_per_node misspelt (difflib ratio 0.96)
    assert "did you mean 'gpus_per_node'?" in _error(tmp_path, "{gpu: h100-sxm, gpus_per_nod: 8}")


def test_a_loose_spelling_names_the_missing_required_key(tmp_path):
    # "gpu_count" is nearer to gpu (0.50) than to gpus (0.46), but gpu is given: the missing gpus is meant
    output = _error(tmp_path, "{gpu: h100-sxm, gpu_count: 8}")
    assert "did you mean 'gpus'?" in output and "(+1 more)" not in output
