"""`runplan diff` / `runplan check`: every kind of change shows what changed, in the plan file's spelling.

Found on a user journey (edit a starter plan, diff it): the headline listed ``cost.main.gpu_hours``, a key no
plan has (the cost line's GPU-hours are ``billed_gpu_hours``), so a GPU-hours change never headlined; a batch-ramp
stage added or a selective-recompute module dropped said only ``1 items → 2 items``; a boolean read ``True``;
and a cost in USD against one in EUR kept a ``relative_change`` in JSON that the terminal rightly leaves out."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.resolved import HEADLINE_PATHS, Change, diff_changes, in_two_currencies

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
PLAN70 = EXAMPLES / "70b-512-h100.yaml"


def run(*args: str):
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})


def _lookup(data: dict, path: str):
    for key in path.split("."):
        data = data[key]
    return data


def test_every_headline_path_is_a_number_of_the_plan():
    plan = json.loads(run("plan", str(PLAN70), "--json").stdout)
    missing = []
    for path in HEADLINE_PATHS:
        try:
            _lookup(plan, path)
        except KeyError:
            missing.append(path)
    assert missing == []  # was ['cost.main.gpu_hours']


def test_a_cluster_size_change_headlines_gpu_hours_and_goodput(tmp_path):
    bigger = tmp_path / "1024.yaml"
    bigger.write_text(PLAN70.read_text().replace("gpus: 512", "gpus: 1024", 1))
    data = json.loads(run("diff", str(PLAN70), str(bigger), "--json").stdout)
    head = {c["path"]: c for c in data["headline"]}
    hours = head["cost.main.billed_gpu_hours"]
    # 2T tokens on a fixed model: the GPU-hours are the cost over the price, 2 USD/h on both sides
    cost = head["cost.main.cost"]
    assert abs(hours["old"] * 2.0 - cost["old"]) < 1e-6 * cost["old"]
    assert abs(hours["new"] * 2.0 - cost["new"]) < 1e-6 * cost["new"]
    # twice the nodes fail twice as often: goodput falls (Daly 2006, docs/operations.md)
    assert head["cost.main.goodput"]["new"] < head["cost.main.goodput"]["old"]


def test_a_list_that_grew_or_shrank_names_the_items():
    grew = diff_changes({"ramp": [{"batch_fraction": 0.5}]}, {"ramp": [{"batch_fraction": 0.5}, {"b": 1}]})
    assert [c.readable() for c in grew] == ['ramp: 1 item → 2 items (added [1] {"b": 1})']
    assert grew[0].record()["added"] == [{"b": 1}]
    shrank = diff_changes({"zero_stages": [0, 1, 3]}, {"zero_stages": [0]})
    assert shrank[0].readable() == "zero_stages: 3 items → 1 item (removed [1] 1; [2] 3)"
    assert shrank[0].record()["removed"] == [1, 3]
    assert shrank[0].text() == "zero_stages: 3 items → 1 items"  # check's raw line is unchanged


def test_a_list_of_strings_says_which_items_went_and_came():
    """Compared index by index, one warning fewer at the top read as every later warning "changed" into the
    next one, and a recompute module dropped as 'layernorm' → 'core_attn' with the rest unsaid."""
    modules = diff_changes({"m": ["layernorm", "mlp_act", "moe_act"]}, {"m": ["mlp_act", "core_attn"]})
    assert [c.readable() for c in modules] == [
        "m[0]: 'layernorm' → (gone)",
        "m[1]: (new) → 'core_attn'",
        "m[2]: 'moe_act' → (gone)",
    ]
    warnings = diff_changes(
        {"warnings": ["memory: 100%", "law extrapolates"]}, {"warnings": ["law extrapolates"]}
    )
    assert [c.record() for c in warnings] == [
        {
            "path": "warnings[0]",
            "section": "warnings",
            "kind": "gone",
            "old": "memory: 100%",
            "new": None,
            "relative_change": None,
        }
    ]
    # the same items in another order still differ where order means something (catalog files merge in order)
    swapped = diff_changes({"catalog": ["a.yaml", "b.yaml"]}, {"catalog": ["b.yaml", "a.yaml"]})
    assert [c.path for c in swapped] == ["catalog[0]", "catalog[1]"]


def test_booleans_and_mappings_are_spelt_as_in_the_plan_file():
    assert Change("stack.distributed_optimizer", "new", None, True).readable() == (
        "stack.distributed_optimizer: (new) → true"
    )
    assert Change("x", "changed", False, None).text() == "x: false → null"
    assert Change("s", "new", None, {"a": None}).readable() == 's: (new) → {"a": null}'


def test_a_gone_section_with_a_hand_written_nan_is_valid_json():
    (change,) = diff_changes({"extra": {"a": float("nan")}}, {})
    assert change.record()["old"] == {"a": ".nan"}
    json.dumps(change.record(), allow_nan=False)


def test_money_in_two_currencies_has_no_relative_change(tmp_path):
    euro = tmp_path / "eur.yaml"
    euro.write_text(PLAN70.read_text() + "cost:\n  currency: EUR\n")
    result = run("diff", str(PLAN70), str(euro), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    inputs = {c["path"]: c for c in data["inputs"]}
    assert inputs["cost.currency"]["new"] == "EUR"
    # the same 2 USD/h as 2 EUR/h: no number moved, but nothing is a like-for-like percentage either
    head = {c["path"]: c for c in data["headline"]}
    assert "cost.main.cost" not in head  # equal amounts: not a change
    price = in_two_currencies(
        diff_changes({"cluster": {"price_per_gpu_hour": 2.0}}, {"cluster": {"price_per_gpu_hour": 3.0}}),
        "USD",
        "EUR",
    )
    assert price[0].relative_change is None
    same = in_two_currencies(diff_changes({"cost": 1.0}, {"cost": 2.0}), "USD", "USD")
    assert same[0].relative_change == 1.0
    days = in_two_currencies(diff_changes({"days": 1.0}, {"days": 2.0}), "USD", "EUR")
    assert days[0].relative_change == 1.0  # not money: kept


def test_diff_json_of_a_price_change_in_another_currency(tmp_path):
    euro = tmp_path / "eur.yaml"
    euro.write_text(
        PLAN70.read_text().replace("price_per_gpu_hour: 2.0", "price_per_gpu_hour: 2.4")
        + "cost:\n  currency: EUR\n"
    )
    data = json.loads(run("diff", str(PLAN70), str(euro), "--json").stdout)
    records = {c["path"]: c for c in data["inputs"] + data["headline"]}
    assert records["cluster.price_per_gpu_hour"]["relative_change"] is None  # was 0.2: USD vs EUR
    assert records["cost.main.cost"]["relative_change"] is None
    assert records["cost.main.cost"]["new"] > records["cost.main.cost"]["old"]
    text = run("diff", str(PLAN70), str(euro)).stdout
    assert "cluster.price_per_gpu_hour: 2 USD/GPU-hour → 2.4 EUR/GPU-hour\n" in text


def test_a_named_gpu_against_an_inline_spec_diffs_field_by_field(tmp_path):
    """`gpu: h100-sxm` against the same card inline with 200 Gb/s per GPU: the diff printed the name against a
    mapping cut at 60 characters; it now names the field that differs, in its unit."""
    from runplan.catalog import load_catalog

    spec = load_catalog().gpu("h100-sxm").model_dump(mode="json", exclude_none=True)
    inline = {**spec, "name": "my-h100", "inter_node_bandwidth_bytes_per_s": 25e9}
    fields = ", ".join(f"{key}: {json.dumps(value)}" for key, value in inline.items())
    mine = tmp_path / "mine.yaml"
    mine.write_text(PLAN70.read_text().replace("gpu: h100-sxm", "gpu: {" + fields + "}", 1))
    result = run("diff", str(PLAN70), str(mine))
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert "  cluster.gpu.inter_node_bandwidth_bytes_per_s: 50 GB/s → 25 GB/s (-50.00%)" in lines
    assert "  cluster.gpu.name: 'h100-sxm' → 'my-h100'" in lines
    assert not any(line.startswith("  cluster.gpu: ") for line in lines)
    assert not any("bf16_flops" in line for line in lines)  # the same on both sides


def test_a_long_run_of_added_items_is_cut_after_five_in_words():
    """A hand-grown resolved list (300 extra milestone steps) printed every item, ~60 lines; the words name five
    and the count left, the JSON record keeps them all."""
    from runplan.resolved import diff_changes

    (change,) = diff_changes({"steps": [1, 2]}, {"steps": [1, 2, *range(100, 400)]})
    assert change.readable() == (
        "steps: 2 items → 302 items (added [2] 100; [3] 101; [4] 102; [5] 103; [6] 104; ... 295 more)"
    )
    assert len(change.record()["added"]) == 300
