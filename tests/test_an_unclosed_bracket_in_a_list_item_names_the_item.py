"""A bracket left open inside a list item was named by the keys around the list alone: in a user catalog,
``- name: b`` then ``family: [ampere`` was said at ``gpus.family``, a path that does not exist (``gpus`` is a
list) and names neither entry. The key path now carries the item's index as every other error writes it
(runplan.yamlio: ``gpus[1].family``), for a list indented under its key and one written flush with it."""

from __future__ import annotations

from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.yamlio import _key_at

ENTRY = (
    "  - name: {name}\n    hbm_bytes: 80e9\n    bf16_flops: 312e12\n    hbm_bandwidth_bytes_per_s: 2e12\n"
    "    intra_node_bandwidth_bytes_per_s: 300e9\n    inter_node_bandwidth_bytes_per_s: 25e9\n"
    "    gpus_per_node: 8\n    tdp_watts: 400\n"
)


def test_a_user_catalog_entry_is_named_by_its_index(tmp_path):
    catalog = "gpus:\n" + ENTRY.format(name="a") + ENTRY.format(name="b") + "    family: [ampere\n"
    (tmp_path / "catalog.yaml").write_text(catalog)
    plan = "schema_version: 1\nmodel: llama-3.1-8b\nbudget: {tokens: 1T}\ncatalog: [catalog.yaml]\n"
    (tmp_path / "plan.yaml").write_text(plan + "cluster: {gpu: b, gpus: 64}\n")
    result = CliRunner().invoke(app, ["plan", str(tmp_path / "plan.yaml")])
    assert result.exit_code == 2, result.output
    # line 18: 'gpus:', 8 lines of entry 0, 8 of entry 1, then family
    assert "catalog.yaml:18: gpus[1].family: not valid YAML: the '[' on this line" in result.output


def test_a_key_under_an_item_and_an_item_itself_are_named_with_the_index():
    text = "a:\n  b: 1\nlist:\n  - x: 1\n\n  # a comment: [\n  - x: 2\n    y: [3\n  - [4\nz: 5\n"
    assert _key_at(text, 7) == "list[1].y"
    assert _key_at(text, 6) == "list[1].x"  # the item's first key, on its dash line
    assert _key_at(text, 8) == "list[2]"
    assert _key_at(text, 1) == "a.b"


def test_a_list_flush_with_its_key_is_read_alike():
    text = "gpus:\n- name: a\n- name: b\n  family: [ampere\nother: 1\n"
    assert _key_at(text, 3) == "gpus[1].family"
    assert _key_at(text, 4) == "other"
