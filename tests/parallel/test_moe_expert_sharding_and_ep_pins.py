"""Mixture-of-experts layouts re-derived by hand: Mixtral 8x7B's per-GPU model states under expert parallelism
(the routed experts divided by t·e, their optimizer state sharded over the expert-data-parallel group
d·c/e = world/(ETP·EP·PP), Megatron-core parallel_state.initialize_model_parallel), and an ep pin that no layout
can take once tp or pp alone is pinned (bad input at --ep, exit 2)."""

import json

import pytest
from typer.testing import CliRunner

pytest.importorskip("runplan.catalog")
from runplan.cli.app import app

runner = CliRunner()

# Mixtral 8x7B (huggingface.co/mistralai/Mixtral-8x7B-v0.1 config.json): L 32, h 4096, 32 heads, 8 KV heads of
# 128, 8 experts of SwiGLU width 14336, top 2, V 32000, untied, RMSNorm
L, H, A, KV, HD, E, K, F, V = 32, 4096, 32, 8, 128, 8, 2, 14336, 32000
ATTN = H * A * HD + 2 * H * KV * HD + A * HD * H  # q, k, v, o: 41,943,040
EXPERT = 3 * H * F  # gate, up, down: 176,160,768
COMMON = ATTN + 2 * H + H * E  # attention, two norms, router


def test_mixtral_expert_states_shard_over_expert_data_parallel():
    # 64 GPUs: t 1, p 2 (16 layers a stage), d 32, e 8, ZeRO-1, b 1, no recompute. First stage: embedding + 16 layers
    args = [
        "--tp",
        "1",
        "--pp",
        "2",
        "--dp",
        "32",
        "--ep",
        "8",
        "--cp",
        "1",
        "--zero",
        "1",
        "--mbs",
        "1",
        "--vpp",
        "1",
        "--recompute",
        "none",
        "--json",
    ]
    res = runner.invoke(app, ["parallelize", "--model", "mixtral-8x7b", "--gpus", "64", *args])
    assert res.exit_code == 0, res.output
    (layout,) = json.loads(res.stdout)["layouts"]
    mem = layout["memory_bytes"]
    dense = 16 * COMMON + V * H  # replicated over d·c = 32: 803,233,792
    experts = 16 * E * EXPERT / 8  # ÷ e: 2,818,572,288 (one expert of each layer on this GPU)
    expert_dp = 64 // (1 * 8 * 2)  # world/(ETP·EP·PP) = d·c/e = 4 replicas of each expert
    assert mem["weights"] == pytest.approx(2 * (dense + experts), rel=1e-9)  # 7.24 GB
    assert mem["gradients"] == pytest.approx(4 * (dense + experts), rel=1e-9)  # fp32: 14.49 GB
    assert mem["optimizer"] == pytest.approx(12 * (dense / 32 + experts / expert_dp), rel=1e-9)  # 8.76 GB
    # activations per token and MoE layer (docs/parallel.md): norms 8h, Q K V O 2(a+2kv)d + 2ad, LSE 4a; the two
    # routed copies 2·2h, router 8E, SwiGLU 6F per copy; min(m, p) = 2 micro-batches of 4,096 tokens in flight
    per_token = 8 * H + 2 * (A + 2 * KV) * HD + 2 * A * HD + 4 * A + K * 2 * H + 8 * E + K * 6 * F
    assert per_token == 241_856
    assert mem["activations"] == pytest.approx(2 * 4096 * 16 * per_token, rel=1e-9)  # 31.70 GB
    assert mem["total"] / 1e9 == pytest.approx(65.19, abs=0.01)


@pytest.mark.parametrize(
    ("gpus", "pins", "line"),
    [
        (
            "8",
            ["--tp", "8", "--ep", "8"],
            "--ep: ep=8 does not divide dp·cp·pp = 8/tp = 1 (experts are spread over the data- and "
            "context-parallel ranks) (pin one of 1, or a smaller tp)",
        ),
        (
            "16",
            ["--pp", "4", "--ep", "8"],
            "--ep: ep=8 does not divide dp·cp·tp = 16/pp = 4 (experts are spread over the data- and "
            "context-parallel ranks) (pin one of 1, 2, 4, or a smaller pp)",
        ),
    ],
)
def test_an_ep_pin_that_tp_or_pp_alone_rules_out_is_bad_input_at_its_flag(gpus, pins, line):
    # every d·c = GPUs/(t·p) divides GPUs/tp (and GPUs/pp): ep=8 with tp=8 on 8 GPUs said only "no layout passes
    # the divisibility rules ... change the GPU count or the pins" (exit 1), not which pin nor what works
    res = runner.invoke(app, ["parallelize", "--model", "mixtral-8x7b", "--gpus", gpus, *pins])
    assert res.exit_code == 2
    assert res.stderr == f"runplan: error: {line}\n"


def test_an_ep_pin_the_free_axis_can_satisfy_is_searched():
    res = runner.invoke(
        app, ["parallelize", "--model", "mixtral-8x7b", "--gpus", "16", "--pp", "4", "--ep", "4"]
    )
    assert res.exit_code == 0, res.output
