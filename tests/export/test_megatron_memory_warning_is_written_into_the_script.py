"""The Megatron memory check (``memory_as_megatron_runs_it``: the layout's memory without the selective-recompute
modules Megatron-core cannot run) is one of the export's warnings, so it belongs in the script's WARNINGS block as
well as on stderr (docs/export.md: every warning goes both places). It was only printed: the CLI added it after the
script had been rendered, so the 70B example's script, 80.1 GB per GPU against a 76 GB limit as Megatron runs
it, said nothing about memory to whoever launched it later."""

from __future__ import annotations

import json

import pytest
from tests.export._plans import EXAMPLES
from typer.testing import CliRunner

from runplan.cli.app import app

MEMORY = (
    "memory: without layernorm, mlp_act recomputed the layout needs 80.1 GB per GPU in Megatron, against the plan's "
    "72.7 GB and the limit 76 GB: over the limit: pin parallel.recompute: full (59.3 GB); or plan with stack preset "
    "megatron-core (62.4 GB)"
)


def _warnings_block(text: str) -> list[str]:
    lines = text.splitlines()
    start = lines.index("# WARNINGS (what this engine cannot express as planned):")
    block = []
    for line in lines[start + 1 :]:
        if not line.startswith("#   - "):
            break
        block.append(line.removeprefix("#   - "))
    return block


@pytest.mark.parametrize("version", [None, "0.20"])
def test_the_70b_scripts_warnings_block_has_its_memory_line(tmp_path, version: str | None) -> None:
    out = tmp_path / "70b.sh"
    extra = ["--engine-version", version] if version else []
    result = CliRunner().invoke(
        app, ["export", str(EXAMPLES / "70b-512-h100.yaml"), "--to", "megatron", "-o", str(out), *extra]
    )
    assert result.exit_code == 0, result.output
    assert MEMORY in _warnings_block(out.read_text())
    # the JSON result carries the same text and the same list, the memory line last as before
    data = json.loads(
        CliRunner()
        .invoke(app, ["export", str(EXAMPLES / "70b-512-h100.yaml"), "--to", "megatron", "--json", *extra])
        .stdout
    )
    assert data["warnings"][-1] == MEMORY and _warnings_block(data["text"]) == data["warnings"]
