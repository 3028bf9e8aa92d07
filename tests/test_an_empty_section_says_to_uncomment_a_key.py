"""A user who uncomments a section header of `runplan init`'s starter (`parallel:`) but none of the keys under it
has a section that YAML reads as null. runplan said "parallel: must be a mapping of keys (key: value), got None",
which names neither the cause nor the fix; it now says the section is empty and how to fix it, at its line, exit 2.
The sections that may be null (budget: says how to write one, law:, model:, resolved:) are unchanged."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.errors import SpecError
from runplan.spec import load_plan_text

BASE = "schema_version: 1\nname: x\nbudget:\n  flops: 2e23\ncluster:\n  gpus: 512\n"
SECTIONS = ["objective", "training", "constraints", "parallel", "stack", "schedule", "operations",
            "monitoring", "cost", "sweep", "catalog"]  # fmt: skip


@pytest.mark.parametrize("section", SECTIONS)
def test_an_empty_section_names_itself_and_the_fix(section):
    with pytest.raises(SpecError) as info:
        load_plan_text(BASE + f"{section}:\n  # a_key: 1\n", "plan.yaml")
    text = str(info.value)
    assert text.startswith(f"plan.yaml:7: {section}: ")
    assert "empty" in text and f"uncomment a key under {section}:" in text


def test_the_cli_says_it_in_one_line_with_exit_2(tmp_path):
    path = tmp_path / "plan.yaml"
    path.write_text(BASE + "# Pin any parallel axis\nparallel:\n  # tp:\n")
    result = CliRunner().invoke(app, ["plan", str(path)])
    assert result.exit_code == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"runplan: error: {path}:8: parallel: ") and "uncomment" in line


def test_sections_that_may_be_null_still_may():
    spec = load_plan_text(BASE + "law:\nmodel:\nresolved:\ndescription:\n")
    assert spec.law is None and spec.model is None and spec.resolved is None
