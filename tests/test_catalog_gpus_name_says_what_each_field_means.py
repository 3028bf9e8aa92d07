"""`runplan catalog gpus NAME` showed raw field names (``hbm_bytes 8e+10``, ``bf16_flops 9.89e+14``) with no word of
what they are or their unit; each shown field now has a one-line meaning with its unit, the one docs/catalog.md's
"GPU fields (units)" table gives it (checked against that table, so the two cannot drift)."""

from __future__ import annotations

import re
from pathlib import Path

from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.cli.catalog import GPU_FIELD_MEANINGS
from runplan.hardware import GpuSpec

DOCS = Path(__file__).resolve().parents[1] / "docs" / "catalog.md"


def _rows(text: str) -> dict[str, str]:
    """The table's rows: field → its value cell, the lines of a folded cell joined by a space."""
    rows: dict[str, str] = {}
    last = ""
    for line in text.splitlines():
        if not line.startswith("│"):
            continue
        field, value = (cell.strip() for cell in line.strip()[1:-1].split("│"))
        last = field or last
        rows[last] = f"{rows[last]} {value}" if field == "" else value
    return rows


def _meaning(field: str) -> str:
    unit, meaning = GPU_FIELD_MEANINGS[field]
    return f"{unit}: {meaning}" if unit else meaning


def test_each_shown_field_has_its_meaning_and_unit():
    result = CliRunner().invoke(app, ["catalog", "gpus", "h100-sxm"], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    rows = _rows(result.stdout)
    assert rows["hbm_bytes"] == "8e+10 bytes: device memory, decimal as marketed (80 GB = 80e9)"
    assert rows["bf16_flops"].startswith("9.89e+14 FLOP/s: dense bf16 tensor-core peak")
    assert rows["inter_node_bandwidth_bytes_per_s"].startswith(
        "5e+10 bytes/s: scale-out NIC bandwidth per GPU"
    )
    assert rows["tdp_watts"] == "700 W: board power (TDP)"
    assert rows["gpus_per_node"] == "8 GPUs: how many in one node / NVLink domain"
    # a field the entry leaves empty says so before its meaning (H100s are switched: no peer-to-peer link)
    assert rows["intra_node_link_bytes_per_s"] == "(none) " + _meaning("intra_node_link_bytes_per_s")
    # every shown field says what it is: the 12 GpuSpec fields (family_read_from_name is said beside the
    # family), the aliases and the note
    assert [field for field, cell in rows.items() if not cell.endswith(_meaning(field))] == []
    assert len(rows) == 14


def test_every_field_of_a_gpu_has_a_meaning_and_the_docs_give_the_same_unit():
    fields = set(GpuSpec.model_fields) | {"aliases", "note"}
    assert sorted(fields - set(GPU_FIELD_MEANINGS)) == []
    assert sorted(set(GPU_FIELD_MEANINGS) - fields) == []
    section = DOCS.read_text().split("## GPU fields (units)", 1)[1].split("\n\n", 2)[1]
    documented = {
        match.group(1): match.group(2).strip()
        for match in re.finditer(r"^\| `([a-z_0-9]+)` \|([^|]*)\|", section, re.MULTILINE)
    }
    assert {field: unit for field, (unit, _) in GPU_FIELD_MEANINGS.items()} == documented


def test_the_meaning_fits_an_80_column_terminal_below_its_value():
    result = CliRunner().invoke(app, ["catalog", "gpus", "mi300x"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert max(len(line) for line in result.stdout.splitlines()) <= 80
    rows = _rows(result.stdout)
    assert rows["intra_node_link_bytes_per_s"] == "6.4e+10 " + _meaning("intra_node_link_bytes_per_s")
    assert rows["family"] == "cdna3 " + _meaning("family")
