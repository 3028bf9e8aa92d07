"""`COLUMNS=60 runplan catalog gpus mi300x` cut its field names (``intra_node_bandwidth_byte…``), though the README
says a table prints its rows another way rather than cut a name: rich shrank the field column with the value
column, both folding. The field column now keeps its longest name (``inter_node_bandwidth_bytes_per_s``, 32
cells) and the value column folds; the same for `catalog models NAME`. And a field the entry leaves unset showed
``(none)`` above a meaning that said ``empty where the GPU has none``: the meanings now say ``(none)``, as shown."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.cli.catalog import GPU_FIELD_MEANINGS, MODEL_FIELD_MEANINGS
from runplan.report.format import cell_width


def _shown(args: list[str], columns: int) -> str:
    result = CliRunner().invoke(app, args, env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.parametrize("columns", [50, 60, 70, 80])
@pytest.mark.parametrize(
    ("args", "meanings"),
    [
        (["catalog", "gpus", "mi300x"], GPU_FIELD_MEANINGS),
        (["catalog", "models", "deepseek-v3"], MODEL_FIELD_MEANINGS),
    ],
)
def test_every_field_name_is_shown_whole_within_the_terminal(args, meanings, columns):
    out = _shown(args, columns)
    names = {line.split("│")[1].strip() for line in out.splitlines() if line.count("│") == 3} - {""}
    assert "…" not in out
    longest = "inter_node_bandwidth_bytes_per_s" if args[1] == "gpus" else "published_active_params"
    assert longest in names and names <= set(meanings)  # shown whole: a cut name is no field
    assert max(cell_width(line) for line in out.splitlines()) <= columns


def test_a_meaning_names_an_unset_value_as_it_is_shown():
    for meanings in (GPU_FIELD_MEANINGS, MODEL_FIELD_MEANINGS):
        assert [field for field, (_, meaning) in meanings.items() if "empty" in meaning] == []
    lines = [line.split("│") for line in _shown(["catalog", "gpus", "h100-sxm"], 250).splitlines()]
    rows = [cells[1:3] for cells in lines if len(cells) == 4]
    at = next(k for k, (field, _) in enumerate(rows) if field.strip() == "intra_node_link_bytes_per_s")
    assert [value.strip() for _, value in rows[at : at + 2]] == [
        "(none)",
        "bytes/s: one peer-to-peer link of a node without a switch, one direction; (none): a switched node",
    ]
