"""Where the cluster's topology shows in the plan:

* a TP (or EP) group whose size does not divide the node has copies straddling two nodes (groups are runs of
  consecutive ranks): TP 6 on 8-GPU nodes is not "within a node" (timing.within_node);
* MI300X's intra-node figure, 448 GB/s each way, is the sum of 7 Infinity Fabric links (AMD MI300X datasheet:
  7 links × 128 GB/s both ways), reached only by a collective over all 8 GPUs; a TP 2 group talks over one link,
  64 GB/s each way (GpuSpec.intra_node_link_bytes_per_s);
* a plan on a GPU other than an H100 without cluster.price_per_gpu_hour costs 2 USD/h, an H100 planning figure,
  and says so.
"""

from __future__ import annotations

import json

from typer.testing import CliRunner

from runplan.cli.app import app

RUN = CliRunner()


def _layout(*args: str) -> dict:
    result = RUN.invoke(app, ["parallelize", *args, "--top", "1", "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["layouts"][0]


def test_tp_group_that_straddles_nodes_is_not_called_intra_node():
    # ranks 6..11 of TP 6 span two 8-GPU nodes (groups are runs of consecutive ranks): not "within a node", so
    # a pin is refused at --tp unless cross-node TP is allowed, and then it is priced at the scale-out network
    result = RUN.invoke(
        app, ["parallelize", "--model", "gpt-3-175b", "--gpus", "576", "--tp", "6", "--top", "1"]
    )
    assert result.exit_code == 2, result.output
    assert "tp=6 does not divide a node of 8 GPUs" in result.output
    assert "pin one of 1, 2, 4, 8, or allow it: --allow-cross-node-tp" in result.output
    args = ["--model", "gpt-3-175b", "--gpus", "576", "--pp", "8", "--allow-cross-node-tp"]
    six, eight = _layout(*args, "--tp", "6"), _layout(*args, "--tp", "8")
    assert "across nodes (allowed)" in " ".join(six["why"])
    # the same TP traffic per GPU at 6 as at 8 would take 9x longer at 50 GB/s than at 450 GB/s: far more time
    assert six["time_seconds"]["tensor_parallel"] > 4 * eight["time_seconds"]["tensor_parallel"]


def test_mi300x_tp2_is_not_faster_than_h100_nvswitch():
    pins = [
        "--model",
        "llama-3.1-70b",
        "--gpus",
        "512",
        "--tp",
        "2",
        "--pp",
        "2",
        "--dp",
        "128",
        "--mbs",
        "1",
    ]
    pins += ["--microbatches", "32", "--vpp", "1", "--recompute", "selective"]
    mi300x = _layout(*pins, "--gpu", "mi300x")["time_seconds"]["tensor_parallel"]
    h100 = _layout(*pins, "--gpu", "h100-sxm")["time_seconds"]["tensor_parallel"]
    # one Infinity Fabric link, 64 GB/s each way, against NVSwitch's 450: about 7x the H100 TP time
    assert mi300x > 3 * h100


def test_default_price_on_a100_says_it_is_the_h100_planning_figure(tmp_path):
    plan = tmp_path / "a100.yaml"
    body = "schema_version: 1\nmodel: llama-3.1-70b\nbudget: {tokens: 2T}\ncluster: {gpu: a100-80gb, gpus: 512}\n"
    plan.write_text(body)
    result = RUN.invoke(app, ["plan", str(plan), "-f", "json"])
    assert result.exit_code == 0, result.output
    cost = json.loads(result.stdout)["cost"]["main"]["notes"]["cost"]
    assert cost.endswith(
        "USD (the default price, a common H100 planning figure: set cluster.price_per_gpu_hour)"
    )
    plan.write_text(body.replace("gpus: 512}", "gpus: 512, price_per_gpu_hour: 2}"))  # given: no note
    result = RUN.invoke(app, ["plan", str(plan), "-f", "json"])
    assert "default price" not in json.loads(result.stdout)["cost"]["main"]["notes"]["cost"]
