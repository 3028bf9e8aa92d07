"""`runplan whatif FILE --gpus ...`: every size asked for is planned, a size that is no count says the list form,
and a pin no size can take exits 2 as in `runplan plan`. `--gpus 512 --gpus 1024` kept only its last value, so
the table silently left out a size the user asked for."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app

PLAN70 = Path(__file__).resolve().parents[1] / "examples" / "70b-512-h100.yaml"


def test_a_repeated_gpus_flag_adds_its_sizes():
    result = CliRunner().invoke(app, ["whatif", str(PLAN70), "--gpus", "512", "--gpus", "1024,512", "--json"])
    assert result.exit_code == 0, result.output
    records = json.loads(result.stdout)
    assert [r["gpus"] for r in records] == [512, 1024]  # was [1024, 512]'s last flag alone
    # the fixed 2T tokens on twice the GPUs: cost = billed GPU-hours × 2 USD/h, days = GPU-hours / GPUs / 24
    for record in records:
        assert record["cost"] / 2.0 / record["gpus"] / 24 == pytest.approx(record["wall_clock_days"])
    assert records[1]["wall_clock_days"] < records[0]["wall_clock_days"] / 1.9


def test_more_than_twelve_sizes_over_repeated_flags_is_one_error():
    args = ["whatif", str(PLAN70)]
    for start in (8, 64):
        args += ["--gpus", ",".join(str(start * k) for k in range(1, 8))]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert (
        result.stderr.strip()
        == "runplan: error: --gpus: expected 1 to 12 GPU counts, got 14 (e.g. 256,512,1024)"
    )


@pytest.mark.parametrize(
    ("given", "shown"), [("256;512", "'256;512'"), ("256,abc", "'abc'"), ("256,,512", "''")]
)
def test_a_size_that_is_no_number_says_the_list_form(given, shown):
    """It said "(write e.g. 2e23, 70B, 15T, 4M, 1.5k or 3e-4)", a budget's examples, for `--gpus 256;512`."""
    result = CliRunner().invoke(app, ["whatif", str(PLAN70), "--gpus", given])
    assert result.exit_code == 2
    assert result.stderr == (
        f"runplan: error: --gpus: expected a GPU count, got {shown} (a comma-separated list of counts, "
        "e.g. 256,512,1024 or 1k,2k)\n"
    )


def test_a_pin_no_size_can_take_is_bad_input_as_in_plan(tmp_path):
    """`runplan plan` on 32 GPUs with tp 8 and dp 8 pinned exits 2 at parallel.dp; `whatif --gpus 32` said
    "infeasible" with exit 1 for the same file and size."""
    plan = tmp_path / "pinned.yaml"
    plan.write_text(
        "schema_version: 1\nname: pinned\nmodel: llama-3.1-8b\nbudget:\n  tokens: 1T\ncluster:\n  gpus: 64\n"
        "parallel:\n  tp: 8\n  dp: 8\n"
    )
    expected = (
        f"runplan: error: {plan}:10: parallel.dp: pinned tp·dp = 8·8 = 64 does not divide 32 GPUs (pin "
        "tp·pp·dp·cp = the job's GPUs, or leave dp to the search)\n"
    )
    at_32 = plan.with_name("pinned32.yaml")
    at_32.write_text(plan.read_text().replace("gpus: 64", "gpus: 32"))
    planned = CliRunner().invoke(app, ["plan", str(at_32)])
    assert planned.exit_code == 2 and planned.stderr == expected.replace(str(plan), str(at_32))
    result = CliRunner().invoke(app, ["whatif", str(plan), "--gpus", "32,16"])
    assert result.exit_code == 2, result.output  # was 1
    assert result.stderr == expected
    # a size that takes the pin keeps the table (exit 0), the other size a row that says why
    mixed = CliRunner().invoke(app, ["whatif", str(plan), "--gpus", "32,64"], env={"COLUMNS": "200"})
    assert mixed.exit_code == 0, mixed.output
    assert "infeasible at 32 GPUs: pinned tp·dp = 8·8 = 64 does not divide 32 GPUs" in mixed.stdout


def test_a_size_of_no_whole_nodes_names_the_plan_key_whatif_has_no_flag_for():
    # whatif takes --gpus only: the node size is the plan's cluster.gpus_per_node, not a --gpus-per-node flag
    result = CliRunner().invoke(app, ["whatif", str(PLAN70), "--gpus", "100"])
    assert result.exit_code == 2
    assert "do not fill whole nodes of 8" in result.output
    assert "cluster.gpus_per_node" in result.output and "--gpus-per-node" not in result.output
