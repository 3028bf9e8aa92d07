"""A node of more than 8 GPUs writes a synchronous save through all of its hosts' storage NICs, not one host's.

Found on Llama 3.1 70B, 72 B200 at TP2 PP2 DP18, synchronous saves: as one 72-GPU node (a GB200 NVL72 NVLink
domain) the save took 41.5 s, as nine 8-GPU nodes 6.39 s: the whole 988 GB went through one node's 25 GB/s, the
bandwidth of one DGX H100 host (8 GPUs). An NVL72 domain is 18 compute trays of 4 GPUs, each its own host with its
own storage NICs (NVIDIA DGX GB200 User Guide, "Hardware": 18 1RU compute trays, each with 2 Grace CPUs and 4
Blackwell GPUs and running its own OS, with 2 BlueField-3 for the storage and management network). The failure
model already counts such a node per GPU (3.79 failures per 1,000 8-GPU node-days × g/8, ops/reliability.py), so
the write counts it the same way: operations.node_write_bandwidth_bytes_per_s is per 8-GPU host, and a node of g
> 8 GPUs writes at g/8 times it (a job on part of it at its GPUs' share, as its bytes are); g ≤ 8 is one host.

Hand numbers (docs/operations.md §2): 1e9 parameters at ZeRO-1, 14 B/param, RNG 10,072 B per rank, cursor 1,024 B
per replica, fixed cost 0, fully parallel save, storage 2 TB/s.
* 72 ranks on one 72-GPU node: total = 14e9 + 72 × (10,072 + 1,024) = 14,000,798,912 B, all of it on the node;
  9 hosts × 25 GB/s = 225 GB/s, so δ_sync = 14,000,798,912 / 225e9 = 0.062226 s (not / 25e9 = 0.560 s).
* 16 ranks on a 72-GPU node: total = 14e9 + 16 × 11,096 = 14,000,177,536 B on 16/8 = 2 hosts: / 50e9 = 0.28000 s.
* 8 ranks on 4-GPU nodes: each node writes 4 of 8 shares = 7,000,044,384 B through its one host: / 25e9 = 0.28000 s.
* The plan: Llama 3.1 70B = 70,553,706,496 params × 14 B + 72 × 10,072 + 18 × 1,024 = 987,752,634,560 B;
  as one 72-GPU node 2 + 987,752,634,560 / (9 × 25e9) = 6.39001 s, the same as nine 8-GPU nodes (2 + 1/9 of it
  / 25e9).
"""

from __future__ import annotations

import json

import pytest
import yaml
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.ops import CheckpointRequest, OperationsSpec, plan_checkpoints


def _checkpoint(dp: int, gpus_per_node: int):
    return plan_checkpoints(
        CheckpointRequest(
            total_params=1_000_000_000,
            dp=dp,
            zero=1,
            gpus_per_node=gpus_per_node,
            step_seconds=1.0,
            tokens_per_step=1e6,
            total_steps=10_000,
            training_tokens=1e10,
            job_mtbf_seconds=2.28e7,
            spec=OperationsSpec(host_staging=False, save_fixed_seconds=0.0),
        )
    )


def test_a_72_gpu_node_writes_through_nine_hosts():
    c = _checkpoint(dp=72, gpus_per_node=72)
    assert c.total_bytes == 14_000_798_912
    assert c.written_bytes_per_node == pytest.approx(14_000_798_912)
    assert c.sync_seconds == pytest.approx(14_000_798_912 / 225e9)
    assert c.sync_seconds == pytest.approx(0.062226, abs=1e-6)
    assert c.sync_bound == "per-node write bandwidth"
    assert "(72 GPUs × 25 GB/s per 8 GPUs, an 8-GPU host's NICs, = 225 GB/s)" in c.notes["sync_seconds"]


def test_part_of_a_72_gpu_node_writes_through_its_gpus_share_of_the_hosts():
    c = _checkpoint(dp=16, gpus_per_node=72)
    assert c.written_bytes_per_node == pytest.approx(14_000_177_536)
    assert c.sync_seconds == pytest.approx(14_000_177_536 / 50e9)
    assert "(16 GPUs × 25 GB/s per 8 GPUs, an 8-GPU host's NICs, = 50 GB/s)" in c.notes["sync_seconds"]


def test_a_node_share_that_is_not_whole_hosts_is_counted_per_gpu():
    """36 ranks on a 72-GPU node: 36 × 25e9/8 = 112.5 GB/s, said per GPU (not "4.5 hosts")."""
    c = _checkpoint(dp=36, gpus_per_node=72)
    assert c.sync_seconds == pytest.approx(c.written_bytes_per_node / 112.5e9)
    assert "(36 GPUs × 25 GB/s per 8 GPUs, an 8-GPU host's NICs, = 112 GB/s)" in c.notes["sync_seconds"]
    assert "hosts" not in c.notes["sync_seconds"]


def test_a_node_of_8_or_fewer_gpus_is_one_host():
    c = _checkpoint(dp=8, gpus_per_node=4)
    assert c.written_bytes_per_node == pytest.approx(7_000_044_384)
    assert c.sync_seconds == pytest.approx(7_000_044_384 / 25e9)
    eight = _checkpoint(dp=8, gpus_per_node=8)
    assert eight.sync_seconds == pytest.approx(14_000_088_768 / 25e9)
    assert "host" not in eight.notes["sync_seconds"]  # the 8-GPU reason reads as before


def test_the_field_says_it_is_per_8_gpu_host():
    words = OperationsSpec.model_fields["node_write_bandwidth_bytes_per_s"].description
    assert "8-GPU host" in words and "DGX GB200 User Guide" in words and "gpus_per_node/8" in words


PLAN = {
    "schema_version": 1,
    "model": "llama-3.1-70b",
    "budget": {"tokens": "1T"},
    "training": {"seq_len": 4096},
    "cluster": {"gpu": "b200", "gpus": 72},
    "operations": {"host_staging": False},
}


def _sync(tmp_path, gpus_per_node: int) -> dict:
    path = tmp_path / f"nv{gpus_per_node}.yaml"
    plan = {
        **PLAN,
        "name": f"nv{gpus_per_node}",
        "cluster": {**PLAN["cluster"], "gpus_per_node": gpus_per_node},
    }
    path.write_text(yaml.safe_dump(plan))
    result = CliRunner().invoke(app, ["plan", str(path), "-f", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["checkpointing"]


def test_an_nvl72_domain_saves_as_fast_as_nine_8_gpu_nodes(tmp_path):
    nvl72, eights = _sync(tmp_path, 72), _sync(tmp_path, 8)
    assert nvl72["total_bytes"] == eights["total_bytes"] == 987_752_634_560
    assert nvl72["world_size"] == 72
    assert nvl72["sync_seconds"] == pytest.approx(2 + 987_752_634_560 / (9 * 25e9))
    assert nvl72["sync_seconds"] == pytest.approx(6.39001, abs=1e-5)
    assert eights["sync_seconds"] == pytest.approx(nvl72["sync_seconds"])
