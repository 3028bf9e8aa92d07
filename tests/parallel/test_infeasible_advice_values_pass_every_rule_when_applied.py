"""Each value an infeasible `parallelize` answer offers meets every rule when applied, not only the one it was
derived from: the interleaving rule (Megatron-LM's interleaved schedule needs p | m) together with the batch
range and the bubble cap (p - 1)/(v*m) (Narayanan et al. 2021 §2.2.2); a GPU count that a layout fits, not only
the model states' bound; no --max-batch beside a batch target (min/max only narrow target +-10%,
search.batch_range_tokens); and for an engine-rule refusal only what the engine runs. Each printed remedy is run
and exits 0. Values hand-derived in each docstring."""

from __future__ import annotations

from typer.testing import CliRunner

from runplan.cli.app import app

BASE = ["parallelize", "--model", "70b", "--gpus", "512"]


def _run(*argv: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(argv))
    return result.exit_code, " ".join(result.stderr.split())


def test_the_interleaving_advice_names_the_pp_of_the_rows_in_range_and_a_batch_that_holds_the_new_m():
    """70B (80 layers), t 8, c 1, b 1, v 5, m 6 pinned, target 393,216 tokens = 96 sequences +-10%: p*d = 64 and
    5p | 80 give p in {2, 4, 8, 16}; only p 4 (d 16, d*m = 96) is in range, and 4 does not divide 6 (the advice
    named pp 2, the grid's first interleaved row, and offered m 6 back). The fewest multiple of 4 from 6 is 8,
    bubble 3/(5*8) = 0.075 <= 0.15, batch 16*8*4,096 = 524,288 tokens; v 1 leaves bubble 3/6 = 0.5 > 0.15."""
    pins = ["--tp", "8", "--cp", "1", "--mbs", "1", "--vpp", "5"]
    code, text = _run(*BASE, *pins, "--microbatches", "6", "--global-batch", "393216")
    assert code == 1
    assert "6 is not a multiple of pp 4;" in text and "pp 2" not in text
    assert "--microbatches 8 with a global batch of 524,288 tokens (--global-batch 524288)" in text
    assert "--microbatches 6 " not in text and "--vpp 1" not in text
    assert _run(*BASE, *pins, "--microbatches", "8", "--global-batch", "524288")[0] == 0
    assert _run(*BASE, *pins[:6], "--vpp", "1", "--microbatches", "6", "--global-batch", "393216")[0] == 1


def test_the_interleaving_advice_meets_the_bubble_cap_too():
    """Mixtral 8x7B on 64 GPUs, p 8, v 2, m 4: p | m needs m in {8, 16, 24, ...}; the bubble 7/(2m) <= 0.15 needs
    m >= 23.3, so 24 (the advice said 8, bubble 0.4375, or v 1, bubble 7/4 = 1.75: both exit 1)."""
    pins = ["--model", "mixtral-8x7b", "--gpus", "64", "--pp", "8", "--vpp", "2"]
    code, text = _run("parallelize", *pins, "--microbatches", "4")
    assert code == 1
    assert "4 is not a multiple of pp 8; --microbatches 24" in text
    assert "--microbatches 8" not in text and "--vpp 1" not in text
    assert _run("parallelize", *pins, "--microbatches", "24")[0] == 0
    assert _run("parallelize", *pins, "--microbatches", "8")[0] == 1


def test_the_least_batch_advised_meets_the_bubble_cap_and_no_max_batch_beside_a_target():
    """405B at 128k on 1,024 GPUs, p 16, v 2, b 2: the least batch d*b*m*s is 1*2*16*131,072 = 4,194,304 tokens
    (m = p), bubble 15/(2*16) = 0.469 > 0.15 (the advice offered it, exit 1). The bubble needs m >= 15/(2*0.15)
    = 50, a multiple of 16: 64, a batch of 2*64*131,072 = 16,777,216 tokens. With a target, --max-batch only
    narrows the range, so it is not offered."""
    argv = [
        *("parallelize", "--model", "405b", "--gpus", "1024"),
        *("--seq-len", "128k", "--pp", "16", "--vpp", "2"),
    ]
    code, text = _run(*argv, "--mbs", "2", "--global-batch", "1M")
    assert code == 1
    assert "smallest global batch any layout can run is 4,194,304 tokens (d·b·m·s)" in text
    assert "or a batch of at least 16,777,216 tokens" in text and "(--global-batch 16777216)" in text
    assert "--global-batch 4194304" not in text and "--max-batch" not in text
    assert _run(*argv, "--mbs", "2", "--global-batch", "16777216")[0] == 0


def test_max_batch_is_offered_with_its_value_only_without_a_target():
    """DP 512 pinned: the least batch is 512*1*1*4,096 = 2,097,152 tokens. With --global-batch 1M --max-batch 3M
    the range stays 1M +-10% (the max only narrows it): --max-batch cannot help and is not offered; without a
    target (--max-batch 1M) it is offered as --max-batch 2097152, which exits 0."""
    code, text = _run(*BASE, "--dp", "512", "--global-batch", "1M", "--max-batch", "3M")
    assert code == 1 and "against a ceiling of 1,100,000" in text
    assert "--max-batch" not in text and "(--global-batch 2097152)" in text
    code, text = _run(*BASE, "--dp", "512", "--max-batch", "1M")
    assert code == 1 and "(--global-batch 2097152, or --max-batch 2097152)" in text
    assert _run(*BASE, "--dp", "512", "--max-batch", "2097152")[0] == 0


def test_more_gpus_advised_is_a_count_a_layout_fits():
    """DeepSeek-V3 on 64 H100s: the fully sharded states (18 B/param) bound it at 176 GPUs, yet at 176 and 184
    the least memory is 76.7 GB > 76.0 usable; 192 (24 nodes) fits. The advice names 192, with 176 as the
    states' bound."""
    code, text = _run("parallelize", "--model", "deepseek-v3", "--gpus", "64")
    assert code == 1
    assert "need at least 176 h100-sxm GPUs" in text and "(at least --gpus 192)" in text
    assert "--gpus 176" not in text
    assert _run("parallelize", "--model", "deepseek-v3", "--gpus", "184")[0] == 1
    assert _run("parallelize", "--model", "deepseek-v3", "--gpus", "192")[0] == 0


def test_an_engine_rule_refusal_advises_only_what_the_engine_runs():
    """DeepSpeed's PipelineEngine runs ZeRO below 2 only (runtime/pipe/engine.py): ZeRO-2 with a vpp pin (p >= 2
    whatever the GPU count) or with t 8, d 8, c 1 on 512 GPUs (p = 8) is refused. Pinning pp as well evaluated a
    ZeRO-2 + PP layout DeepSpeed refuses, and the GPU count cannot lift a vpp pin's stages: neither is offered;
    ZeRO-1 is, and exits 0."""
    for pins in (["--vpp", "2"], ["--tp", "8", "--dp", "8", "--cp", "1"]):
        code, text = _run(*BASE, "--stack", "deepspeed", "--zero", "2", *pins)
        assert code == 1 and "DeepSpeed's pipeline engine runs ZeRO below 2 only" in text
        assert "pin --pp" not in text and "GPU count" not in text and "--gpus" not in text
        assert "a lower ZeRO stage (--zero 1)" in text
        assert _run(*BASE, "--stack", "deepspeed", "--zero", "1", *pins)[0] == 0
    code, text = _run(*BASE, "--zero", "3", "--vpp", "2")  # ZeRO-3 on Megatron: a lower stage, or pp pinned
    assert code == 1 and "GPU count" not in text and "a lower ZeRO stage (--zero 2)" in text
    assert _run(*BASE, "--zero", "2", "--vpp", "2")[0] == 0


def test_the_joint_batch_advice_gives_its_value_and_max_batch_only_without_a_target():
    """70B, t 8, c 1, b 1, v 1, m 6 pinned: within the bubble cap (p - 1)/6 <= 0.15 only p 1 is left, d 64, a
    batch of 64*6*4,096 = 1,572,864 tokens, above a target 393,216 +-10% (and p 4, d 16 in range has bubble 3/6
    = 0.5). It said "(--global-batch / --max-batch)": a max beside a target cannot widen its range."""
    pins = ["--tp", "8", "--cp", "1", "--mbs", "1", "--vpp", "1", "--microbatches", "6"]
    code, text = _run(*BASE, *pins, "--global-batch", "393216")
    assert code == 1 and "within memory and the bubble cap is 1,572,864 tokens" in text
    assert "a larger batch (--global-batch 1572864)" in text and "--max-batch" not in text
    code, text = _run(*BASE, *pins, "--max-batch", "393216")
    assert code == 1 and "a larger batch (--global-batch 1572864, or --max-batch 1572864)" in text
    assert _run(*BASE, *pins, "--global-batch", "1572864")[0] == 0
    assert _run(*BASE, *pins, "--max-batch", "1572864")[0] == 0


PLAN = """schema_version: 1
model:
  shape: {name: my-70b, d_model: 8192, n_layers: 80, n_heads: 64, n_kv_heads: 8, ffn_hidden: 28672, head_dim: 128,
          mlp: swiglu, vocab_size: 32000, tied_embeddings: false, norm: rmsnorm}
budget: {tokens: 1T}
cluster: {gpu: h100-sxm, gpus: 8}
training: {seq_len: 4096}
"""


def test_plan_and_parallelize_of_a_plan_file_advise_a_gpu_count_that_fits(tmp_path):
    """A 70B shape on 8 GPUs: 18 B/param fully sharded over 80 GB x 0.95 - 3 GB = 73 GB need 17.4 GPUs, 24 in
    whole nodes, where a layout fits. Each command names the key its way: `plan`, a plan-file command, the key
    path as its other advice does ("cluster.gpus: 24", cli.flags.paths_for_user); `parallelize plan.yaml`,
    whose other advice names flags, the plan file's key ("cluster: {gpus: 24} in the plan file")."""
    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN)
    answers = [_run(command, str(plan)) for command in ("plan", "parallelize")]
    assert [code for code, _ in answers] == [1, 1]
    advice = [text.partition("to make it feasible:")[2] for _, text in answers]
    assert "(at least cluster.gpus: 24)" in advice[0]
    assert "(at least cluster: {gpus: 24} in the plan file)" in advice[1]
    plan.write_text(PLAN.replace("gpus: 8}", "gpus: 24}"))
    assert _run("plan", str(plan))[0] == 0
