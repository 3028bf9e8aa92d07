"""torchtitan's own recomputation and loss (stack every_other_mm, cross_entropy unfused), hand-derived, and the
published torchtitan memory rows they were modelled from (docs/parallel.md, Stacks; docs/validation.md)."""

import pytest
from tests.parallel.shapes import H100, LLAMA_8B

from runplan.parallel.layout import Layout, ParallelRequest
from runplan.parallel.memory import ShapeTerms, layer_activation_bytes_per_token
from runplan.parallel.search import evaluate_layout
from runplan.parallel.stack import Stack
from runplan.parallel.timing import (
    FULL_RECOMPUTE_ELEMENTWISE_SHARE,
    SELECTIVE_RECOMPUTE_ELEMENTWISE_SHARE,
    default_efficiency,
    gemm_seconds,
)

OP_SAC = Stack(selective_recompute=("every_other_mm",))
h, F, a, kv, d = 4096, 14336, 32, 8, 128  # Llama 3.1 8B


def test_every_other_mm_keeps_what_torchtitans_policy_saves():
    terms = ShapeTerms.from_shape(LLAMA_8B)
    kept, _ = layer_activation_bytes_per_token(terms, 1, False, 1, moe=False, stack=OP_SAC)
    # block input 2h + Q 2·a·d + V 2·kv·d + attention output 2·a·d + LSE 4a + w1 2F + w2 2h, per token
    assert float(kept) == 2 * h + 2 * a * d + 2 * kv * d + 2 * a * d + 4 * a + 2 * F + 2 * h == 63616
    # TP 8 with SP: sharded block input, each sublayer's reduce-scatter output 2h/t kept, w2's unreduced 2h
    kept_tp, _ = layer_activation_bytes_per_token(terms, 8, True, 1, moe=False, stack=OP_SAC)
    by_hand = (
        2 * h / 8
        + (2 * a * d + 2 * kv * d + 2 * a * d + 4 * a) / 8
        + 2 * h / 8
        + 2 * F / 8
        + 2 * h
        + 2 * h / 8
    )
    assert float(kept_tp) == by_hand == 17168


def test_every_other_mm_recomputes_k_o_w3_and_every_elementwise_op():
    eff = default_efficiency(H100).model_copy(update={"gemm_half_dim": 0.0})
    lay = Layout(
        tp=1, pp=1, dp=1, ep=1, cp=1, zero=0, micro_batch=1, microbatches=1, vpp=1, recompute="selective",
        sequence_parallel=False,
    )  # fmt: skip

    def step(stack):
        req = ParallelRequest(model=LLAMA_8B, gpu=H100, n_gpus=1, seq_len=8192, stack=stack, efficiency=eff)
        return evaluate_layout(req, lay).step_seconds

    T, L = 8192, 32
    gemms = sum(float(gemm_seconds(*mnk, H100, eff)) for mnk in ((T, kv * d, h), (T, h, a * d), (T, F, h)))
    # fused elementwise forward bytes per token of a Llama 3 8B layer (docs/parallel.md): two RMSNorms 2·4096·4,
    # two residual adds 2·4096·6, RoPE over 40·128 elements 4, SwiGLU over 14,336 outputs 6 = 188,416; backward 2x
    forward_bytes = 2 * 4096 * 4 + 2 * 4096 * 6 + 40 * 128 * 4 + 14336 * 6
    assert forward_bytes == 188416
    elementwise = (
        eff.elementwise_time_factor
        * T * L * 3 * forward_bytes
        * (FULL_RECOMPUTE_ELEMENTWISE_SHARE - SELECTIVE_RECOMPUTE_ELEMENTWISE_SHARE)
        / H100.hbm_bandwidth_bytes_per_s
    )  # fmt: skip
    assert step(OP_SAC) - step(Stack(selective_recompute=())) == pytest.approx(
        L * gemms + elementwise, rel=1e-9
    )


def test_unfused_cross_entropy_holds_12_bytes_per_logit():
    lay = Layout(
        tp=2, pp=1, dp=1, ep=1, cp=1, zero=0, micro_batch=2, microbatches=1, vpp=1, recompute="full",
        sequence_parallel=True,
    )  # fmt: skip

    def activations(loss):
        req = ParallelRequest(
            model=LLAMA_8B, gpu=H100, n_gpus=2, seq_len=8192, stack=Stack(cross_entropy=loss)
        )
        return evaluate_layout(req, lay).memory_bytes.activations

    # 12 - 6 bytes per logit, b·s tokens, vocabulary 128256 split over t = 2
    assert activations("unfused") - activations("fused") == pytest.approx(6 * 2 * 8192 * 128256 / 2)


def test_every_other_mm_does_not_combine_with_per_module_units():
    # the op-level policy decides the whole block: with 'mlp' beside it the time model reran the MLP's GEMMs
    # while the memory model kept w1's and w2's outputs (same activations, 8% slower step on Llama 3.1 8B)
    from typer.testing import CliRunner

    from runplan.cli.app import app
    from runplan.errors import SpecError
    from runplan.parallel.stack import resolve_stack

    assert Stack(selective_recompute=("every_other_mm", "moe_act")).selective_recompute[0] == "every_other_mm"
    for other in ("mlp", "layernorm", "mlp_act", "core_attn"):
        with pytest.raises(ValueError, match=f"does not combine with {other}"):
            Stack(selective_recompute=("every_other_mm", other))
    with pytest.raises((SpecError, ValueError)):
        resolve_stack({"preset": "torchtitan-fsdp2", "selective_recompute": ["every_other_mm", "mlp"]})
    flags = ["parallelize", "--model", "8b", "--gpus", "8", "--selective-recompute", "every_other_mm,mlp"]
    result = CliRunner().invoke(app, flags)
    assert result.exit_code == 2
    assert result.stderr.startswith("runplan: error: --selective-recompute: every_other_mm (torchtitan's")
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(("sp", "extra"), [(True, 1), (False, 2)])
def test_every_other_mm_reruns_the_tp_collectives_it_does_not_save(sp, extra):
    # 4 all-reduce-sized collectives per layer and micro-batch (2 forward, 2 backward); the op-level recompute
    # reruns the two SP all-gathers (+1 all-reduce's worth; reduce-scatter outputs are saved) or, without SP,
    # both all-reduces (+2). TP overlap off so that every collective is exposed.
    stack = OP_SAC.model_copy(update={"tp_comm_overlap": False})
    lay = Layout(
        tp=8, pp=1, dp=1, ep=1, cp=1, zero=0, micro_batch=1, microbatches=1, vpp=1, recompute="selective",
        sequence_parallel=sp,
    )  # fmt: skip

    def tp_seconds(s):
        req = ParallelRequest(model=LLAMA_8B, gpu=H100, n_gpus=8, seq_len=8192, stack=s)
        return evaluate_layout(req, lay).time_seconds.tensor_parallel

    plain = tp_seconds(stack.model_copy(update={"selective_recompute": ()}))
    assert tp_seconds(stack) == pytest.approx(plain * (4 + extra) / 4, rel=1e-12)
