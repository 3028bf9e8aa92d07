"""Time per optimizer step of one layout, as numpy array expressions (work on scalars too).

The most loaded stage (ceil(L/p) layers, and the output head on the last stage) sets the pace of the pipeline.
Multi-token prediction (DeepSeek-V3, arXiv 2412.19437 §2.2) adds its D blocks, D more passes through the head
and D 2h→h projections to that stage (Megatron-LM puts the modules on the last stage), an upper bound where the
last stage holds fewer than ceil(L/p) layers.
Per micro-batch on that stage (T = b·s/c tokens per GPU):

* **GEMMs**: each projection as an (M, N, K) matrix product; time = max(2MNK / (eta·peak), bytes / HBM
  bandwidth) with ``eta = eta_max / (1 + d0/M + d0/N + d0/K)``: a large GEMM reaches eta_max of the datasheet
  peak, small or skinny ones less (tile and wave quantisation; docs/parallel.md, Time per step: an 8192³ bf16 GEMM measured
  ~790 TFLOP/s on H100 = 80% of 989). Backward = 2 GEMMs of the forward's size. MoE experts are grouped GEMMs
  of T·top_k·e/E tokens each, E/e of them per GPU.
* **Attention core** (FlashAttention): executed FLOPs 2·T·s·(a/t)·(d_qk + d_v)·½ (causal mask skipped)
  forward, 2.5× that backward (the kernel recomputes the scores), at ``attention_fraction`` of peak over
  (1 + ``attention_half_seq`` / (s/c)): FlashAttention-2's published rate rises with the length of a call.
  A sliding window of w keys (FlashAttention-2's ``window_size``, §3.1.1 block skipping extended to the band)
  replaces s by the layer's effective context 2w − w²/s (``model.window_context``: a query at position i sees
  min(i, w) keys), averaged over the most loaded stage's layers counting its most global layers
  (:func:`stage_attention_share`). Without FlashAttention the full s×s scores are computed and masked
  (transformers' eager_attention_forward adds the mask to the full product), so a window changes nothing there.
* **Elementwise** (norms, activation, residual, rotary; the softmax without FlashAttention): HBM-bound; the
  forward's bytes counted op by op (:func:`elementwise_forward_bytes`, one read and one write per fused kernel,
  every kernel PyTorch launches when eager), the backward twice that, + 1/3 of the total for full recompute and
  ``every_other_mm``, + 1/6 for selective; × ``elementwise_time_factor`` (fitted: kernels below the HBM peak
  and ops not counted). An eager stack (``Stack.fused_elementwise`` off) pays the fitted
  ``eager_elementwise_share`` of its excess over the fused kernels.
* **Autocast over fp32 weights** (``Stack.autocast_fp32_weights``): every weight of the stage cast to half
  precision and its gradient added back into the fp32 .grad, 24 bytes per parameter per micro-batch (30 with
  full recompute) at the HBM bandwidth (:data:`AUTOCAST_BYTES_PER_PARAM`).
* **Recomputation**: full recompute repeats each layer's forward (GEMMs, attention, TP collectives).
* **TP** (Narayanan et al. 2021 §3.2 / Korthikanti et al. 2022 §4.2.2): 2 all-reduces forward and 2 backward
  of 2·T·h bytes per layer (full recompute 2 more; ``every_other_mm`` reruns the SP all-gathers, 1 more, or
  without SP both all-reduces, 2 more) (with SP an all-gather + reduce-scatter pair, same bus traffic); ring cost
  2(t-1)/t·bytes / (link bandwidth × network efficiency) + a fixed latency. Intra-node bandwidth when t ≤ GPUs
  per node. With ``tp_comm_overlap`` and SP (torchtitan async TP; Megatron-core ``--tp-comm-overlap`` with
  Transformer Engine userbuffers: the collective is split into per-peer chunks moved under the partial
  GEMMs) a net share ``tp_overlap_fraction`` of it, at most the layers' GEMM time, leaves the critical path.
  The share is fitted on paired measurements of the same job with and without the overlap (torchtitan's
  async-TP benchmark), so whatever the overlapped transfers still slow the GEMMs down is already netted out;
  it also absorbs any error of the model's TP share of the step, and it is transferred as is to Megatron's
  userbuffers, which overlap the same collectives with a few SMs instead of copy engines. In an MoE layer the
  MLP's pair is the token dispatcher's all-gather and reduce-scatter of the routed tokens, top_k·T·h each, never
  overlapped (:func:`_tensor_parallel_seconds`); shared experts add a dense MLP's pair.
* **DP overlap is not free**: every second of DP communication hidden under compute still costs
  ``dp_overlap_interference`` seconds (NCCL ring kernels occupy SMs and HBM bandwidth beside the GEMMs, the
  contention Rashidi et al. 2021, ISCA, "Enabling compute-communication overlap...", describe; fitted, value
  in runplan/configs/calibration.yaml). TP overlap does not share this parameter: its net effect is measured
  directly (torchtitan's symmetric-memory transfers run on copy engines, not SM-based rings). Without
  ``overlap_grad_reduce`` no DP traffic is hidden; without ``overlap_param_gather`` the 2-byte parameter
  all-gather of ZeRO-1/2 is paid after the optimizer step, outside the window.
* **PP**: per micro-batch and chunk, one activation send forward and one gradient send backward of 2·T·h
  bytes (÷t with SP, Megatron's scatter/gather optimisation), over the scale-out network when the job spans
  nodes; not overlapped (conservative). Bubble (Narayanan et al. 2021 §2.2): (p-1)/v micro-batch times, i.e.
  bubble fraction (p-1)/(v·m).
* **EP**: 2 all-to-alls forward (dispatch, combine) and 2 backward per MoE layer of 2·T·top_k·h bytes
  (÷t with SP); (e-1)/e of it leaves the GPU; intra-node when t·e ≤ GPUs per node (the EP group spans t·e
  consecutive ranks; CP folds into expert data parallelism). Not overlapped.
* **CP** (ring attention, Liu et al. 2023; Megatron-core CP): per layer (c-1) K/V chunk exchanges forward,
  twice that backward, overlapped with the attention kernel; only the excess is exposed. Not overlapped: each
  of the (c-1) extra ring steps merges its partial result into fp32 accumulators on the compute stream (the
  blockwise online-softmax rescaling of out and LSE forward, the dQ/dK/dV accumulation backward; Transformer
  Engine's CP attention does this per step), ``CP_MERGE_BYTES_PER_ELEMENT`` of HBM traffic per accumulated
  element (out forward; dQ, dK, dV backward), plus one fixed latency per step and direction. That is
  ``Stack.context_parallel_impl`` 'transformer-engine' (Megatron-core). 'pytorch' is PyTorch's context_parallel
  as torchtitan runs it (:func:`_torch_context_parallel_seconds`): K/V of the kv/t heads, or of all a/t query
  heads where the model repeats them before SDPA (``Stack.kv_repeated_before_attention``: torchtitan
  llama/model.py @ 9dec370, repeat_kv, until ff0829c), one all-gather of the other c-1 K/V
  shards per layer forward (twice with full recompute) and one backward, plus c sends of the fp32 dK/dV
  accumulators (torch/distributed/tensor/experimental/_attention.py @ 0123248a, rotate method 'allgather'),
  none of it overlapped (a compiled block waits on each collective where it is issued); the merges at
  :data:`TORCH_CP_MERGE_BYTES` per element, eager or compiled (``Stack.fused_elementwise``).
* **DP** (docs/parallel.md, Time per step; Rajbhandari et al. 2020 §7): ring traffic (d'-1)/d' × volume over the group of
  d' = d·c ranks (d·c/e for experts): ZeRO-0 all-reduce 2·g·Ψ; ZeRO-1 reduce-scatter g·Ψ + all-gather 2Ψ;
  ZeRO-2 reduce-scatter every micro-batch; ZeRO-3 also all-gathers bf16 weights twice per micro-batch (three
  times with full recompute); under torch.autocast over fp32 weights every parameter gather moves 4 bytes and
  ZeRO-1 (PyTorch's ZeroRedundancyOptimizer over DDP) all-reduces the gradients, 2g·Ψ, before the 4-byte
  broadcast of the updated shards; but with pipeline stages once per step with one reduce-scatter, as ZeRO-1
  (torchtitan keeps the stage gathered; memory.model_state_bytes), the reduce-scatter exposed after the last
  backward (PyTorch's pipelining starts it only then). Hidden behind one micro-batch's compute
  (ZeRO-0/1 and ZeRO-3 with stages: the last backward and the next forward) or behind all micro-batches
  (ZeRO-2/3); only the excess is exposed. With fp8 weights (``Stack.fp8_param_gather``, Megatron-LM
  --fp8-param-gather) every parameter all-gather moves the linear layers' weights in 1 byte, not 2.
* **Optimizer**: Adam update HBM-bound, (2·12 + g + 2) bytes per locally held parameter: its state (fp32 master
  and moments) read and written, the gradient read, the bf16 weight written; with bf16 moments
  (``Stack.optimizer_state_dtype``, DeepSeek-V3 arXiv 2412.19437 §3.3.3) the state is 4 + 2 + 2 = 8 bytes and the
  update moves (2·8 + g + 2) (memory.optimizer_bytes_per_param); where TransformerEngine's FusedAdam keeps the
  master as 16-bit remainders beside the bf16 weight (``Stack.fused_adam_master``, ZeRO-1/2) the state is
  2 + 2 + 2 and the update moves 2·6 + g + 2 + 2, the bf16 weight read too (:func:`_optimizer_seconds`).
* **fp8** (stack precision fp8; docs/parallel.md, FP8): the linear layers' GEMMs (QKV, output projection, MLP,
  experts) run at the catalog's fp8 peak with the same eta (a prior), plus the HBM traffic of their casts to
  fp8 per recipe (:func:`fp8_cast_bytes`, derived, not fitted); attention core, router, head, communication
  and optimizer stay as in bf16. A GPU without fp8 is refused (:func:`check_precision`).

MFU is PaLM's (Chowdhery et al. 2022 §4.1, App. B): model FLOPs per token
(``ModelShape.model_flops_per_token``,
no recomputation, causal mask not discounted) × tokens/s ÷ (GPUs × peak). HFU adds recomputation FLOPs.
Leaves out: kernel launch gaps, stragglers, data loading, checkpoint saves, MoE load imbalance, fp8
communication (FSDP/TP fp8 all-gathers).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from runplan.errors import SpecError
from runplan.hardware import GpuSpec
from runplan.parallel.grid import Columns, LayoutGrid
from runplan.parallel.layout import Efficiency, TimeSeconds
from runplan.parallel.memory import (
    FP32_BYTES,
    MASTER_REMAINDER_BYTES,
    ShapeTerms,
    full_recompute_share,
    mtp_linear_params,
    optimizer_bytes_per_param,
    stage_layers,
    stage_linear_params,
    stage_params,
    zero3_held,
)
from runplan.parallel.stack import Stack

if TYPE_CHECKING:
    from runplan.model import ModelShape

#: cuDNN fused attention (TransformerEngine's FusedAttention) over FlashAttention-2 on Hopper, forward + backward:
#: 1.49 at 512 tokens, 1.57-1.62 from 1k to 16k, mean 1.58 (Shah et al. 2024, arXiv 2407.08608, Fig. 5(d) causal
#: forward, head dim 128: 315-539 against 191-335 TFLOP/s; Fig. 6 backward, head dim 128: 305-516 against
#: 214-322; combined as forward + 2.5× backward FLOPs). No published A100 comparison: there it keeps
#: FlashAttention-2's rate (TransformerEngine itself runs flash-attn on Ampere).
CUDNN_OVER_FLASH_ATTENTION_2_HOPPER = 1.58


def attention_kernel_speedup(stack: Stack, gpu: GpuSpec) -> float:
    """The stack's attention kernel's rate over FlashAttention-2's on ``gpu``: :func:`attention_kernel_speedup_on`
    its family (the only field of the GPU the rule reads)."""
    return attention_kernel_speedup_on(stack, gpu.family)


def attention_kernel_speedup_on(stack: Stack, family: str | None) -> float:
    """The stack's attention kernel's rate over FlashAttention-2's on a GPU of ``family`` (``Stack.attention_kernel``;
    'auto' is TransformerEngine's choice, cuDNN on Hopper and newer: dot_product_attention/utils.py,
    "FusedAttention preference on Hopper+", since TE's cuDNN frontend v1 integration, Dec 2023)."""
    # measured on Hopper only; Ampere runs flash-attn under TE, and AMD GPUs have no cuDNN
    if stack.attention_kernel == "flash-attention-2" or family in ("ampere", "cdna3"):
        return 1.0
    return CUDNN_OVER_FLASH_ATTENTION_2_HOPPER


#: docs/parallel.md, Time per step: an isolated 8192³ bf16 GEMM measured ~790 TFLOP/s on H100 (989 peak): a
#: consistency check on the calibrated GEMM fraction (an isolated GEMM runs at least as fast as the training loop).
HOPPER_ISOLATED_8192_GEMM_FRACTION = 790.0 / 989.0
#: Fixed cost of one collective or send (kernel launch + protocol latency), seconds. Assumed (tens of µs).
COLLECTIVE_LATENCY_SECONDS = 2e-5
# The fitted constants (GEMM peak fraction per GPU family, GEMM shape constant d0, network efficiencies,
# elementwise traffic factor, TP overlap fraction, DP overlap interference, per-step overhead) live in the
# calibration file (runplan/configs/calibration.yaml, built by `runplan calibrate` from
# benchmarks/published_runs.yaml); runplan.calibrate.constants documents each one and its bounds.
#: HBM bytes one extra ring step of context parallelism moves per accumulated element to merge its partial
#: result: read the fp32 accumulator and the bf16 partial, write the accumulator back (4 + 2 + 4). Forward the
#: accumulator is the attention output (T·a/t·d_v per GPU, rescaled by the online softmax); backward it is dQ
#: (T·a/t·d_qk) and the dK/dV that travel on around the ring (T·kv/t·(d_qk + d_v)). Derived from the data types
#: of the blockwise merge (Liu et al. 2023, Ring Attention, §3; Milakov & Gimelshein 2018), not measured.
CP_MERGE_BYTES_PER_ELEMENT = 10.0
#: HBM bytes per element of PyTorch's context_parallel merges (Stack.context_parallel_impl 'pytorch'), counted
#: from the kernels of torch/distributed/tensor/experimental/_attention.py @ 0123248a (convert_to_f32 on).
#: Eager, one kernel per op: forward, each of the c-1 extra ring steps per output element (T·a/t·d_v) of
#: _SDPAMerger: the bf16 partial cast to fp32 (2 + 4), out - block_out (4 + 4 + 4), · sigmoid(Δlse) (4 + 4),
#: out - that (4 + 4 + 4) = 38 on a full step; on a load-balanced half step those on half the rows (19) plus
#: _partial_update's torch.cat of the whole accumulator (4 + 4) = 27; a rank has as many of each over its c-1
#: steps on average: 32.5; and torch.cat of bf16 K and V before each exchange (2 + 2 per K/V element,
#: T·a/t·(d_qk + d_v); c-1 per pass, forward and backward). Backward, each of the c steps: the fp32 dQ
#: accumulate (grad_query += bf16 partial: 4 + 2 + 4 per dQ element) and dK/dV accumulate (10) plus torch.cat of
#: the fp32 dK/dV to send (4 + 4): 18 per K/V element. Compiled (torch.compile, Stack.fused_elementwise),
#: Inductor fuses each merge into one kernel: read the fp32 accumulator and the bf16 partial, write the
#: accumulator (4 + 2 + 4 = 10, as CP_MERGE_BYTES_PER_ELEMENT), and the K/V concatenations feed the first
#: exchange only (the all-gather rotater ignores the later ones; dead code). LSE-sized (per row) terms and the
#: one-off casts are left out. Derived from the data types, not measured.
TORCH_CP_MERGE_BYTES: dict[str, dict[str, float]] = {
    "eager": {"out": (38.0 + 27.0) / 2.0, "kv_cat": 4.0, "dq": 10.0, "dkv": 18.0},
    "compiled": {"out": 10.0, "kv_cat": 0.0, "dq": 10.0, "dkv": 10.0},
}
#: FlashAttention's backward executes 2.5× the forward's FLOPs (5 matrix products against 2: it recomputes the
#: scores; Dao 2023, FlashAttention-2, arXiv 2307.08691, §3.1-3.2).
ATTENTION_BACKWARD_RATIO = 2.5
#: With a causal mask FlashAttention skips the blocks above the diagonal: about half the score work
#: (Dao 2023, FlashAttention-2, §3.1.1).
CAUSAL_FRACTION = 0.5
#: Elementwise HBM traffic with recomputation, relative to none: full recompute repeats the forward's elementwise
#: ops, one unit of forward + backward = 1 + 2 (ELEMENTWISE_BACKWARD_RATIO): 1 + 1/3 = 4/3; selective repeats
#: about half of them (the norms or the activation): 1 + 1/6 = 7/6. Derived, not measured.
FULL_RECOMPUTE_ELEMENTWISE_SHARE = 4.0 / 3.0
SELECTIVE_RECOMPUTE_ELEMENTWISE_SHARE = 7.0 / 6.0
#: HBM bytes per element of one layer's forward elementwise ops, (PyTorch eager, fused kernel), bf16 tensors.
#: Eager counts every kernel PyTorch launches, as torchtitan's Llama issues them (@ 9dec370, llama/model.py and
#: models/norms.py): RMSNorm = x.float() 2+4, pow 4+4, mean 4, x·rsqrt 4+4, type_as 4+2, ·weight 2+2 = 36;
#: RoPE on q and k = .float() 2+4, complex multiply 4+4, type_as 4+2 = 20; SwiGLU per output element = silu 2+2,
#: multiply 2+2+2 = 10 (GeGLU the same: tanh-GeLU is one kernel, 2+2); dropout 2+2+1 (mask) then add 2+2+2 = 11. Fused: one kernel reads its inputs and writes
#: its output once (norm 2+2; rope 2+2; SwiGLU 2+2+2; Megatron's bias-dropout-add 2+2+2+1). LayerNorm, GeLU and
#: a plain residual add are one kernel either way (PyTorch's native layer_norm; 2+2, 2+2, 2+2+2). Derived from
#: the kernels' data types, not measured. An MoE layer also permutes each token's top_k copies into expert order
#: and combines them back (about 2+2 each way per routed element of h, moe_dispatch). The softmax without
#: FlashAttention is counted as Megatron's fused kernel for every stack (SOFTMAX_BYTES).
ELEMENTWISE_OP_BYTES: dict[str, tuple[float, float]] = {
    "rmsnorm": (36.0, 4.0),
    "layernorm": (4.0, 4.0),
    "rotary": (20.0, 4.0),
    "swiglu": (10.0, 6.0),
    "gelu": (4.0, 4.0),
    "residual": (6.0, 6.0),
    "dropout_residual": (11.0, 7.0),
    "moe_dispatch": (8.0, 8.0),
}


#: HBM bytes per element of the score tensor without FlashAttention (a·s per token): Megatron's fused
#: scale-mask-softmax reads the scores and writes the probabilities (2 + 2); attention dropout on them writes a
#: 1-byte mask and the dropped probabilities (2 + 2 + 1). Same derivation as the table above.
SOFTMAX_BYTES = 4.0
ATTENTION_DROPOUT_BYTES = 5.0
#: An elementwise op's backward reads the incoming gradient and the input(s) it saved and writes one gradient:
#: about twice its forward's one read and one write (norms: 2 reads + reductions + 1 write). Derived, not measured.
ELEMENTWISE_BACKWARD_RATIO = 2.0


def elementwise_forward_bytes(terms: ShapeTerms, stack: Stack, t, x, seq_len: int, *, moe: bool, eager: bool):
    """HBM bytes per token of one layer's elementwise forward (:data:`ELEMENTWISE_OP_BYTES`), sharded as the ops
    run: two norms (four with post-norms) and two residual adds over h (÷t with sequence parallelism: ``x``; MoE layers also permute
    and combine top_k copies of h), the q/k norms, RoPE and the MLP activation inside the TP region (÷t), and
    without FlashAttention the softmax (and its dropout) over the a·s scores (÷t). ``eager``: PyTorch eager
    kernels instead of fused ones."""
    k = 0 if eager else 1
    norm = ELEMENTWISE_OP_BYTES["rmsnorm" if terms.rmsnorm else "layernorm"][k]
    residual = ELEMENTWISE_OP_BYTES["dropout_residual" if stack.hidden_dropout > 0 else "residual"][k]
    activation = ELEMENTWISE_OP_BYTES["swiglu" if terms.gated else "gelu"][k]
    width = (terms.top_k + terms.n_shared) * terms.expert_ffn if moe else terms.ffn
    tp_region = (
        terms.qk_norm_width * ELEMENTWISE_OP_BYTES["rmsnorm"][k]
        + terms.rotary_width * ELEMENTWISE_OP_BYTES["rotary"][k]
        + width * activation
    )
    if not stack.flash_attention:
        scores = SOFTMAX_BYTES + (ATTENTION_DROPOUT_BYTES if stack.attention_dropout > 0 else 0.0)
        tp_region = tp_region + terms.a * seq_len * scores
    per_h = norm + residual + (terms.top_k * ELEMENTWISE_OP_BYTES["moe_dispatch"][k] / 2.0 if moe else 0.0)
    if terms.post_norms:  # Gemma 2/3: a norm after attention and after the MLP too, over h (÷t with SP)
        per_h = per_h + norm
    return 2.0 * terms.h * x * per_h + tp_region / t


#: fp8 recipe -> (bytes per element of a cast to fp8, bytes per element of the operand's other-layout copy),
#: derived from the data types and passes (fp8_cast_bytes): tensorwise (dynamic per-tensor scale: amax read 2
#: + cast 2 + 1; transpose 1 + 1), delayed (TransformerEngine: the scale comes from the amax history and the
#: new amax is taken inside the cast kernel: 2 + 1; transpose 1 + 1), rowwise/blockwise/mxfp8 (the local
#: scale is taken in the cast kernel: 2 + 1; the other layout is a second cast along the other axis: 2 + 1).
FP8_CAST_BYTES_PER_ELEMENT: dict[str, tuple[float, float]] = {
    "tensorwise": (5.0, 2.0),
    "delayed": (3.0, 2.0),
    "rowwise": (3.0, 3.0),
    "blockwise": (3.0, 3.0),
    "mxfp8": (3.0, 3.0),
}


def gpu_family(gpu: GpuSpec) -> str:
    """'ampere' for the A100 family, 'hopper' otherwise (runplan.calibrate.calibration.gpu_family)."""
    from runplan.calibrate.calibration import gpu_family as family

    return family(gpu)


def default_efficiency(gpu: GpuSpec, **overrides: float) -> Efficiency:
    """The shipped calibration's constants for ``gpu``'s family (runplan/configs/calibration.yaml); keyword
    arguments override single fields (sensitivity studies)."""
    from runplan.calibrate.calibration import shipped_calibration

    eff = shipped_calibration().efficiency(gpu)
    assert eff is not None, "the shipped calibration covers every GPU family"
    return eff.model_copy(update=overrides) if overrides else eff


def gemm_seconds(m, n, k, gpu: GpuSpec, eff: Efficiency, *, fp8: bool = False):
    """One (M×K)·(K×N) GEMM: roofline of the shape-dependent compute rate and the HBM traffic.

    bf16: inputs and output 2 bytes per element, at the bf16 peak. ``fp8``: 1-byte inputs and a bf16 output at
    the fp8 tensor-core peak (``GpuSpec.fp8_flops``; the caller checks it exists: :func:`check_precision`),
    with the same eta: an fp8 GEMM is assumed to reach the same fraction of its datasheet peak as a bf16 one
    (a prior, not fitted: docs/parallel.md, FP8). The casts to fp8 are a separate term (:func:`fp8_cast_bytes`).
    """
    m = np.asarray(m, dtype=float)
    eta = eff.gemm_peak_fraction / (
        1.0 + eff.gemm_half_dim / m + eff.gemm_half_dim / n + eff.gemm_half_dim / k
    )
    if fp8:
        compute = 2.0 * m * n * k / (eta * float(gpu.fp8_flops or 0.0))
        traffic = (m * k + k * n + 2.0 * m * n) / gpu.hbm_bandwidth_bytes_per_s
        return np.maximum(compute, traffic)
    compute = 2.0 * m * n * k / (eta * gpu.bf16_flops)
    traffic = 2.0 * (m * k + k * n + m * n) / gpu.hbm_bandwidth_bytes_per_s
    return np.maximum(compute, traffic)


def check_precision(gpu: GpuSpec, stack: Stack) -> None:
    """SpecError when the stack's precision or fp8 recipe needs tensor cores ``gpu`` does not have."""
    if stack.precision != "fp8":
        return
    if gpu.fp8_flops is None:
        raise SpecError(
            f"{gpu.name} has no fp8 tensor cores (the catalog lists no fp8 FLOP/s)",
            where="stack.precision",
            hint="use precision bf16, or a GPU with fp8 (H100, H200, B200)",
        )
    if stack.fp8_recipe == "mxfp8" and gpu.family != "blackwell":
        raise SpecError(
            f"fp8 recipe mxfp8 needs Blackwell tensor cores; {gpu.name} is not Blackwell",
            where="stack.fp8_recipe",
            hint="use tensorwise, delayed, rowwise or blockwise, or a Blackwell GPU",
        )


#: fp8 over bf16 step-time speedup of NVIDIA's Grok-1 314B recipe (8 experts, top 2; TP 4 PP 8 CP 2 EP 8, 512
#: H100): measured 21.0 / 16.90 s per step (dgxc-benchmarking grok1/README_314b.md @ 8f5cbb37, BF16 and FP8
#: tables; 1.23 at 2,048 GPUs) against runplan's 1.44 for the same pair (benchmarks/published_runs.yaml rows
#: grok1-314b-512gpu and -fp8; docs/parallel.md, FP8). The only published fp8 MoE runs at hand; the dense pairs
#: agree within 10%.
MOE_FP8_SPEEDUP_MEASURED = 1.24
MOE_FP8_SPEEDUP_PREDICTED = 1.44


#: Measured over predicted step time of torchtitan's published context-parallel runs, lowest, median, highest:
#: Llama 3.1 8B on 8 H100 and 405B on 512 (Liang et al. 2024, arXiv 2410.06511, Tables 2 and 6: CP 2, 4, 8 at
#: 64k-256k tokens, PyTorch's context_parallel, Float8 linears, torch.compile), with the shipped constants and
#: the PyTorch CP model (Stack.context_parallel_impl 'pytorch'; benchmarks/published_runs.yaml rows
#: torchtitan-*-cp{2,4,8}-*): 8B CP 2/4/8 0.99, 1.30, 1.34; 405B CP 2/4/8 1.13, 1.03, 1.12. With the ring as
#: TransformerEngine runs it (the model before) they were 1.02-1.42, median 1.32: the exchange of all a/t heads
#: on the critical path is most of the 405B gap; the 8B CP 4 and 8 rows' remains (the same 8 GPUs at CP 1 take
#: 1.10). The other engines' bf16 CP runs (NVIDIA's dgxc recipes at CP 2, Meta's Llama 3 405B at CP 16) come out
#: at 0.93-1.09.
TORCHTITAN_CP_TIME_RATIO = (0.99, 1.12, 1.34)


def context_parallel_notes(stack: Stack, cp: int) -> list[str]:
    """For a layout with context parallelism run by PyTorch's context_parallel (``Stack.context_parallel_impl``
    'pytorch', the torchtitan preset): the margin its published CP runs ask for; on a stack without CP (a pin
    wins): that it was timed as TransformerEngine's ring."""
    if cp > 1 and not stack.context_parallel:  # a pin wins over the stack: say what was timed
        return [
            f"context parallelism: cp = {cp} is pinned, but this stack runs no ring-attention CP "
            "(stack.context_parallel off: Megatron-LM before its context parallelism, or DeepSpeed, whose "
            "Ulysses splits heads and is not timed here); it is timed as TransformerEngine's ring "
            "(Megatron-core): use the megatron-core or torchtitan-fsdp2 preset (--stack, or stack: in the plan)"
        ]
    if cp <= 1 or stack.context_parallel_impl != "pytorch":
        return []
    low, median, high = TORCHTITAN_CP_TIME_RATIO
    return [
        f"context parallelism on torchtitan (PyTorch's context_parallel): its published CP runs (Llama 3.1 8B "
        f"and 405B, CP 2-8, 64k-256k tokens) took {low:.2f}x to {high:.2f}x the step time runplan predicts, "
        f"{median:.2f}x median: allow that margin on this layout's step time (docs/parallel.md, CP)"
    ]


def precision_notes(gpu: GpuSpec, stack: Stack, *, moe: bool = False) -> list[str]:
    """The one-line explanation of an fp8 stack's time for the user (empty in bf16), and for a mixture of
    experts the margin the only published fp8 MoE runs ask for."""
    if stack.precision != "fp8":
        return []
    notes = [
        f"fp8 ({stack.fp8_recipe}): linear-layer GEMMs at the fp8 peak "
        f"{float(gpu.fp8_flops or 0.0) / 1e12:,.0f} TFLOP/s plus their cast traffic (docs/parallel.md, FP8); "
        "attention, head and communication stay bf16; MFU is against the bf16 peak"
    ]
    if moe:
        margin = MOE_FP8_SPEEDUP_PREDICTED / MOE_FP8_SPEEDUP_MEASURED - 1.0
        notes.append(
            f"fp8 on a mixture of experts: on the only published fp8 MoE runs (NVIDIA's Grok-1 314B recipe, 512 "
            f"H100) runplan predicts a {MOE_FP8_SPEEDUP_PREDICTED:.2f}x fp8 speedup where "
            f"{MOE_FP8_SPEEDUP_MEASURED:.2f}x was measured: allow {margin:.0%} more time than this plan's fp8 "
            "step (docs/parallel.md, FP8)"
        )
    return notes


def fp8_cast_bytes(m, n, k, recipe: str, weight_share=1.0):
    """(forward, backward) HBM bytes of the fp8 casts around one linear layer's GEMM Y = X·W (M×K · K×N).

    Forward casts X (M·K) and W (K·N); backward casts dY (M·N) and needs X, W and dY in the other operand
    layout for the weight- and input-gradient GEMMs (Hopper's fp8 tensor cores take only the "TN" layout:
    cuBLASLt documentation, cublasLtMatmul FP8 requirements; torchao and TransformerEngine both make the
    transposed copies). Per element (:data:`FP8_CAST_BYTES_PER_ELEMENT`): a cast reads bf16 (2) and writes
    fp8 (1); a dynamic per-tensor scale (tensorwise) first needs the tensor's absolute maximum, one more read
    (2); the transposed copy of a per-tensor-scaled tensor reads and writes fp8 (1 + 1), while per-row/block
    scales (rowwise, blockwise, mxfp8) are taken along the other axis, a second cast from bf16 (2 + 1).
    Unfused counts: torch.compile or TransformerEngine may fuse the amax into the producing kernel.
    ``weight_share`` scales the weight's terms (K·N): 1/m when the weight's fp8 copy and its transpose are made
    once per step and reused by all m micro-batches (``Stack.fp8_weight_cache``: TransformerEngine casts on the
    first micro-batch only, Megatron passing ``is_first_microbatch``), 1 when every micro-batch recasts (torchao).
    """
    cast, relayout = FP8_CAST_BYTES_PER_ELEMENT[recipe]
    m = np.asarray(m, dtype=float)
    weight = weight_share * k * n
    forward = cast * (m * k + weight)
    backward = cast * m * n + relayout * (m * k + weight + m * n)
    return forward, backward


def within_node(span, node_size: int, n_gpus: int | None = None):
    """Whether every copy of a group spanning ``span`` consecutive ranks sits inside one node (NVLink domain).

    Megatron-core (parallel_state RankGenerator, order tp-cp-ep-dp-pp) and torchtitan (DeviceMesh over ranks in
    order) lay each group out as a run of consecutive ranks, so a group is intra-node only when the node holds
    whole groups: span ≤ node and node % span == 0. TP 6 on 8-GPU nodes puts ranks 6-11 on two nodes, and TP 16
    on a 72-GPU NVL72 rack straddles racks; a job of at most one node (``n_gpus``) is inside it whatever the
    span."""
    node = node_size if n_gpus is None else min(node_size, n_gpus)
    span = np.asarray(span, dtype=float)
    return (span <= node) & (np.mod(node, span) == 0)


def _link(gpu: GpuSpec, inside_node, peers=None):
    """Bytes/s per GPU, one direction, of a transfer inside one node or across nodes. ``peers``: how many GPUs
    each one exchanges with at once inside the node (g - 1 for a collective of g, 1 for a send); on a fully
    connected node (``GpuSpec.intra_node_link_bytes_per_s``, no switch) that many links carry it."""
    intra = gpu.intra_node_bandwidth_bytes_per_s
    if gpu.intra_node_link_bytes_per_s is not None and peers is not None:
        intra = np.minimum(
            intra, np.maximum(np.asarray(peers, dtype=float), 1.0) * gpu.intra_node_link_bytes_per_s
        )
    return np.where(inside_node, intra, gpu.inter_node_bandwidth_bytes_per_s)


def dp_bandwidth(gpu: GpuSpec, t, group, node_size: int):
    """Bytes/s per GPU of a data-parallel collective over ``group`` ranks spaced ``t`` apart (TP innermost).

    Inside one node: NVLink. Across nodes, the node/t members of the group that share a node each drive their
    own NIC, and NCCL runs one ring (channel) per NIC, so each NIC carries 1/k of the node's traffic: the
    per-GPU rate is min(NVLink, k × NIC) with k = min(group, node/t) (NCCL's multi-channel rings; the
    all-reduce bus bandwidth NVIDIA publishes for DGX nodes scales with the NICs per node the same way).
    With t = node (TP fills the node) k = 1 and each GPU has only its own NIC. Leaves out switch
    oversubscription and NCCL's tree algorithm at very large scale.
    """
    t = np.asarray(t, dtype=float)
    group = np.asarray(group, dtype=float)
    members = np.clip(node_size / t, 1.0, np.maximum(group, 1.0))
    across = np.minimum(gpu.intra_node_bandwidth_bytes_per_s, members * gpu.inter_node_bandwidth_bytes_per_s)
    inside = _link(gpu, True, peers=group - 1.0)  # (a fully connected node: the group's links, _link)
    return np.where(within_node(t * group, node_size), inside, across)


@dataclass(frozen=True)
class _Step:
    """What every term of one step's time reads: the grid's axes as float arrays and the shared inputs."""

    terms: ShapeTerms
    grid: LayoutGrid
    seq_len: int
    gpu: GpuSpec
    eff: Efficiency
    node_size: int
    stack: Stack
    t: np.ndarray
    p: np.ndarray
    e: np.ndarray
    c: np.ndarray
    v: np.ndarray
    m: np.ndarray
    full: np.ndarray
    x: np.ndarray  # what sequence parallelism shards: 1/t with SP, else 1
    tokens: np.ndarray  # tokens per GPU of one micro-batch, b·s/c
    layers: np.ndarray
    moe: np.ndarray
    dense: np.ndarray

    @classmethod
    def of(cls, terms: ShapeTerms, g: LayoutGrid, gpu: GpuSpec, eff: Efficiency, **inputs: Any) -> _Step:
        """``inputs``: seq_len, node_size, stack."""
        t = np.asarray(g.tp, dtype=float)
        layers, moe, dense = stage_layers(terms, g.pp)
        if (
            terms.mtp_layers
        ):  # MTP blocks (model.py) run on the last stage; counted on the paced one (module doc)
            moe, dense = (
                (moe + terms.mtp_layers, dense) if terms.moe_layers else (moe, dense + terms.mtp_layers)
            )
            layers = layers + terms.mtp_layers
        return cls(
            terms=terms,
            grid=g,
            gpu=gpu,
            eff=eff,
            t=t,
            p=np.asarray(g.pp, dtype=float),
            e=np.asarray(g.ep, dtype=float),
            c=np.asarray(g.cp, dtype=float),
            v=np.asarray(g.vpp, dtype=float),
            m=np.asarray(g.microbatches, dtype=float),
            full=np.asarray(g.recompute) == 2,
            x=np.where(np.asarray(g.sequence_parallel, dtype=bool), 1.0 / t, 1.0),
            tokens=np.asarray(g.micro_batch, dtype=float) * inputs["seq_len"] / np.asarray(g.cp, dtype=float),
            layers=layers,
            moe=moe,
            dense=dense,
            **inputs,
        )

    @property
    def fp8(self) -> bool:
        """Whether the linear layers' GEMMs run in fp8 (stack precision)."""
        return self.stack.precision == "fp8"

    def link(self, inside_node, peers=None) -> np.ndarray:
        """Achieved bytes/s of a collective inside one node (NVLink) or across nodes."""
        return _link(self.gpu, inside_node, peers) * self.network_efficiency(inside_node)

    def network_efficiency(self, inside_node) -> np.ndarray:
        """NCCL bus bandwidth / link bandwidth of the tier a collective runs on (one value unless calibrated)."""
        eff = self.eff
        outside = (
            eff.network_efficiency
            if eff.inter_node_network_efficiency is None
            else eff.inter_node_network_efficiency
        )
        return np.where(inside_node, eff.network_efficiency, outside)


def _mlp_gemm_seconds(st: _Step, tokens, inner: float, width: float):
    """Up (and gate) projection plus down projection of one MLP of inner size ``inner``, forward."""
    h, t, gpu, eff, fp8 = st.terms.h, st.t, st.gpu, st.eff, st.fp8
    return gemm_seconds(tokens, width * inner / t, h, gpu, eff, fp8=fp8) + gemm_seconds(
        tokens, h, inner / t, gpu, eff, fp8=fp8
    )


def _linear_gemms(st: _Step, *, moe: bool):
    """The linear layers of one dense or MoE layer as (count, M, N, K): what fp8 runs in fp8 (the router and
    the output head stay bf16: Megatron-core builds them outside TransformerEngine's fp8 modules)."""
    terms, t, tokens, h = st.terms, st.t, st.tokens, st.terms.h
    width = 2.0 if terms.gated else 1.0
    gemms = [(1.0, tokens, terms.attn_in_width / t, h), (1.0, tokens, h, terms.a * terms.d_v / t)]

    def mlp(count, m, inner):
        return [(count, m, width * inner / t, h), (count, m, h, inner / t)]

    if not moe:
        return gemms + mlp(1.0, tokens, terms.ffn)
    gemms += mlp(terms.n_experts / st.e, tokens * terms.top_k * st.e / terms.n_experts, terms.expert_ffn)
    return gemms + (mlp(1.0, tokens, terms.n_shared * terms.expert_ffn) if terms.n_shared else [])


def _fp8_cast_seconds(st: _Step):
    """(forward, backward) seconds of the fp8 casts of the stage's layers, one micro-batch (fp8_cast_bytes);
    0 in bf16."""
    if not st.fp8:
        return 0.0, 0.0
    forward = backward = 0.0
    for moe, layers in ((False, st.dense), (True, st.moe)):
        if moe and not st.terms.moe_layers:
            continue
        for count, m, n, k in _linear_gemms(st, moe=moe):
            fwd, bwd = fp8_cast_bytes(m, n, k, st.stack.fp8_recipe, _weight_share(st))
            forward = forward + layers * count * fwd
            backward = backward + layers * count * bwd
    bandwidth = st.gpu.hbm_bandwidth_bytes_per_s
    return forward / bandwidth, backward / bandwidth


#: HBM bytes per parameter per micro-batch under torch.autocast over fp32 weights (Stack.autocast_fp32_weights):
#: the forward casts each weight fp32 -> half (read 4, write 2); the backward turns its half gradient into fp32
#: (2 + 4) and AccumulateGrad adds it into .grad (4 + 4 + 4); full recomputation casts the weights again (6).
#: Derived from the data types, not measured: torch.autocast caches the cast of a leaf tensor only inside one
#: autocast region (one micro-batch's forward), PyTorch AMP docs.
AUTOCAST_BYTES_PER_PARAM = 24.0
AUTOCAST_RECOMPUTE_BYTES_PER_PARAM = 6.0


def _autocast_cast_seconds(st: _Step) -> Any:
    """Seconds of one micro-batch's weight casts and fp32 gradient accumulation under torch.autocast over fp32
    weights, at the HBM bandwidth (every parameter of the stage passes through once; 0 on other stacks)."""
    if not st.stack.autocast_fp32_weights:
        return 0.0
    dense, expert = stage_params(st.terms, st.grid.tp, st.grid.pp, st.grid.ep, last=True)
    per_param = AUTOCAST_BYTES_PER_PARAM + np.where(st.full, AUTOCAST_RECOMPUTE_BYTES_PER_PARAM, 0.0)
    return per_param * (dense + expert) / st.gpu.hbm_bandwidth_bytes_per_s


def _weight_share(st: _Step) -> Any:
    """Share of a weight's fp8 cast paid per micro-batch: once per step with the cache, else every one."""
    return 1.0 / st.m if st.stack.fp8_weight_cache else 1.0


def _selective_gemms(st: _Step, *, moe: bool) -> list[tuple[float, Any, Any, Any]]:
    """The linear products selective recomputation reruns in one layer, as (count, M, N, K): the whole dense
    MLP for ``mlp``; K, O and the MLP's second up projection (a GeLU MLP's down projection) for
    ``every_other_mm`` (torchtitan's op-level policy: every second aten.mm of the block; memory.py)."""
    terms, t, tokens, h = st.terms, st.t, st.tokens, st.terms.h
    modules = set(st.stack.selective_recompute)
    gemms: list[tuple[float, Any, Any, Any]] = []
    if "every_other_mm" in modules:
        gemms += [(1.0, tokens, terms.kv * terms.d_qk / t, h), (1.0, tokens, h, terms.a * terms.d_v / t)]
    if moe:
        return gemms
    if "mlp" in modules:
        return gemms + _linear_gemms(st, moe=False)[2:]
    if "every_other_mm" in modules:
        gemms.append((1.0, tokens, terms.ffn / t, h) if terms.gated else (1.0, tokens, h, terms.ffn / t))
    return gemms


def _selective_seconds(st: _Step) -> Any:
    """Forward seconds of the products selective recomputation reruns on the stage (with their fp8 casts), one
    micro-batch (:func:`_selective_gemms`)."""
    return _rerun(st, (st.dense, st.moe), _gemm_seconds_with_casts)


def _gemm_seconds_with_casts(st: _Step, m, n, k) -> Any:
    """Seconds of one forward (M, N, K) product of a linear layer, with its fp8 casts in fp8."""
    seconds = gemm_seconds(m, n, k, st.gpu, st.eff, fp8=st.fp8)
    if st.fp8:
        forward, _ = fp8_cast_bytes(m, n, k, st.stack.fp8_recipe, _weight_share(st))
        seconds = seconds + forward / st.gpu.hbm_bandwidth_bytes_per_s
    return seconds


def _rerun(st: _Step, layers: tuple[Any, Any], measure: Any) -> Any:
    """Σ over the (dense, MoE) ``layers`` of the products selective recomputation reruns in one layer
    (:func:`_selective_gemms`), each weighed by ``measure(st, M, N, K)`` (seconds, or FLOPs)."""
    total: Any = 0.0
    for moe, count_of_layers in zip((False, True), layers, strict=True):
        if moe and not st.terms.moe_layers:
            continue
        for count, m, n, k in _selective_gemms(st, moe=moe):
            total = total + count_of_layers * count * measure(st, m, n, k)
    return total


def _recomputed(st: _Step, *, layers_forward, selective, attention_core):
    """The one recomputation rule, on any measure of work: full reruns ``layers_forward`` ×
    :func:`full_recompute_share`; selective reruns ``selective`` (its products, :func:`_rerun`) and, when it
    recomputes core_attn without FlashAttention (FlashAttention recomputes it anyway), ``attention_core``;
    none reruns nothing. Norms and activations are elementwise (timed by the elementwise share, no FLOPs)."""
    stack = st.stack
    full = layers_forward * full_recompute_share(stack, st.v, st.layers)
    if "core_attn" in stack.selective_recompute and not stack.flash_attention:
        selective = selective + attention_core
    return np.where(st.full, full, np.where(np.asarray(st.grid.recompute) == 1, selective, 0.0))


def recompute_flops_per_token(shape: ModelShape, terms: ShapeTerms, grid: LayoutGrid, **inputs: Any) -> Any:
    """FLOPs per token of the whole model that recomputation reruns, row by row: what :func:`_recompute_seconds`
    times, by the same rule (:func:`_recomputed`), counted as FLOPs. HFU = (model FLOPs + these) × tokens/s ÷
    peak (Korthikanti et al. 2022 §5; Chowdhery et al. 2022 App. B). Full: the blocks' forward, 2 FLOPs per
    active block weight (MTP blocks included, their 2h→h projection not: timed with the head) + the attention
    forward (a third of ``attention_flops_per_token``); selective: 2·M·N·K of each rerun product on each of the
    t ranks per M tokens, in all L layers. ``inputs``: gpu, eff, seq_len, node_size, stack (as step_time)."""
    gpu, eff = inputs.pop("gpu"), inputs.pop("eff")
    st = _Step.of(terms, grid, gpu, eff, **inputs)
    attention = shape.attention_flops_per_token(st.seq_len) / 3.0
    blocks = (
        shape.active_non_embedding_params + shape.mtp_active_params - shape.mtp_layers * 2 * shape.d_model**2
    )
    moe = terms.moe_layers + (terms.mtp_layers if terms.moe_layers else 0)
    dense = terms.n_layers + terms.mtp_layers - moe

    def flops(step: _Step, m, n, k) -> Any:
        return 2.0 * m * n * k * step.t / step.tokens

    return _recomputed(
        st,
        layers_forward=2.0 * blocks + attention,
        selective=_rerun(st, (float(dense), float(moe)), flops),
        attention_core=attention,
    )


def _gemm_forward(st: _Step):
    """(attention projections, dense MLP, MoE MLP) forward seconds of one layer, one micro-batch."""
    terms, t, e, tokens, gpu, eff, h = st.terms, st.t, st.e, st.tokens, st.gpu, st.eff, st.terms.h
    attn_proj = gemm_seconds(tokens, terms.attn_in_width / t, h, gpu, eff, fp8=st.fp8) + gemm_seconds(
        tokens, h, terms.a * terms.d_v / t, gpu, eff, fp8=st.fp8
    )
    width = 2.0 if terms.gated else 1.0
    dense_mlp = _mlp_gemm_seconds(st, tokens, terms.ffn, width)
    if not terms.moe_layers:
        return attn_proj, dense_mlp, 0.0
    per_expert_tokens = tokens * terms.top_k * e / terms.n_experts
    routed = (terms.n_experts / e) * _mlp_gemm_seconds(st, per_expert_tokens, terms.expert_ffn, width)
    # the router scores the rank's own tokens: T/t under sequence parallelism (Megatron-core's MoE layer takes
    # the SP-sharded hidden states and gathers only the routed copies), all T on every TP rank without it
    moe_mlp = routed + gemm_seconds(tokens * st.x, terms.n_experts, h, gpu, eff)
    if terms.n_shared:
        moe_mlp = moe_mlp + _mlp_gemm_seconds(st, tokens, terms.n_shared * terms.expert_ffn, width)
    return attn_proj, dense_mlp, moe_mlp


def _attention_core_forward(st: _Step):
    """(forward seconds of the attention core of one layer, backward/forward ratio)."""
    terms, t, seq_len, gpu, eff = st.terms, st.t, st.seq_len, st.gpu, st.eff
    if st.stack.flash_attention:
        forward = stage_attention_share(terms, st.grid.pp, seq_len) * (
            2.0
            * st.tokens
            * seq_len
            * (terms.a / t)
            * (terms.d_qk + terms.d_v)
            * CAUSAL_FRACTION
            / (eff.attention_fraction * attention_kernel_speedup(st.stack, gpu) * gpu.bf16_flops)
            # short calls run slower (constants.FLASH_ATTENTION_2); CP ranks call it on s/c-token blocks
            * (1.0 + eff.attention_half_seq * st.c / seq_len)
        )
        return forward, ATTENTION_BACKWARD_RATIO
    # batched GEMMs over the full s x s score matrix (mask applied afterwards), per head
    heads = np.asarray(st.grid.micro_batch, dtype=float) * terms.a / t / st.c
    forward = heads * (
        gemm_seconds(seq_len, seq_len, terms.d_qk, gpu, eff)
        + gemm_seconds(seq_len, terms.d_v, seq_len, gpu, eff)
    )
    return forward, 2.0


def stage_attention_share(terms: ShapeTerms, p, seq_len: int):
    """Attention-core work per layer of the most loaded stage relative to full causal attention: 1 without a
    window; else (g + (n − g)·r)/n with n = ⌈L/p⌉ layers, g the most global layers any stage of n holds
    (layers k, 2k, ... from 1 global: ⌊end/k⌋ − ⌊start/k⌋ of them on layers start+1..end) and
    r = window_context(s, w)/s (runplan.model). Stages are taken as contiguous blocks of n layers: interleaved
    chunks (vpp) and a short last stage spread the global layers more evenly, so this overstates the most loaded
    stage's attention slightly (conservative)."""
    from runplan.model import window_context

    if not terms.window or terms.window >= seq_len:
        return 1.0
    share = window_context(seq_len, terms.window) / seq_len
    p = np.asarray(p)
    layers = -(-terms.n_layers // p)
    k = terms.global_every
    most: dict[int, int] = {}
    for stages in np.unique(p):
        n = -(-terms.n_layers // int(stages))
        starts = np.arange(0, terms.n_layers, n)
        ends = np.minimum(starts + n, terms.n_layers)
        most[int(stages)] = int((ends // k - starts // k).max()) if k else 0
    g = np.vectorize(most.__getitem__, otypes=[float])(p) if p.ndim else float(most[int(p)])
    return (g + (layers - g) * share) / layers


def _elementwise_layer_bytes(st: _Step, *, moe: bool):
    """Forward elementwise bytes per token of one layer on this stack: fused, or fused + the fitted share
    (``Efficiency.eager_elementwise_share``) of what PyTorch eager kernels move beyond them."""
    fused = elementwise_forward_bytes(st.terms, st.stack, st.t, st.x, st.seq_len, moe=moe, eager=False)
    if st.stack.fused_elementwise:
        return fused
    eager = elementwise_forward_bytes(st.terms, st.stack, st.t, st.x, st.seq_len, moe=moe, eager=True)
    return fused + st.eff.eager_elementwise_share * (eager - fused)


def _elementwise_seconds(st: _Step):
    """HBM-bound norms, activations and residuals of the stage's layers, forward + backward (+ recompute)."""
    per_token = st.dense * _elementwise_layer_bytes(st, moe=False)
    if st.terms.moe_layers:
        per_token = per_token + st.moe * _elementwise_layer_bytes(st, moe=True)
    moved = (1.0 + ELEMENTWISE_BACKWARD_RATIO) * st.tokens * per_token
    # torchtitan's op-level policy (every_other_mm) recomputes every norm and activation, as full recomputation
    selective = np.asarray(st.grid.recompute) == 1
    everything = st.full | (selective & ("every_other_mm" in st.stack.selective_recompute))
    share = np.where(
        everything,
        FULL_RECOMPUTE_ELEMENTWISE_SHARE,
        np.where(selective, SELECTIVE_RECOMPUTE_ELEMENTWISE_SHARE, 1.0),
    )
    return st.eff.elementwise_time_factor * moved * share / st.gpu.hbm_bandwidth_bytes_per_s


def _recompute_seconds(st: _Step, layers_fwd, attn_core_fwd):
    """Forward work repeated by recomputation, one micro-batch (:func:`_recomputed`): full repeats every layer's
    forward (with 'block', min(v·n, layers) of the stage, :func:`full_recompute_share`); selective the linear
    products its modules recompute (:func:`_selective_gemms`) and the attention core when it recomputes
    core_attn without FlashAttention."""
    return _recomputed(
        st,
        layers_forward=layers_fwd,
        selective=_selective_seconds(st),
        attention_core=st.layers * attn_core_fwd,
    )


@dataclass(frozen=True)
class _Compute:
    """Compute of one micro-batch on the slowest stage, and the parts the communication terms hide behind."""

    seconds: np.ndarray
    layers_gemm_forward: np.ndarray
    attention_forward: np.ndarray
    attention_backward_ratio: float


def _compute(st: _Step) -> _Compute:
    attn_proj, dense_mlp, moe_mlp = _gemm_forward(st)
    attn_core_fwd, attn_bwd_ratio = _attention_core_forward(st)
    dense, moe, layers = st.dense, st.moe, st.layers
    layers_fwd = dense * (attn_proj + dense_mlp + attn_core_fwd) + moe * (attn_proj + moe_mlp + attn_core_fwd)
    layers_gemm_fwd = dense * (attn_proj + dense_mlp) + moe * (attn_proj + moe_mlp)
    logits_fwd = gemm_seconds(st.tokens, st.terms.vocab / st.t, st.terms.h, st.gpu, st.eff)
    if (
        st.terms.mtp_layers
    ):  # each MTP module: its own logits through the shared head, and the 2h→h projection
        projection = gemm_seconds(st.tokens, st.terms.h / st.t, 2.0 * st.terms.h, st.gpu, st.eff)
        logits_fwd = (1.0 + st.terms.mtp_layers) * logits_fwd + st.terms.mtp_layers * projection
    backward = 2.0 * layers_gemm_fwd + attn_bwd_ratio * layers * attn_core_fwd + 2.0 * logits_fwd
    cast_fwd, cast_bwd = _fp8_cast_seconds(st)
    # recomputation repeats the forward casts of what it recomputes (full: all; selective: _selective_seconds)
    recompute = _recompute_seconds(st, layers_fwd + cast_fwd, attn_core_fwd)
    seconds = layers_fwd + logits_fwd + backward + recompute + _elementwise_seconds(st) + cast_fwd + cast_bwd
    seconds = seconds + _autocast_cast_seconds(st)
    return _Compute(seconds, layers_gemm_fwd, attn_core_fwd, attn_bwd_ratio)


def _tensor_parallel_seconds(st: _Step, compute: _Compute):
    """Exposed TP collectives of one micro-batch (module docstring, TP)."""
    t, lat = st.t, st.eff.collective_latency_seconds
    collectives = np.where(st.full, 6.0, 4.0)
    if "every_other_mm" in st.stack.selective_recompute:
        # torchtitan's op-level recompute reruns the block's forward collectives its save list lacks: the two
        # SP all-gathers (their reduce-scatters are saved: one all-reduce's worth) or, without SP, both
        # all-reduces (parallelize_llama.py @ 9dec370 saves reduce_scatter_tensor only)
        sp = np.asarray(st.grid.sequence_parallel, dtype=bool)
        rerun = np.where(sp, 1.0, 2.0)
        collectives = np.where(np.asarray(st.grid.recompute) == 1, 4.0 + rerun, collectives)
    tp_one = (
        2.0 * (t - 1.0) / t * (2.0 * st.tokens * st.terms.h) / st.link(within_node(t, st.node_size), t - 1.0)
        + lat
    )
    # An MoE layer's MLP collectives (one all-reduce's worth forward, one backward, one more with full recompute)
    # are the token dispatcher's: with the experts sharded over TP it all-gathers the routed tokens over TP after
    # the expert-parallel all-to-all and reduce-scatters the experts' output before the return all-to-all, so
    # top_k copies of each token travel, on plain collectives outside the linear layers that TP overlap hides
    # (Megatron-core MoEAlltoAllTokenDispatcher.token_permutation / token_unpermutation, core_r0.10.0). Shared
    # experts keep a dense MLP's pair.
    mlp_collectives = np.where(st.full, 3.0, 2.0)
    routed = st.moe * mlp_collectives * st.terms.top_k * tp_one
    overlappable = (st.layers * collectives - st.moe * mlp_collectives * (st.terms.n_shared == 0)) * tp_one
    if (
        st.stack.tp_comm_overlap
    ):  # hidden behind the layers' GEMMs (forward, backward, recompute), at most their time;
        # both implementations overlap the SP all-gather/reduce-scatter pair only (Megatron asserts SP)
        gemm_mb = compute.layers_gemm_forward * np.where(st.full, 4.0, 3.0)
        hidden = np.minimum(st.eff.tp_overlap_fraction * overlappable, gemm_mb)
        overlapped = tp_overlap_applies(st.grid.sequence_parallel, t, st.node_size)
        overlappable = overlappable - np.where(overlapped, hidden, 0.0)
    return np.where(t > 1, overlappable + routed, 0.0)


def tp_overlap_applies(sequence_parallel, t, node_size: int):
    """Where TP communication overlap hides anything: the SP all-gather/reduce-scatter pair only (Megatron
    asserts SP; torchtitan's async TP is the same pair), and inside one NVLink domain (userbuffers and symmetric
    memory are intra-node)."""
    return np.asarray(sequence_parallel, dtype=bool) & within_node(t, node_size)


def _expert_parallel_seconds(st: _Step):
    """Exposed MoE all-to-alls of one micro-batch (module docstring, EP)."""
    e, terms = st.e, st.terms
    collectives = np.where(st.full, 6.0, 4.0)
    # the EP group spans t·e consecutive ranks: Megatron-core builds the expert grid with cp=1 (parallel_state.py,
    # expert_decoder_rank_generator, order tp-ep-dp-pp, "MoE parallel folding"), torchtitan's sparse mesh is
    # (..., efsdp, ep, etp); CP ranks fold into the expert data-parallel group, not between EP ranks
    ep_bw = st.link(within_node(st.t * e, st.node_size), e - 1.0)
    ep_one = (e - 1.0) / e * (
        2.0 * st.tokens * terms.top_k * terms.h * st.x
    ) / ep_bw + st.eff.collective_latency_seconds
    return np.where(e > 1, st.moe * collectives * ep_one, 0.0)


def _context_parallel_seconds(st: _Step, compute: _Compute):
    """(exposed ring K/V exchange and fp32 merge of partial results, ring seconds hidden behind the attention on
    the scale-out network) of one micro-batch (module docstring, CP).

    The second is what the DP window loses (:func:`step_time`): a ring across nodes holds the same NICs the
    gradient reduction would use while the attention runs, so those seconds cannot hide DP traffic too.
    ``Stack.context_parallel_impl`` 'pytorch' is timed by :func:`_torch_context_parallel_seconds`.
    """
    if st.stack.context_parallel_impl == "pytorch":
        return _torch_context_parallel_seconds(st)
    terms, t, c, full, tokens = st.terms, st.t, st.c, st.full, st.tokens
    lat = st.eff.collective_latency_seconds
    attn_core_fwd, attn_bwd_ratio = compute.attention_forward, compute.attention_backward_ratio
    kv_bytes = 2.0 * tokens * terms.kv * (terms.d_qk + terms.d_v) / t
    intra_node = within_node(t * c, st.node_size)
    cp_fwd = (c - 1.0) * (
        kv_bytes / st.link(intra_node, 1.0) + lat
    )  # each ring step: a send to the next rank
    forwards = np.where(full, 2.0, 1.0)
    cp_exposed = np.maximum(0.0, cp_fwd - attn_core_fwd) * forwards + np.maximum(
        0.0, 2.0 * cp_fwd - attn_bwd_ratio * attn_core_fwd
    )
    cp_hidden = np.where(intra_node, 0.0, cp_fwd * (forwards + 2.0) - cp_exposed)
    merge_forward = tokens * (terms.a / t) * terms.d_v
    merge_backward = tokens * ((terms.a / t) * terms.d_qk + (terms.kv / t) * (terms.d_qk + terms.d_v))
    cp_merge = (c - 1.0) * (
        CP_MERGE_BYTES_PER_ELEMENT
        * (merge_forward * np.where(full, 2.0, 1.0) + merge_backward)
        / st.gpu.hbm_bandwidth_bytes_per_s
        + np.where(full, 3.0, 2.0) * lat
    )
    return np.where(c > 1, st.layers * (cp_exposed + cp_merge), 0.0), np.where(
        c > 1, st.layers * cp_hidden, 0.0
    )


def _torch_context_parallel_seconds(st: _Step):
    """(exposed K/V exchange and merges, 0) of one micro-batch under PyTorch's context_parallel as torchtitan
    runs it (``Stack.context_parallel_impl`` 'pytorch'; module docstring, CP). Per layer, with H = kv/t heads, or
    a/t where the model repeats K/V to every query head before SDPA (``Stack.kv_repeated_before_attention``:
    torchtitan's llama/model.py L201-209 @ 9dec370, repeat_kv, until ff0829c), and K = 2·T·H·(d_qk + d_v) bytes
    of bf16 K and V per rank:

    * forward (twice with full recompute) one all-gather of the other c-1 shards, (c-1)·K / link + latency
      (_AllGatherRotater, the default rotate method: torchtitan config_manager.py L365-367 @ 9dec370);
    * backward one more all-gather, and c sends of the fp32 dK/dV accumulators, 2K / link + latency each
      (_templated_ring_attention_backward: dkv_rotater fixed to ALL_TO_ALL, accum_dtype float32; pytorch
      torch/distributed/tensor/experimental/_attention.py @ 0123248a; test/distributed/tensor/test_attention.py
      @ 01df9461 counts 1 all-gather forward and 1 all-gather + c all-to-alls backward per layer);
    * the merges at the HBM bandwidth (:data:`TORCH_CP_MERGE_BYTES`).

    Nothing is overlapped: torchtitan compiles each block whole (parallelize_llama.py L303 @ 9dec370, fullgraph)
    and a traced functional collective is waited on right after it is issued (_functional_collectives.py,
    _maybe_wrap_tensor), with Inductor's compute/communication reordering off by default
    (reorder_for_compute_comm_overlap = False). Eager would hide the forward all-gather under the first ring
    step's attention only, about 1/c of it: not counted (conservative). So no ring second runs under the
    attention, and none is taken from the DP window (second value 0).
    """
    terms, c, full = st.terms, st.c, st.full
    lat = st.eff.collective_latency_seconds
    heads = terms.a / st.t
    # K/V carry all a/t query heads where the model repeats them before SDPA (Stack.kv_repeated_before_attention:
    # torchtitan until ff0829c), else the kv/t heads SDPA's enable_gqa takes
    kv_heads = heads if st.stack.kv_repeated_before_attention else terms.kv / st.t
    out_el = st.tokens * heads * terms.d_v
    dq_el = st.tokens * heads * terms.d_qk
    kv_el = st.tokens * kv_heads * (terms.d_qk + terms.d_v)
    kv_bytes = 2.0 * kv_el  # bf16
    bandwidth = st.link(within_node(st.t * c, st.node_size), c - 1.0)
    all_gather = (c - 1.0) * kv_bytes / bandwidth + lat
    dkv_send = 2.0 * kv_bytes / bandwidth + lat  # fp32 dK and dV
    forwards = np.where(full, 2.0, 1.0)
    exchange = (forwards + 1.0) * all_gather + c * dkv_send
    b = TORCH_CP_MERGE_BYTES["compiled" if st.stack.fused_elementwise else "eager"]
    merge = (
        forwards * (c - 1.0) * (b["out"] * out_el + b["kv_cat"] * kv_el)
        + c * (b["dq"] * dq_el + b["dkv"] * kv_el)
        + (c - 1.0) * b["kv_cat"] * kv_el
    ) / st.gpu.hbm_bandwidth_bytes_per_s
    total = np.where(c > 1, st.layers * (exchange + merge), 0.0)
    return total, np.zeros_like(total)


def _pipeline_seconds(st: _Step, n_gpus: int):
    """Stage-boundary sends of one micro-batch, forward and backward, per chunk (module docstring, PP)."""
    p = st.p
    pp_bw = st.link(np.full_like(p, n_gpus <= st.node_size, dtype=bool), 1.0)
    # Megatron scatters each send over the TP ranks (all-gather after) even without SP, unless turned off
    shard = np.where(
        np.asarray(st.grid.sequence_parallel, dtype=bool) | st.stack.pipeline_scatter_gather, 1.0 / st.t, 1.0
    )
    sends = (2.0 * st.tokens * st.terms.h * shard) / pp_bw + st.eff.collective_latency_seconds
    return np.where(p > 1, st.v * 2.0 * sends, 0.0)


def _data_parallel_seconds(st: _Step, compute_mb):
    """(exposed DP communication, optimizer) seconds once per step (module docstring, DP and optimizer)."""
    g, m, c, e, full = st.grid, st.m, st.c, st.e, st.full
    gradient_bytes = st.stack.gradient_bytes
    zero = np.asarray(g.zero)
    lat = st.eff.collective_latency_seconds
    dense_params, expert_params = stage_params(st.terms, g.tp, g.pp, g.ep, last=True)
    group = np.asarray(g.dp, dtype=float) * c
    expert_group = group / e
    ring_dense = (group - 1.0) / group
    ring_expert = (expert_group - 1.0) / expert_group
    gathers = np.where(full, 3.0, 2.0)
    # ZeRO-3 with pipeline stages keeps the stage gathered all step (memory.model_state_bytes): one gather and
    # one reduce-scatter per step, as ZeRO-1; the gather is prefetched under the first forward, but PyTorch's
    # pipelining reduce-scatters only after the last backward has finished (stage.py, backward_maybe_with_nosync
    # runs FSDP's post-backward by hand then), so that part is never hidden
    held = zero3_held(zero, st.p)
    # torch.autocast over fp32 parameters (Stack.autocast_fp32_weights): the parameters every gather and
    # broadcast moves are the fp32 ones, and ZeRO-1 is PyTorch's ZeroRedundancyOptimizer over DDP, which
    # all-reduces the whole gradient (DDP) before each rank updates its shard and broadcasts it
    param_bytes = 4.0 if st.stack.autocast_fp32_weights else 2.0
    zero1_gradient = 2.0 * gradient_bytes if st.stack.autocast_fp32_weights else gradient_bytes
    # bytes per parameter per step: ZeRO-0, ZeRO-1, ZeRO-3 held gathered under stages, ZeRO-2, else ZeRO-3
    per_param = np.select(
        [zero == 0, zero == 1, held, zero == 2],
        [
            2.0 * gradient_bytes,
            zero1_gradient + param_bytes,
            gradient_bytes + param_bytes,
            m * gradient_bytes + param_bytes,
        ],
        m * (gathers * param_bytes + gradient_bytes),
    )
    dp_bytes = per_param * (ring_dense * dense_params + ring_expert * expert_params)
    # fp8 weights (Stack.fp8_param_gather, Megatron --fp8-param-gather): every parameter all-gather moves the
    # linear layers' weights in 1 byte instead of 2 (once per step for ZeRO-1/2 and a held ZeRO-3 stage,
    # every gather of every micro-batch otherwise), the late one of ZeRO-1/2 included
    fp8_ring_linear = 0.0
    if st.stack.precision == "fp8" and st.stack.fp8_param_gather:
        dense_linear, expert_linear = stage_linear_params(st.terms, g.tp, g.pp, g.ep)
        if st.terms.mtp_layers:  # the last stage's MTP linears are fp8 weights too (memory.mtp_linear_params)
            mtp_dense, mtp_expert = mtp_linear_params(st.terms, g.tp, g.pp, g.ep, last=True)
            dense_linear, expert_linear = dense_linear + mtp_dense, expert_linear + mtp_expert
        fp8_ring_linear = ring_dense * dense_linear + ring_expert * expert_linear
        gathers_per_step = np.select([zero == 0, (zero <= 2) | held], [0.0, 1.0], m * gathers)
        dp_bytes = dp_bytes - gathers_per_step * fp8_ring_linear
    dp_bw = dp_bandwidth(st.gpu, st.t, group, st.node_size) * st.network_efficiency(
        within_node(st.t * group, st.node_size)
    )
    # ZeRO-1/2's all-gather of the updated parameters (param_bytes each) without --overlap-param-gather: after
    # the optimizer step, before the next forward (DeepSpeed ZeRO-1/2 gathers there too), so never hidden
    late_bytes = (
        0.0 if st.stack.overlap_param_gather else np.where((zero == 1) | (zero == 2), param_bytes, 0.0)
    )
    late_bytes = late_bytes + np.where(held, gradient_bytes, 0.0)  # (the held stage's reduce-scatter)
    ring_params = ring_dense * dense_params + ring_expert * expert_params
    late_fp8 = (
        0.0 if st.stack.overlap_param_gather else np.where((zero == 1) | (zero == 2), fp8_ring_linear, 0.0)
    )
    late_seconds = np.where(group > 1, (late_bytes * ring_params - late_fp8) / dp_bw, 0.0)
    dp_seconds = np.where(group > 1, dp_bytes / dp_bw + 2.0 * lat, 0.0) - late_seconds
    # no overlap (--overlap-grad-reduce off): the whole DP traffic waits for the backward pass to end
    window = (
        np.where((zero >= 2) & ~held, m * compute_mb, compute_mb) if st.stack.overlap_grad_reduce else 0.0
    )
    dp_exposed = (
        np.maximum(0.0, dp_seconds - window)
        + st.eff.dp_overlap_interference * np.minimum(dp_seconds, window)
        + late_seconds
    )
    local = np.where(
        zero >= 1, dense_params / group + expert_params / expert_group, dense_params + expert_params
    )
    return dp_exposed, _optimizer_seconds(st, zero, local)


def _optimizer_seconds(st: _Step, zero, local_params):
    """The HBM-bound Adam update of the ``local_params`` a GPU updates (module docstring, DP and optimizer).

    The state (master, m, v) is read and written once: 12 bytes in fp32, 8 with bf16 moments; the gradient read
    (g) and the bf16 weight written (+2). TransformerEngine's FusedAdam with the master's 16 low bits beside the
    bf16 weight (Stack.fused_adam_master, ZeRO-1/2: memory.model_state_bytes) reads and writes the 2-byte
    remainder and the bf16 weight it rebuilds the master from: 2·(2 + 2 + 2) + g + 2 + 2, 2 bytes fewer
    (multi_tensor_adam's param-remainder kernel, transformer_engine/pytorch/optimizers/fused_adam.py @ d0067d0)."""
    state = optimizer_bytes_per_param(st.stack.moment_bytes)
    remainder = (
        np.where((zero == 1) | (zero == 2), FP32_BYTES - MASTER_REMAINDER_BYTES, 0.0)
        if st.stack.fused_adam_master
        else 0.0
    )
    per_param = 2.0 * state + st.stack.gradient_bytes + 2.0 - remainder
    return per_param * local_params / st.gpu.hbm_bandwidth_bytes_per_s


def step_time(
    terms: ShapeTerms,
    grid: LayoutGrid,
    *,
    seq_len: int,
    gpu: GpuSpec,
    node_size: int,
    n_gpus: int,
    eff: Efficiency,
    stack: Stack,
) -> tuple[Columns[TimeSeconds], np.ndarray]:
    """Where one optimizer step's time goes, term by term, and the step's seconds (module docstring)."""
    check_precision(gpu, stack)
    # a job of at most one node holds every group inside it (within_node): its node is the job
    node = min(node_size, n_gpus)
    st = _Step.of(terms, grid, gpu, eff, seq_len=seq_len, node_size=node, stack=stack)
    compute = _compute(st)
    compute_mb = compute.seconds
    tp_mb = _tensor_parallel_seconds(st, compute)
    ep_mb = _expert_parallel_seconds(st)
    cp_mb, cp_hidden_mb = _context_parallel_seconds(st, compute)
    pp_mb = _pipeline_seconds(st, n_gpus)
    micro = compute_mb + tp_mb + ep_mb + cp_mb + pp_mb
    bubble = (st.p - 1.0) / st.v * micro
    # the compute that can hide DP traffic: not the part a scale-out CP ring already holds the NICs for
    dp_exposed, optimizer = _data_parallel_seconds(st, np.maximum(0.0, compute_mb - cp_hidden_mb))
    m = st.m
    step = m * micro + bubble + dp_exposed + optimizer + st.eff.step_overhead_seconds
    breakdown = {
        "compute": m * compute_mb,
        "tensor_parallel": m * tp_mb,
        "pipeline_p2p": m * pp_mb,
        "expert_all_to_all": m * ep_mb,
        "context_parallel": m * cp_mb,
        "bubble": bubble,
        "data_parallel": dp_exposed,
        "optimizer": optimizer,
        "overhead": np.broadcast_to(np.asarray(st.eff.step_overhead_seconds, dtype=float), np.shape(step)),
    }
    return Columns(TimeSeconds, breakdown), step
