"""An infeasible answer's remedies are the ones that work: each names its flag and the value that meets the
constraint (hand-derived below from the bubble fraction (p - 1)/(v*m), Narayanan et al. 2021 §2.2.2, and the
fully sharded model states), never a remedy the request rules out, and the same request with it exits 0."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app

BASE = ["parallelize", "--model", "70b", "--gpus", "512"]


def _run(*argv: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(argv))
    return result.exit_code, " ".join(result.stderr.split())


def test_bubble_remedies_carry_the_values_that_meet_the_cap():
    """TP 8 PP 8 v 2 at 1M tokens: d = 8, m = 32, bubble 7/64 = 0.109 > 0.05. More micro-batches: m >= 7/(2*0.05)
    = 70, a multiple of p = 8 when interleaved: 72, a batch of 8*72*4,096 = 2,359,296 tokens; interleaving:
    the least divisor of 80/8 = 10 layers with 7/(v*32) <= 0.05 is v = 5; the cap: 0.109375, up to 0.11."""
    pins = ["--tp", "8", "--pp", "8", "--cp", "1", "--vpp", "2"]
    code, text = _run(*BASE, *pins, "--global-batch", "1M", "--max-bubble", "0.05")
    assert code == 1
    assert "a global batch of at least 2,359,296 tokens (--global-batch 2359296)" in text
    assert "interleaving (--vpp 5)" in text and "a larger --max-bubble 0.11" in text
    assert "--vpp 2 " not in text  # the pinned value is not offered back
    for fix in (["--global-batch", "2359296", "--vpp", "2"], ["--global-batch", "1M", "--vpp", "5"]):
        assert _run(*BASE, *pins[:6], *fix, "--max-bubble", "0.05")[0] == 0
    assert _run(*BASE, *pins, "--global-batch", "1M", "--max-bubble", "0.11")[0] == 0


def test_interleaving_is_not_offered_where_the_pinned_micro_batches_forbid_it():
    """m = 4 pinned under p = 8: Megatron's interleaved schedule needs p | m, so every v > 1 row is out and the
    least legal bubble is 7/4 = 1.75, beyond any cap (< 1). What works: m = 8 with v = 10, 7/80 = 0.0875."""
    pins = ["--tp", "8", "--pp", "8", "--zero", "1", "--mbs", "1", "--recompute", "none"]
    code, text = _run(*BASE, *pins, "--microbatches", "4")
    assert code == 1
    assert "interleaving" not in text and "--max-bubble" not in text
    assert "8 micro-batches per step (--microbatches 8)" in text
    assert _run(*BASE, *pins, "--microbatches", "8")[0] == 0


def test_a_pinned_plain_schedule_gets_the_micro_batches_it_needs():
    """PP 16, v 1 and m 8 pinned: bubble 15/8 = 1.875; m >= 15/0.15 = 100 meets the cap; no interleaving (m < p)."""
    pins = ["--pp", "16", "--vpp", "1"]
    code, text = _run(*BASE, *pins, "--microbatches", "8")
    assert code == 1
    assert "100 micro-batches per step (--microbatches 100)" in text
    assert "interleaving" not in text and "--max-bubble" not in text
    assert _run(*BASE, *pins, "--microbatches", "100")[0] == 0


def test_more_gpus_names_the_flag_and_a_count_that_fits():
    """70B (70,553,706,496 parameters) on 16 GPUs at ZeRO-3: 18 bytes/param over 80 GB x 0.95 - 3 GB = 73 GB
    usable is 17.4 GPUs, 24 in whole 8-GPU nodes."""
    pins = ["--zero", "3", "--recompute", "full", "--mbs", "1", "--cp", "1"]
    code, text = _run("parallelize", "--model", "70b", "--gpus", "16", *pins)
    assert code == 1 and "need at least 24 h100-sxm GPUs (at least --gpus 24)" in text
    assert _run("parallelize", "--model", "70b", "--gpus", "24", *pins)[0] == 0


def test_a_pinned_layout_no_single_change_fits_gets_the_changes_together():
    """TP 1 PP 1 ZeRO-0, no recompute, micro-batch 8: no one change fits (ZeRO-3 alone keeps eight sequences of
    80 layers' activations); ZeRO-3, full recompute and micro-batch 1 together do, and the reason is not
    repeated as advice."""
    pins = ["--tp", "1", "--pp", "1", "--cp", "1"]
    code, text = _run(*BASE, *pins, "--zero", "0", "--recompute", "none", "--mbs", "8")
    assert code == 1
    assert "the pinned layout needs 2018.3 GB per GPU" in text
    assert "all of --zero 3, --recompute full, --mbs 1 together (18.5 GB) fit within 76.0 GB" in text
    assert "smallest memory of any layout" not in text and "--bf16-grads" not in text
    assert _run(*BASE, *pins, "--zero", "3", "--recompute", "full", "--mbs", "1")[0] == 0


def test_a_pinned_m_that_breaks_the_interleaving_rule_is_named_as_such():
    """PP 16, v 5, m 12 pinned: every batch is in range, yet p must divide m (Megatron-LM's interleaved
    schedule); the advice used to read 'the nearest are  tokens' and offered a cap of 0.25 that no legal row
    reaches. m = 32 meets both rules (15/(5*32) = 0.094); m = 16 meets the divisibility one only (15/80 = 0.1875),
    and --vpp 1 breaks the cap, so neither is offered."""
    pins = ["--tp", "8", "--pp", "16", "--vpp", "5"]
    code, text = _run(*BASE, *pins, "--microbatches", "12")
    assert code == 1 and "bubble and global_batch constraints" in text
    assert "the nearest are tokens" not in text and "--max-bubble" not in text
    assert "12 is not a multiple of pp 16; --microbatches 32" in text and "--vpp 1" not in text
    assert "32 micro-batches per step (--microbatches 32)" in text
    assert _run(*BASE, *pins, "--microbatches", "32")[0] == 0


def test_a_batch_ceiling_below_every_layout_names_flags_and_the_batch_that_fits():
    """DP 512 pinned at 4,096 tokens: the least batch is 512*1*1*4,096 = 2,097,152 tokens, above 1M + 10%. Fewer
    GPUs would keep d = 512 (they shrink tp·pp·cp), so they are not offered: a smaller --dp is."""
    code, text = _run(*BASE, "--dp", "512", "--global-batch", "1M")
    assert code == 1
    assert "smallest global batch any layout can run is 2,097,152 tokens (d·b·m·s)" in text
    assert "1,100,000: a smaller --dp; or a batch of at least that (--global-batch 2097152" in text
    assert "fewer GPUs" not in text
    assert _run(*BASE, "--dp", "512", "--global-batch", "2097152")[0] == 0


def test_a_vpp_no_stage_can_take_is_bad_input_at_its_flag():
    """DeepSeek-V3's 61 layers on 512 GPUs: stages of ceil(61/p) = 31, 16, 8, 4, 2 layers for p = 2..32, none
    divisible by 5, so --vpp 5 is a bad value (exit 2, one line), as it already was with --pp pinned; it used to
    be 'infeasible' (exit 1) with the pins printed as a Python dict."""
    result = CliRunner().invoke(app, ["parallelize", "--model", "deepseek-v3", "--gpus", "512", "--vpp", "5"])
    assert result.exit_code == 2 and len(result.stderr.strip().splitlines()) == 1
    assert result.stderr.startswith(
        "runplan: error: --vpp: vpp=5 divides no pipeline stage this job can have"
    )
    assert (
        "stages of 31, 16, 8, 4, 2 layers" in result.stderr
        and "pin one of 1, 2, 4, 8, 16, 31" in result.stderr
    )


def test_zero3_pinned_where_every_layout_has_stages_is_explained_not_an_internal_error():
    """--zero 3 --vpp 2 on the default stack: v = 2 needs p >= 2, and ZeRO-3 under stages is searched only on
    FSDP stacks or with pp pinned, so no row is left; this crashed in the advice (argmin of an empty grid,
    exit 3). Pinning pp as well evaluates it."""
    argv = ["parallelize", "--model", "gemma-2-9b", "--gpus", "8", "--zero", "3", "--vpp", "2"]
    code, text = _run(*argv)
    assert code == 1 and "internal error" not in text
    assert "this stack searches ZeRO-3 under them only with --pp pinned" in text
    assert "pin --pp as well to evaluate it (on Megatron, an untested layout), or a lower --zero" in text
    assert _run(*argv[:-2], "--pp", "2", "--vpp", "3")[0] == 0  # both pinned: evaluated


PLAN = """schema_version: 1
model:
  shape: {name: my-70b, d_model: 8192, n_layers: 80, n_heads: 64, n_kv_heads: 8, ffn_hidden: 28672, head_dim: 128,
          mlp: swiglu, vocab_size: 32000, tied_embeddings: false, norm: rmsnorm}
budget: {tokens: 1T}
cluster: {gpu: h100-sxm, gpus: 8}
training: {seq_len: 4096}
"""


def test_with_a_plan_file_the_inputs_are_advised_as_plan_keys_and_the_tolerance_flag_counts(tmp_path):
    """`parallelize plan.yaml` refuses --gpus and --global-batch beside the file, so the advice names the plan
    key (a 70B shape on 8 GPUs: 18 B/param fully sharded need 24 GPUs); --batch-tolerance was silently
    ignored there (the range stayed the plan's +-10%), now it widens it and is checked like the flag."""
    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN)
    code, text = _run("parallelize", str(plan))
    assert code == 1 and "(at least cluster: {gpus: 24} in the plan file)" in text and "--gpus" not in text
    wide = tmp_path / "wide.yaml"
    wide.write_text(PLAN.replace("gpus: 8}", "gpus: 64}"))
    ranges = []
    for tolerance in ([], ["--batch-tolerance", "0.5"]):
        out = CliRunner().invoke(app, ["parallelize", str(wide), "--json", *tolerance]).stdout
        ranges.append(json.loads(out)["batch_range_tokens"])
    assert ranges[1][0] < ranges[0][0] and ranges[1][1] > ranges[0][1]
    assert ranges[0][1] / ranges[0][0] == pytest.approx(1.1 / 0.9)
    assert ranges[1][1] / ranges[1][0] == pytest.approx(1.5 / 0.5)
    code, text = _run("parallelize", str(wide), "--batch-tolerance", "2")
    assert code == 2 and text.startswith("runplan: error: --batch-tolerance: must be less than 1")


def test_a_pinned_layout_that_breaks_the_bubble_cap_is_not_called_within_it_in_fastest():
    """Issue 12's rule: a fully pinned layout that fits is answered (exit 0) with what it breaks as warnings.
    TP 8 PP 16 DP 4 v 5 m 12: bubble 15/(5*12) = 0.25 > 0.15 and 16 does not divide 12. Its `fastest` copy
    said violations [] and why 'bubble ... = 0.250 <= 0.15'; it is the same layout as layouts[0]."""
    pins = "--tp 8 --pp 16 --dp 4 --cp 1 --zero 1 --mbs 8 --vpp 5 --recompute selective --microbatches 12"
    result = CliRunner().invoke(app, [*BASE, *pins.split(), "--json"])
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert data["fastest"] == data["layouts"][0]
    assert data["fastest"]["violations"] == [
        "bubble 0.250 > 0.15",
        "12 micro-batches not a multiple of pp 16 (interleaved, v > 1)",
    ]
    assert data["layouts"][0]["bubble_fraction"] == pytest.approx(15 / 60)
