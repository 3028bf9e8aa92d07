"""Pure-Python evaluator of ONE layout: the test oracle the vectorized model is checked against.

Written independently of ``memory.py`` / ``timing.py`` (plain ``if`` statements and ``math``, no numpy) from the
formulas in docs/parallel.md; it imports only the input models and the fitted efficiencies (inputs, not
formulas). Slow on purpose: clarity over speed. Production never calls it (``search.evaluate_layout`` is the
single-layout path, through the vectorized model on a one-row grid).
"""

from __future__ import annotations

import math
from typing import Any

from runplan.parallel.layout import Efficiency, Layout, ParallelRequest
from runplan.parallel.timing import default_efficiency

# The constants of docs/parallel.md, written here again on purpose: the oracle shares no formula with timing.py.
ATTENTION_BACKWARD_RATIO = 2.5  # FlashAttention backward FLOPs / forward (FlashAttention-2 §3.1-3.2)
CAUSAL_FRACTION = 0.5  # causal mask: half the score blocks are skipped
CUDNN_OVER_FA2_ON_HOPPER = (
    1.58  # FlashAttention-3 paper Figs. 5-6, forward + 2.5 x backward (docs/parallel.md)
)
CP_MERGE_BYTES_PER_ELEMENT = 10.0  # fp32 accumulator read + bf16 partial read + fp32 write
# docs/parallel.md, "Eager elementwise kernels": forward bytes per element, PyTorch eager then fused
EAGER_FUSED_BYTES = {
    "rmsnorm": (2 + 4 + 4 + 4 + 4 + 4 + 4 + 4 + 2 + 2 + 2, 2 + 2),
    "layernorm": (4, 4),
    "rope": (2 + 4 + 4 + 4 + 4 + 2, 2 + 2),
    "swiglu": (2 + 2 + 2 + 2 + 2, 2 + 2 + 2),
    "gelu": (4, 4),
    "add": (6, 6),
    "dropout_add": (2 + 2 + 1 + 2 + 2 + 2, 2 + 2 + 2 + 1),
    "moe_permute_and_combine": (2 + 2 + 2 + 2, 2 + 2 + 2 + 2),  # per routed copy of h
}


def _elementwise_forward(req: ParallelRequest, lay: Layout, moe: bool, eager: bool) -> float:
    """docs/parallel.md, Time per step: forward elementwise bytes per token of one layer, op by op."""
    sh, stack, t = req.model, req.stack, lay.tp
    pick = 0 if eager else 1
    norm = EAGER_FUSED_BYTES[sh.norm][pick]
    add = EAGER_FUSED_BYTES["dropout_add" if stack.hidden_dropout > 0 else "add"][pick]
    if sh.learned_positions:
        rope_elements = 0.0
    elif sh.attention == "mla":
        rope_elements = (sh.n_heads + 1) * sh.qk_rope_head_dim
    else:
        rope_elements = (sh.n_heads + sh.n_kv_heads) * sh.qk_dim
    qk_norm_elements = (sh.n_heads + sh.n_kv_heads) * sh.qk_dim if sh.qk_norm else 0.0
    mlp_elements = (sh.top_k + sh.n_shared_experts) * sh.expert_ffn_hidden if moe else sh.ffn_hidden
    inside = (
        qk_norm_elements * EAGER_FUSED_BYTES["rmsnorm"][pick]
        + rope_elements * EAGER_FUSED_BYTES["rope"][pick]
        + mlp_elements * EAGER_FUSED_BYTES[sh.mlp][pick]
    )
    if not stack.flash_attention:  # scale-mask-softmax 2 + 2, dropout on the probabilities 2 + 2 + 1
        inside += sh.n_heads * req.seq_len * (4 + (5 if stack.attention_dropout > 0 else 0))
    shard = 1 / t if lay.sequence_parallel else 1.0
    routed = sh.top_k * sh.d_model * EAGER_FUSED_BYTES["moe_permute_and_combine"][pick] if moe else 0.0
    return (2 * sh.d_model * (norm + add) + routed) * shard + inside / t


def _elementwise_bytes(req: ParallelRequest, lay: Layout, eff: Efficiency, moe: bool) -> float:
    """Forward + backward (2x) elementwise bytes per token of one layer; eager pays the fitted share of its excess."""
    fused = _elementwise_forward(req, lay, moe, eager=False)
    if not req.stack.fused_elementwise:
        fused += eff.eager_elementwise_share * (_elementwise_forward(req, lay, moe, eager=True) - fused)
    return 3 * fused


FULL_RECOMPUTE_ELEMENTWISE_SHARE = 4.0 / 3.0
SELECTIVE_RECOMPUTE_ELEMENTWISE_SHARE = 7.0 / 6.0


def layout(*axes: Any) -> Layout:
    """A Layout from positional axes in Layout's order (tp, pp, dp, ep, cp, zero, micro_batch, microbatches,
    vpp, recompute, sequence_parallel)."""
    return Layout(**dict(zip(Layout.model_fields, axes, strict=True)))


# docs/parallel.md, FP8: per element, (cast to fp8, copy in the other operand layout) bytes by recipe
FP8_CAST = {"tensorwise": (5, 2), "delayed": (3, 2), "rowwise": (3, 3), "blockwise": (3, 3), "mxfp8": (3, 3)}


def _gemm(m: float, n: float, k: float, gpu, eff: Efficiency, fp8: bool = False) -> float:
    eta = eff.gemm_peak_fraction / (1 + eff.gemm_half_dim / m + eff.gemm_half_dim / n + eff.gemm_half_dim / k)
    if fp8:  # 1-byte inputs, bf16 output, the fp8 peak, the same eta
        return max(
            2 * m * n * k / (eta * gpu.fp8_flops), (m * k + k * n + 2 * m * n) / gpu.hbm_bandwidth_bytes_per_s
        )
    return max(
        2 * m * n * k / (eta * gpu.bf16_flops), 2 * (m * k + k * n + m * n) / gpu.hbm_bandwidth_bytes_per_s
    )


def _casts(
    gemms: list[tuple[float, float, float, float]], recipe: str, w: float = 1.0
) -> tuple[float, float]:
    """(forward, backward) cast bytes of linear GEMMs given as (count, M, N, K) (docs/parallel.md, FP8); ``w``
    the share of the weight (K·N) terms paid per micro-batch (1/m with the fp8 weight cache)."""
    c, r = FP8_CAST[recipe]
    fwd = sum(n_ * c * (m * k + w * k * n) for n_, m, n, k in gemms)
    bwd = sum(n_ * (c * m * n + r * (m * k + w * k * n + m * n)) for n_, m, n, k in gemms)
    return fwd, bwd


def _layer_bytes(req: ParallelRequest, lay: Layout, moe: bool) -> tuple[float, float]:
    """(kept, none) activation bytes per token of one layer."""
    sh = req.model
    t = lay.tp
    h = sh.d_model
    shard = 1 / t if lay.sequence_parallel else 1.0
    gated = sh.mlp == "swiglu"
    a, kv, dqk, dv = sh.n_heads, sh.n_kv_heads, sh.qk_dim, sh.value_dim
    lse = 4 * a if req.stack.flash_attention else 0  # fp32 log-sum-exp, FlashAttention only
    core = (2 * (a * dqk + kv * dqk + kv * dv) + 2 * a * dv + lse) / t
    if moe:
        fe = sh.expert_ffn_hidden
        act_all = (6 if gated else 4) * fe
        act_keep = (4 if gated else 2) * fe
        # docs/parallel.md, Memory: the routed copies 2h each arrive gathered over TP (not ÷t)
        mlp_all = sh.top_k * 2 * h + (sh.top_k + sh.n_shared_experts) * act_all / t + 8 * sh.n_experts
        mlp_keep = sh.top_k * 2 * h + (sh.top_k + sh.n_shared_experts) * act_keep / t + 8 * sh.n_experts
    else:
        mlp_all = (6 if gated else 4) * sh.ffn_hidden / t
        mlp_keep = (4 if gated else 2) * sh.ffn_hidden / t
    stack = req.stack
    # without FlashAttention: softmax output 2as/t, + dropout mask and output 3as/t with attention dropout
    scores = 0.0 if stack.flash_attention else (5 if stack.attention_dropout > 0 else 2) * a * req.seq_len / t
    masks = 2 * h * shard if stack.hidden_dropout > 0 else 0.0  # 1-byte masks after attention and after MLP
    none = 4 * h * shard + 4 * h * shard + core + mlp_all + scores + masks
    if lay.recompute == "none":
        return none, none
    if lay.recompute == "selective" and "every_other_mm" in stack.selective_recompute:
        # docs/parallel.md: torchtitan's op-level policy keeps the block input, Q, V, the attention output
        # (+ LSE), the reduce-scatter outputs (SP, t > 1) and, of the MLP, w1 and w2's outputs (GeLU: fc1)
        rs = 2 * h / t if lay.sequence_parallel and t > 1 else 0.0
        attn = 2 * h * shard + (2 * (a * dqk + kv * dv + a * dv) + lse) / t + rs
        if moe:
            mlp = mlp_keep if "moe_act" in stack.selective_recompute else mlp_all
        else:
            mlp = 2 * sh.ffn_hidden / t + rs + (2 * h if gated else 0.0)
        return attn + mlp + (0.0 if "core_attn" in stack.selective_recompute else scores) + masks, none
    if lay.recompute == "selective":
        modules = stack.selective_recompute
        kept = 4 * h * shard + (0.0 if "layernorm" in modules else 4 * h * shard) + core
        if not moe and "mlp" in modules:
            mlp = 0.0
        elif ("moe_act" if moe else "mlp_act") in modules:
            mlp = mlp_keep
        else:
            mlp = mlp_all
        return kept + mlp + (0.0 if "core_attn" in modules else scores) + masks, none
    return 2 * h * shard, none


def evaluate_layout(req: ParallelRequest, lay: Layout, eff: Efficiency | None = None) -> dict[str, float]:
    """Memory (per GPU, most loaded stage), step time breakdown, throughput, MFU/HFU and bubble of ``lay``."""
    sh, gpu = req.model, req.gpu
    eff = eff or req.efficiency or default_efficiency(gpu)
    t, p, d, e, c, v, m, b = (
        lay.tp,
        lay.pp,
        lay.dp,
        lay.ep,
        lay.cp,
        lay.vpp,
        lay.microbatches,
        lay.micro_batch,
    )
    s = req.seq_len
    g = 4 if req.stack.gradient_dtype == "fp32" else 2
    h = sh.d_model
    L = sh.n_layers
    layers = math.ceil(L / p)
    moe = min(layers, sh.moe_layers)
    dense = layers - moe
    tokens = b * s / c
    full = lay.recompute == "full"

    # ---- memory of the first and the last stage ----
    attn_norm = sh.attention_params_per_layer + sh.norm_params_per_layer
    embed = (sh.vocab_size + sh.learned_positions) * h
    final_norm = (2 if sh.norm == "layernorm" else 1) * h
    head = sh.vocab_size * h + final_norm
    expert_layer = sh.n_experts * sh.expert_params
    common = sh.router_params + sh.shared_expert_params
    stages = {}
    for which in ("first", "last"):
        if p == 1:
            extra = embed + (final_norm if sh.tied_embeddings else head)
        else:
            extra = embed if which == "first" else head
        dense_params = (layers * attn_norm + dense * sh.dense_mlp_params + moe * common + extra) / t
        expert_params = moe * expert_layer / (t * e)
        group = d * c
        sharded = dense_params / group + expert_params / (group / e)
        everything = dense_params + expert_params
        weights = 2 * (sharded if lay.zero == 3 else everything)
        grads = g * (sharded if lay.zero >= 2 else everything)
        if lay.zero == 3 and req.stack.fsdp_mixed_precision:  # the fp32 shard is the master, its grads fp32
            weights, grads = 0.0, 4 * sharded
        held = lay.zero == 3 and p > 1  # docs/parallel.md: the stage stays gathered, its grads unsharded
        if held:
            weights += 2 * everything
            grads += g * everything
        attn_linear = sh.attention_params_per_layer
        lin_dense = (layers * attn_linear + dense * sh.dense_mlp_params + moe * sh.shared_expert_params) / t
        lin_expert = moe * expert_layer / (t * e)
        if req.stack.precision == "fp8":
            # a 1-byte copy of the linear layers' weights (not norms, embedding, head); with fp8 weights
            # (fp8_param_gather) the only copy: 1 byte where bf16 held 2
            fp8_copy = (
                lin_dense / group + lin_expert / (group / e) if lay.zero == 3 else lin_dense + lin_expert
            )
            weights += -fp8_copy if req.stack.fp8_param_gather else fp8_copy
        opt = 12 * (sharded if lay.zero >= 1 else everything)
        if req.stack.autocast_fp32_weights:
            # docs/parallel.md, Stacks: the fp32 parameters are the master (Adam keeps 8 bytes; a held stage is
            # gathered in fp32); autocast's 2-byte copy of each weight is saved by its matmul for the backward,
            # whole under any ZeRO stage
            weights = 4 * ((sharded if lay.zero == 3 else everything) + (everything if held else 0.0))
            weights += 2 * everything
            opt = 8 * (sharded if lay.zero >= 1 else everything)
        kept_d, none_d = _layer_bytes(req, lay, False)
        kept_m, none_m = _layer_bytes(req, lay, True) if sh.is_moe else (0.0, 0.0)
        per_mb = tokens * (dense * kept_d + moe * kept_m)
        # capped at the step's m micro-batches, as memory.in_flight (its docstring)
        if which == "first":
            flight = min(m, p if v == 1 else p + (p - 1) / v)
        else:
            flight = min(m, 1.0 if v == 1 else ((v - 1) * p + 1) / v)
        layer_none = max(none_d if dense else 0.0, none_m if moe else 0.0)
        n_group = req.stack.full_recompute_layers
        working = 0.0
        if full and req.stack.full_recompute_method == "block":  # first n layers recomputed, the rest whole
            k = min(n_group * v, layers)  # docs/parallel.md: n layers of each virtual chunk
            per_mb = per_mb * k / layers + tokens * (layers - k) * layer_none
            working = tokens * (layer_none - kept_d)  # the layer's input is the kept checkpoint itself
        elif (
            full
        ):  # uniform: one input kept per group of n layers of each chunk; a group live while recomputing
            chunk = math.ceil(layers / v)
            per_mb *= min(v * math.ceil(chunk / n_group), layers) / layers
            working = tokens * (min(n_group, chunk) * layer_none - kept_d)
        act = flight * per_mb + working
        if which == "last" or p == 1:
            # docs/parallel.md: 4 bytes per logit in place, 12 with PyTorch's uncompiled cross-entropy
            # docs/parallel.md, Memory: bf16 logits + their fp32 copy (6), 12 with the unfused loss
            act += (12 if req.stack.cross_entropy == "unfused" else 6) * tokens * sh.vocab_size / t
        other = req.constraints.reserve_bytes
        if lay.zero == 3 and not held:
            layer = attn_norm + max(sh.dense_mlp_params, common + expert_layer / e)
            other += 4 * layer / t
        stages[which] = {
            "weights": weights,
            "gradients": grads,
            "optimizer": opt,
            "activations": act,
            "other": other,
            "dense_params": dense_params,
            "expert_params": expert_params,
            "linear_params": (lin_dense, lin_expert),
        }
        stages[which]["total"] = weights + grads + opt + act + other
    mem_stage = "last" if stages["last"]["total"] > stages["first"]["total"] else "first"
    mem = stages[mem_stage]

    # ---- time of one micro-batch on the slowest (last) stage ----
    width = 2 if sh.mlp == "swiglu" else 1
    f8 = req.stack.precision == "fp8"  # linear layers in fp8; router, head and attention core stay bf16
    attn_in = (sh.attention_params_per_layer - sh.n_heads * sh.value_dim * h) / h
    attn_gemms = [(1, tokens, attn_in / t, h), (1, tokens, h, sh.n_heads * sh.value_dim / t)]
    dense_gemms = attn_gemms + [(1, tokens, width * sh.ffn_hidden / t, h), (1, tokens, h, sh.ffn_hidden / t)]
    proj = _gemm(tokens, attn_in / t, h, gpu, eff, f8) + _gemm(
        tokens, h, sh.n_heads * sh.value_dim / t, gpu, eff, f8
    )
    dense_mlp = _gemm(tokens, width * sh.ffn_hidden / t, h, gpu, eff, f8) + _gemm(
        tokens, h, sh.ffn_hidden / t, gpu, eff, f8
    )
    moe_mlp = 0.0
    moe_gemms = list(attn_gemms)
    if sh.is_moe:
        fe = sh.expert_ffn_hidden
        te = tokens * sh.top_k * e / sh.n_experts
        moe_mlp = (sh.n_experts / e) * (
            _gemm(te, width * fe / t, h, gpu, eff, f8) + _gemm(te, h, fe / t, gpu, eff, f8)
        )
        moe_gemms += [(sh.n_experts / e, te, width * fe / t, h), (sh.n_experts / e, te, h, fe / t)]
        # router: the rank's own tokens, ÷t with SP (docs/parallel.md, GEMMs)
        moe_mlp += _gemm(tokens / t if lay.sequence_parallel else tokens, sh.n_experts, h, gpu, eff)
        if sh.n_shared_experts:
            ns = sh.n_shared_experts
            moe_mlp += _gemm(tokens, width * ns * fe / t, h, gpu, eff, f8) + _gemm(
                tokens, h, ns * fe / t, gpu, eff, f8
            )
            moe_gemms += [(1, tokens, width * ns * fe / t, h), (1, tokens, h, ns * fe / t)]
    cast_fwd = cast_bwd = 0.0
    share = 1 / m if req.stack.fp8_weight_cache else 1.0
    if f8:
        for count, gemms in ((dense, dense_gemms), (moe, moe_gemms)):
            if count:
                fwd_b, bwd_b = _casts(gemms, req.stack.fp8_recipe, share)
                cast_fwd += count * fwd_b / gpu.hbm_bandwidth_bytes_per_s
                cast_bwd += count * bwd_b / gpu.hbm_bandwidth_bytes_per_s

    if req.stack.flash_attention:
        core = (
            2
            * tokens
            * s
            * (sh.n_heads / t)
            * (sh.qk_dim + sh.value_dim)
            * CAUSAL_FRACTION
            / (eff.attention_fraction * gpu.bf16_flops / (1 + eff.attention_half_seq / (s / c)))
        )
        # TransformerEngine ('auto') and 'cudnn' run cuDNN's fused attention on Hopper; Ampere keeps flash-attn
        if req.stack.attention_kernel != "flash-attention-2" and gpu.family not in ("ampere", "cdna3"):
            core /= CUDNN_OVER_FA2_ON_HOPPER
        core_bwd = ATTENTION_BACKWARD_RATIO
    else:
        heads = b * sh.n_heads / t / c
        core = heads * (_gemm(s, s, sh.qk_dim, gpu, eff) + _gemm(s, sh.value_dim, s, gpu, eff))
        core_bwd = 2.0
    gemm_fwd = dense * (proj + dense_mlp) + moe * (proj + moe_mlp)
    fwd = gemm_fwd + layers * core
    logits = _gemm(tokens, sh.vocab_size / t, h, gpu, eff)
    bwd = 2 * gemm_fwd + core_bwd * layers * core + 2 * logits
    act_bytes = tokens * dense * _elementwise_bytes(req, lay, eff, False)
    if sh.is_moe:
        act_bytes += tokens * moe * _elementwise_bytes(req, lay, eff, True)
    op_sac = lay.recompute == "selective" and "every_other_mm" in req.stack.selective_recompute
    ew_share = (
        FULL_RECOMPUTE_ELEMENTWISE_SHARE
        if full or op_sac  # the op-level policy recomputes every norm and activation
        else (SELECTIVE_RECOMPUTE_ELEMENTWISE_SHARE if lay.recompute == "selective" else 1.0)
    )
    elementwise = eff.elementwise_time_factor * act_bytes * ew_share / gpu.hbm_bandwidth_bytes_per_s
    # HFU's recomputed FLOPs per token, whole model (Korthikanti et al. 2022 §5): what the time below reruns
    attention_fwd_flops = sh.attention_flops_per_token(s) / 3
    redo_flops = 0.0
    if full:  # the forward again, with its fp8 casts
        rerun_share = (
            min(req.stack.full_recompute_layers * lay.vpp, layers) / layers
            if req.stack.full_recompute_method == "block"
            else 1
        )
        redo = (fwd + cast_fwd) * rerun_share
        redo_flops = (2 * sh.active_non_embedding_params + attention_fwd_flops) * rerun_share
    elif lay.recompute == "selective":
        # docs/parallel.md: the products selective recomputation reruns, with their fp8 forward casts: the dense
        # MLP (mlp); K, O and w3 (GeLU: fc2) of every layer, w3/fc2 in dense layers only (every_other_mm)
        modules = req.stack.selective_recompute
        k_o = [(1, tokens, sh.n_kv_heads * sh.qk_dim / t, h), (1, tokens, h, sh.n_heads * sh.value_dim / t)]
        third = (1, tokens, sh.ffn_hidden / t, h) if width == 2 else (1, tokens, h, sh.ffn_hidden / t)
        rerun_dense = (k_o if "every_other_mm" in modules else []) + (
            dense_gemms[2:] if "mlp" in modules else ([third] if "every_other_mm" in modules else [])
        )
        rerun_moe = k_o if "every_other_mm" in modules else []

        def rerun(gemms):
            secs = sum(c * _gemm(mm, n, k, gpu, eff, f8) for c, mm, n, k in gemms)
            if f8 and gemms:
                secs += _casts(gemms, req.stack.fp8_recipe, share)[0] / gpu.hbm_bandwidth_bytes_per_s
            return secs

        redo = dense * rerun(rerun_dense) + moe * rerun(rerun_moe)

        def rerun_flops(gemms):  # per token: 2·M·N·K on each of the t ranks, for M = the rank's tokens
            return sum(2 * c * mm * n * k * t / tokens for c, mm, n, k in gemms)

        redo_flops = (L - sh.moe_layers) * rerun_flops(rerun_dense) + sh.moe_layers * rerun_flops(rerun_moe)
        if "core_attn" in modules and not req.stack.flash_attention:
            redo += layers * core
            redo_flops += attention_fwd_flops
    else:
        redo = 0.0
    compute = fwd + logits + bwd + redo + elementwise + cast_fwd + cast_bwd
    if req.stack.autocast_fp32_weights:
        # docs/parallel.md, Stacks: every weight of the stage cast to half (4 + 2) and its gradient back and
        # into the fp32 .grad (2 + 4, 4 + 4 + 4) each micro-batch, cast again by full recomputation (4 + 2)
        held_params = stages["last"]["dense_params"] + stages["last"]["expert_params"]
        compute += (24 + (6 if full else 0)) * held_params / gpu.hbm_bandwidth_bytes_per_s

    # docs/parallel.md, intra-node tier: groups are runs of consecutive ranks, inside a node only when it holds
    # whole groups; a job of at most one node is its own node
    node = min(req.node_size, req.n_gpus)

    def whole(span: float) -> bool:
        return span <= node and node % span == 0

    lat = eff.collective_latency_seconds
    inter = eff.inter_node_network_efficiency
    if inter is None:  # one efficiency for both tiers
        inter = eff.network_efficiency

    def link(inside: bool, peers: float | None = None) -> float:
        if inside:
            intra = gpu.intra_node_bandwidth_bytes_per_s
            if (
                gpu.intra_node_link_bytes_per_s is not None and peers is not None
            ):  # no switch: the group's links
                intra = min(intra, max(peers, 1.0) * gpu.intra_node_link_bytes_per_s)
            return intra * eff.network_efficiency
        return gpu.inter_node_bandwidth_bytes_per_s * inter

    colls = 6 if full else 4
    if lay.recompute == "selective" and "every_other_mm" in req.stack.selective_recompute:
        # docs/parallel.md: the op-level recompute reruns the SP all-gathers (1 all-reduce's worth) or, without
        # SP, both all-reduces; reduce-scatter outputs are saved
        colls = 5 if lay.sequence_parallel else 6
    one_tp = 2 * (t - 1) / t * 2 * tokens * h / link(whole(t), t - 1) + lat
    # docs/parallel.md, TP: an MoE layer's MLP pair (2, 3 with full recompute) is the dispatcher's gather and
    # scatter of top_k routed copies, never overlapped; shared experts keep the dense pair
    mlp_pair = 3 if full else 2
    tp_c = (layers * colls - (moe * mlp_pair if not sh.n_shared_experts else 0)) * one_tp if t > 1 else 0.0
    if req.stack.tp_comm_overlap and lay.sequence_parallel and whole(t):
        hidden = min(eff.tp_overlap_fraction * tp_c, gemm_fwd * (4 if full else 3))
        tp_c -= hidden
    if t > 1:
        tp_c += moe * mlp_pair * sh.top_k * one_tp
    shard = 1 / t if lay.sequence_parallel else 1.0
    ep_c = 0.0
    if e > 1:
        # all-to-alls: 4, 6 with full recompute (docs/parallel.md; every_other_mm's rerun is TP-only)
        ep_c = (
            moe
            * (6 if full else 4)
            * ((e - 1) / e * 2 * tokens * sh.top_k * h * shard / link(whole(t * e), e - 1) + lat)
        )
    cp_c = 0.0
    cp_nic = 0.0  # ring seconds under the attention while a cross-node ring holds the NICs (docs: DP window)
    if c > 1 and req.stack.context_parallel_impl == "pytorch":
        # docs/parallel.md, CP: PyTorch's context_parallel under torchtitan. K/V of the kv/t heads, or all a/t
        # where the model repeats them (kv_repeated_before_attention); forward one all-gather of the other c - 1
        # shards (twice with full recompute), backward one more and c sends of fp32 dK/dV; nothing overlapped,
        # nothing held under the attention
        kv_heads = sh.n_heads if req.stack.kv_repeated_before_attention else sh.n_kv_heads
        shard = 2 * tokens * (kv_heads / t) * (sh.qk_dim + sh.value_dim)  # bf16 K + V bytes
        bw = link(whole(t * c), c - 1)
        gather = (c - 1) * shard / bw + lat
        send = 2 * shard / bw + lat
        passes = 2 if full else 1
        out_elements = tokens * sh.n_heads / t * sh.value_dim
        dq_elements = tokens * sh.n_heads / t * sh.qk_dim
        kv_elements = tokens * kv_heads / t * (sh.qk_dim + sh.value_dim)
        if req.stack.fused_elementwise:  # compiled: each merge one fused pass, 4 + 2 + 4 bytes
            merge_bytes = passes * (c - 1) * 10 * out_elements + c * 10 * (dq_elements + kv_elements)
        else:  # eager kernels: 32.5 per output element and extra step, K/V cats 4, backward 10 (dQ), 18 (dK/dV)
            merge_bytes = (
                passes * (c - 1) * (32.5 * out_elements + 4 * kv_elements)
                + (c - 1) * 4 * kv_elements
                + c * (10 * dq_elements + 18 * kv_elements)
            )
        cp_c = layers * ((passes + 1) * gather + c * send + merge_bytes / gpu.hbm_bandwidth_bytes_per_s)
    elif c > 1:
        kv = 2 * tokens * sh.n_kv_heads * (sh.qk_dim + sh.value_dim) / t
        step_fwd = (c - 1) * (kv / link(whole(t * c), 1) + lat)
        exposed = max(0.0, step_fwd - core) * (2 if full else 1) + max(0.0, 2 * step_fwd - core_bwd * core)
        forward = tokens * sh.n_heads / t * sh.value_dim
        backward = tokens * (sh.n_heads / t * sh.qk_dim + sh.n_kv_heads / t * (sh.qk_dim + sh.value_dim))
        merge_bytes = CP_MERGE_BYTES_PER_ELEMENT * (forward * (2 if full else 1) + backward)
        merge = (c - 1) * (merge_bytes / gpu.hbm_bandwidth_bytes_per_s + (3 if full else 2) * lat)
        cp_c = layers * (exposed + merge)
        if t * c > node:
            cp_nic = layers * (step_fwd * ((2 if full else 1) + 2) - exposed)
    # Megatron's scatter/gather splits each pipeline send over the TP ranks, with or without SP
    pp_shard = 1 / t if lay.sequence_parallel or req.stack.pipeline_scatter_gather else 1.0
    pp_c = v * 2 * (2 * tokens * h * pp_shard / link(req.n_gpus <= req.node_size, 1) + lat) if p > 1 else 0.0
    micro = compute + tp_c + ep_c + cp_c + pp_c
    bubble_s = (p - 1) / v * micro

    last = stages["last"]
    group = d * c
    egroup = group / e
    # docs/parallel.md: under autocast over fp32 weights the parameters travel in fp32 and ZeRO-1 is
    # ZeroRedundancyOptimizer over DDP (gradients all-reduced, then each shard broadcast)
    autocast = req.stack.autocast_fp32_weights
    w = 4 if autocast else 2
    if lay.zero == 0:
        per_param = 2 * g
    elif lay.zero == 1:
        per_param = (2 * g if autocast else g) + w
    elif lay.zero == 3 and p > 1:  # ZeRO-3 with stages: one gather, one reduce-scatter per step
        per_param = g + w
    elif lay.zero == 2:
        per_param = m * g + w
    else:
        per_param = m * ((3 if full else 2) * w + g)
    volume = per_param * (
        (group - 1) / group * last["dense_params"] + (egroup - 1) / egroup * last["expert_params"]
    )
    if whole(t * group):
        dp_link = link(True, group - 1)
    else:  # node/t group members share a node, one NIC each, NCCL one ring per NIC (timing.dp_bandwidth)
        members = max(1.0, min(group, node / t))
        dp_link = (
            min(gpu.intra_node_bandwidth_bytes_per_s, members * gpu.inter_node_bandwidth_bytes_per_s) * inter
        )
    fp8_weights = req.stack.precision == "fp8" and req.stack.fp8_param_gather
    # docs/parallel.md, FP8: with fp8 weights each parameter gather moves the linear weights in 1 byte, not 2
    lin_dense_last, lin_expert_last = last["linear_params"]
    lin_ring = (group - 1) / group * lin_dense_last + (egroup - 1) / egroup * lin_expert_last
    if fp8_weights and lay.zero >= 1:
        gathers = 1 if lay.zero in (1, 2) or p > 1 else m * (3 if full else 2)
        volume -= gathers * lin_ring
    dp_s = volume / dp_link + 2 * lat if group > 1 else 0.0
    # docs/parallel.md, overlap_param_gather off: ZeRO-1/2's 2-byte parameter all-gather is never hidden
    late = 0.0
    if group > 1:
        # docs/parallel.md: ZeRO-1/2's 2-byte gather without overlap_param_gather, and the held ZeRO-3 stage's
        # gradient reduce-scatter (after the last backward under PyTorch pipelining) are never hidden
        late_bytes = w if lay.zero in (1, 2) and not req.stack.overlap_param_gather else 0
        late_bytes += g if lay.zero == 3 and p > 1 else 0
        late = late_bytes * (
            (group - 1) / group * last["dense_params"] + (egroup - 1) / egroup * last["expert_params"]
        )
        if fp8_weights and lay.zero in (1, 2) and not req.stack.overlap_param_gather:
            late -= lin_ring
        late /= dp_link
    spread = lay.zero == 2 or (lay.zero == 3 and p == 1)  # hidden behind every micro-batch
    usable = max(0.0, compute - cp_nic)
    window = (m * usable if spread else usable) if req.stack.overlap_grad_reduce else 0.0
    dp_exposed = (
        max(0.0, dp_s - late - window) + eff.dp_overlap_interference * min(dp_s - late, window) + late
    )
    if lay.zero >= 1:
        local = last["dense_params"] / group + last["expert_params"] / egroup
    else:
        local = last["dense_params"] + last["expert_params"]
    optimizer = (24 + g + 2) * local / gpu.hbm_bandwidth_bytes_per_s
    step = m * micro + bubble_s + dp_exposed + optimizer + eff.step_overhead_seconds

    tokens_step = d * b * m * s
    model_flops = sh.model_flops_per_token(s)
    if req.mfu_override is not None:
        step = model_flops * tokens_step / (req.mfu_override * req.n_gpus * gpu.bf16_flops)
    tps = tokens_step / step
    hw = model_flops + redo_flops
    peak = req.n_gpus * gpu.bf16_flops
    return {
        "weights": mem["weights"],
        "gradients": mem["gradients"],
        "optimizer": mem["optimizer"],
        "activations": mem["activations"],
        "other": mem["other"],
        "total": mem["total"],
        "memory_stage": mem_stage,
        "step_seconds": step,
        "tokens_per_second": tps,
        "mfu": model_flops * tps / peak,
        "hfu": hw * tps / peak,
        "bubble_fraction": (p - 1) / (v * m),
        "global_batch_tokens": tokens_step,
        "compute": m * compute,
        "tensor_parallel": m * tp_c,
        "data_parallel": dp_exposed,
        "optimizer_seconds": optimizer,
        "bubble_seconds": bubble_s,
    }
