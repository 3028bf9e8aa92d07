"""The training stack: published activation formulas per stack, presets, overrides, and every switch's effect."""

import json

import numpy as np
import pytest
from tests.parallel.shapes import GPT3, GPT_SMALL, H100, LLAMA_8B, LLAMA_70B
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.errors import SpecError
from runplan.parallel.layout import Constraints, Layout, ParallelRequest, Pins
from runplan.parallel.memory import ShapeTerms, layer_activation_bytes_per_token
from runplan.parallel.search import evaluate_layout, search
from runplan.parallel.stack import PRESETS, Stack, resolve_stack
from runplan.spec import load_plan_text

S = 2048
MEGATRON_2022 = Stack(preset="megatron-2022")


def per_token(stack: Stack, t: int, sp: bool, rc: int) -> float:
    kept, _ = layer_activation_bytes_per_token(
        ShapeTerms.from_shape(GPT3), t, sp, rc, moe=False, seq_len=S, stack=stack
    )
    return float(kept)


@pytest.mark.parametrize("t", [1, 8])
def test_korthikanti_table_2_no_recompute(t):
    # Korthikanti et al. 2022 (arXiv 2205.05198) Table 2, per layer and per s·b: tensor parallel without SP
    # h(10 + 24/t + 5as/(ht)); with SP h/t·(34 + 5as/h)
    h, a = 12288, 96
    assert per_token(MEGATRON_2022, t, False, 0) == pytest.approx(h * (10 + 24 / t + 5 * a * S / (h * t)))
    assert per_token(MEGATRON_2022, t, True, 0) == pytest.approx(h / t * (34 + 5 * a * S / h))


def test_korthikanti_table_2_selective_recompute():
    # Table 2, "sequence parallelism + selective activation recomputation": sbh·34/t (the attention core,
    # the paper's selective choice, is recomputed)
    assert per_token(MEGATRON_2022, 8, True, 1) == pytest.approx(12288 / 8 * 34)


def test_flash_attention_stores_no_scores_and_core_attn_recompute_then_saves_nothing():
    core = Stack(preset="megatron-core")  # FlashAttention on, selective = core_attn (Megatron-core's default)
    assert core.flash_attention and core.selective_recompute == ("core_attn",)
    assert per_token(core, 8, True, 1) == per_token(core, 8, True, 0)
    # without dropout the stored bytes are Korthikanti's 34 minus the two masks, plus the fp32 LSE per head
    assert per_token(core, 8, True, 0) == pytest.approx(12288 / 8 * 32 + 4 * 96 / 8)


def test_attention_dropout_keeps_its_mask_without_flash():
    # softmax output 2as only; with attention dropout its mask (1) and output (2): 5as (Korthikanti Table 2)
    plain = Stack(flash_attention=False)
    dropped = Stack(flash_attention=False, attention_dropout=0.1)
    assert per_token(dropped, 1, False, 0) - per_token(plain, 1, False, 0) == pytest.approx(3 * 96 * S)


@pytest.mark.parametrize(
    ("modules", "saved_per_token"),
    [
        (("layernorm",), 4 * 12288 / 8),  # the two norm outputs, sharded by SP
        (("mlp_act",), 4 * 12288 * 4 / 8 - 2 * 12288 * 4 / 8),  # GeLU: pre- and post-activation 4F -> 2F
        (("mlp",), 4 * 12288 * 4 / 8),  # the whole MLP
        (("core_attn",), 0.0),  # FlashAttention already recomputes the scores
    ],
)
def test_each_selective_module_drops_its_tensors(modules, saved_per_token):
    stack = Stack(selective_recompute=modules)
    assert per_token(stack, 8, True, 0) - per_token(stack, 8, True, 1) == pytest.approx(saved_per_token)


def test_default_stack_is_the_calibrated_one():
    assert Stack() == resolve_stack("default") == resolve_stack(None)
    assert Stack().selective_recompute == ("layernorm", "mlp_act", "moe_act")
    assert Stack().gradient_bytes == 4 and Stack(gradient_dtype="bf16").gradient_bytes == 2


def test_presets_fill_only_what_is_not_given():
    stack = Stack.model_validate({"preset": "megatron-2022", "hidden_dropout": 0.0})
    assert stack.hidden_dropout == 0.0 and stack.attention_dropout == 0.1 and not stack.flash_attention
    assert Stack.model_validate("torchtitan-fsdp2") == Stack(
        **{"preset": "torchtitan-fsdp2", **PRESETS["torchtitan-fsdp2"]}
    )


def test_unknown_preset_is_one_line_error():
    with pytest.raises(SpecError, match="unknown stack preset 'megatron'") as info:
        resolve_stack("megatron")
    assert info.value.where == "stack"


def _request(stack: Stack, **pins) -> ParallelRequest:
    return ParallelRequest(
        model=LLAMA_70B,
        gpu=H100,
        n_gpus=512,
        seq_len=4096,
        stack=stack,
        pins=Pins(**pins),
        constraints=Constraints(max_bubble_fraction=0.99),
    )


LAYOUT = Layout(
    tp=8,
    pp=8,
    dp=8,
    ep=1,
    cp=1,
    zero=1,
    micro_batch=1,
    microbatches=16,
    vpp=1,
    recompute="full",
    sequence_parallel=False,
)


def test_pipeline_scatter_gather_divides_sends_by_tp_without_sp():
    on = evaluate_layout(_request(Stack(pipeline_scatter_gather=True)), LAYOUT).time_seconds.pipeline_p2p
    off = evaluate_layout(_request(Stack(pipeline_scatter_gather=False)), LAYOUT).time_seconds.pipeline_p2p
    lat = 2e-5 * 2 * 16  # two sends per micro-batch, the fixed latency each
    assert (on - lat) == pytest.approx((off - lat) / 8, rel=1e-9)


def test_without_grad_reduce_overlap_the_whole_dp_traffic_is_exposed():
    on = evaluate_layout(_request(Stack()), LAYOUT).time_seconds.data_parallel
    off = evaluate_layout(_request(Stack(overlap_grad_reduce=False)), LAYOUT).time_seconds.data_parallel
    assert off >= on > 0


def test_block_recompute_of_every_layer_equals_uniform_and_of_fewer_layers_keeps_more():
    uniform = evaluate_layout(_request(Stack()), LAYOUT)
    every = evaluate_layout(_request(Stack(full_recompute_method="block", full_recompute_layers=10)), LAYOUT)
    fewer = evaluate_layout(_request(Stack(full_recompute_method="block", full_recompute_layers=4)), LAYOUT)
    assert every.memory_bytes.activations == pytest.approx(uniform.memory_bytes.activations)
    assert every.step_seconds == pytest.approx(uniform.step_seconds)
    assert fewer.memory_bytes.activations > uniform.memory_bytes.activations
    assert fewer.step_seconds < uniform.step_seconds


@pytest.mark.parametrize(("dist_opt", "stages"), [(True, {1, 2, 3}), (False, {0})])
def test_distributed_optimizer_fixes_the_zero_stages_searched(dist_opt, stages):
    result = search(
        ParallelRequest(
            model=LLAMA_8B, gpu=H100, n_gpus=64, stack=Stack(distributed_optimizer=dist_opt), top=50
        )
    )
    assert {x.zero for x in result.layouts} <= stages


def test_no_flash_gpt_small_is_slower_and_larger():
    req = {
        "model": GPT_SMALL,
        "gpu": H100,
        "n_gpus": 8,
        "seq_len": 2048,
        "pins": Pins(tp=1, pp=1, zero=0, micro_batch=4, recompute="none"),
    }
    flash = search(ParallelRequest(**req)).layouts[0]
    plain = search(ParallelRequest(**req, stack=Stack(flash_attention=False))).layouts[0]
    assert plain.memory_bytes.activations > flash.memory_bytes.activations
    assert plain.step_seconds > flash.step_seconds


def test_plan_file_stack_section():
    text = "schema_version: 1\nbudget: {flops: 2e23}\ncluster: {gpus: 512}\nstack: {preset: megatron-2022, hidden_dropout: 0}\n"
    spec = load_plan_text(text)
    assert (
        spec.stack.preset == "megatron-2022"
        and spec.stack.hidden_dropout == 0
        and not spec.stack.flash_attention
    )
    assert load_plan_text(
        text.replace("{preset: megatron-2022, hidden_dropout: 0}", "megatron-core")
    ).stack.distributed_optimizer


def test_cli_stack_flags_reach_the_search():
    runner = CliRunner()
    base = ["parallelize", "--model", "8b", "--gpus", "64", "--json"]
    default = json.loads(runner.invoke(app, base).stdout)["layouts"][0]
    plain = runner.invoke(app, [*base, "--stack", "megatron-2022"])
    assert plain.exit_code == 0, plain.stderr
    assert json.loads(plain.stdout)["layouts"][0]["tokens_per_second"] < default["tokens_per_second"]
    bad = runner.invoke(app, [*base, "--stack", "nemo"])
    assert bad.exit_code == 2 and "--stack" in bad.stderr and "Traceback" not in bad.stderr
    bad = runner.invoke(app, [*base, "--selective-recompute", "attention"])
    assert bad.exit_code == 2 and "--selective-recompute" in bad.stderr


def test_fully_pinned_layout_is_evaluated_with_warnings():
    # Megatron's 2021 GPT-3 layout shape on a small batch: the bubble is far above the default cap of 0.15
    runner = CliRunner()
    argv = [
        "parallelize",
        "--model",
        "70b",
        "--gpus",
        "512",
        "--tp",
        "8",
        "--pp",
        "16",
        "--cp",
        "1",
        "--zero",
        "1",
    ]
    argv += ["--mbs", "1", "--vpp", "1", "--recompute", "selective", "--microbatches", "8"]
    result = runner.invoke(app, argv)
    assert result.exit_code == 0, result.stderr
    assert "the pinned layout breaks a constraint: bubble" in result.stderr
    data = json.loads(runner.invoke(app, [*argv, "--json"]).stdout)
    assert data["layouts"][0]["violations"] and data["feasible"] == 1


def test_fully_pinned_layout_that_does_not_fit_names_the_term():
    argv = [
        "parallelize",
        "--model",
        "405b",
        "--gpus",
        "8",
        "--tp",
        "8",
        "--pp",
        "1",
        "--cp",
        "1",
        "--zero",
        "1",
    ]
    argv += ["--mbs", "1", "--vpp", "1", "--recompute", "none"]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 1
    assert "the largest term is optimizer" in result.stderr
    assert "--mbs 1" not in result.stderr  # already pinned to 1: not suggested again
    # 405B's fully sharded states need 101 GPUs: on 8, unpinning or another ZeRO stage cannot help
    assert "--micro_batch" not in result.stderr and "need at least 104" in result.stderr
    assert "unpin" not in result.stderr and "--zero 3" not in result.stderr


def test_zero_activation_terms_stay_finite():
    terms = ShapeTerms.from_shape(LLAMA_8B)
    kept, none = layer_activation_bytes_per_token(
        terms, np.array([1, 2]), np.array([True, False]), np.array([2, 1]), moe=False, seq_len=4096
    )
    assert np.all(np.isfinite(kept)) and np.all(kept <= none)


def test_parameter_gather_without_overlap_is_exposed_after_the_step():
    # 70B, TP 8 PP 1 DP 64 ZeRO-1, one micro-batch of 8 sequences, so the whole DP traffic fits in the overlap
    # window (ZeRO-1 overlaps with one micro-batch): without --overlap-param-gather the 2-byte all-gather of the
    # updated parameters leaves the window and is paid in full, so the step grows by gather x (1 - interference).
    # (Where the traffic overflows the window anyway, moving the gather out changes nothing.)
    from tests.parallel.reference import layout as axes
    from tests.parallel.shapes import LLAMA_70B

    from runplan.parallel.timing import default_efficiency, dp_bandwidth

    layout = axes(8, 1, 64, 1, 1, 1, 8, 1, 1, "selective", True)  # tp pp dp ep cp zero b m v recompute sp

    def estimate(stack):
        request = ParallelRequest(model=LLAMA_70B, gpu=H100, n_gpus=512, seq_len=4096, stack=stack)
        return evaluate_layout(request, layout), request

    on, request = estimate(Stack())
    off, _ = estimate(Stack(overlap_param_gather=False))
    eff = request.efficiency or default_efficiency(H100)
    params = LLAMA_70B.total_params / 8  # every stage's weights on one TP rank (PP 1)
    bandwidth = float(dp_bandwidth(H100, 8, 64, 8)) * eff.inter_node_network_efficiency
    gather = 2 * params * 63 / 64 / bandwidth
    assert 0.1 < gather < 1.0  # seconds: a real share of the step
    expected = gather * (1 - eff.dp_overlap_interference)
    assert off.step_seconds - on.step_seconds == pytest.approx(expected, rel=1e-3)
    assert Stack(preset="deepspeed").overlap_param_gather is False


def test_presets_ship_as_yaml_with_the_names_the_schema_offers():
    # configs/stacks.yaml is what a user reads and copies; the plan schema's enum of preset names must match it,
    # and every preset must build a Stack (an unknown field in the file is an error here, not at a user's plan)
    import typing

    from runplan.parallel.stack import PresetName

    assert list(PRESETS) == list(typing.get_args(PresetName))
    for name, fields in PRESETS.items():
        stack = Stack(preset=name)
        assert all(getattr(stack, key) == value for key, value in fields.items()), name
    assert PRESETS["megatron-2022"]["selective_recompute"] == ("core_attn",)  # YAML lists become tuples


def test_autocast_over_fp32_weights_costs_24_bytes_per_parameter_per_micro_batch():
    """Hand-derived (docs/parallel.md, Stacks): Llama 3 8B on 8 H100, DDP (ZeRO 0), 4 micro-batches, no
    recomputation: each micro-batch casts every weight (4 + 2 bytes) and adds its gradient back (2 + 4 and 4 + 4
    + 4), 24 bytes x 8.03e9 parameters at 3.35 TB/s = 57.5 ms; full recomputation casts again (30 bytes). Memory:
    fp32 weights 4 + the cached half copy 2 in place of the bf16 weights 2, Adam 8 in place of 12: the same
    18 bytes per parameter unsharded; under ZeRO-1 the fp32 weights stay whole (4 + 2 + 4 + 8/d)."""
    from tests.parallel.reference import layout as axes

    params = LLAMA_8B.total_params
    request = ParallelRequest(model=LLAMA_8B, gpu=H100, n_gpus=8, seq_len=4096)
    for recompute, per_param in (("none", 24), ("full", 30)):
        layout = axes(1, 1, 8, 1, 1, 0, 1, 4, 1, recompute, False)  # tp pp dp ep cp zero b m v recompute sp
        plain = evaluate_layout(request, layout)
        amp = evaluate_layout(request.model_copy(update={"stack": Stack(autocast_fp32_weights=True)}), layout)
        added = 4 * per_param * params / H100.hbm_bandwidth_bytes_per_s
        assert amp.time_seconds.compute - plain.time_seconds.compute == pytest.approx(added, rel=1e-9)
        assert 0.05 < added / 4 < 0.08  # about 57.5 ms (72 ms with recompute) per micro-batch
        states = ("weights", "gradients", "optimizer")
        assert sum(getattr(amp.memory_bytes, k) for k in states) == pytest.approx(18 * params, rel=1e-9)
        assert amp.memory_bytes.weights == pytest.approx(6 * params, rel=1e-9)
    zero1 = axes(1, 1, 8, 1, 1, 1, 1, 4, 1, "none", False)
    amp1 = evaluate_layout(request.model_copy(update={"stack": Stack(autocast_fp32_weights=True)}), zero1)
    assert amp1.memory_bytes.optimizer == pytest.approx(8 * params / 8, rel=1e-9)
    assert amp1.memory_bytes.weights == pytest.approx(6 * params, rel=1e-9)


def test_autocast_moves_fp32_parameters_and_zero1_all_reduces_the_gradients():
    """Hand-derived (docs/parallel.md, DP): Llama 3 8B on 16 H100 (2 nodes, DP 16), nothing overlapped, so the
    DP time is its bytes over the scale-out ring. ZeRO-1 with bf16 weights: reduce-scatter 4 + gather 2 = 6 bytes
    per parameter; under autocast (ZeroRedundancyOptimizer over DDP) all-reduce 2 x 4 + fp32 broadcast 4 = 12.
    ZeRO-3, 2 micro-batches: 2 x (2 gathers x 2 + 4) = 16 bytes; fp32 gathers: 2 x (2 x 4 + 4) = 24."""
    from tests.parallel.reference import layout as axes

    from runplan.parallel.timing import COLLECTIVE_LATENCY_SECONDS, default_efficiency, dp_bandwidth

    params = LLAMA_8B.total_params
    request = ParallelRequest(model=LLAMA_8B, gpu=H100, n_gpus=16, seq_len=4096)
    eff = request.efficiency or default_efficiency(H100)
    ring = dp_bandwidth(H100, 1, 16, 8) * eff.inter_node_network_efficiency
    exposed = {"overlap_grad_reduce": False, "overlap_param_gather": False}
    for zero, bf16_bytes, amp_bytes in ((1, 6, 12), (3, 16, 24)):
        layout = axes(1, 1, 16, 1, 1, zero, 1, 2, 1, "none", False)  # tp pp dp ep cp zero b m v recompute sp
        for autocast, per_param in ((False, bf16_bytes), (True, amp_bytes)):
            stack = Stack(autocast_fp32_weights=autocast, **exposed)
            got = evaluate_layout(request.model_copy(update={"stack": stack}), layout).time_seconds
            expected = per_param * 15 / 16 * params / ring + 2 * COLLECTIVE_LATENCY_SECONDS
            assert float(got.data_parallel) == pytest.approx(float(expected), rel=1e-9), (zero, autocast)


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"gradient_dtype": "bf16"}, "gradient_dtype bf16"),
        ({"fsdp_mixed_precision": True}, "fsdp_mixed_precision"),
        ({"precision": "fp8"}, "precision fp8"),
    ],
)
def test_autocast_refuses_what_it_cannot_be(fields, named):
    with pytest.raises(ValueError, match=f"does not go with {named}"):
        Stack(autocast_fp32_weights=True, **fields)
