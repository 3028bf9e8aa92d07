"""bf16 Adam moments (stack optimizer_state_dtype: bf16) shrink the optimizer state from 12 to 8 bytes per parameter
and the optimizer step's HBM traffic from (2·12 + g + 2) to (2·8 + g + 2) bytes per local parameter; under ZeRO-1/2
with bf16 weights TransformerEngine's FusedAdam holds the master as 2-byte remainders: 6 bytes of state, and
(2·6 + g + 2 + 2) bytes of traffic (it reads the bf16 weight to rebuild the master).

Source: DeepSeek-V3 (arXiv 2412.19437 §3.3.3, "Low-Precision Optimizer States"): the first and second moments of
AdamW in BF16, the master weights kept in FP32: 4 + 2 + 2 bytes per parameter; ZeRO-1 shards them over d·c as
before (Rajbhandari et al. 2020 §5).

Hand derivation for Llama 3.1 70B (h 8192, 80 layers, FFN 28672, 64 heads, 8 KV heads of 128, vocab 128,256,
untied) on TP 4, PP 2, DP 64, ZeRO-1: one layer holds Q 8192² + K, V 2·8192·1024 + O 8192² = 150,994,944
attention weights, 3·8192·28672 = 704,643,072 MLP weights and 2·8192 norm weights: 855,654,400. The first stage
holds 40 layers and the 128,256·8192 = 1,050,673,152 embedding: 35,276,849,152 ÷ t 4 = Ψ = 8,819,212,288 per GPU.
Optimizer per GPU: 12·Ψ/64 = 1,653,602,304 bytes with fp32 moments; with bf16 moments and bf16 weights under ZeRO-1
TransformerEngine's FusedAdam keeps the fp32 master as its 16 low bits (Stack.fused_adam_master):
6·Ψ/64 = 826,801,152.
"""

import json

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.parallel.memory import model_state_bytes, optimizer_bytes_per_param
from runplan.parallel.stack import Stack

PSI_FIRST_STAGE = 8_819_212_288
LAYOUT = ["--tp", "4", "--pp", "2", "--zero", "1", "--mbs", "1", "--vpp", "1", "--recompute", "selective"]
ARGS = ["parallelize", "--model", "llama-3.1-70b", "--gpus", "512", "--gpu", "h100-sxm", "--seq-len", "4096"]


def _best(*extra: str) -> dict:
    res = CliRunner().invoke(app, [*ARGS, *LAYOUT, "--top", "1", "--json", *extra])
    assert res.exit_code == 0, res.output
    return json.loads(res.output)["layouts"][0]


@pytest.fixture(scope="module")
def both() -> tuple[dict, dict]:
    return _best(), _best("--optimizer-state-dtype", "bf16")


def test_llama70b_optimizer_bytes_per_gpu_fp32_and_bf16_moments(both):
    fp32, bf16 = both
    assert (fp32["tp"], fp32["pp"], fp32["dp"], fp32["zero"]) == (4, 2, 64, 1)
    assert fp32["memory_stage"] == "first" and bf16["memory_stage"] == "first"
    # the stage's parameters, read back from the fp32 gradients (4 B each, not sharded by ZeRO-1)
    assert fp32["memory_bytes"]["gradients"] == 4 * PSI_FIRST_STAGE
    assert fp32["memory_bytes"]["optimizer"] == pytest.approx(1_653_602_304, rel=1e-12)
    assert bf16["memory_bytes"]["optimizer"] == pytest.approx(826_801_152, rel=1e-12)
    # nothing else moves: the total drops by exactly 6·Ψ/64
    assert fp32["memory_bytes"]["total"] - bf16["memory_bytes"]["total"] == pytest.approx(
        826_801_152, rel=1e-9
    )
    for term in ("weights", "gradients", "activations", "other"):
        assert bf16["memory_bytes"][term] == fp32["memory_bytes"][term]


def test_optimizer_step_time_follows_the_bytes_it_moves(both):
    fp32, bf16 = both
    # ZeRO-1, bf16 weights: remainders (2·6 + 4 + 2 + 2) / (2·12 + 4 + 2) = 20 / 30 of the HBM-bound Adam update;
    # every other term unchanged
    assert bf16["time_seconds"]["optimizer"] / fp32["time_seconds"]["optimizer"] == pytest.approx(20 / 30)
    assert bf16["time_seconds"]["compute"] == fp32["time_seconds"]["compute"]
    assert bf16["time_seconds"]["data_parallel"] == fp32["time_seconds"]["data_parallel"]


def test_state_bytes_per_parameter():
    assert optimizer_bytes_per_param() == 12.0
    assert optimizer_bytes_per_param(Stack(optimizer_state_dtype="bf16").moment_bytes) == 8.0
    # fp32 parameters as the master (autocast): the two moments alone, 8 in fp32 and 4 in bf16
    assert optimizer_bytes_per_param(2, master=False) == 4.0
    # ZeRO-0, one parameter: 12 vs 8 bytes; ZeRO-1 over d·c = 8: an eighth of each
    assert float(model_state_bytes(1.0, 0.0, 0, 8, 1, 1, 4)[2]) == 12.0
    assert float(model_state_bytes(1.0, 0.0, 0, 8, 1, 1, 4, moment_bytes=2)[2]) == 8.0
    assert float(model_state_bytes(1.0, 0.0, 1, 8, 1, 1, 4, moment_bytes=2)[2]) == 1.0


def test_default_and_every_preset_keep_fp32_moments():
    from runplan.parallel.stack import PRESETS

    assert Stack().optimizer_state_dtype == "fp32"
    for name in PRESETS:
        assert Stack(preset=name).moment_bytes == 4, name


def test_unknown_dtype_is_one_line_naming_the_flag(one_error_line):
    res = CliRunner().invoke(app, [*ARGS, *LAYOUT, "--optimizer-state-dtype", "fp16"])
    line = one_error_line(res)
    assert "--optimizer-state-dtype" in line and "bf16" in line


def test_stack_refuses_bf16_moments_where_the_fp32_parameters_are_the_master(tmp_path, one_error_line):
    # FSDP mixed precision and autocast step torch AdamW over fp32 parameters: its moments take their dtype
    for field in ("fsdp_mixed_precision", "autocast_fp32_weights"):
        with pytest.raises(ValueError, match=field):
            Stack(optimizer_state_dtype="bf16", **{field: True})
    plan = tmp_path / "tt.yaml"
    plan.write_text(
        "schema_version: 1\nname: tt\nmodel: llama-3.1-8b\nbudget: {tokens: 100B}\ntraining: {seq_len: 4096}\n"
        "cluster: {gpu: h100-sxm, gpus: 64}\nstack: {preset: torchtitan-fsdp2, optimizer_state_dtype: bf16}\n"
    )
    line = one_error_line(CliRunner().invoke(app, ["plan", str(plan)]))
    assert "stack" in line and "optimizer_state_dtype bf16" in line and "fsdp_mixed_precision" in line


def test_bf16_moments_search_sharded_optimizers_only_and_a_pinned_zero_0_is_still_evaluated():
    # Megatron's precision-aware optimizer asserts the distributed optimizer (core/optimizer/__init__.py @
    # d98e8a64): unpinned, ZeRO-0 is not searched; pinned, it is evaluated as every pinned layout is (the
    # Megatron export refuses it, tests/export/test_bf16_optimizer_moments_export.py)
    import json

    from typer.testing import CliRunner

    from runplan.cli.app import app

    args = ["parallelize", "--model", "8b", "--gpus", "8", "--optimizer-state-dtype", "bf16"]
    searched = CliRunner().invoke(app, [*args, "--json"])
    assert searched.exit_code == 0, searched.output
    assert all(layout["zero"] >= 1 for layout in json.loads(searched.stdout)["layouts"])
    pinned = CliRunner().invoke(app, [*args, "--zero", "0", "--json"])
    assert pinned.exit_code == 0, pinned.output
    assert {layout["zero"] for layout in json.loads(pinned.stdout)["layouts"]} == {0}


def test_the_no_fit_advice_counts_bf16_moments():
    # 405B on 8 GPUs fits nowhere: the model states are 2 weights + 4 gradients + 4 master + 2 + 2 moments = 14
    # bytes/param with bf16 moments (16 with fp32 ones)
    from typer.testing import CliRunner

    from runplan.cli.app import app

    args = ["parallelize", "--model", "405b", "--gpus", "8"]
    bf16 = CliRunner().invoke(app, [*args, "--optimizer-state-dtype", "bf16"])
    fp32 = CliRunner().invoke(app, args)
    assert bf16.exit_code == fp32.exit_code == 1
    assert "(14 bytes/param: 2 weights + 4 gradients + 8 optimizer, fully sharded)" in " ".join(
        bf16.output.split()
    )
    assert "(18 bytes/param: 2 weights + 4 gradients + 12 optimizer, fully sharded)" in " ".join(
        fp32.output.split()
    )


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"distributed_optimizer": False}, "needs Megatron's distributed optimizer"),
        ({"preset": "deepspeed"}, "which preset deepspeed does not have"),
        ({"preset": "megatron-2022"}, "which preset megatron-2022 predates"),
    ],
)
def test_bf16_moments_are_refused_where_no_engine_keeps_them(fields, message):
    # distributed_optimizer false left no ZeRO stage to search (an IndexError, exit 3); DeepSpeed and the 2022
    # Megatron stack planned moments their engines cannot keep
    from runplan.parallel.stack import Stack

    with pytest.raises(ValueError, match=message):
        Stack.model_validate({"optimizer_state_dtype": "bf16", **fields})
