"""`schema_version: '1'` (quoted, as a user quotes other numbers) was refused with "schema version '1' is not
supported (this runplan reads schema_version: 1)", which reads as a contradiction. The version is a number, as
the JSON Schema says (const 1), so it stays refused, but the line says to write it unquoted; a real other
version still says which one this runplan reads."""

from __future__ import annotations

import pytest

from runplan.errors import SpecError
from runplan.spec import load_plan_text

REST = "budget:\n  flops: 2e23\ncluster:\n  gpus: 512\n"


@pytest.mark.parametrize("written", ["'1'", '"1"', "' 1'"])
def test_a_quoted_version_one_says_to_unquote_it(written):
    with pytest.raises(SpecError) as info:
        load_plan_text(f"schema_version: {written}\n" + REST, "plan.yaml")
    text = str(info.value)
    assert text.startswith("plan.yaml:1: schema_version: ")
    assert "not supported" not in text
    assert "write schema_version: 1, without quotes" in text


def test_another_version_still_names_the_one_this_runplan_reads():
    with pytest.raises(SpecError) as info:
        load_plan_text("schema_version: '2'\n" + REST, "plan.yaml")
    text = str(info.value)
    assert "schema version '2' is not supported" in text and "this runplan reads schema_version: 1" in text
