"""`runplan whatif`: each size's layout says its micro-batch size, virtual pipeline stages and recomputation, in
the table and in JSON. The layout column said "TP4 PP2 DP64 ZeRO-1" alone: 512 GPUs (v1) and 1,024 (v10, an
interleaved schedule) read as the same kind of layout, and two sizes that differ only in mbs or recompute read
the same."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app

PLAN70 = Path(__file__).resolve().parents[1] / "examples" / "70b-512-h100.yaml"
SIZES = (512, 1024)


@pytest.fixture(scope="module")
def planned(tmp_path_factory) -> dict[int, dict]:
    """`runplan plan --format json` at each size: the layout whatif must report (the same plan, one path apart)."""
    folder = tmp_path_factory.mktemp("sizes")
    out = {}
    for size in SIZES:
        plan = folder / f"at{size}.yaml"
        plan.write_text(PLAN70.read_text().replace("gpus: 512", f"gpus: {size}"))
        result = CliRunner().invoke(app, ["plan", str(plan), "--format", "json"])
        assert result.exit_code == 0, result.output
        out[size] = json.loads(result.stdout)["layout"]["best"]
    return out


@pytest.fixture(scope="module")
def records() -> list[dict]:
    result = CliRunner().invoke(app, ["whatif", str(PLAN70), "--gpus", ",".join(map(str, SIZES)), "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_json_records_carry_mbs_vpp_recompute(records, planned):
    for record in records:
        best = planned[record["gpus"]]
        assert (record["micro_batch"], record["vpp"], record["recompute"]) == (
            best["micro_batch"],
            best["vpp"],
            best["recompute"],
        )
    assert [r["vpp"] for r in records] != [records[0]["vpp"]] * len(records)  # the sizes differ here


def test_table_layout_says_mbs_vpp_recompute(records):
    result = CliRunner().invoke(app, ["whatif", str(PLAN70), "--gpus", "512,1024"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    for record in records:
        row = next(
            line for line in result.stdout.splitlines() if line.strip().startswith(f"{record['gpus']:,} ")
        )
        expected = f"{record['layout']} mbs{record['micro_batch']} v{record['vpp']} {record['recompute']}"
        assert expected in row, row
    assert "mbs = micro-batch sequences, v = virtual pipeline stages, then recomputation" in " ".join(
        result.stdout.split()
    )  # the title says what the short names mean


def test_layout_fits_80_columns():
    result = CliRunner().invoke(app, ["whatif", str(PLAN70), "--gpus", "512,1024"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert max(len(line) for line in result.stdout.splitlines()) <= 80
    assert "v10" in result.stdout
