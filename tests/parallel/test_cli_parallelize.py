"""`runplan parallelize` end to end (uses the shipped catalog for --model and --gpu)."""

import json

import pytest
from typer.testing import CliRunner

pytest.importorskip("runplan.catalog")
from runplan.cli.app import app

runner = CliRunner()


def test_json_keys():
    res = runner.invoke(app, ["parallelize", "--model", "70b", "--gpus", "512", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    for key in ("model", "cluster", "candidates", "feasible", "layouts"):
        assert key in data
    best = data["layouts"][0]
    for key in (
        "tp",
        "pp",
        "dp",
        "ep",
        "cp",
        "zero",
        "micro_batch",
        "microbatches",
        "vpp",
        "recompute",
        "global_batch_tokens",
        "bubble_fraction",
        "memory_bytes",
        "step_seconds",
        "tokens_per_second",
        "mfu",
    ):
        assert key in best
    assert set(best["memory_bytes"]) == {"weights", "gradients", "optimizer", "activations", "other", "total"}
    assert data["cluster"]["n_gpus"] == 512
    assert 0.3 < best["mfu"] < 0.6  # published dense bf16 H100 runs: 38-55% (docs/validation.md)
    # the fastest layout per TP degree: one entry per degree, ascending, the best one at 0 behind
    by_tp = data["best_by_tp"]
    assert [b["tp"] for b in by_tp] == sorted({b["tp"] for b in by_tp})
    assert {1, 2, 4, 8} <= {b["tp"] for b in by_tp}
    winner = next(b for b in by_tp if b["tp"] == best["tp"])
    assert winner["behind_best"] == 0 and winner["tokens_per_second"] == pytest.approx(
        best["tokens_per_second"]
    )
    # the chosen layout is the one with most memory margin within constraints.throughput_tolerance (1%) of the
    # fastest, so another TP degree may be up to 1% faster (negative behind_best)
    for b in by_tp:
        assert -0.01 / 0.99 <= b["behind_best"] < 1
        assert b["tokens_per_second"] <= best["tokens_per_second"] / 0.99


def test_terminal_names_the_cost_of_each_tp_degree():
    res = runner.invoke(app, ["parallelize", "--model", "70b", "--gpus", "512"], env={"COLUMNS": "250"})
    assert res.exit_code == 0, res.output
    line = next(x for x in res.output.splitlines() if x.startswith("best layout per TP degree"))
    assert "TP8" in line and "(chosen)" in line and "fewer tokens/s" in line


# TP 8 best for 70B on 512 H100 (issue 4, which records that published evidence contradicts it: NVIDIA's tuned H100
# recipe for Llama 3 70B is TP 4). The model ties TP 4 and TP 8 within 0.3% (inside the 1% throughput tolerance;
# the tie goes to the layout with more memory margin, TP 4 since torchtitan's op-level recompute re-weighted the
# fitted TP overlap fraction 0.78 -> 0.74). Strict: it shows if the choice flips back. Not tuned to pass.
@pytest.mark.xfail(strict=True, reason="issue 4: published evidence (NVIDIA's tuned 70B recipe) is TP 4")
def test_cli_70b_512_best_tp_is_8():
    res = runner.invoke(app, ["parallelize", "--model", "70b", "--gpus", "512", "--json"])
    assert json.loads(res.stdout)["layouts"][0]["tp"] == 8


def test_infeasible_exits_1_with_reason():
    res = runner.invoke(app, ["parallelize", "--model", "405b", "--gpus", "8"])
    assert res.exit_code == 1
    assert "memory" in res.output and "more GPUs" in res.output


@pytest.mark.parametrize(
    ("pins", "line"),
    [
        (
            ["--ep", "8"],
            "--ep: ep=8 on a dense model: expert parallelism needs MoE layers (pin ep 1, or drop it)",
        ),
        (
            ["--pp", "1", "--vpp", "2"],
            "--vpp: vpp=2 interleaves pipeline stages, and pp=1 has none (pin pp 2 or more, or vpp 1)",
        ),
        (
            ["--pp", "81"],
            "--pp: pp=81 does not divide the 512 GPUs; pp=81 is more pipeline stages than the 80 layers (pin a "
            "divisor of 512; pin pp ≤ 80)",
        ),
        (
            ["--cp", "3"],
            "--cp: cp=3 does not divide the 512 GPUs; cp=3 needs the sequence (4,096) to split into 2·cp = 6 "
            "equal chunks (pin a divisor of 512; pin one of 1, 2, 4, 8, 16, 32, ... 512, or a sequence divisible by 6)",
        ),
        (
            ["--tp", "8", "--pp", "8", "--dp", "16"],
            "--dp: pinned tp·pp·dp = 8·8·16 = 1,024 does not divide 512 GPUs (pin tp·pp·dp·cp = the job's GPUs, "
            "or leave dp to the search)",
        ),
    ],
)
def test_a_pin_no_layout_can_take_is_bad_input_at_its_flag(pins, line):
    """Every such request said only "no layout satisfies t·p·d·c = 512 ... and the pins {...}", then exit 1 with
    the rule and "change the GPU count or the pins": a pin that no layout can take whatever the other axes is
    a bad value for this model (exit 2), one line naming its flag, the rule and the values that work."""
    result = runner.invoke(app, ["parallelize", "--model", "70b", "--gpus", "512", *pins])
    assert result.exit_code == 2
    assert result.stderr == f"runplan: error: {line}\n"


@pytest.mark.parametrize(
    ("pins", "line"),
    [
        (
            ["--tp", "16"],
            "--tp: tp=16 is wider than a node of 8 GPUs (pin one of 1, 2, 4, 8, or allow it: --allow-cross-node-tp)",
        ),
        (
            ["--tp", "8", "--pp", "4", "--cp", "8", "--ep", "64"],
            "--ep: ep=64 does not divide dp·cp = 1,024/(tp·pp) = 32 (experts are spread over the data- and "
            "context-parallel ranks) (pin one of 1, 2, 4, 8, 16, 32)",
        ),
    ],
)
def test_a_moe_pin_no_layout_can_take_is_bad_input_at_its_flag(pins, line):
    # tp=16 said "no TP degree divides ... with tp=16" and to change the GPU count; the EP pin said only "no layout
    # satisfies t·p·d·c = 1024 ... and the pins {...}" though dp·cp = GPUs/(tp·pp) is fixed by the pins
    args = ["parallelize", "--model", "deepseek-v3", "--gpus", "1024", "--seq-len", "64k", *pins]
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert result.stderr == f"runplan: error: {line}\n"


def test_ep_borrowed_from_dp_and_cp_is_said_so():
    # "EP 64 divides 256 experts and DP 32 (borrowed from DP)": 64 does not divide 32; it divides DP·CP = 256
    args = ["parallelize", "--model", "deepseek-v3", "--gpus", "1024", "--seq-len", "64k", "--json"]
    res = runner.invoke(app, [*args, "--tp", "1", "--cp", "8", "--ep", "64", "--zero", "1"])
    assert res.exit_code == 0, res.output
    best = json.loads(res.stdout)["layouts"][0]
    line = next(w for w in best["why"] if w.startswith("EP "))
    # (PP 4, DP·CP 256 until the MTP module on the last stage: now PP 8, DP·CP 128, still not divisible by DP 16)
    assert best["ep"] == 64 and best["dp"] * best["cp"] == 1024 // (best["tp"] * best["pp"])
    assert best["dp"] % 64 and not (best["dp"] * best["cp"]) % 64
    assert line.startswith(
        f"EP 64 divides 256 experts and DP·CP {best['dp'] * best['cp']} (borrowed from the data-"
    )


def test_bad_flag_exits_2():
    res = runner.invoke(app, ["parallelize", "--model", "70b", "--gpus", "lots"])
    assert res.exit_code == 2
    assert "--gpus" in res.output


def test_pinned_layout_and_table():
    res = runner.invoke(
        app,
        [
            "parallelize",
            "--model",
            "70b",
            "--gpus",
            "512",
            "--tp",
            "8",
            "--pp",
            "4",
            "--zero",
            "1",
            "--mbs",
            "1",
            "--vpp",
            "2",
            "--recompute",
            "selective",
            "--global-batch",
            "4M",
        ],
    )
    assert res.exit_code == 0, res.output
    assert "Best layout" in res.output and "DeepSeek's compute-optimal batch B_opt" in res.output


def test_pin_any_layout_field_by_its_plan_name():
    runner = CliRunner()
    base = ["parallelize", "--model", "8b", "--gpus", "64", "--json"]
    result = runner.invoke(app, [*base, "--pin", "sequence_parallel=false", "--pin", "zero=1"])
    assert result.exit_code == 0, result.stderr
    layouts = json.loads(result.stdout)["layouts"]
    assert layouts and all(x["zero"] == 1 and not x["sequence_parallel"] for x in layouts)
    unknown = runner.invoke(app, [*base, "--pin", "foo=1"])
    assert unknown.exit_code == 2 and "--pin: 'foo=1' does not name a layout field" in unknown.stderr
    twice = runner.invoke(app, [*base, "--pin", "tp=2", "--tp", "4"])
    assert twice.exit_code == 2 and "tp is pinned twice" in twice.stderr


def test_plan_file_errors_found_by_the_search_point_at_the_plan(tmp_path):
    plan = tmp_path / "p.yaml"
    plan.write_text(
        "schema_version: 1\nbudget: {flops: 2e23}\ncluster:\n  gpus: 512\nconstraints: {reserve_bytes: 90GB}\n"
    )
    result = CliRunner().invoke(app, ["parallelize", str(plan)])
    assert result.exit_code == 2
    assert "p.yaml:5: constraints.reserve_bytes" in result.stderr and "--reserve" not in result.stderr


def test_precision_fp8_flag_speeds_up_a_pinned_layout_and_a100_is_refused():
    pinned = ["parallelize", "--model", "8b", "--gpus", "64", "--gpu", "h100-sxm", "--seq-len", "8192"]
    pinned += ["--tp", "2", "--pp", "1", "--zero", "1", "--mbs", "1", "--recompute", "selective", "--json"]
    bf16 = json.loads(runner.invoke(app, pinned).stdout)["layouts"][0]
    fp8_doc = json.loads(runner.invoke(app, [*pinned, "--precision", "fp8"]).stdout)
    fp8 = fp8_doc["layouts"][0]
    assert any(
        w.startswith("fp8 (tensorwise): linear-layer GEMMs at the fp8 peak 1,979")
        for w in fp8_doc["warnings"]
    )
    # the linear GEMMs run at 1,979 instead of 989 TFLOP/s, less the casts: faster, but not 2x
    assert 1.1 < fp8["tokens_per_second"] / bf16["tokens_per_second"] < 1.6
    assert fp8["memory_bytes"]["weights"] > bf16["memory_bytes"]["weights"]  # + the fp8 weight copy
    delayed = runner.invoke(app, [*pinned, "--precision", "fp8", "--fp8-recipe", "delayed"]).stdout
    assert (
        json.loads(delayed)["layouts"][0]["tokens_per_second"] > fp8["tokens_per_second"]
    )  # fewer cast bytes
    a100 = runner.invoke(
        app, ["parallelize", "--model", "8b", "--gpus", "64", "--gpu", "a100-80gb", "--precision", "fp8"]
    )
    assert a100.exit_code == 2 and "no fp8 tensor cores" in a100.output
    assert len([line for line in a100.output.splitlines() if line.strip()]) == 1


def test_fp8_recipe_without_fp8_is_an_error_not_ignored(tmp_path):
    # --fp8-recipe alone used to plan in bf16 silently; a plan's fp8 recipe under --precision bf16 is dropped
    alone = runner.invoke(app, ["parallelize", "--model", "8b", "--gpus", "8", "--fp8-recipe", "rowwise"])
    assert alone.exit_code == 2
    assert alone.stderr.startswith("runplan: error: --fp8-recipe: rowwise applies only with precision fp8")
    plan = tmp_path / "p.yaml"
    plan.write_text(
        "schema_version: 1\nbudget: {flops: 2e22}\ncluster: {gpu: h100-sxm, gpus: 64}\n"
        "stack:\n  fp8_recipe: rowwise\n"
    )
    in_file = runner.invoke(app, ["parallelize", str(plan)])
    assert in_file.exit_code == 2 and f"{plan}:5: stack.fp8_recipe: rowwise applies only" in in_file.stderr
    plan.write_text(plan.read_text().replace("stack:\n", "stack:\n  precision: fp8\n"))
    assert runner.invoke(app, ["parallelize", str(plan), "--precision", "bf16"]).exit_code == 0


def test_the_answer_names_the_training_stack_behind_its_times():
    args = [
        "parallelize",
        "--model",
        "llama-3.1-8b",
        "--gpus",
        "8",
        "--stack",
        "torchtitan-fsdp2",
        "--top",
        "1",
    ]
    text = runner.invoke(app, args).stdout
    line = " ".join(text.split())  # rich wraps at the terminal width
    assert "training stack: torchtitan-fsdp2: attention_kernel flash-attention-2" in line
    assert "fused_elementwise off" in line
    default = " ".join(runner.invoke(app, [*args[:5], "--top", "1"]).stdout.split())
    assert "training stack: default global batch" in default  # nothing differs from the default stack
    data = json.loads(runner.invoke(app, [*args, "--no-fused-elementwise", "--json"]).stdout)
    assert data["stack"]["preset"] == "torchtitan-fsdp2" and data["stack"]["fused_elementwise"] is False
    fused = json.loads(runner.invoke(app, [*args, "--fused-elementwise", "--json"]).stdout)
    assert fused["stack"]["fused_elementwise"] is True
    assert fused["layouts"][0]["tokens_per_second"] > data["layouts"][0]["tokens_per_second"]


def test_the_deepspeed_stack_searches_no_zero_2_or_3_under_a_pipeline():
    """DeepSpeed's PipelineEngine asserts ZeRO below 2 (runtime/pipe/engine.py) and the export refuses it, yet
    `parallelize --pp 2 --stack deepspeed` offered ZeRO-2 layouts without a word; a pin of both still wins."""
    args = ["parallelize", "--model", "13b", "--gpus", "16", "--pp", "2", "--stack", "deepspeed", "--json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert {layout["zero"] for layout in json.loads(result.stdout)["layouts"]} <= {0, 1}
    pinned = runner.invoke(app, [*args, "--zero", "2"])
    assert pinned.exit_code == 0 and json.loads(pinned.stdout)["layouts"][0]["zero"] == 2


def test_a_pinned_layout_over_memory_is_offered_only_the_single_changes_that_fit():
    """405B TP8 PP16 DP8 at ZeRO-0 (110.8 GB): the advice was bf16 gradients (a reviewer re-ran it: 103.9 GB),
    full recomputation and fewer stages (more memory), plus the bubble cap, which cannot rule out a pinned
    layout; ZeRO-1, which fits, was not offered. Now each single change is evaluated and only those that fit
    are named, with their memory (ZeRO-1 shards Adam's 12 bytes/param over DP 8: 110.8 − 41.4 + 5.2 = 74.6)."""
    args = ["parallelize", "--model", "llama-3.1-405b", "--gpus", "1024", "--seq-len", "8192"]
    pins = ["--tp", "8", "--pp", "16", "--dp", "8", "--cp", "1", "--zero", "0", "--mbs", "1"]
    result = runner.invoke(
        app, [*args, *pins, "--microbatches", "32", "--vpp", "1", "--recompute", "selective"]
    )
    assert result.exit_code == 1
    text = " ".join(result.stderr.split())
    assert text.startswith(
        "runplan: infeasible: the pinned layout needs 110.8 GB per GPU against 76.0 GB usable"
    )
    assert text.endswith(
        "to make it feasible: any one of: --zero 1 (74.6 GB), --zero 2 (62.5 GB), --recompute full (69.9 GB) "
        "fits within 76.0 GB"
    )
    assert "bf16" not in text and "bubble" not in text
