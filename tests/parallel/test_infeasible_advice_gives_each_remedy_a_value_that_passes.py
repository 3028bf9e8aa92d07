"""An infeasible `parallelize` answer offers each remedy with the value that makes the request feasible, checked
by the same model, and no remedy that cannot work: fewer pipeline stages under a pinned --pp name the stage
count; a larger --max-bubble only where the least bubble within memory and the batch range is below 1 (the cap's
bound, Constraints.max_bubble_fraction < 1); a ZeRO stage that shards the optimizer under pinned stages (ZeRO-1,
Megatron's distributed optimizer) rather than only ZeRO-3 with the stages given up. Values hand-derived in each
docstring from the bubble fraction (p - 1)/(v*m) (Narayanan et al. 2021 §2.2.2) and the ZeRO memory terms
(Rajbhandari et al. 2020 §5; docs/parallel.md, Memory per GPU); each offered command is run and exits 0."""

from __future__ import annotations

from typer.testing import CliRunner

from runplan.cli.app import app

BASE = ["parallelize", "--model", "70b", "--gpus", "512"]


def _run(*argv: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(argv))
    return result.exit_code, " ".join(result.stderr.split())


def test_fewer_stages_names_the_most_stages_below_the_pin_that_meet_the_cap():
    """70B on 512 H100, p 8 and m 4 pinned: the bubble 7/(v*4) needs v >= 11.7, more than the 10 layers of a
    stage, and Megatron's interleaving needs p | m: nothing at p 8. Below 8, p must divide 512: p 4 with v 5
    (a divisor of its 20 layers) gives 3/(5*4) = 0.15 <= 0.15 and 4 | 4, so --pp 4. It said "fewer pipeline
    stages (--pp)", no value."""
    code, text = _run(*BASE, "--pp", "8", "--microbatches", "4")
    assert code == 1
    assert "fewer pipeline stages (--pp 4)" in text
    assert "(--pp)" not in text
    assert _run(*BASE, "--pp", "4", "--microbatches", "4")[0] == 0


def test_fewer_stages_on_a_plain_schedule_is_checked_against_the_batch_too():
    """DeepSpeed (no interleaving, v 1), b 1, a target of 1M tokens +-10%: d*m*4,096 in [900,000, 1,100,000] gives
    d*m = 256. p 4: t*d = 128, so (t 8) d 16, m 16, bubble 3/16 = 0.19 > 0.15, and a smaller t only lowers m.
    p 2: t 8, d 32, m 8, bubble 1/8 = 0.125 <= 0.15. So --pp 2, not 4."""
    pins = ["--global-batch", "1M", "--mbs", "1", "--vpp", "1", "--stack", "deepspeed"]
    code, text = _run(*BASE, *pins, "--pp", "16")
    assert code == 1
    assert "fewer pipeline stages (--pp 2)" in text
    assert _run(*BASE, *pins, "--pp", "4")[0] == 1
    assert _run(*BASE, *pins, "--pp", "2")[0] == 0


def test_a_larger_bubble_cap_is_offered_only_below_one_and_with_its_value():
    """Llama 3 8B on 100,000 H100: a batch within B_opt (4,222,452 tokens, 1,030 sequences) leaves d <= 1,030, so
    t*p*c >= 97 and p >= 4 with m = 1: the least bubble within memory and the batch range is (4 - 1)/1 = 3, and
    no cap (below 1) admits it. It said "300% against a cap of 15%: a larger --max-bubble or batch"."""
    code, text = _run("parallelize", "--model", "8b", "--gpus", "100000")
    assert code == 1
    assert "the smallest bubble of a layout within memory and the batch range is" in text
    assert "--max-bubble" not in text


def test_a_joint_bubble_cap_advice_carries_the_cap_that_admits_a_layout():
    """70B, TP 8 CP 1 b 1 v 1 m 6 pinned, target 393,216 tokens +-10% (96 sequences): p d = 64 and d*6 in
    [86.4, 105.6] give d 16, p 4, bubble 3/6 = 0.5 within memory and the batch range: --max-bubble 0.5 admits it
    (it said "a larger --max-bubble or batch", no value)."""
    pins = ["--tp", "8", "--cp", "1", "--mbs", "1", "--vpp", "1", "--microbatches", "6"]
    code, text = _run(*BASE, *pins, "--global-batch", "393216")
    assert code == 1 and "within memory and the batch range is 50%" in text
    assert "--max-bubble 0.5" in text
    assert _run(*BASE, *pins, "--global-batch", "393216", "--max-bubble", "0.5")[0] == 0


def test_memory_advice_under_pinned_stages_offers_the_distributed_optimizer():
    """405B, TP 8 PP 16 DP 8 pinned at ZeRO-0, b 1, selective: the first stage holds 8 layers + the embedding,
    Psi = 3,450,372,096 per GPU (docs/parallel.md's 128k example), optimizer 12 Psi = 41.4 GB of the 88.0 GB;
    ZeRO-1 divides it by d = 8: 5.2 GB, 51.7 GB in all, within 76 GB. It offered only ZeRO-3 with the stages
    given up (--zero 3 --pp 1: CP 16 at 4,096 tokens) and full recomputation."""
    pins = ["--tp", "8", "--pp", "16", "--dp", "8", "--mbs", "1", "--recompute", "selective"]
    argv = ["parallelize", "--model", "405b", "--gpus", "1024", *pins]
    code, text = _run(*argv, "--zero", "0")
    assert code == 1 and "largest term is optimizer at 41.4 GB" in text
    assert "ZeRO-1 (--zero 1)" in text
    assert _run(*argv, "--zero", "1")[0] == 0


def test_memory_advice_offers_only_a_zero_stage_the_stacks_engine_runs():
    """megatron-2022 (Megatron-LM 2021-22: ZeRO 0 and 1 only, stack.zero_stages), 70B at TP 1 PP 1 ZeRO-0 on 64
    GPUs: ZeRO-1 leaves 2 + 4 bytes/param of weights and gradients, 6 x 70.6e9 = 423 GB > 76 GB, so nothing this
    engine runs fits; ZeRO-3 (18 bytes/param / 64 = 19.8 GB of states) does on a stack that has it. It said
    "ZeRO-3 (--zero 3)", which this stack then evaluates only with a warning that its engine lacks it."""
    argv = ["parallelize", "--model", "70b", "--gpus", "64", "--tp", "1", "--pp", "1", "--zero", "0"]
    code, text = _run(*argv, "--stack", "megatron-2022")
    assert code == 1
    assert "ZeRO-3 (--zero 3)" not in text
    assert (
        "ZeRO-3 on a stack whose engine has it (--stack megatron-core: this stack runs ZeRO 0, 1 only)"
        in text
    )
    argv[-1] = "3"
    assert _run(*argv, "--stack", "megatron-core")[0] == 0


def test_more_context_parallelism_names_the_least_cp_that_fits():
    """Llama 3 8B on 64 H100 at a million tokens, CP 1 pinned: 122.4 GB of activations on the smallest layout.
    A CP rank holds s/c tokens, so CP 2 halves them; 2c = 4 divides 1,048,576, and CP 2 with TP 8 PP 4 fits
    (88.7% of the limit). It said "more context parallelism (--cp)", no value."""
    argv = ["parallelize", "--model", "8b", "--gpus", "64", "--seq-len", "1m"]
    code, text = _run(*argv, "--cp", "1")
    assert code == 1 and "largest term is activations" in text
    assert "more context parallelism (--cp 2) for this long sequence" in text
    assert _run(*argv, "--cp", "2")[0] == 0
