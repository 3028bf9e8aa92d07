"""The published rows, read as measured runs (calibrate/published.py), never say two contradicting things: a row
that pins ZeRO >= 1 (FSDP, DeepSpeed or PyTorch ZeRO shard the optimizer states) carries no
``distributed_optimizer: false``, which in a plan means ZeRO-0 only (Stack.distributed_optimizer) and is refused
beside a ZeRO pin (request_rules.zero_against_stack, 244d266). In benchmarks/published_runs.yaml the MPT
(llm-foundry/Composer FSDP), torchtitan (FSDP2) and IBM fms-fsdp rows state ``distributed_optimizer: false``
meaning "not Megatron's --use-distributed-optimizer" beside their ZeRO-3 pin: 93 of the converted runs carried
the contradiction. A row without a ZeRO pin keeps the key as stated (it then fixes the sharding), and so does a
row whose pin agrees with it (ZeRO-0 beside false, ZeRO >= 1 beside true)."""

from __future__ import annotations

from pathlib import Path

import yaml

from runplan.calibrate.published import measured_document
from runplan.parallel.request_rules import zero_against_stack

PUBLISHED = Path(__file__).resolve().parents[2] / "benchmarks" / "published_runs.yaml"


def _runs() -> list[dict]:
    return measured_document(yaml.safe_load(PUBLISHED.read_text()))["runs"]


def test_no_converted_run_pins_zero_beside_distributed_optimizer_false():
    clashes = [
        run["id"]
        for run in _runs()
        if zero_against_stack(run["layout"].get("zero"), run["stack"].get("distributed_optimizer"))
    ]
    assert clashes == []


def test_the_key_is_dropped_only_where_a_zero_pin_says_the_sharding():
    runs = {run["id"]: run for run in _runs()}
    mpt = runs["mpt-70b-s2048-32gpu"]  # pins zero 3, stack distributed_optimizer: false
    assert mpt["layout"]["zero"] == 3 and "distributed_optimizer" not in mpt["stack"]
    agreeing = [
        r
        for r in runs.values()
        if r["layout"].get("zero") is not None and "distributed_optimizer" in r["stack"]
    ]
    # ZeRO-0 beside false (18 runs) and ZeRO-1 beside true (46 runs) keep what the row states
    assert {(r["layout"]["zero"] >= 1, r["stack"]["distributed_optimizer"]) for r in agreeing} == {
        (False, False),
        (True, True),
    }
    assert len(agreeing) == 18 + 46
