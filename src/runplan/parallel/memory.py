"""Per-GPU memory of one layout, as numpy array expressions (work on scalars too).

Every function takes the layout axes as arrays of the same length (the columns of a ``LayoutGrid``: tp, pp, dp,
ep, cp, zero, micro_batch, microbatches, vpp, recompute, sequence_parallel) and returns bytes per GPU. Sources and assumptions per term:

* **Model states** (Rajbhandari et al. 2020, ZeRO, §3 and Fig. 1): bf16 weights 2 bytes/param, gradients
  ``g`` bytes/param (4 = fp32 accumulation, Megatron-LM's default with bf16: ``--accumulate-allreduce-grads-
  in-fp32``; 2 = bf16), optimizer 12 bytes/param (fp32 master 4 + Adam m 4 + v 4), or 8 with bf16 moments
  (``Stack.optimizer_state_dtype`` bf16: 4 + 2 + 2, DeepSeek-V3, arXiv 2412.19437 §3.3.3: "BF16 ... to track the
  first and second moments", master weights kept in FP32; :func:`optimizer_bytes_per_param`); 2 + 2 + 2 = 6 under
  ZeRO-1/2 where TransformerEngine's FusedAdam keeps the master as 16 low bits beside the bf16 weight
  (``Stack.fused_adam_master``, :func:`model_state_bytes`).
  ZeRO-1 (= Megatron's distributed optimizer) shards the 12 optimizer bytes over the data-parallel group;
  ZeRO-2 also the gradients; ZeRO-3 also the weights (with pipeline stages, as torchtitan runs it, the
  stage's bf16 weights and unsharded gradients are also held for the whole step: :func:`model_state_bytes`). PyTorch FSDP mixed precision (``Stack.fsdp_mixed_precision``)
  keeps no bf16 shard under ZeRO-3: its fp32 shard is the master and its gradient shard fp32. The data-parallel group of dense weights is d·c (CP
  ranks hold the same weights, Megatron shards the distributed optimizer over DP×CP); expert weights are
  replicated on d·c/e ranks (expert data parallel). The brief's worked example (7.0e9 params, TP8 PP8 DP8,
  ZeRO-1) follows: weights 2·7e9/64 = 219 MB, optimizer 12·7e9/512 = 164 MB, gradients 4·7e9/64 = 438 MB
  (fp32, not sharded by ZeRO-1).
* **Weights per stage**: TP divides every block weight and the vocab-parallel embedding/head by t (norm
  weights and learned positions are in fact replicated; they are < 0.1% of a layer and divided too). PP puts
  ceil(L/p) layers on the most loaded stage, the embedding on the first stage and the output head (a copy of
  the tied embedding when p > 1) on the last. A stage is assumed to hold MoE layers first
  (min(ceil(L/p), MoE layers) of them): the worst stage. EP divides routed experts by e (expert TP = t).
* **Activations** (Korthikanti et al. 2022, arXiv 2205.05198, §4 and Table 2), re-derived per token and
  layer for a pre-norm block with FlashAttention (no s² tensors stored;
  only the fp32 log-sum-exp, 4 bytes per head),
  no dropout (Llama-style training), GQA widths and a SwiGLU or GeLU MLP, bf16:
  attention: norm input 2h + norm output 2h (÷t with SP; Gemma 2/3's post-norms save their inputs too, 2h each) + Q, K, V 2(a·d_qk + k·d_qk + k·d_v)/t + output
  2·a·d_v/t + LSE 4a/t; MLP: norm input 2h + norm output 2h (÷t with SP) + SwiGLU gate, up and product 6F/t
  (GeLU: pre- and post-activation 4F/t); MoE MLP: per routed expert a token visits, the permuted input 2h (not
  ÷t: Megatron-core's token dispatcher all-gathers the routed tokens over TP before the experts,
  token_dispatcher.py @ core_r0.10.0) and the expert MLP 6F_e/t, shared experts 6F_e/t each, router logits and
  probabilities in fp32 8E (not ÷t).
  For a GPT block with F = 4h this gives sbh(32 + 0) without TP — Korthikanti's 34 minus the two dropout masks
  and minus the 5as/h softmax terms FlashAttention never stores. *Selective* recomputation here is
  Megatron-core's ``--recompute-modules layernorm`` + activation: norm outputs and the activation output are
  recomputed (with FlashAttention, recomputing core attention, the paper's selective choice, saves nothing
  more). *Full* recomputation keeps the layer input 2h (÷t with SP) and, during backward, one layer's full
  activations as a working set. CP divides a layer's tokens by c.
* **Pipeline in flight** (Narayanan et al. 2021 §2.2; Korthikanti et al. 2022 §4.2.3): under 1F1B the first
  stage holds min(m, p) micro-batches of its layers; interleaved (v > 1), Megatron's warm-up leaves
  2(p-1) + (v-1)p + 1 chunks of L/(p·v) layers in flight, i.e. p + (p-1)/v stage-equivalents (the paper's
  factor 1 + (p-1)/(p·v)); the last stage holds 1 (v = 1) or ((v-1)p + 1)/v.
* **Logits**: the bf16 logits and their fp32 copy held by the vocab-parallel cross-entropy, 6·b·(s/c)·V/t on the
  last stage (docs/parallel.md, Memory per GPU), for the micro-batch being processed; 12 bytes per logit with PyTorch's
  uncompiled cross-entropy (``Stack.cross_entropy``, ``stack.LOSS_LOGIT_BYTES``).
* **Other**: the configurable reserve (CUDA context, NCCL buffers, cuBLAS workspace, fragmentation;
  Megatron-LM issues #525 and PR #482 report estimate-vs-measured gaps both ways) and, under ZeRO-3 without
  pipeline stages, two gathered layers of bf16 weights (current + prefetched).

* **fp8** (stack precision fp8): the weights term adds a 1-byte copy of the linear layers' weights, the MTP
  modules' on the last stage included (:func:`fp8_weight_copy_bytes`, :func:`mtp_linear_params`); with ``fp8_param_gather`` those weights are held in fp8 only, 1 byte
  instead of 2 (Megatron-LM --fp8-param-gather). Activations stay counted in bf16, an upper bound:
  TransformerEngine and torchao save a linear layer's input for the backward as its 1-byte fp8 cast, but
  which of Table 2's bf16 tensors that frees depends on what else keeps the bf16 tensor (the norm's and
  activation's own backward, TransformerEngine's fused LayerNormLinear, torch.compile's fusions), which is
  not modelled here.

Leaves out: MoE routing imbalance (capacity factor), MLA's latent caches (treated with GQA widths),
ring-attention KV double buffers, fp8 transient casts and transposes, and the embedding's activations on
stage 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from runplan.model import ModelShape
from runplan.parallel.grid import Columns, LayoutGrid
from runplan.parallel.layout import MemoryBytes
from runplan.parallel.stack import LOSS_LOGIT_BYTES, Stack

DEFAULT_STACK = Stack()

BF16_BYTES = 2.0
FP32_BYTES = 4.0
FP8_BYTES = 1.0
OPTIMIZER_BYTES_PER_PARAM = 12.0  # fp32 master + Adam m + Adam v
#: the fp32 master's low 16 bits TransformerEngine's FusedAdam keeps beside a bf16 weight (store_param_remainders)
MASTER_REMAINDER_BYTES = 2.0


def optimizer_bytes_per_param(moment_bytes: float = FP32_BYTES, *, master: bool = True) -> float:
    """Adam's state per parameter: the fp32 master (4, unless the fp32 parameters are the master themselves)
    plus the two moments at ``moment_bytes`` each (``Stack.moment_bytes``): 4 + 4 + 4 = 12 in fp32, 4 + 2 + 2 = 8
    with bf16 moments (DeepSeek-V3, arXiv 2412.19437 §3.3.3; Megatron-LM --exp-avg-dtype/--exp-avg-sq-dtype)."""
    return (FP32_BYTES if master else 0.0) + 2.0 * moment_bytes


@dataclass(frozen=True)
class ShapeTerms:
    """The shape numbers the memory and time formulas use, as plain floats."""

    n_layers: int
    moe_layers: int
    h: float
    a: float
    kv: float
    d_qk: float
    d_v: float
    ffn: float
    vocab: float
    n_experts: float
    top_k: float
    expert_ffn: float
    n_shared: float
    gated: bool
    attn_norm_params: float  # attention + both norms of one layer
    attn_in_width: float  # output width of the fused input projections (q, k, v or MLA's)
    dense_mlp_params: float
    moe_common_params: float  # router + shared experts of one MoE layer
    shared_expert_params: float  # shared experts of one MoE layer (linear layers: fp8 with precision fp8)
    expert_layer_params: float  # all routed experts of one MoE layer
    embed_params: float  # token embedding + learned positions
    head_params: float  # V·h output projection (a copy when tied and p > 1)
    tied: bool
    final_norm_params: float
    rmsnorm: (
        bool  # RMSNorm (else LayerNorm): decides the eager elementwise traffic (timing.ELEMENTWISE_OP_BYTES)
    )
    rotary_width: float  # elements per token RoPE rotates in one layer (0 with learned positions)
    qk_norm_width: float  # elements per token the per-head q/k norms see (0 without qk_norm)
    post_norms: bool = False  # a norm after attention and after the MLP too (Gemma 2/3): 4 norms per layer
    window: int = 0  # sliding-window attention: keys a windowed layer's query sees (0: none)
    global_every: int = 0  # with a window: layers k, 2k, ... (from 1) attend globally (0: none do)
    # multi-token prediction (model.py module doc): D modules on the last pipeline stage, as Megatron-LM places
    # them (multi_token_prediction.py mtp_on_this_rank at d98e8a6), with an embedding copy there when p > 1
    # (gpt_model.py builds the embedding where pre_process or mtp_process)
    mtp_layers: int = 0
    mtp_dense_params: float = 0.0  # one module without its routed experts: projection, 3 norms, block
    mtp_expert_params: float = 0.0  # the routed experts of one module's MoE block

    @classmethod
    def from_shape(cls, shape: ModelShape) -> ShapeTerms:
        h = shape.d_model
        attn = shape.attention_params_per_layer
        out_proj = shape.n_heads * shape.value_dim * h
        return cls(
            n_layers=shape.n_layers,
            moe_layers=shape.moe_layers,
            h=h,
            a=shape.n_heads,
            kv=shape.n_kv_heads,
            d_qk=shape.qk_dim,
            d_v=shape.value_dim,
            ffn=shape.ffn_hidden,
            vocab=shape.vocab_size,
            n_experts=shape.n_experts,
            top_k=shape.top_k,
            expert_ffn=shape.expert_ffn_hidden,
            n_shared=shape.n_shared_experts,
            gated=shape.gated,
            attn_norm_params=attn + shape.norm_params_per_layer,
            attn_in_width=(attn - out_proj) / h,
            dense_mlp_params=shape.dense_mlp_params,
            moe_common_params=shape.router_params + shape.shared_expert_params,
            shared_expert_params=shape.shared_expert_params,
            expert_layer_params=shape.n_experts * shape.expert_params,
            embed_params=(shape.vocab_size + shape.learned_positions) * h,
            head_params=shape.vocab_size * h,
            tied=shape.tied_embeddings,
            final_norm_params=(2 if shape.norm == "layernorm" else 1) * h,
            rmsnorm=shape.norm == "rmsnorm",
            rotary_width=_rotary_width(shape),
            qk_norm_width=(shape.n_heads + shape.n_kv_heads) * shape.qk_dim if shape.qk_norm else 0.0,
            post_norms=shape.post_norms,
            window=shape.sliding_window,
            global_every=shape.global_every,
            mtp_layers=shape.mtp_layers,
            mtp_dense_params=float(
                (shape.mtp_params - shape.mtp_routed_expert_params) // max(shape.mtp_layers, 1)
            ),
            mtp_expert_params=float(shape.mtp_routed_expert_params // max(shape.mtp_layers, 1)),
        )


def _rotary_width(shape: ModelShape) -> float:
    """Elements per token one layer's RoPE rotates: every query and key head (MLA: the decoupled rope part of
    each query head and the one shared rope key); none with learned positions (GPT-2/3, MPT as benchmarked)."""
    if shape.learned_positions:
        return 0.0
    if shape.attention == "mla":
        return (shape.n_heads + 1.0) * shape.qk_rope_head_dim
    return (shape.n_heads + shape.n_kv_heads) * float(shape.qk_dim)


def stage_layers(terms: ShapeTerms, p):
    """(layers, MoE layers, dense layers) on the most loaded stage: ceil(L/p), MoE layers placed first."""
    layers = -(-terms.n_layers // np.asarray(p))
    moe = np.minimum(layers, terms.moe_layers)
    return layers, moe, layers - moe


def stage_params(terms: ShapeTerms, t, p, e, *, last: bool):
    """(dense, expert) parameters per GPU on the first (``last=False``) or last stage."""
    p = np.asarray(p)
    layers, moe, dense = stage_layers(terms, p)
    single = p == 1
    head = terms.head_params + terms.final_norm_params
    head_on_stage = np.where(single & terms.tied, terms.final_norm_params, head)
    extra = (
        np.where(single, terms.embed_params + head_on_stage, head)
        if last
        else np.where(single, terms.embed_params + head_on_stage, terms.embed_params)
    )
    dense_params = (
        layers * terms.attn_norm_params
        + dense * terms.dense_mlp_params
        + moe * terms.moe_common_params
        + extra
    ) / t
    expert_params = moe * terms.expert_layer_params / (np.asarray(t) * e)
    if (
        terms.mtp_layers
    ):  # the MTP modules live on the last stage (ShapeTerms), with an embedding copy if p > 1
        on_stage = np.ones_like(single) if last else single
        mtp_dense = terms.mtp_layers * terms.mtp_dense_params + np.where(single, 0.0, terms.embed_params)
        dense_params = dense_params + np.where(on_stage, mtp_dense, 0.0) / t
        mtp_experts = terms.mtp_layers * terms.mtp_expert_params / (np.asarray(t) * e)
        expert_params = expert_params + np.where(on_stage, mtp_experts, 0.0)
    return dense_params, expert_params


def model_state_bytes(
    dense_params,
    expert_params,
    zero,
    d,
    c,
    e,
    gradient_bytes: float,
    *,
    fsdp_mixed_precision: bool = False,
    autocast: bool = False,
    p=1,
    moment_bytes: float = FP32_BYTES,
    fused_adam_master: bool = False,
):
    """(weights, gradients, optimizer) bytes per GPU under ZeRO stage ``zero`` (Rajbhandari 2020 §5); the
    optimizer holds :func:`optimizer_bytes_per_param` with Adam's moments at ``moment_bytes`` each.

    ``fused_adam_master`` (``Stack.fused_adam_master``: bf16 moments with bf16 weights or delayed fp8): under
    ZeRO-1/2, Megatron's distributed optimizer, TransformerEngine's FusedAdam keeps the fp32 master as its 16 low
    bits beside the bf16 weight (store_param_remainders; the high 16 bits are the bf16 weight counted in the
    weights): 2 + 2·``moment_bytes`` instead of 4 + 2·``moment_bytes`` (6 instead of 8 with bf16 moments).
    ZeRO-0 and ZeRO-3 keep the 4-byte master (Megatron refuses the first, Megatron FSDP turns FusedAdam's master
    off); Megatron-LM @ d98e8a64 core/optimizer/__init__.py, TransformerEngine @ d0067d0 optimizers/fused_adam.py.

    ZeRO-3 with pipeline stages (``p`` > 1; only torchtitan runs it: DeepSpeed's pipeline engine, Megatron's
    --use-torch-fsdp2 and Megatron-FSDP v2 refuse it, megatron/training/arguments.py and mcore_fsdp_adapter.py) holds the stage unsharded for the whole step: torchtitan does not reshard after forward
    under PP (``parallelize_llama.py`` @ 9dec370: "avoid per-microbatch all-gathers"), and PyTorch's
    pipelining stage turns off resharding after backward and the gradient reduce-scatter for every micro-batch
    but the last (``torch/distributed/pipelining/stage.py``, ``backward_maybe_with_nosync``). So the bf16
    weights of the stage stay gathered and its gradients accumulate unsharded in the reduce dtype (FSDP2
    upcasts them to it, ``FSDPParam.to_accumulated_grad_if_needed``), on top of the shards.

    ``fsdp_mixed_precision`` (PyTorch FSDP/FSDP2, ``Stack.fsdp_mixed_precision``): under ZeRO-3 the sharded
    parameters stay fp32 and are the optimizer's master copy, so no sharded bf16 copy is kept (the gathered bf16
    layers are ``zero3_buffer_bytes``), and their gradients are fp32 whatever dtype they are reduced in (FSDP
    casts the reduced shard to the parameter's dtype). torch.distributed.fsdp ``MixedPrecisionPolicy``: FSDP
    "does not require any extra memory to keep a high-precision copy of the parameters for the optimizer step".

    ``autocast`` (``Stack.autocast_fp32_weights``): the fp32 parameters (4 bytes, sharded only under ZeRO-3) are
    the optimizer's master, so the optimizer keeps Adam's two moments (8); autocast's cache holds a
    half-precision copy of every weight used in the forward, and each matmul saves it for its backward (2, the
    whole stage under every ZeRO stage: the saved copies are not the sharded parameters).
    PyTorch AMP docs (torch.autocast: casts of leaf tensors are cached inside one autocast region).
    """
    zero = np.asarray(zero)
    dense_group = np.asarray(d) * c
    sharded = dense_params / dense_group + expert_params * e / dense_group
    full = dense_params + expert_params
    fsdp = (zero >= 3) & fsdp_mixed_precision
    held = zero3_held(zero, p)
    weights = BF16_BYTES * (
        np.where(zero >= 3, np.where(fsdp, 0.0, sharded), full) + np.where(held, full, 0.0)
    )
    gradients = np.where(fsdp, FP32_BYTES * sharded, gradient_bytes * np.where(zero >= 2, sharded, full))
    gradients = gradients + np.where(held, gradient_bytes * full, 0.0)
    # with fused_adam_master, the master's int16 low bits under Megatron's distributed optimizer (docstring)
    distributed = (zero == 1) | (zero == 2)
    saved = np.where(distributed, FP32_BYTES - MASTER_REMAINDER_BYTES, 0.0) if fused_adam_master else 0.0
    optimizer = (optimizer_bytes_per_param(moment_bytes) - saved) * np.where(zero >= 1, sharded, full)
    if autocast:
        # (a stage held gathered under ZeRO-3 with pipeline stages holds its fp32 parameters, 4 bytes)
        weights = FP32_BYTES * (np.where(zero >= 3, sharded, full) + np.where(held, full, 0.0))
        weights = weights + BF16_BYTES * full
        optimizer = optimizer_bytes_per_param(moment_bytes, master=False) * np.where(zero >= 1, sharded, full)
    return weights, gradients, optimizer


def zero3_held(zero, p):
    """Where ZeRO-3 keeps the stage gathered for the whole step: with pipeline stages (:func:`model_state_bytes`)."""
    return (np.asarray(zero) >= 3) & (np.asarray(p) > 1)


def stage_linear_params(terms: ShapeTerms, t, p, e):
    """(dense, expert) parameters of the stage's linear projections per GPU, unsharded by ZeRO: attention QKV
    and output, dense MLP, shared and routed experts; not the embedding, head, norms or router, which fp8
    leaves in bf16 (docs/parallel.md, FP8). The layers, not the embedding or head: the same on the first and
    the last stage (the MTP modules' linears on the last are :func:`mtp_linear_params`)."""
    layers, moe, dense = stage_layers(terms, p)
    attn_linear = (terms.attn_in_width + terms.a * terms.d_v) * terms.h
    dense_linear = (
        layers * attn_linear + dense * terms.dense_mlp_params + moe * terms.shared_expert_params
    ) / t
    return dense_linear, moe * terms.expert_layer_params / (np.asarray(t) * e)


def mtp_linear_params(terms: ShapeTerms, t, p, e, *, last: bool):
    """(dense, expert) parameters of the multi-token-prediction modules' linear layers per GPU, on the stage that
    holds them (the last, or the only one: :func:`stage_params`), unsharded by ZeRO; 0 elsewhere. Per module
    (ShapeTerms.mtp_*; model.py ``_mtp_module``): the 2h→h ``eh_proj``, the block's attention projections and its
    shared experts (a dense model's block: its MLP), and the routed experts; not the norms or the router.

    Megatron-LM @ d98e8a64 multi_token_prediction.py builds them as TransformerEngine linears (the TE backend's
    ``column_parallel_linear`` for ``eh_proj``, the decoder's layer spec for the block) inside
    ``get_fp8_context(config, is_init=True)`` and runs ``eh_proj`` and the block under ``get_fp8_context`` when
    ``config.fp8``, so fp8 casts (or, with fp8 weights, keeps) them like the decoder's layers."""
    p = np.asarray(p)
    on_stage = np.ones_like(p, dtype=bool) if last else p == 1
    attn_linear = (terms.attn_in_width + terms.a * terms.d_v) * terms.h
    mlp = terms.shared_expert_params if terms.n_experts else terms.dense_mlp_params
    dense = terms.mtp_layers * (2.0 * terms.h * terms.h + attn_linear + mlp) / t
    experts = terms.mtp_layers * terms.mtp_expert_params / (np.asarray(t) * e)
    return np.where(on_stage, dense, 0.0), np.where(on_stage, experts, 0.0)


def fp8_weight_copy_bytes(terms: ShapeTerms, t, p, e, zero, d, c, *, last: bool):
    """fp8 copy of the linear-layer weights on the stage, per GPU (stack precision fp8; module docstring).

    1 byte per parameter of the layers' linear projections (:func:`stage_linear_params`) and, on the stage
    that holds them, of the MTP modules' (:func:`mtp_linear_params`). TransformerEngine
    casts the weights once per step and keeps the fp8 copy for every micro-batch (its first-micro-batch
    weight caching); torchao casts them in each forward and saves the fp8 copy for the backward. Under ZeRO-3
    the shard is cast before the gather (torchtitan's fp8 all-gather), so the copy is sharded like the bf16
    weights. Assumed: one layout of the copy (the transposed copy of the backward is transient). With
    ``Stack.fp8_param_gather`` the fp8 weights are the only ones (no bf16 copy): the caller subtracts these
    bytes from the 2-byte weights instead of adding them, 1 byte per linear weight in all.
    """
    dense_linear, expert_linear = stage_linear_params(terms, t, p, e)
    if terms.mtp_layers:
        mtp_dense, mtp_expert = mtp_linear_params(terms, t, p, e, last=last)
        dense_linear, expert_linear = dense_linear + mtp_dense, expert_linear + mtp_expert
    group = np.asarray(d) * c
    sharded = dense_linear / group + expert_linear * e / group
    return FP8_BYTES * np.where(np.asarray(zero) >= 3, sharded, dense_linear + expert_linear)


def _mlp_bytes(terms: ShapeTerms, inner: float, keep_only: bool):
    """Stored bytes per token of one MLP of inner size ``inner`` (before ÷t)."""
    if terms.gated:
        return (4.0 if keep_only else 6.0) * inner
    return (2.0 if keep_only else 4.0) * inner


def layer_activation_bytes_per_token(
    terms: ShapeTerms, t, sp, rc, *, moe: bool, seq_len: int = 0, stack: Stack = DEFAULT_STACK
):
    """(kept, kept without recompute) bytes per token of one layer, one micro-batch (module docstring).

    Without FlashAttention the softmax output is stored (2·a·s/t bytes per token) and, with attention dropout,
    its mask and dropped output too (5·a·s/t, Korthikanti et al. 2022 Table 2); hidden dropout keeps two 1-byte
    masks of h (÷t with SP). ``rc`` 1 (selective) drops what ``stack.selective_recompute`` recomputes: norm
    outputs (layernorm), the score tensors (core_attn), the MLP activation output (mlp_act, moe_act) or the
    whole MLP (mlp); ``rc`` 2 (full) keeps the layer input only (per group of ``full_recompute_layers``: see
    :func:`activation_bytes`).
    """
    t = np.asarray(t, dtype=float)
    rc = np.asarray(rc)
    x = np.where(np.asarray(sp, dtype=bool), 1.0 / t, 1.0)  # what SP shards
    h = terms.h
    attn_core = (
        2.0 * (terms.a * terms.d_qk + terms.kv * terms.d_qk + terms.kv * terms.d_v)
        + 2.0 * terms.a * terms.d_v
        + (4.0 * terms.a if stack.flash_attention else 0.0)  # FlashAttention's fp32 log-sum-exp per head
    ) / t
    if moe:
        # the routed copies reach the experts gathered over TP (the token dispatcher's all-gather: every TP rank
        # holds all top_k·T of them, the experts' first GEMM saves them), hence 2h per copy not ÷t
        # (+ the router's fp32 logits and probabilities, 8 bytes per expert)
        gathered = terms.top_k * 2.0 * h + 8.0 * terms.n_experts
        experts = terms.top_k + terms.n_shared  # expert MLPs a token passes through, their inner parts ÷t
        mlp_all = gathered + experts * _mlp_bytes(terms, terms.expert_ffn, False) / t
        mlp_keep = gathered + experts * _mlp_bytes(terms, terms.expert_ffn, True) / t
    else:
        mlp_all = _mlp_bytes(terms, terms.ffn, False) / t
        mlp_keep = _mlp_bytes(terms, terms.ffn, True) / t
    # Gemma 2/3's post-norms save their inputs (the output projection's and the MLP's outputs, 2h each); their
    # outputs go straight into the residual add, which saves nothing
    norm_inputs = (8.0 if terms.post_norms else 4.0) * h * x
    norm_outputs = 4.0 * h * x
    score_bytes = 5.0 if stack.attention_dropout > 0 else 2.0
    scores = 0.0 if stack.flash_attention else score_bytes * terms.a * seq_len / t
    masks = 2.0 * h * x if stack.hidden_dropout > 0 else 0.0  # two 1-byte masks (after attention and MLP)
    none = norm_inputs + norm_outputs + attn_core + mlp_all + scores + masks
    if "every_other_mm" in stack.selective_recompute:  # alone or with moe_act (Stack validates)
        selective = _every_other_mm_bytes(terms, t, x, moe, (mlp_all, mlp_keep), stack) + scores
    else:
        selective = _selective_bytes(
            stack, moe, norm_inputs, norm_outputs, attn_core, (mlp_all, mlp_keep), scores
        )
    selective = selective + masks
    full = 2.0 * h * x
    return np.where(rc == 0, none, np.where(rc == 1, selective, full)), none


def _every_other_mm_bytes(terms: ShapeTerms, t, x, moe: bool, mlp, stack: Stack):
    """Bytes per token torchtitan's op-level selective checkpointing keeps of one layer (``every_other_mm``,
    stack.py): the block input 2h·x; the 1st and 3rd products Q 2·a·d_qk/t and V 2·kv·d_v/t; the attention
    kernel's output 2·a·d_v/t and fp32 log-sum-exp 4a/t; with SP across t > 1, each sublayer's reduce-scatter
    output 2h/t; a gated MLP's 5th and 7th products, up (w1) 2F/t and down (w2, before its reduce: 2h), a GeLU
    MLP's up projection 2F/t (its down projection is the 6th, recomputed). Products counted as torchtitan's Llama
    issues them (Q, K, V, O, w1, w3, w2). MoE layers keep their MLP as the
    other modules say (moe_act or all): torchtitan's policy counts aten.mm only, not grouped expert GEMMs."""
    h = terms.h
    reduce_scatter = np.where((x < 1.0) & (t > 1), 2.0 * h / t, 0.0)
    attention = (
        2.0 * h * x
        + 2.0 * (terms.a * terms.d_qk + terms.kv * terms.d_v + terms.a * terms.d_v) / t
        + (4.0 * terms.a / t if stack.flash_attention else 0.0)
        + reduce_scatter
    )
    mlp_all, mlp_keep = mlp
    if moe:
        return attention + (mlp_keep if "moe_act" in stack.selective_recompute else mlp_all)
    mlp_kept = 2.0 * terms.ffn / t + reduce_scatter + (2.0 * h if terms.gated else 0.0)
    return attention + mlp_kept


def _selective_bytes(stack: Stack, moe: bool, norm_inputs, norm_outputs, attn_core, mlp, scores):
    """Bytes kept by selective recomputation: every stored tensor but those the stack's modules recompute."""
    modules = set(stack.selective_recompute)
    mlp_all, mlp_keep = mlp
    kept = norm_inputs if "layernorm" in modules else norm_inputs + norm_outputs
    kept = kept + attn_core
    if "mlp" in modules and not moe:
        pass  # the whole MLP is recomputed from its input (the norm output, counted above)
    elif ("moe_act" if moe else "mlp_act") in modules:
        kept = kept + mlp_keep
    else:
        kept = kept + mlp_all
    return kept if "core_attn" in modules else kept + scores


def in_flight(p, m, v, *, last: bool):
    """Micro-batches of a whole stage held at the memory peak (1F1B or interleaved; module docstring).

    A stage never holds more than the step's m micro-batches (m·v chunks when interleaved: Megatron caps its
    warm-up at the step's chunks), so every count is capped at m. The search keeps interleaved m a multiple
    of p (m ≥ p), where the cap only binds at m = p; a pinned ``--microbatches`` below p is capped here
    rather than over-counted (such a row already fails Megatron's m % p rule in ``choose_microbatches``).
    """
    p = np.asarray(p, dtype=float)
    v = np.asarray(v, dtype=float)
    m = np.asarray(m, dtype=float)
    if last:
        return np.minimum(m, np.where(v > 1, ((v - 1.0) * p + 1.0) / v, 1.0))
    return np.minimum(m, np.where(v > 1, p + (p - 1.0) / v, p))


def full_recompute_share(stack: Stack, v, layers):
    """Share of a stage's layers that full recomputation reruns: all with 'uniform'; with 'block' the first
    full_recompute_layers n of each of the v virtual chunks, min(v·n, layers)/layers (Megatron
    --recompute-method block: each virtual chunk is its own TransformerBlock, core/recompute.py @ d98e8a64). The
    one rule for the activations kept (:func:`activation_bytes`) and the forward rerun (timing._recomputed)."""
    if stack.full_recompute_method != "block":
        return 1.0
    return np.minimum(float(stack.full_recompute_layers) * v, layers) / layers


def activation_bytes(
    terms: ShapeTerms, t, p, c, b, m, v, rc, sp, seq_len: int, *, last: bool, stack: Stack = DEFAULT_STACK
):
    """Activation bytes per GPU on the first or last stage: in-flight layers, working set, logits.

    Full recomputation (rc 2), Megatron's --recompute-method: 'uniform' keeps the input of every group of
    n = ``full_recompute_layers`` layers of each virtual chunk (v·⌈(L/v)/n⌉ inputs) and, during backward, one
    group's activations as the working set;
    'block' recomputes the first n layers of each virtual chunk (keeping their inputs), min(v·n, layers) of the
    stage, and keeps the others whole: with interleaving each chunk is its own TransformerBlock, whose
    ``num_layers_per_pipeline_rank`` is the chunk's layer count (core/recompute.py, transformer_block.py @ d98e8a64).
    """
    layers, moe, dense = stage_layers(terms, p)
    tokens = np.asarray(b, dtype=float) * seq_len / c
    dense_kept, dense_none = layer_activation_bytes_per_token(
        terms, t, sp, rc, moe=False, seq_len=seq_len, stack=stack
    )
    if terms.moe_layers:
        moe_kept, moe_none = layer_activation_bytes_per_token(
            terms, t, sp, rc, moe=True, seq_len=seq_len, stack=stack
        )
    else:
        moe_kept = moe_none = 0.0
    per_microbatch = tokens * (dense * dense_kept + moe * moe_kept)
    layer_none = np.maximum(np.where(dense > 0, dense_none, 0.0), np.where(moe > 0, moe_none, 0.0))
    group = float(stack.full_recompute_layers)
    full = np.asarray(rc) == 2
    # the recomputed layers' own input is the stored checkpoint (Megatron's CheckpointFunction keeps it; the
    # recompute reads that tensor), already counted in per_microbatch: the working set is the rest
    stored_input = np.where(full, dense_kept, 0.0)
    if stack.full_recompute_method == "block":  # n recomputed layers per chunk, the rest stored whole
        share = full_recompute_share(stack, np.asarray(v, dtype=float), layers)
        per_microbatch = np.where(
            full,
            per_microbatch * share + tokens * layers * (1.0 - share) * layer_none,
            per_microbatch,
        )
        working = np.where(full, tokens * (layer_none - stored_input), 0.0)
    elif (
        group > 1
    ):  # uniform: Megatron groups n layers inside each virtual chunk (core/recompute.py @ d98e8a64):
        # v·⌈(L/v)/n⌉ stored inputs on a stage of L layers, one group (at most a chunk) live while recomputing
        chunk = np.ceil(layers / np.asarray(v, dtype=float))
        groups = np.minimum(np.asarray(v, dtype=float) * np.ceil(chunk / group), layers)
        per_microbatch = np.where(full, per_microbatch * groups / layers, per_microbatch)
        working = np.where(full, tokens * (np.minimum(group, chunk) * layer_none - stored_input), 0.0)
    else:
        working = np.where(full, tokens * (layer_none - stored_input), 0.0)
    total = in_flight(p, m, v, last=last) * per_microbatch + working
    single = np.asarray(p) == 1
    logits = LOSS_LOGIT_BYTES[stack.cross_entropy] * tokens * terms.vocab / t
    if terms.mtp_layers:  # each MTP module: one more block's activations and its own logits, last stage only
        kept = moe_kept if terms.moe_layers else dense_kept
        mtp = terms.mtp_layers * (in_flight(p, m, v, last=True) * tokens * kept + logits)
        total = total + (mtp if last else np.where(single, mtp, 0.0))
    total = total + logits if last else total + np.where(single, logits, 0.0)
    return total


def zero3_buffer_bytes(terms: ShapeTerms, t, e, zero, p=1):
    """Two gathered layers of bf16 weights (current + prefetch) under ZeRO-3, per GPU; none where the whole
    stage stays gathered (pipeline stages, :func:`zero3_held`: counted in the weights)."""
    layer = terms.attn_norm_params + np.maximum(
        terms.dense_mlp_params, terms.moe_common_params + terms.expert_layer_params / np.asarray(e)
    )
    streamed = (np.asarray(zero) == 3) & ~zero3_held(zero, p)
    return np.where(streamed, 2.0 * BF16_BYTES * layer / t, 0.0)


def memory_breakdown(
    terms: ShapeTerms,
    grid: LayoutGrid,
    *,
    seq_len: int,
    reserve_bytes: float,
    stack: Stack = DEFAULT_STACK,
) -> tuple[Columns[MemoryBytes], np.ndarray, dict[str, np.ndarray]]:
    """Per-GPU bytes of the more loaded of the first and last stage, term by term; which stage that is (True
    where the last stage is reported); and each stage's total ({"first": ..., "last": ...}, the same GPU and
    the same figure where p = 1), which a log of one stage's peak is compared with (monitor/vs_plan.py)."""
    g = grid
    out = {}
    for name, last in (("first", False), ("last", True)):
        dense, expert = stage_params(terms, g.tp, g.pp, g.ep, last=last)
        weights, grads, opt = model_state_bytes(
            dense,
            expert,
            g.zero,
            g.dp,
            g.cp,
            g.ep,
            stack.gradient_bytes,
            fsdp_mixed_precision=stack.fsdp_mixed_precision,
            autocast=stack.autocast_fp32_weights,
            p=g.pp,
            moment_bytes=stack.moment_bytes,
            fused_adam_master=stack.fused_adam_master,
        )
        if stack.precision == "fp8":
            copy = fp8_weight_copy_bytes(terms, g.tp, g.pp, g.ep, g.zero, g.dp, g.cp, last=last)
            weights = weights - copy if stack.fp8_param_gather else weights + copy
        act = activation_bytes(
            terms,
            g.tp,
            g.pp,
            g.cp,
            g.micro_batch,
            g.microbatches,
            g.vpp,
            g.recompute,
            g.sequence_parallel,
            seq_len,
            last=last,
            stack=stack,
        )
        other = reserve_bytes + zero3_buffer_bytes(terms, g.tp, g.ep, g.zero, g.pp)
        out[name] = (weights, grads, opt, act, other, weights + grads + opt + act + other)
    last_is_max = out["last"][5] > out["first"][5]
    keys = ("weights", "gradients", "optimizer", "activations", "other", "total")
    terms_bytes = {k: np.where(last_is_max, out["last"][i], out["first"][i]) for i, k in enumerate(keys)}
    return Columns(MemoryBytes, terms_bytes), last_is_max, {"first": out["first"][5], "last": out["last"][5]}
