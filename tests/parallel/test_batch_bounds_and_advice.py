"""Batch bounds that cannot meet are bad input (exit 2); infeasible answers diagnose the real cause and do not
offer back what is pinned; the margin line compares with the fastest feasible layout, whatever --top shows."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app


def _run(*argv: str):
    result = CliRunner().invoke(app, ["parallelize", "--model", "8b", "--gpus", "512", *argv])
    return result.exit_code, " ".join(result.stderr.split()), result.stdout


@pytest.mark.parametrize(
    ("argv", "flag", "phrase"),
    [
        (["--global-batch", "1M", "--min-batch", "2M"], "--min-batch", "above the target 1e+06 tokens + 10%"),
        (["--global-batch", "8M", "--max-batch", "4M"], "--max-batch", "below the target 8e+06 tokens - 10%"),
        (["--max-batch", "1k"], "--max-batch", "less than one sequence of 4,096"),
    ],
)
def test_bounds_that_cannot_meet_are_bad_input(argv, flag, phrase):
    code, stderr, _ = _run(*argv)
    assert code == 2 and stderr.startswith(f"runplan: error: {flag}:") and phrase in stderr


def test_a_floor_above_the_batch_ceiling_is_held_within_the_tolerance_above_it():
    """8B on 512 GPUs: the batch ceiling (DeepSeek's B_opt) is about 4.2M tokens; at least 8M used to collapse the range to
    [8M, 8M], which no d·b·m·s hits exactly (exit 1). Now [8M, 8.8M]."""
    from runplan.catalog import load_catalog
    from runplan.parallel.layout import Constraints, ParallelRequest
    from runplan.parallel.search import _bounds

    catalog = load_catalog()
    request = ParallelRequest(
        model=catalog.model("llama-3.1-8b"),
        gpu=catalog.gpu("h100-sxm"),
        n_gpus=512,
        seq_len=4096,
        constraints=Constraints(min_global_batch_tokens=8e6),
    )
    bounds, crit = _bounds(request)
    assert crit.tokens < 8e6 and "above the batch ceiling" in bounds.batch_source
    assert (bounds.low_tokens, bounds.high_tokens) == (8e6, pytest.approx(8.8e6))
    code, _, stdout = _run("--min-batch", "8M")
    assert code == 0, stdout


def test_a_batch_between_two_steps_is_said_to_step_over_not_to_be_too_small():
    """1,000,000 tokens with no tolerance is no multiple of the 4,096-token sequence: the nearest batches are
    999,424 = 244·4,096 and 1,048,576 = 256·4,096 (no smaller d·b·m·s step lands between them)."""
    code, stderr, _ = _run("--global-batch", "1M", "--batch-tolerance", "0")
    assert code == 1
    assert "step over [1,000,000, 1,000,000]: the nearest are 999,424 or 1,048,576 tokens" in stderr
    assert "smallest global batch any layout can run" not in stderr


def test_bubble_advice_does_not_offer_back_what_is_pinned():
    def advice(pins: str) -> tuple[int, str]:
        argv = ["parallelize", "--model", "70b", "--gpus", "512", *pins.split()]
        result = CliRunner().invoke(app, argv)
        return result.exit_code, " ".join(result.stderr.split())

    code, text = advice("--tp 8 --pp 8 --cp 1 --vpp 2 --global-batch 1M --max-bubble 0.05")
    assert code == 1 and "interleaving (--vpp 2+)" not in text and "a larger --max-bubble" in text
    code, text = advice("--tp 8 --pp 8 --zero 1 --mbs 1 --microbatches 4 --recompute none")
    # m 4 is pinned under p 8: interleaving needs p | m, so the remedy is the m that meets the cap, not --vpp
    assert code == 1 and "8 micro-batches per step (--microbatches 8)" in text and "interleaving" not in text


def test_the_margin_line_does_not_depend_on_top():
    argv = ["--model", "405b", "--gpus", "16384", "--seq-len", "8192", "--global-batch", "16M"]
    lines = set()
    for top in ("1", "2", "5"):
        out = CliRunner().invoke(app, ["parallelize", *argv, "--top", top], env={"COLUMNS": "400"}).stdout
        found = [line.strip() for line in out.splitlines() if "margin over speed" in line]
        assert len(found) == 1, out
        lines.add(found[0])
    assert len(lines) == 1


def test_no_sharding_group_means_one_zero_stage_not_three_identical_layouts():
    """On one GPU (d·c = 1) ZeRO 0, 1 and 2 shard over nothing: the same layout, listed once (ZeRO-0); a
    pinned stage is kept, and the search over more GPUs still has every stage."""
    from runplan.catalog import load_catalog
    from runplan.parallel.layout import ParallelRequest, Pins
    from runplan.parallel.search import build_grid

    catalog = load_catalog()
    model, gpu = catalog.model("llama-3.1-8b"), catalog.gpu("h100-sxm")
    grid, _ = build_grid(ParallelRequest(model=model, gpu=gpu, n_gpus=1, seq_len=4096))
    assert set(grid.zero.tolist()) == {0, 3}
    pinned, _ = build_grid(ParallelRequest(model=model, gpu=gpu, n_gpus=1, seq_len=4096, pins=Pins(zero=1)))
    assert set(pinned.zero.tolist()) == {1}
    wide, _ = build_grid(ParallelRequest(model=model, gpu=gpu, n_gpus=64, seq_len=4096))
    lone = wide.dp * wide.cp == 1
    assert set(wide.zero[~lone].tolist()) == {0, 1, 2, 3} and set(wide.zero[lone].tolist()) <= {0, 3}


def test_sequence_parallel_needs_a_tensor_parallel_group():
    """SP splits activations over the TP group: a pin of true at TP 1 leaves it off (JSON said true)."""
    import json

    for tp, sp in (("1", False), ("2", True)):
        out = CliRunner().invoke(
            app,
            [
                "parallelize",
                "--model",
                "8b",
                "--gpus",
                "8",
                "--tp",
                tp,
                "--pin",
                "sequence_parallel=true",
                "--json",
            ],
        )
        assert json.loads(out.stdout)["layouts"][0]["sequence_parallel"] is sp


def test_a_preset_ranks_only_layouts_its_engine_can_run():
    """DeepSpeed has no ring context parallelism and no interleaved schedule; torchtitan shards with FSDP2
    (ZeRO-3) or replicates (DDP, ZeRO-0), no ZeRO-1/2. A pin still wins (the exporter then says what the engine
    does with it)."""
    from runplan.catalog import load_catalog
    from runplan.parallel.layout import ParallelRequest, Pins
    from runplan.parallel.search import build_grid
    from runplan.parallel.stack import resolve_stack

    catalog = load_catalog()
    gpu = catalog.gpu("h100-sxm")

    def grid(model: str, stack: str, n: int, **pins):
        request = ParallelRequest(
            model=catalog.model(model),
            gpu=gpu,
            n_gpus=n,
            seq_len=8192,
            stack=resolve_stack(stack),
            pins=Pins(**pins),
        )
        return build_grid(request)[0]

    deepspeed = grid("llama-3.1-405b", "deepspeed", 1024)
    assert set(deepspeed.cp.tolist()) == {1} and set(deepspeed.vpp.tolist()) == {1}
    assert set(grid("llama-3.1-405b", "default", 1024).cp.tolist()) > {1}
    assert set(grid("llama-3.1-405b", "deepspeed", 1024, cp=2).cp.tolist()) == {2}
    assert set(grid("llama-3.1-8b", "torchtitan-fsdp2", 64).zero.tolist()) == {0, 3}
    assert set(grid("llama-3.1-8b", "torchtitan-fsdp2", 64, zero=1).zero.tolist()) == {1}


def test_fp8_param_gather_searches_sharded_optimizers_only():
    """Megatron's --fp8-param-gather needs --use-distributed-optimizer (the export refuses ZeRO-0 with it): the
    search leaves ZeRO-0 out with fp8_param_gather; a pinned ZeRO-0 is still evaluated."""
    from runplan.catalog import load_catalog
    from runplan.parallel.layout import ParallelRequest, Pins
    from runplan.parallel.search import build_grid
    from runplan.parallel.stack import resolve_stack

    catalog = load_catalog()
    stack = resolve_stack({"precision": "fp8", "fp8_param_gather": True})
    common = {
        "model": catalog.model("llama-3.1-8b"),
        "gpu": catalog.gpu("h100-sxm"),
        "n_gpus": 64,
        "seq_len": 4096,
    }
    assert 0 not in build_grid(ParallelRequest(**common, stack=stack))[0].zero.tolist()
    pinned = build_grid(ParallelRequest(**common, stack=stack, pins=Pins(zero=0)))[0]
    assert set(pinned.zero.tolist()) == {0}


def test_expert_parallelism_spans_the_data_and_context_parallel_ranks():
    """Mixtral on 256 GPUs at 128k: TP4 PP4 DP2 CP8 EP8 is a layout Megatron-core (MoE parallel folding) and
    torchtitan ((dp_shard·cp) % ep == 0) run; EP had to divide DP alone. A pinned EP that divides neither
    pinned dp·cp says so, instead of 't·p·d·c = 64 with the divisibility rules'."""
    argv = ["parallelize", "--model", "mixtral-8x7b", "--gpus", "256", "--seq-len", "128k"]
    ok = CliRunner().invoke(app, [*argv, "--tp", "4", "--pp", "4", "--dp", "2", "--cp", "8", "--ep", "8"])
    assert ok.exit_code == 0, ok.stderr
    bad = CliRunner().invoke(
        app,
        ["parallelize", "--model", "mixtral-8x7b", "--gpus", "64", "--ep", "8"] + ["--dp", "4", "--cp", "1"],
    )
    assert bad.exit_code == 2 and "--ep: ep=8 does not divide dp·cp = 4·1 = 4" in bad.stderr
