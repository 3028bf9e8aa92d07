"""Megatron-LM launch script for a run plan (``runplan export --to megatron``).

Flags and the rules they must satisfy were read from NVIDIA/Megatron-LM ``megatron/training/arguments.py``
(version and commit in ``export/data/megatron_arguments.json``, written into the script header). Mapping:

* layout: ``--tensor-model-parallel-size`` t, ``--pipeline-model-parallel-size`` p, ``--context-parallel-size``
  c, ``--expert-model-parallel-size`` e, ``--sequence-parallel`` (with ``--tp-comm-overlap``, which the time
  model assumes, except on Ampere: TransformerEngine's userbuffers need CUDA multicast there unless UB_SKIPMC=1,
  so it is left out with a warning); c > 1 without FlashAttention is refused (Megatron-core runs CP only in
  TransformerEngine's flash/fused attention); DP is not a flag: Megatron derives it as
  world / (t·p·c), so the script launches exactly t·p·d·c ranks. Interleaving: ``--num-layers-per-virtual-
  pipeline-stage`` L/(p·v) when it divides, else ``--num-virtual-stages-per-pipeline-rank`` v. Uneven stages
  (p ∤ L): the plan's largest stage ⌈L/p⌉ on the p−2 middle stages and the rest split over the first and last
  (``--decoder-first/last-pipeline-num-layers``, as Llama 3 did, arXiv 2407.21783 §3.3.2); with interleaving,
  when a stage's layers do not split into v chunks, Megatron-Core's ``--pipeline-model-parallel-layout``
  string instead (its docs, "Custom Pipeline Model Parallel Layout").
* ZeRO: 1 → ``--use-distributed-optimizer`` (optimizer state sharded over DP); 2 → the same, as Megatron has no
  sharded-gradient stage: it keeps a full-size buffer of the gradient dtype (fp32 unless gradient_dtype bf16),
  said in a warning with its size, refused at ``parallel.zero`` when it breaks the plan's memory limit; 3 → Megatron FSDP
  (``--use-megatron-fsdp --data-parallel-sharding-strategy optim_grads_params``, which needs
  ``--ckpt-format fsdp_dtensor``; with expert parallelism as tested in Megatron-LM's CI, with pipeline stages
  a warning: no CI case), or, when the stack has ``fsdp_mixed_precision``, PyTorch FSDP2
  (``--use-torch-fsdp2 --no-gradient-accumulation-fusion``, Megatron-LM's FSDP docs; not with pipelines or EP).
* recomputation: the plan's *selective* is Megatron-core ``--recompute-modules layernorm`` (+ ``moe_act`` for
  MoE; parallel/memory.py) where a norm is a module of its own (MoE's pre-MLP norm, MLA's input norm): the
  TransformerEngine spec fuses a dense layer's norms into the next linear, so there the module is left out with a
  warning, as ``mlp_act`` (no module of its own) is; *full* is ``--recompute-granularity full`` with the stack's
  ``--recompute-method`` (full_recompute_method) and ``--recompute-num-layers`` (full_recompute_layers; the
  default stack's uniform 1), :func:`_recompute_args`.
* batch: ``--micro-batch-size`` b, ``--global-batch-size`` d·b·m; the ramp as ``--rampup-batch-size <start>
  <increment> <ramp samples>``: Megatron adds ``increment`` every ``ramp samples / ((global − start) /
  increment)`` samples, so a ramp whose stages are equally long and equally spaced in batch is exact; any other
  ramp becomes one step from the first stage's batch to the main batch after all ramp samples (warning).
  Megatron-LM after #4411 (commit 532ad926, in the d98e8a64 snapshot) parses ``--rampup-batch-size`` but ignores
  it, so every ramped plan also gets a warning with the exact ``--step-batch-size-schedule`` for such checkouts
  (:func:`_step_schedule_warning`); the ``--engine-version`` 0.18-0.20 target (``export._versions``) writes that
  schedule and ``--eval-global-batch-size`` in place of ``--global-batch-size`` (:func:`_step_schedule_args`), and
  no warning. The script header names the target's checked commit. Megatron refuses a ramp with ``--train-iters``, so a ramped plan is exported sample-based
  (``--train-samples``, ``--lr-warmup-samples``, ``--lr-decay-samples``, ``--lr-wsd-decay-samples``, each the
  exact number of sequences consumed at that step); a plan without a ramp is exported iteration-based.
* LR: ``--lr-decay-style WSD`` with ``--lr-wsd-decay-style`` minus_sqrt (the plan's 1-sqrt: Megatron's
  coefficient is 1 − sqrt(progress)), linear or cosine; warmup linear from 0 (``--lr-warmup-init 0``);
  ``--min-lr`` the plan's final LR.
* optimizer state: stack ``optimizer_state_dtype: bf16`` → ``--use-precision-aware-optimizer --exp-avg-dtype bf16
  --exp-avg-sq-dtype bf16``; refused without the distributed optimizer (ZeRO-0), and with
  bf16 weights a warning that TransformerEngine keeps the fp32 master as 16-bit remainders (:func:`_optimizer_state_args`).
* checkpoints: ``--save-interval`` the plan's interval; ``--async-save`` when the plan stages through host
  memory, with ``--use-persistent-ckpt-worker`` (without it Megatron-Core 0.16+ drops async saves) and, for the
  0.20 target, ``--async-strategy mcore`` (:func:`_async_save_args`); no ``--save-retain-interval`` (each save
  would delete the previous checkpoint unless it is at a multiple of it: the plan's rolling generations and
  rollback points would go), so Megatron keeps every save and a warning lists what to keep when deleting by hand.

* architecture (``_architecture``, every catalog field, listed in the header): ``--rotary-base`` θ (Megatron's
  default 10000 otherwise), Llama 3.1 scaling as ``--use-rope-scaling --rope-scaling-factor`` (Megatron fixes
  the band factors 1/4 and the original context 8192: other values warn), YaRN under MLA as ``--rope-type yarn
  --rotary-scaling-factor --mscale --mscale-all-dim`` (original context 4096 and β 32/1 come from
  MLATransformerConfig: other values warn), ``--norm-epsilon``, ``--init-method-std``, the MoE router
  (``--moe-router-score-function``, ``--moe-router-pre-softmax`` for a softmax router whose top-k weights are not
  renormalised or a top-1 one, ``--moe-router-enable-expert-bias``, ``--moe-router-num-groups``,
  ``--moe-router-group-topk``, ``--moe-router-topk-scaling-factor``; a sigmoid router with k > 1 that does not
  renormalise is refused: Megatron always does), its balance loss (``--moe-router-load-balancing-type``
  aux_loss/seq_aux_loss/global_aux_loss and ``--moe-aux-loss-coeff``; a warning when the model publishes none),
  multi-token prediction (``--mtp-num-layers``, ``--mtp-loss-scaling-factor``: :func:`_mtp_args`) and ``--make-vocab-size-divisible-by`` chosen so that Megatron's padding (to a multiple of it × t) leaves V as
  planned.

Left out (placeholders in the script): data paths, tokenizer, launcher environment (MASTER_ADDR, NODE_RANK).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from runplan.errors import SpecError
from runplan.escape import comment_text, file_slug, shell_word
from runplan.export._architecture import BALANCE_SCOPE_WORDS, Architecture, architecture
from runplan.export._common import (
    ASSUMED_OPTIMIZER,
    ASSUMED_OPTIMIZER_SOURCE,
    Facts,
    engine_data,
    facts,
    fmt_bytes,
    fmt_float,
    kept_checkpoints,
    runplan_version,
    unknown_family_warnings,
)

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Sequence
    from pathlib import Path

    from runplan.export import ExportResult
    from runplan.parallel.layout import Layout
    from runplan.parallel.stack import Stack
    from runplan.plan import RunPlan
    from runplan.spec import PlanSpec

DATA = "megatron_arguments"
_WSD_STYLE = {"1-sqrt": "minus_sqrt", "linear": "linear", "cosine": "cosine"}
#: What Megatron's --use-rope-scaling applies besides --rope-scaling-factor: Llama 3.1's band factors and
#: original context, fixed (megatron/core/models/common/embeddings/rotary_pos_embedding.py, _apply_scaling).
_MEGATRON_LLAMA3_SCALING = {
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 8192,
}
#: YaRN settings multi-latent attention takes from MLATransformerConfig's defaults, not from flags
#: (megatron/core/transformer/transformer_config.py: original_max_position_embeddings, beta_fast, beta_slow).
_MEGATRON_MLA_YARN = {"original_max_position_embeddings": 4096, "beta_fast": 32.0, "beta_slow": 1.0}
#: Megatron pads the vocabulary to a multiple of make_vocab_size_divisible_by x t (default 128).
_MEGATRON_VOCAB_DIVISOR = 128

Arg = tuple[str, list[str], str]  # flag, values, comment


def _ramp_args(f: Facts, warnings: list[str]) -> tuple[list[str], str]:
    """``--rampup-batch-size`` values (start, increment, samples) and the comment explaining them."""
    ramp = f.ramp
    main = f.global_batch_sequences
    start = ramp[0].batch_sequences
    samples = [s.steps * s.batch_sequences for s in ramp]
    total = sum(samples)
    k = len(ramp)
    increment = (main - start) // k if (main - start) % k == 0 else 0
    exact = (
        increment > 0
        and all(s.batch_sequences == start + i * increment for i, s in enumerate(ramp))
        and len(set(samples)) == 1
    )
    if exact:
        comment = (
            f"exact before #4411 (see WARNINGS): batch {start:,}, +{increment:,} every {samples[0]:,} samples, "
            f"{main:,} after {total:,} samples (= the plan's {k} ramp stage(s))"
        )
        warnings.append(_step_schedule_warning(f))
        return [str(start), str(increment), str(total)], comment
    increment = main - start
    stages = ", ".join(f"{s.batch_sequences:,} x {s.steps:,} steps" for s in ramp)
    warnings.append(
        f"batch ramp: Megatron ramps linearly in equal increments; the plan's stages ({stages}) are exported as "
        f"{start:,} sequences for the first {total:,} samples, then {main:,}"
    )
    warnings.append(_step_schedule_warning(f))
    return [str(start), str(increment), str(total)], f"approximation of the plan's ramp ({stages})"


def step_batch_size_schedule(f: Facts) -> str:
    """The plan's batch stages as Megatron-LM's ``--step-batch-size-schedule`` (#4411, commit 532ad926,
    2026-04-21, first released in core_v0.18.0): "THRESHOLD:BS ...", thresholds in tokens because
    set_global_variables passes seq_length, so StepBatchsizeNumMicroBatchesCalculator._parse_schedule takes
    threshold // seq_length samples, and the batch of the last threshold at or below the consumed samples
    applies (_get_batch_size_for_samples; core/num_microbatches_calculator.py @ d98e8a64). Each stage's threshold
    is the tokens consumed before it, so every stage, equal or not, switches at the plan's step; the first is 0,
    as _validate_schedule requires."""
    entries, start = [], 0
    for stage in f.stages:
        entries.append(f"{start * f.seq_len}:{stage.batch_sequences}")
        start += stage.steps * stage.batch_sequences
    return " ".join(entries)


def _step_schedule_warning(f: Facts) -> str:
    """The ramp for Megatron-LM after #4411 (commit 532ad926, 2026-04-21; in the d98e8a64 snapshot): there
    ``--rampup-batch-size`` parses but ``init_num_microbatches_calculator`` only logs it as deprecated and builds
    the constant calculator, and ``update_train_iters`` takes train_samples // global batch
    (core/num_microbatches_calculator.py, training/training.py @ d98e8a64), so the run has no ramp. Its
    ``--step-batch-size-schedule`` (:func:`step_batch_size_schedule`) refuses ``--global-batch-size`` beside it
    (validate_args). ``--engine-version 0.20`` writes it instead of this warning."""
    g = f.global_batch_sequences
    return (
        "batch ramp: Megatron-LM after #4411 (commit 532ad926, April 2026; the d98e8a64 snapshot) parses "
        "--rampup-batch-size but ignores it (deprecated), running every step at the main batch "
        f"({g:,} sequences, train_samples // {g:,} steps); on such a checkout replace --global-batch-size and "
        f"--rampup-batch-size with --step-batch-size-schedule '{step_batch_size_schedule(f)}' (thresholds in "
        f"tokens, the plan's stages exactly) --eval-global-batch-size {g} (the canary's batch), as "
        "--engine-version 0.20 writes it"
    )


def pipeline_layout(stage_layers: list[int], v: int) -> str:
    """A ``--pipeline-model-parallel-layout`` string for per-stage layer counts split into ``v`` chunks each.

    Chunks of a stage differ by at most one layer; the first stage's shorter chunks come first (they sit with
    the embedding), the last stage's come last (with the loss). Stages are listed VPP rank 0 over all PP ranks,
    then VPP rank 1, and so on, as the Megatron-Core layout format requires; runs of identical stages are
    written ``(X|)*N``.
    """
    p = len(stage_layers)
    chunks = []
    for rank, n in enumerate(stage_layers):
        sizes = [n // v + (1 if i < n % v else 0) for i in range(v)]  # larger chunks first
        chunks.append(sizes[::-1] if rank == 0 else sizes)
    tokens = []
    for chunk in range(v):
        for rank in range(p):
            n = chunks[rank][chunk]
            body = "" if n == 0 else ("t" if n == 1 else f"t*{n}")
            head = "E" if rank == 0 and chunk == 0 else ""
            tail = "L" if rank == p - 1 and chunk == v - 1 else ""
            tokens.append(head + body + tail)
    parts: list[str] = []
    i = 0
    while i < len(tokens):
        j = i
        while j + 1 < len(tokens) and tokens[j + 1] == tokens[i]:
            j += 1
        run = j - i + 1
        last_run = j == len(tokens) - 1
        if run > 2:
            parts.append(f"({tokens[i]}|)*{run - 1 if last_run else run}" + (tokens[i] if last_run else ""))
        else:
            parts.append("|".join(tokens[i : j + 1]) + ("" if last_run else "|"))
        i = j + 1
    return "".join(parts)


def _pipeline_args(f: Facts, warnings: list[str]) -> list[Arg]:
    args: list[Arg] = []
    p, v, L = f.layout.pp, f.layout.vpp, f.n_layers
    if p == 1:
        return args
    args.append(("--pipeline-model-parallel-size", [str(p)], f"p: {L} layers over {p} stages"))
    if L % p:
        k = f.layers_per_stage  # ⌈L/p⌉, the plan's largest stage
        rest = L - (p - 2) * k
        first, last = rest // 2, rest - rest // 2
        if p == 2 or first < 1 or last > k:
            first, last = L - (p - 1) * k, k
        if v > 1 and (first % v or last % v or k % v):
            # --decoder-first/last-pipeline-num-layers need every stage's layers to divide by v; the custom
            # layout does not (Megatron-Core's pipeline_parallel_layout feature)
            layout = pipeline_layout([first] + [k] * (p - 2) + [last], v)
            args.append(
                (
                    "--pipeline-model-parallel-layout",
                    [layout],
                    f"uneven stages with v = {v}: first {first}, {p - 2} x {k}, last {last} layers, "
                    f"split into {p}x{v} chunks (E embedding, t layer, L loss; VPP rank 0 first)",
                )
            )
            return args
        args.append(
            (
                "--decoder-first-pipeline-num-layers",
                [str(first)],
                f"uneven stages: {p - 2} middle stages x {k} + first {first} + last {last} = {L}",
            )
        )
        args.append(
            ("--decoder-last-pipeline-num-layers", [str(last)], "embedding on the first, loss on the last")
        )
        if v > 1:
            args.append(("--num-virtual-stages-per-pipeline-rank", [str(v)], f"v = {v} interleaved chunks"))
    elif v > 1:
        if L % (p * v) == 0:
            args.append(
                (
                    "--num-layers-per-virtual-pipeline-stage",
                    [str(L // (p * v))],
                    f"L/(p*v) = {L}/({p}*{v}) = {L // (p * v)} layers per chunk, v = {v}",
                )
            )
        else:
            args.append(
                (
                    "--num-virtual-stages-per-pipeline-rank",
                    [str(v)],
                    f"v = {v}; {L} layers do not split evenly into {p}x{v} chunks",
                )
            )
        per_replica = (st.batch_sequences // (f.layout.dp * f.layout.micro_batch) for st in f.stages)
        uneven = sorted({m for m in per_replica if m % p})
        if uneven:
            warnings.append(
                f"pipeline: interleaved 1F1B with m = {', '.join(map(str, uneven))} micro-batches (a batch stage) "
                f"not a multiple of p = {p}; Megatron runs interleaved micro-batches in groups of p"
            )
    return args


def _model_args(f: Facts, warnings: list[str]) -> list[Arg]:
    """Model shape flags."""
    model: list[Arg] = [
        ("--num-layers", [str(f.n_layers)], "L"),
        ("--hidden-size", [str(f.d_model)], "h"),
        ("--num-attention-heads", [str(f.n_heads)], "a"),
    ]
    if f.n_experts and f.n_dense_layers and f.ffn_hidden:
        model.append(("--ffn-hidden-size", [str(f.ffn_hidden)], "dense-layer MLP width"))
    elif not f.n_experts:
        model.append(("--ffn-hidden-size", [str(f.ffn_hidden)], "F"))
    if f.attention == "mla":
        model += [
            ("--multi-latent-attention", [], "MLA (DeepSeek-V2)"),
            ("--kv-lora-rank", [str(f.kv_lora_rank)], "width of the compressed K/V latent"),
            ("--qk-head-dim", [str(f.head_dim)], "non-rotary part of the query/key head"),
            ("--qk-pos-emb-head-dim", [str(f.qk_rope_head_dim)], "rotary part"),
            ("--v-head-dim", [str(f.v_head_dim)], "value head width"),
        ]
        if f.q_lora_rank:
            model.append(("--q-lora-rank", [str(f.q_lora_rank)], "width of the compressed query latent"))
    else:
        if f.head_dim * f.n_heads != f.d_model:
            model.append(("--kv-channels", [str(f.head_dim)], "head dim differs from h/a"))
        if f.n_kv_heads and f.n_kv_heads != f.n_heads:
            model += [
                ("--group-query-attention", [], f"{f.n_kv_heads} KV heads for {f.n_heads} query heads"),
                ("--num-query-groups", [str(f.n_kv_heads)], ""),
            ]
    model += [
        ("--seq-length", [str(f.seq_len)], "s"),
        ("--max-position-embeddings", [str(f.seq_len)], "Megatron requires >= seq-length"),
        ("--normalization", ["RMSNorm" if f.norm == "rmsnorm" else "LayerNorm"], ""),
    ]
    _refuse_gemma_blocks(f)
    if f.mlp == "swiglu":
        model.append(("--swiglu", [], "gated SiLU MLP"))
    elif f.mlp not in ("gelu",):
        warnings.append(
            f"model: MLP type '{f.mlp}' has no Megatron flag here; the script uses Megatron's GeLU"
        )
    model += _window_args(f)
    if not f.linear_bias:
        model.append(("--disable-bias-linear", [], "no biases in linear layers"))
    if f.qkv_bias and not f.linear_bias:
        model.append(("--add-qkv-bias", [], "bias on Q, K, V only"))
    if f.qk_norm:
        model.append(("--qk-layernorm", [], "QK-norm"))
    if not f.tied_embeddings:
        model.append(("--untie-embeddings-and-output-weights", [], "separate output head"))
    model += _stack_model_args(f)
    if not f.stack.fused_elementwise:
        warnings.append(
            "elementwise: Megatron-core fuses norms, activations and RoPE (TransformerEngine, bias-activation "
            "fusion); the plan timed them as PyTorch eager kernels, so its step time is high: set stack "
            "fused_elementwise: true"
        )
    return model


def _refuse_gemma_blocks(f: Facts) -> None:
    """Megatron-LM @ d98e8a64 builds neither a GeGLU MLP with GeLU's tanh form (--swiglu gates with SiLU,
    --quick-geglu with x·sigmoid(1.702x), fused_bias_geglu.py; activation_func is not a command-line flag,
    arguments.py _add_network_size_args excludes it) nor a norm after attention or the MLP (the GPT layer specs,
    gpt_layer_specs.py, have input_layernorm and pre_mlp_layernorm only): refused, never another model."""
    if f.mlp == "geglu":
        raise SpecError(
            "Megatron-LM has no GeGLU MLP with a tanh-GeLU gate (--swiglu gates with SiLU, --quick-geglu with "
            "x·sigmoid(1.702x)); the model's MLP is geglu",
            where="model",
            hint="build the model in your own code (runplan export --to deepspeed), or plan mlp: swiglu",
        )
    if f.post_norms:
        raise SpecError(
            "Megatron-LM's GPT layer has no norm after attention or the MLP (gpt_layer_specs.py); the model has "
            "post_norms (Gemma 2/3)",
            where="model",
            hint="build the model in your own code (runplan export --to deepspeed), or plan post_norms: false",
        )


def _window_args(f: Facts) -> list[Arg]:
    """Sliding-window attention: --window-size "(w-1,0)" (TransformerEngine's (left, right) window: a query sees
    itself and w-1 keys before it, the w keys of transformers' sliding_window) and --window-attn-skip-freq k
    (layer_number % k == 0 global, 1-based: Megatron-core is_layer_window_attention @ d98e8a64, transformer/utils.py)."""
    if not f.sliding_window:
        return []
    args: list[Arg] = [
        ("--window-size", [f"({f.sliding_window - 1},0)"], f"sliding window of {f.sliding_window:,} keys")
    ]
    if f.global_every:
        args.append(("--window-attn-skip-freq", [str(f.global_every)], "every k-th layer full attention"))
    return args


def _moe_args(f: Facts, arch: Architecture, warnings: list[str]) -> list[Arg]:
    """MoE shape flags (experts, top-k, expert width, shared experts, dense first layers) and the router's
    load-balancing loss (``_balance_args``)."""
    if not f.n_experts:
        return []
    model: list[Arg] = [
        ("--num-experts", [str(f.n_experts)], "E"),
        ("--moe-router-topk", [str(f.top_k)], "k experts per token"),
        ("--moe-ffn-hidden-size", [str(f.expert_ffn_hidden)], "per-expert MLP width"),
        ("--moe-token-dispatcher-type", ["alltoall"], "Megatron's advice with expert parallelism"),
        ("--moe-grouped-gemm", [], "several experts per rank in one grouped GEMM"),
    ]
    if f.n_shared_experts:
        model.append(
            (
                "--moe-shared-expert-intermediate-size",
                [str(f.n_shared_experts * f.expert_ffn_hidden)],
                f"{f.n_shared_experts} shared expert{'s' if f.n_shared_experts != 1 else ''} x {f.expert_ffn_hidden}",
            )
        )
    if f.n_dense_layers:
        pattern = f"([0]*{f.n_dense_layers}+[1]*{f.n_layers - f.n_dense_layers})"
        model.append(("--moe-layer-freq", [pattern], f"first {f.n_dense_layers} layers dense"))
    return model + _balance_args(arch, warnings)


#: Megatron's --moe-router-load-balancing-type for each scope of the model's balance loss (router.py @ d98e8a64:
#: aux_loss counts a micro-batch's tokens over TP x CP, seq_aux_loss each sequence, global_aux_loss the tokens
#: over TP x DP x CP accumulated over the gradient-accumulation steps, i.e. the global batch).
_BALANCE_TYPE = {"micro_batch": "aux_loss", "sequence": "seq_aux_loss", "global_batch": "global_aux_loss"}


def _balance_args(arch: Architecture, warnings: list[str]) -> list[Arg]:
    """The model's balance loss as --moe-router-load-balancing-type and --moe-aux-loss-coeff; a model that
    publishes none gets Megatron's default coefficient 0 (no loss) and a warning saying so."""
    coef = arch.router_aux_loss_coef
    if coef is not None:
        kind = _BALANCE_TYPE[arch.router_aux_loss_scope]
        return [
            (
                "--moe-router-load-balancing-type",
                [kind],
                f"balance loss {BALANCE_SCOPE_WORDS[arch.router_aux_loss_scope]}",
            ),
            ("--moe-aux-loss-coeff", [fmt_float(coef)], "the model's balance-loss coefficient (default 0)"),
        ]
    if not arch.router_expert_bias:
        warnings.append(
            "load balancing: the model publishes no auxiliary-loss coefficient (router_aux_loss_coef) and "
            "Megatron's --moe-aux-loss-coeff defaults to 0 (no balancing loss): set it (Megatron's own Mixtral "
            "8x7B release run uses 1e-2, tests/functional_tests/test_cases/mixtral/"
            "mixtral_8x7b_alltoall_tp2pp4ep4_release)"
        )
    else:  # DeepSeek-V3 §2.1.2 pairs the expert bias with a sequence-wise loss, alpha = 0.0001 (§4.2)
        warnings.append(
            "load balancing: the router balances with its expert bias only (--moe-router-bias-update-rate, "
            "default 1e-3, DeepSeek-V3's gamma); the model publishes no auxiliary loss and Megatron's "
            "--moe-aux-loss-coeff defaults to 0, where DeepSeek-V3 adds a sequence-wise balance loss of "
            "alpha = 0.0001 (arXiv 2412.19437 §2.1.2, §4.2): add --moe-router-load-balancing-type seq_aux_loss "
            "--moe-aux-loss-coeff 1e-4 to train it as published"
        )
    return []


def _rope_args(f: Facts, arch: Architecture, warnings: list[str]) -> list[Arg]:
    """Position embedding, RoPE base and RoPE scaling flags."""
    if arch.positions == "learned":
        if f.learned_positions < f.seq_len:  # Megatron sizes the table by --max-position-embeddings (seq_len)
            warnings.append(
                f"learned positions: the model has {f.learned_positions:,} rows, Megatron builds {f.seq_len:,} "
                "(--max-position-embeddings must reach --seq-length): a larger model than the plan counts"
            )
        return [("--position-embedding-type", ["learned_absolute"], f"{f.learned_positions:,} learned rows")]
    args: list[Arg] = []
    scaling = arch.rope_scaling
    yarn = scaling is not None and scaling.type == "yarn"
    kind = "yarn" if yarn and f.attention != "mla" else "rope"
    args.append(("--position-embedding-type", [kind], ""))
    if arch.rope_theta is None:
        warnings.append(
            f"RoPE base: {f.model_name or 'the model'} gives none (its source publishes no RoPE theta), so "
            "Megatron's default --rotary-base 10000 applies"
        )
        return args
    theta = arch.rope_theta
    args.append(("--rotary-base", [str(round(theta))], "RoPE base theta (Megatron default 10000)"))
    if theta != round(theta):
        warnings.append(
            f"RoPE: Megatron's --rotary-base is an integer; theta {theta} is rounded to {round(theta)}"
        )
    if scaling is None:
        if f.attention == "mla":
            args.append(("--rope-type", ["rope"], "MLA defaults to yarn; this model has no RoPE scaling"))
        return args
    if scaling.type == "linear":
        return args + _linear_rope_args(scaling.factor)
    if scaling.type == "llama3":
        args += [
            ("--use-rope-scaling", [], "Llama 3.1 RoPE scaling"),
            ("--rope-scaling-factor", [fmt_float(scaling.factor)], "factor"),
        ]
        fixed = _MEGATRON_LLAMA3_SCALING
    else:
        args += [
            ("--rotary-scaling-factor", [fmt_float(scaling.factor)], "YaRN factor"),
            (
                "--mscale",
                [fmt_float(scaling.mscale if scaling.mscale is not None else 1.0)],
                "YaRN attention-scale coefficient (rope_scaling mscale)",
            ),
            (
                "--mscale-all-dim",
                [fmt_float(scaling.mscale_all_dim or 0.0)],
                "its coefficient over all dimensions (rope_scaling mscale_all_dim)",
            ),
        ]
        if f.attention == "mla":
            args.insert(0, ("--rope-type", ["yarn"], "YaRN RoPE in multi-latent attention"))
            fixed = _MEGATRON_MLA_YARN
        else:
            args += [
                (
                    "--yarn-original-max-position-embeddings",
                    [str(scaling.original_max_position_embeddings)],
                    "",
                ),
                ("--yarn-beta-fast", [fmt_float(scaling.beta_fast or 32.0)], ""),
                ("--yarn-beta-slow", [fmt_float(scaling.beta_slow or 1.0)], ""),
            ]
            fixed = {}
    differ = {k: v for k, v in fixed.items() if getattr(scaling, k) not in (None, v)}
    if differ:
        warnings.append(
            f"RoPE scaling: Megatron fixes {', '.join(f'{k} = {v}' for k, v in fixed.items())} here; the model has "
            + ", ".join(f"{k} = {getattr(scaling, k)}" for k in differ)
        )
    return args


#: From this many experts Megatron-core warns when the router does not run in fp32 ("Using a large number of
#: experts (e.g. >=32) without fp32 routing", TransformerConfig.__post_init__ @ d98e8a64), and Megatron-LM's
#: DeepSeek-V3 proxy run sets --moe-router-dtype fp32 (tests/functional_tests/test_cases/mixtral/
#: deepseekv3_proxy_flex_tp1pp4emp16etp1cp1_release/model_config.yaml @ d98e8a64). Numerics only: with TransformerEngine
#: the router GEMM keeps bf16 inputs and writes fp32 logits (RouterGatingLinearFunction, moe_utils.py), so the
#: time model's bf16 router GEMM (parallel/timing.py) stands.
FP32_ROUTER_FROM_EXPERTS = 32


def _linear_rope_args(factor: float) -> list[Arg]:
    """Linear RoPE scaling (position interpolation) as --rotary-seq-len-interpolation-factor, an int in
    Megatron-LM @ d98e8a64 (arguments.py): a fractional factor is refused."""
    if factor != int(factor):
        raise SpecError(
            f"Megatron-LM's --rotary-seq-len-interpolation-factor is an integer; the model's linear RoPE factor is "
            f"{factor:g}",
            where="model",
            hint="plan a whole-number rope_scaling.factor",
        )
    return [("--rotary-seq-len-interpolation-factor", [str(int(factor))], "linear RoPE scaling")]


def _router_args(f: Facts, arch: Architecture) -> list[Arg]:
    """MoE router flags: score function, top-k renormalisation, expert bias, group-limited routing, weight scale,
    router precision."""
    if not arch.moe:
        return []
    norm = _topk_norm_args(f, arch)
    # the comment says what this script's flags make of the score function (pre-softmax: over all experts)
    what = {
        "sigmoid": "sigmoid scores, top-k divided by their sum",
        "softmax": "softmax over all experts, then the top-k" if norm else "softmax over the top-k logits",
    }[arch.router_score]
    args: list[Arg] = [("--moe-router-score-function", [arch.router_score], what), *norm]
    if f.n_experts >= FP32_ROUTER_FROM_EXPERTS:
        args.append(
            ("--moe-router-dtype", ["fp32"], f"{f.n_experts} experts: fp32 routing (Megatron's advice)")
        )
    if arch.router_expert_bias:
        args.append(("--moe-router-enable-expert-bias", [], "aux-loss-free balancing bias"))
    if arch.router_groups:
        args += [
            ("--moe-router-num-groups", [str(arch.router_groups)], "group-limited routing"),
            ("--moe-router-group-topk", [str(arch.router_group_topk)], "groups per token"),
        ]
    if arch.router_topk_scale != 1.0:
        args.append(
            (
                "--moe-router-topk-scaling-factor",
                [fmt_float(arch.router_topk_scale)],
                "routed experts' gate weights multiplied by it",
            )
        )
    return args


def _topk_norm_args(f: Facts, arch: Architecture) -> list[Arg]:
    """Whether the k chosen weights add to 1, as Megatron routes (moe_utils.topk_routing_with_score_function
    @ d98e8a64): softmax over the top-k logits renormalises by construction; --moe-router-pre-softmax takes the
    softmax over all experts and keeps the k probabilities as they are (DeepSeek-V2's norm_topk_prob false, and
    Switch Transformer's top-1 gate: Megatron refuses a softmax after a top-1, "Please use
    --moe-router-pre-softmax when topk is 1", TransformerConfig.__post_init__); sigmoid scores are divided by
    their sum whenever k > 1, with no flag to keep them, so that router is refused."""
    if arch.router_score == "softmax":
        if f.top_k == 1:
            return [
                ("--moe-router-pre-softmax", [], "top-1: softmax over all experts, the chosen one's gate")
            ]
        if not arch.router_topk_norm:
            return [
                ("--moe-router-pre-softmax", [], "softmax over all experts; top-k weights not renormalised")
            ]
        return []
    if f.top_k > 1 and not arch.router_topk_norm:
        raise SpecError(
            f"Megatron-LM divides a sigmoid router's top-{f.top_k} scores by their sum and has no flag to keep them "
            "(moe_utils.topk_routing_with_score_function); the model sets router_topk_norm false",
            where="model",
            hint="export to torchtitan (MoEArgs route_norm = false), or plan the model with router_topk_norm: true",
        )
    return []


def _architecture_args(f: Facts, arch: Architecture, warnings: list[str]) -> list[Arg]:
    """Every architecture field the catalog carries, as flags (see _architecture)."""
    args = _rope_args(f, arch, warnings)
    if arch.rope_local_theta is not None and arch.rope_local_theta != arch.rope_theta:
        warnings.append(
            f"RoPE: Megatron-LM has one --rotary-base for every layer; the model's window layers use "
            f"{arch.rope_local_theta:g}, its global layers {arch.rope_theta:g} (written)"
        )
    if arch.norm_eps is not None:
        args.append(("--norm-epsilon", [fmt_float(arch.norm_eps)], "Megatron default 1e-5"))
    if arch.init_std is not None:
        args.append(("--init-method-std", [fmt_float(arch.init_std)], "Megatron default 0.02"))
    args += _router_args(f, arch) + _mtp_args(arch)
    t = f.layout.tp
    if f.vocab_size % t == 0:
        quotient = f.vocab_size // t
        divisor = 1
        while divisor < _MEGATRON_VOCAB_DIVISOR and quotient % (2 * divisor) == 0:
            divisor *= 2
        args.append(
            (
                "--make-vocab-size-divisible-by",
                [str(divisor)],
                f"Megatron pads V to a multiple of this x t; {divisor} x {t} divides V = {f.vocab_size:,}",
            )
        )
    else:
        padded = -(-f.vocab_size // (_MEGATRON_VOCAB_DIVISOR * t)) * _MEGATRON_VOCAB_DIVISOR * t
        warnings.append(
            f"vocabulary: V = {f.vocab_size:,} is not a multiple of t = {t}; Megatron pads it to {padded:,} rows "
            "(more embedding and output parameters than planned)"
        )
    return args


def _mtp_args(arch: Architecture) -> list[Arg]:
    """Multi-token prediction (DeepSeek-V3, arXiv 2412.19437 §2.2) as ``--mtp-num-layers`` D and
    ``--mtp-loss-scaling-factor`` λ (arguments.py at 000c4ac and TransformerConfig at d98e8a6: defaults None,
    i.e. no MTP, and 0.1); Megatron builds the D modules on the last pipeline stage, as the plan counts them."""
    if not arch.mtp_layers:
        return []
    args: list[Arg] = [("--mtp-num-layers", [str(arch.mtp_layers)], "multi-token-prediction depth D")]
    if arch.mtp_loss_weight is not None:
        args.append(
            (
                "--mtp-loss-scaling-factor",
                [fmt_float(arch.mtp_loss_weight)],
                "MTP loss weight λ (Megatron default 0.1; DeepSeek-V3 §4.2: 0.3, then 0.1 after 10T tokens)",
            )
        )
    return args


def _layout_args(f: Facts, warnings: list[str]) -> list[Arg]:
    """Parallel layout flags (DP is world / (t*p*c), not a flag)."""
    layout: list[Arg] = [("--tensor-model-parallel-size", [str(f.layout.tp)], "t")]
    layout += _pipeline_args(f, warnings)
    if f.layout.cp > 1:
        layout.append(
            (
                "--context-parallel-size",
                [str(f.layout.cp)],
                f"c: each rank holds s/c = {f.seq_len // f.layout.cp} tokens",
            )
        )
        if f.seq_len % (2 * f.layout.cp):
            warnings.append(
                f"context parallel: Megatron requires seq-length {f.seq_len} to be a multiple of "
                f"2 x cp = {2 * f.layout.cp}"
            )
    if f.layout.ep > 1:
        layout.append(
            (
                "--expert-model-parallel-size",
                [str(f.layout.ep)],
                f"e (borrowed from the d·c = {f.layout.dp * f.layout.cp} data- and context-parallel ranks)",
            )
        )
    if f.layout.sequence_parallel:
        layout.append(("--sequence-parallel", [], "shard norms/dropout activations over t"))
        # userbuffers work inside one NVLink domain (the time model agrees)
        if f.stack.tp_comm_overlap and f.gpus_per_node % f.layout.tp == 0:  # (timing.within_node)
            layout += _tp_overlap_args(f, warnings)
    elif f.layout.tp > 1:
        warnings.append("sequence parallel: the plan turns it off with TP > 1; Megatron runs without it")
    if f.layout.zero in (1, 2):
        layout.append(
            ("--use-distributed-optimizer", [], f"ZeRO-{f.layout.zero}: optimizer state sharded over d·c")
        )
        if f.stack.overlap_grad_reduce:
            layout.append(("--overlap-grad-reduce", [], "DP gradient reduction under the backward pass"))
        # validate_args: --overlap-param-gather needs --overlap-grad-reduce. Without the reduction's overlap the
        # plan's window is empty anyway (timing._data_parallel_seconds), so leaving the gather out changes nothing
        if f.stack.overlap_param_gather and f.stack.overlap_grad_reduce:
            layout.append(("--overlap-param-gather", [], "parameter all-gather under the next forward pass"))
        if f.layout.zero == 2:
            warnings.append(_zero2_buffer(f))
    elif f.layout.zero == 0 and f.stack.overlap_grad_reduce:
        # plain DDP buckets and overlaps its all-reduce too (core/distributed/distributed_data_parallel.py
        # @ d98e8a64); the plan's step time hid it (parallel/timing.py); no parameter gather to overlap
        layout.append(("--overlap-grad-reduce", [], "DP gradient all-reduce under the backward pass"))
    elif f.layout.zero == 3 and f.stack.fsdp_mixed_precision:
        _refuse_torch_fsdp2(f)
        # Megatron-LM docs (FSDP2): --use-torch-fsdp2 with --no-gradient-accumulation-fusion and torch_dist
        layout += [
            ("--use-torch-fsdp2", [], "ZeRO-3 as PyTorch FSDP2 over bf16 weights (see WARNINGS)"),
            ("--no-gradient-accumulation-fusion", [], "Megatron's FSDP2 recipe runs without it"),
        ]
        warnings.append(_torch_fsdp2_precision(f))
    elif f.layout.zero == 3:
        layout += [
            ("--use-megatron-fsdp", [], "ZeRO-3: parameters, gradients and optimizer state sharded"),
            ("--data-parallel-sharding-strategy", ["optim_grads_params"], ""),
            ("--ckpt-format", ["fsdp_dtensor"], "Megatron FSDP requires this checkpoint format"),
        ]
        # Megatron-LM @ 000c4ac2 tests Megatron FSDP with expert parallelism in its per-MR CI (recipes/moe.yaml,
        # ..._zp_z3_..._8experts2parallel_top2router: EP 2, optim_grads_params), with pipeline stages in no case
        if f.layout.pp > 1:
            warnings.append(
                "ZeRO-3: Megatron FSDP with pipeline parallelism is not the tested path; "
                "consider ZeRO-1 (--use-distributed-optimizer)"
            )
    return layout


#: GPU families without CUDA multicast (CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED needs compute capability 9.0+).
#: TransformerEngine's initialize_ub raises there unless UB_SKIPMC=1 (transformer_engine/pytorch/module/base.py),
#: and Megatron's _initialize_tp_communicators sets no such variable (megatron/training/initialize.py).
_NO_CUDA_MULTICAST = ("ampere",)


def _tp_overlap_args(f: Facts, warnings: list[str]) -> list[Arg]:
    """``--tp-comm-overlap`` where TransformerEngine's userbuffers start; on a GPU family without CUDA multicast
    Megatron stops at start-up with it, so it is left out and the plan's assumption is said in one warning."""
    if f.gpu_family in _NO_CUDA_MULTICAST:
        warnings.append(
            f"TP overlap: --tp-comm-overlap is not written: TransformerEngine's userbuffers need CUDA multicast, "
            f"which {f.gpu_family.capitalize()} ({f.gpu_name}) lacks, so Megatron would stop at start-up "
            "(UB_SKIPMC=1 falls back to a slower CUDA IPC path); the plan's step time assumed the overlap: plan "
            "without it (parallelize --no-tp-comm-overlap, or stack.tp_comm_overlap: false in the plan file)"
        )
        return []
    return [
        (
            "--tp-comm-overlap",
            [],
            "TP all-gather/reduce-scatter pipelined under the GEMMs (Transformer Engine); the step time assumes it",
        )
    ]


def _zero2_buffer(f: Facts) -> str:
    """Megatron has no sharded-gradient ZeRO-2: its distributed optimizer reduce-scatters gradients out of a
    full-size buffer of the stack's gradient dtype (fp32 under bf16 unless --grad-reduce-in-bf16, which the
    export writes for gradient_dtype bf16). Refused when that buffer breaks the plan's memory limit, else said."""
    buffer = f.stack.gradient_bytes * f.params_per_gpu
    total = f.memory_bytes_per_gpu - f.gradients_bytes_per_gpu + buffer
    what = (
        f"keeps a full-size {f.stack.gradient_dtype} gradient buffer ({fmt_bytes(buffer)} per GPU here) where "
        f"the plan counted {fmt_bytes(f.gradients_bytes_per_gpu)} of sharded gradients"
    )
    if total > f.memory_limit_bytes:
        raise SpecError(
            f"Megatron's distributed optimizer {what}: {fmt_bytes(total)} per GPU against the plan's limit of "
            f"{fmt_bytes(f.memory_limit_bytes)}",
            where="parallel.zero",
            hint="pin parallel.zero: 1 (or 3) and plan again",
        )
    return f"ZeRO-2: Megatron's distributed optimizer {what}; {fmt_bytes(total)} per GPU, within the plan's limit"


def _torch_fsdp2_precision(f: Facts) -> str:
    """What Megatron's FSDP2 runs where the plan counted FSDP mixed precision (fp32 shards as the master, fp32
    gradients): at d98e8a64 ``get_model`` makes the model bf16 (``Float16Module``) before ``torch_FSDP`` shards it
    (training/training.py), ``fully_shard`` gets no ``mp_policy`` (core/distributed/torch_fully_sharded_data_parallel
    .py), so shards and gradient reduce-scatters are bf16, and ``Float16OptimizerWithFloat16Params`` clones an fp32
    master of each bf16 shard (core/optimizer/optimizer.py): 2 bytes per parameter more, sharded over d·c."""
    extra = torch_fsdp2_master_bytes(f.stack, f.layout, f.params_per_gpu)
    text = (
        "FSDP2: Megatron shards its bf16 model (Float16Module, then fully_shard with no MixedPrecisionPolicy) and "
        "Float16OptimizerWithFloat16Params keeps an fp32 master beside each bf16 shard, where the plan's "
        f"fsdp_mixed_precision counted fp32 shards as the master: 2 bytes per parameter more, {fmt_bytes(extra)} "
        f"per GPU ({fmt_bytes(f.memory_bytes_per_gpu + extra)} against the plan's limit of "
        f"{fmt_bytes(f.memory_limit_bytes)})"
    )
    if f.stack.gradient_dtype == "fp32":
        text += (
            "; gradients are reduce-scattered in bf16, not the plan's fp32 (stack.gradient_dtype), "
            "less traffic than timed"
        )
    return text


def _refuse_torch_fsdp2(f: Facts) -> None:
    """Megatron's validate_args for --use-torch-fsdp2: no pipeline or expert parallelism, untied embeddings."""
    broken = [
        text
        for text, bad in (
            (f"pipeline parallelism (p = {f.layout.pp})", f.layout.pp > 1),
            (f"expert parallelism (e = {f.layout.ep})", f.layout.ep > 1),
            ("tied embeddings (it requires --untie-embeddings-and-output-weights)", f.tied_embeddings),
        )
        if bad
    ]
    if broken:
        raise SpecError(
            "Megatron's PyTorch FSDP2 path (--use-torch-fsdp2), the plan's ZeRO-3 with FSDP mixed precision, "
            f"does not run with {' or '.join(broken)}",
            where="stack.fsdp_mixed_precision",
            hint="set stack.fsdp_mixed_precision: false for Megatron FSDP, or pin parallel.pp: 1 and parallel.ep: 1",
        )


def _batch_args(f: Facts, warnings: list[str], step_schedule: bool = False) -> list[Arg]:
    """Batch, ramp and recomputation flags. ``step_schedule`` (the Megatron-Core 0.18-0.20 target): a ramp is
    ``--step-batch-size-schedule`` (:func:`_step_schedule_args`), every stage exact and no warning."""
    ramped = bool(f.ramp)
    g = f.global_batch_sequences
    batch: list[Arg] = [
        ("--micro-batch-size", [str(f.layout.micro_batch)], "b sequences per GPU per micro-batch"),
    ]
    if ramped and step_schedule:
        return batch + _step_schedule_args(f) + _recompute_args(f, warnings)
    batch.append(
        (
            "--global-batch-size",
            [str(g)],
            f"d*b*m = {f.layout.dp}*{f.layout.micro_batch}*{f.layout.microbatches} = {g:,} sequences = {g * f.seq_len:,} tokens",
        )
    )
    if ramped:
        values, comment = _ramp_args(f, warnings)
        batch.append(("--rampup-batch-size", values, comment))
    return batch + _recompute_args(f, warnings)


def _step_schedule_args(f: Facts) -> list[Arg]:
    """A ramp on Megatron-LM after #4411: ``--step-batch-size-schedule`` in place of ``--global-batch-size``
    (validate_args raises on both; it then sets global_batch_size to b x d, and the calculator's batch is the
    last stage's, StepBatchsizeNumMicroBatchesCalculator.global_batch_size @ d98e8a64), and
    ``--eval-global-batch-size`` the main batch, which evaluation would otherwise take from that b x d (validate_args:
    eval_global_batch_size defaults to global_batch_size), so the canary's --eval-iters count main batches."""
    g = f.global_batch_sequences
    stages = ", ".join(f"{s.batch_sequences:,} x {s.steps:,} steps" for s in f.stages)
    return [
        (
            "--step-batch-size-schedule",
            [step_batch_size_schedule(f)],
            f"tokens consumed:batch (sequences) per stage; the plan's stages exactly ({stages}); "
            f"main batch d*b*m = {f.layout.dp}*{f.layout.micro_batch}*{f.layout.microbatches} = {g:,}",
        ),
        ("--eval-global-batch-size", [str(g)], "evaluation at the main batch (the canary below)"),
    ]


def unrecomputed_modules(stack: Stack, n_experts: int, attention: str) -> list[str]:
    """The plan's selective-recompute modules Megatron-core does not run. ``mlp_act`` and ``every_other_mm``
    have no Megatron module ('mlp' recomputes the whole MLP). ``layernorm`` on a dense model: Megatron-core's
    TransformerEngine layer spec (the default; gpt_layer_specs.py @ d98e8a64) fuses a dense attention layer's
    norms into the next linear (TELayerNormColumnParallelLinear for linear_qkv and linear_fc1), leaving
    input_layernorm and pre_mlp_layernorm IdentityOp, and transformer_layer.py recomputes 'layernorm' only for
    a norm that is not IdentityOp (an MoE layer keeps a separate pre-MLP norm, MLA a separate input norm)."""
    fused_norms = not n_experts and attention != "mla"
    return [
        m
        for m in stack.selective_recompute
        if m in ("mlp_act", "every_other_mm") or (m == "layernorm" and fused_norms)
    ]


def memory_as_megatron_runs_it(spec: PlanSpec, plan: RunPlan, base_dir: Path) -> str | None:
    """The memory per GPU of the plan's layout as Megatron runs it, against the plan's and the limit, where
    that differs: without the selective-recompute modules Megatron-core cannot recompute
    (:func:`unrecomputed_modules`; a reviewer's 70B export planned at 72.7 GB needs 80.1 GB in Megatron, limit
    76), and with the fp32 master its FSDP2 path keeps beside each bf16 shard (:func:`torch_fsdp2_master_bytes`).
    Over the limit, each remedy is offered only where the same check finds it fits alone, with its GB
    (:func:`_memory_remedies`)."""
    from runplan.units import format_bytes

    best = plan.layout.best
    planned = float(best.memory_bytes.total)
    needed, reasons = _megatron_bytes(spec, plan, spec.stack, best.layout, base_dir)
    if not reasons:
        return None
    limit = float(best.memory_limit_bytes)
    verdict = (
        "within the limit"
        if needed <= limit
        else f"over the limit: {_memory_remedies(spec, plan, base_dir, reasons, limit)}"
    )
    return (
        f"memory: {' and '.join(reasons)} the layout needs {format_bytes(needed)} per GPU in "
        f"Megatron, against the plan's {format_bytes(planned)} and the limit "
        f"{format_bytes(limit)}: {verdict}"
    )


_UNRUN = "recomputed"
_MASTER = "with the fp32 master its FSDP2 keeps beside each bf16 shard (2 bytes per parameter ÷ d·c)"


def _megatron_bytes(
    spec: PlanSpec, plan: RunPlan, stack: Stack, layout: Layout, base_dir: Path
) -> tuple[float, list[str]]:
    """Bytes per GPU of ``layout`` on ``stack`` as Megatron runs it, and why that differs from the plan's memory
    model: the plan's count (search.evaluate_layout) without the modules Megatron-core does not recompute, plus
    the fp32 master of its FSDP2 path. The one count the check and each remedy it offers use."""
    from runplan.export._common import _params_per_gpu
    from runplan.plan import layout_memory_under

    shape = plan.model.shape
    same = stack == spec.stack and layout == plan.layout.best.layout
    planned = (
        float(plan.layout.best.memory_bytes.total)
        if same
        else layout_memory_under(spec, plan, stack, base_dir, layout)
    )
    needed, reasons = planned, []
    unrun = (
        unrecomputed_modules(stack, shape.n_experts, shape.attention)
        if layout.recompute == "selective"
        else []
    )
    if unrun:
        kept = tuple(m for m in stack.selective_recompute if m not in unrun)
        without = layout_memory_under(
            spec, plan, stack.model_copy(update={"selective_recompute": kept}), base_dir, layout
        )
        # nothing lost (an MoE model's dense-MLP module: no layer has one)
        if without > planned * (1.0 + 1e-9):
            reasons.append(f"without {', '.join(unrun)} {_UNRUN}")
            needed = without
    master = torch_fsdp2_master_bytes(stack, layout, _params_per_gpu(shape, plan.layout.best))
    if master:
        needed += master
        reasons.append(_MASTER)
    return needed, reasons


def _memory_remedies(spec: PlanSpec, plan: RunPlan, base_dir: Path, reasons: list[str], limit: float) -> str:
    """The remedies of a layout over the limit in Megatron, each re-planned as written (plan.build_plan: a pin
    or another stack moves the layout search, which fills the memory its model counts) and checked by
    :func:`_megatron_bytes` on the layout the re-plan picks; offered only where that fits, with the GB it gives:
    recompute full (no selective module left to miss), Megatron FSDP (stack.fsdp_mixed_precision: false, no
    fp32 master), the megatron-core preset (whose selective module Megatron runs). Where none fits alone, the
    first two together if they fit; else what each gives. The reviewer's 70B TP1 PP1 DP32 CP2 ZeRO-3 torchtitan
    plan (123 GB in Megatron, limit 76): recompute full re-plans at 77.2 GB, Megatron FSDP at 123 GB."""
    from runplan.units import format_bytes

    Option = tuple[str, dict[str, Any], dict[str, Any] | None]  # text, pins added, stack (None: the plan's)
    full: Option = ("pin parallel.recompute: full", {"recompute": "full"}, None)
    mixed_off: Option = (
        "set stack.fsdp_mixed_precision: false (Megatron FSDP, which the plan counts)",
        {},
        {**spec.stack.model_dump(), "fsdp_mixed_precision": False},
    )
    options: list[Option] = [full] if plan.layout.best.recompute != "full" else []
    options += [mixed_off] if _MASTER in reasons else []
    if any(r.endswith(_UNRUN) for r in reasons):
        options.append(("plan with stack preset megatron-core", {}, {"preset": "megatron-core"}))
    gives = [(text, _replanned_bytes(spec, base_dir, pins, stack)) for text, pins, stack in options]
    fits = [f"{text} ({format_bytes(b)})" for text, (b, lim) in gives if b <= lim]
    if fits:
        return "; or ".join(fits)
    tried = ", ".join(
        f"{text.split(' (')[0]} {'is infeasible' if b == math.inf else format_bytes(b)}"
        for text, (b, _) in gives
    )
    if full in options and mixed_off in options:
        both, both_limit = _replanned_bytes(spec, base_dir, full[1], mixed_off[2])
        if both <= both_limit:
            return (
                f"pin parallel.recompute: full and set stack.fsdp_mixed_precision: false together "
                f"({format_bytes(both)}; alone, re-planned: {tried})"
            )
    return f"no one change fits, re-planned: {tried}; plan with more GPUs"


def _replanned_bytes(
    spec: PlanSpec, base_dir: Path, pins: dict[str, Any], stack: dict[str, Any] | None
) -> tuple[float, float]:
    """Bytes per GPU as Megatron runs the layout the plan picks with ``pins`` added and ``stack`` (None: the
    plan's), by :func:`_megatron_bytes`, and that plan's limit; infinite bytes where the change is infeasible."""
    from runplan.errors import Infeasible
    from runplan.parallel.stack import Stack
    from runplan.plan import build_plan

    update: dict[str, Any] = {"parallel": spec.parallel.model_copy(update=pins)}
    if stack is not None:
        update["stack"] = Stack.model_validate(stack)
    changed = spec.model_copy(update=update)
    try:
        plan = build_plan(changed, base_dir)
    except Infeasible:
        return math.inf, 0.0
    best = plan.layout.best
    return _megatron_bytes(changed, plan, changed.stack, best.layout, base_dir)[0], float(
        best.memory_limit_bytes
    )


def torch_fsdp2_master_bytes(stack: Stack, layout: Layout, params_per_gpu: float) -> float:
    """Bytes per GPU Megatron's PyTorch FSDP2 path (the export of ZeRO-3 with fsdp_mixed_precision) holds beyond
    the plan's count: Float16OptimizerWithFloat16Params keeps an fp32 master of each bf16 shard where the plan
    counted the fp32 shards as the master (:func:`_torch_fsdp2_precision`): 2 bytes per parameter more, sharded
    over d·c. 0 on every other path. The one count the FSDP2 warning and the memory check both use."""
    if layout.zero != 3 or not stack.fsdp_mixed_precision:
        return 0.0
    return 2.0 * params_per_gpu / (layout.dp * layout.cp)


def _recompute_args(f: Facts, warnings: list[str]) -> list[Arg]:
    """Recomputation as the stack defines it: full with its method and layer count, selective with its modules
    (Megatron-core --recompute-modules names; the dense MLP's activation alone has no module)."""
    stack = f.stack
    if f.layout.recompute == "full":
        method, layers = stack.full_recompute_method, stack.full_recompute_layers
        return [
            ("--recompute-granularity", ["full"], "full recomputation"),
            ("--recompute-method", [method], "stack full_recompute_method"),
            ("--recompute-num-layers", [str(layers)], "stack full_recompute_layers"),
        ]
    if f.layout.recompute != "selective":
        return []
    unrun = unrecomputed_modules(stack, f.n_experts, f.attention)
    wanted: list[str] = [
        m for m in stack.selective_recompute if m not in unrun and (m != "moe_act" or f.n_experts)
    ]
    if "layernorm" in unrun:
        warnings.append(
            "recompute: the plan's selective mode recomputes the norm outputs; Megatron-core's TransformerEngine "
            "layers fuse a dense model's norms into the next linear, whose weight gradient keeps the norm output, "
            "so 'layernorm' recomputes nothing and is not set: activation memory is higher than planned (pin "
            "parallel.recompute: full, or plan with stack preset megatron-core, whose selective is core_attn)"
        )
    if "mlp_act" in stack.selective_recompute and not f.n_experts:
        warnings.append(
            "recompute: the plan's selective mode also recomputes the dense MLP activation; "
            "Megatron has no module for that alone ('mlp' recomputes the whole MLP), so it is not set: "
            "activation memory is higher than planned"
        )
    if "every_other_mm" in stack.selective_recompute:
        warnings.append(
            "recompute: the plan's selective mode is torchtitan's op-level policy (every second matmul "
            "saved); Megatron has no such module, so it is not set: activation memory is higher than planned"
        )
    if not wanted:
        return []
    _refuse_delayed_fp8_recompute(stack, wanted)
    return [
        ("--recompute-granularity", ["selective"], ""),
        ("--recompute-modules", wanted, "the stack's selective_recompute modules"),
    ]


def _refuse_delayed_fp8_recompute(stack: Stack, modules: list[str]) -> None:
    """Megatron-core @ 000c4ac2 TransformerConfig.__post_init__ (selective recompute with fp8): "Delayed scaling
    does not support moe_act and layernorm recompute for fp8." It raises at start-up, so the export refuses."""
    clash = [m for m in modules if m in ("moe_act", "layernorm")]
    if stack.precision == "fp8" and stack.fp8_recipe == "delayed" and clash:
        raise SpecError(
            f"Megatron-core refuses fp8 delayed scaling with {' and '.join(clash)} recomputation "
            "(TransformerConfig: 'Delayed scaling does not support moe_act and layernorm recompute for fp8'), "
            f"which the plan's selective recomputation writes (--recompute-modules {' '.join(modules)})",
            where="stack.fp8_recipe",
            hint="use fp8_recipe tensorwise or blockwise, or pin parallel.recompute: full (or none) and plan again",
        )


def _stack_model_args(f: Facts) -> list[Arg]:
    """Attention kernel and dropout from the plan's stack (the memory model keeps masks only with dropout)."""
    stack = f.stack
    if stack.autocast_fp32_weights:
        raise SpecError(
            "Megatron-LM keeps half-precision weights beside an fp32 master (--bf16/--fp16); the plan's memory "
            "and step time assume torch.autocast over fp32 weights",
            where="stack.autocast_fp32_weights",
            hint="set stack.autocast_fp32_weights: false to plan Megatron's own mixed precision",
        )
    if (
        stack.pipeline_scatter_gather
        and f.layout.pp > 1
        and f.layout.tp > 1
        and not f.layout.sequence_parallel
    ):
        raise SpecError(
            "Megatron-core cannot scatter pipeline sends over the TP ranks without sequence parallelism (the "
            "plan's step time assumes it)",
            where="stack.pipeline_scatter_gather",
            hint="set stack.pipeline_scatter_gather: false, or turn sequence parallelism on",
        )
    if f.layout.cp > 1 and not stack.flash_attention:
        # core/transformer/dot_product_attention.py asserts context_parallel_size == 1 ("only supported by
        # TEDotProductAttention"); TransformerEngine under --attention-backend unfused disables its
        # UnfusedDotProductAttention with CP (attention/dot_product_attention/utils.py) and finds no backend
        raise SpecError(
            f"Megatron-core runs context parallelism (the plan's c = {f.layout.cp}) only in TransformerEngine's "
            "flash or fused attention; the plan's stack has no FlashAttention (--attention-backend unfused)",
            where="stack.flash_attention",
            hint="set stack.flash_attention: true, or plan with parallel.cp: 1 or stack.context_parallel: false",
        )
    if f.layout.cp > 1 and stack.context_parallel_impl == "pytorch":
        # Megatron-core's only CP is TransformerEngine's attention (the overlapped p2p ring); the plan's step
        # time is PyTorch's context_parallel (docs/parallel.md, CP)
        raise SpecError(
            f"Megatron-core runs context parallelism (the plan's c = {f.layout.cp}) only as TransformerEngine's "
            "ring; the plan timed PyTorch's context_parallel (stack.context_parallel_impl: pytorch)",
            where="stack.context_parallel_impl",
            hint="set stack.context_parallel_impl: transformer-engine, or plan with parallel.cp: 1",
        )
    # Megatron-core's AttnBackend: flash = flash-attn, fused = cuDNN (TE FusedAttention), auto = TE's own choice
    backend = _ATTENTION_BACKEND[stack.attention_kernel] if stack.flash_attention else "unfused"
    return [
        ("--attention-backend", [backend], "stack flash_attention, attention_kernel"),
        ("--attention-dropout", [fmt_float(stack.attention_dropout)], "stack attention_dropout"),
        ("--hidden-dropout", [fmt_float(stack.hidden_dropout)], "stack hidden_dropout"),
    ]


#: Stack.attention_kernel -> Megatron-core --attention-backend (megatron/core/transformer/enums.py AttnBackend)
_ATTENTION_BACKEND = {"auto": "auto", "flash-attention-2": "flash", "cudnn": "fused"}

#: fp8 format per recipe: hybrid (e4m3 forward, e5m2 gradients) is TransformerEngine's DelayedScaling and
#: Float8CurrentScaling default for training; its block-scaled recipes (Float8BlockScaling, MXFP8BlockScaling)
#: use e4m3 throughout (transformer_engine/common/recipe/__init__.py defaults @ d0067d0d).
_FP8_FORMAT = {"delayed": "hybrid", "tensorwise": "hybrid", "blockwise": "e4m3", "mxfp8": "e4m3"}

#: Delayed scaling's amax history (steps) and how a scale is taken from it. The plan's 'delayed' is
#: TransformerEngine's DelayedScaling, whose defaults are 1024 and 'max' (transformer_engine/common/recipe/
#: __init__.py @ d0067d0d), as NVIDIA's recipes set them (NeMo bf16_with_fp8_mixed,
#: nemo/collections/llm/recipes/precision/mixed_precision.py @ 8cfedd72; the dgxc Llama 3.1 recipes whose fp8
#: step times the time model is checked against, benchmarks/published_runs.yaml). Megatron-LM passes its own
#: flags to DelayedScaling (TEDelayedScaling, megatron/core/extensions/transformer_engine.py @ d98e8a64), whose
#: defaults are 1 and 'most_recent' (arguments.py @ 000c4ac2): a scale from the last step's amax only.
DELAYED_AMAX_HISTORY_LEN = 1024
DELAYED_AMAX_COMPUTE_ALGO = "max"


def _fp8_args(f: Facts) -> list[Arg]:
    """``--fp8-format``/``--fp8-recipe`` for stack precision fp8 (Megatron-LM TransformerConfig.fp8, flag
    --fp8-format e4m3|hybrid, and .fp8_recipe, megatron/core/transformer/transformer_config.py @ d98e8a6) and
    ``--fp8-param-gather`` (arguments.py _add_transformer_engine_args, asserted with the distributed optimizer)."""
    stack = f.stack
    if stack.precision != "fp8":
        return []
    recipe = stack.fp8_recipe
    if recipe not in _FP8_FORMAT:
        raise SpecError(
            f"Megatron-LM has no '{recipe}' fp8 recipe (--fp8-recipe: delayed, tensorwise, blockwise, mxfp8)",
            where="stack.fp8_recipe",
            hint="use fp8_recipe tensorwise, delayed or blockwise, or export to torchtitan",
        )
    _refuse_fp8_token_count(f)
    args: list[Arg] = [
        ("--fp8-format", [_FP8_FORMAT[recipe]], "stack precision fp8 (TransformerEngine linear layers)"),
        ("--fp8-recipe", [recipe], "stack fp8_recipe"),
    ]
    if recipe == "delayed":
        args += [
            (
                "--fp8-amax-history-len",
                [str(DELAYED_AMAX_HISTORY_LEN)],
                "TransformerEngine DelayedScaling's default; Megatron's is 1",
            ),
            ("--fp8-amax-compute-algo", [DELAYED_AMAX_COMPUTE_ALGO], "largest amax in that history"),
        ]
    if stack.fp8_param_gather:
        # validate_args: --fp8-param-gather only with the distributed optimizer or an FSDP
        if f.layout.zero == 0:
            raise SpecError(
                "Megatron-LM keeps fp8 weights (--fp8-param-gather) only with the distributed optimizer or FSDP",
                where="stack.fp8_param_gather",
                hint="plan with zero 1 or more (parallel.zero), or without fp8_param_gather",
            )
        args.append(("--fp8-param-gather", [], "stack fp8_param_gather: weights kept and gathered in fp8"))
    return args


def _refuse_fp8_token_count(f: Facts) -> None:
    """TransformerEngine's fp8 GEMM asserts that the input's leading dimensions multiply to a multiple of 8
    (``assert_dim_for_fp8_exec``, transformer_engine/pytorch/utils.py @ d0067d0, on the local input of each
    Linear/LayerNormLinear forward): under Megatron the micro-batch's tokens on one rank, b·s/c, ÷ t more with
    sequence parallelism. Refused otherwise; any b works with s a multiple of 8·t·c (8·c without SP)."""
    t = f.layout.tp if f.layout.sequence_parallel else 1
    c, b, s = f.layout.cp, f.layout.micro_batch, f.seq_len
    if (b * s) % (t * c) == 0 and (b * s // (t * c)) % 8 == 0:
        return
    step = 8 * t * c
    raise SpecError(
        f"TransformerEngine's fp8 GEMM needs the tokens of a micro-batch on one rank, b*s/{'(t*c)' if t > 1 else 'c'} "
        f"= {b}*{s}/{t * c}, to be a multiple of 8 (assert_dim_for_fp8_exec), so Megatron stops at the first "
        "forward pass",
        where="training.seq_len",
        hint=f"use a seq_len that is a multiple of {step} (e.g. {-(-s // step) * step}), or stack precision: bf16",
    )


def _optimizer_state_args(f: Facts, warnings: list[str]) -> list[Arg]:
    """bf16 Adam moments (stack optimizer_state_dtype, DeepSeek-V3 arXiv 2412.19437 §3.3.3):
    ``--use-precision-aware-optimizer --exp-avg-dtype bf16 --exp-avg-sq-dtype bf16`` (arguments.py @ d98e8a6).
    get_megatron_optimizer (megatron/core/optimizer/__init__.py @ d98e8a6) raises without the distributed
    optimizer, which ZeRO-1/2 and Megatron FSDP v1 (ZeRO-3) turn on and ZeRO-0 does not (--use-torch-fsdp2 does
    not either: the Stack refuses bf16 moments with fsdp_mixed_precision).
    With bf16 weights (or delayed fp8) TransformerEngine's FusedAdam then holds the fp32 master itself and, by
    OptimizerConfig.store_param_remainders (default True, no flag), keeps only its 16 low bits beside the bf16
    weight (FusedAdam store_param_remainders, transformer_engine/pytorch/optimizers/fused_adam.py @ d0067d0),
    as the plan counts it (Stack.fused_adam_master, memory.model_state_bytes)."""
    stack = f.stack
    if stack.optimizer_state_dtype == "fp32":
        return []
    if f.layout.zero == 0:
        raise SpecError(
            "Megatron-LM keeps bf16 optimizer states (--use-precision-aware-optimizer) only with the distributed "
            "optimizer, not ZeRO-0",
            where="stack.optimizer_state_dtype",
            hint="plan with zero 1 or 2 (parallel.zero), or with optimizer_state_dtype fp32",
        )
    if stack.precision == "fp8" and stack.fp8_recipe == "delayed" and stack.fp8_param_gather:
        # FusedAdam.step sends delayed-scaling Float8Tensor weights to multi_tensor_adam_fp8, which checks for fp32
        # moments and an fp32 master (transformer_engine/common/multi_tensor/adam.cu @ d0067d0); bf16 moments
        # reach it as bf16 (fuse_unscale) and the master as int16 remainders (the weight's nominal dtype is bf16)
        warnings.append(
            "optimizer state: bf16 moments with delayed-scaling fp8 weights (--fp8-param-gather): "
            "TransformerEngine's fused fp8 Adam kernel takes only fp32 moments and an fp32 master, so the first "
            "step is expected to fail; plan with optimizer_state_dtype fp32, another fp8_recipe, or without "
            "fp8_param_gather"
        )
    return [
        ("--use-precision-aware-optimizer", [], "TransformerEngine FusedAdam with low-precision states"),
        ("--exp-avg-dtype", ["bf16"], "stack optimizer_state_dtype bf16: Adam m in bf16"),
        ("--exp-avg-sq-dtype", ["bf16"], "Adam v in bf16; master weights stay fp32"),
    ]


def _lr_args(f: Facts, warnings: list[str], step_schedule: bool = False) -> list[Arg]:
    """Optimizer, learning-rate schedule and run length (a ramped plan sample-based: before #4411 Megatron refuses
    a ramp with --train-iters; after it, update_train_iters counts the schedule's steps up to --train-samples,
    training.py @ d98e8a64, the plan's step count)."""
    ramped = bool(f.ramp)
    g = f.global_batch_sequences
    lr: list[Arg] = [
        ("--bf16", [], "bf16 compute, fp32 master weights"),
        *_fp8_args(f),
        *(
            [("--grad-reduce-in-bf16", [], "stack gradient_dtype bf16")]
            if f.stack.gradient_dtype == "bf16"
            else []
        ),
        *_optimizer_state_args(f, warnings),
        ("--optimizer", ["adam"], "Megatron's adam is AdamW (decoupled weight decay)"),
        ("--lr", [fmt_float(f.peak_lr)], "peak LR from the plan"),
        ("--min-lr", [fmt_float(f.final_lr)], "final LR"),
        ("--lr-decay-style", ["WSD"], "warmup, stable, decay"),
        ("--lr-wsd-decay-style", [_WSD_STYLE[f.cooldown_shape]], f"the plan's {f.cooldown_shape} cooldown"),
        ("--lr-warmup-init", ["0.0"], "linear warmup from 0"),
    ]
    stable_end_step = f.total_steps - f.cooldown_steps
    if ramped:
        train_samples = f.samples_at_step(f.total_steps)
        warm = f.samples_at_step(f.warmup_steps)
        cool = train_samples - f.samples_at_step(stable_end_step)
        lr += [
            (
                "--train-samples",
                [str(train_samples)],
                f"{f.total_steps:,} steps = {train_samples * f.seq_len:,} tokens (sample-based: "
                + (
                    "Megatron counts the schedule's steps up to it)"
                    if step_schedule
                    else "Megatron refuses a ramp with --train-iters)"
                ),
            ),
            ("--lr-warmup-samples", [str(warm)], f"samples in the first {f.warmup_steps:,} steps"),
            ("--lr-decay-samples", [str(train_samples)], "WSD schedule spans the whole run"),
            ("--lr-wsd-decay-samples", [str(cool)], f"samples in the last {f.cooldown_steps:,} steps"),
        ]
    else:
        lr += [
            ("--train-iters", [str(f.total_steps)], f"{f.total_steps:,} steps x {g:,} sequences"),
            ("--lr-warmup-iters", [str(f.warmup_steps)], ""),
            ("--lr-decay-iters", [str(f.total_steps)], "WSD schedule spans the whole run"),
            ("--lr-wsd-decay-iters", [str(f.cooldown_steps)], "cooldown steps"),
        ]
    lr += [
        ("--adam-beta1", [fmt_float(ASSUMED_OPTIMIZER["beta1"])], "assumed (see header)"),
        ("--adam-beta2", [fmt_float(ASSUMED_OPTIMIZER["beta2"])], "assumed"),
        ("--adam-eps", [fmt_float(ASSUMED_OPTIMIZER["eps"])], "assumed"),
        ("--weight-decay", [fmt_float(ASSUMED_OPTIMIZER["weight_decay"])], "assumed"),
        ("--clip-grad", [fmt_float(ASSUMED_OPTIMIZER["grad_clip_norm"])], "assumed"),
    ]
    return lr


def _checkpoint_args(f: Facts, warnings: list[str], step_schedule: bool = False) -> list[Arg]:
    """Checkpoint flags; async saves as :func:`_async_save_args`."""
    ck: list[Arg] = [
        ("--save", ['"$CHECKPOINT_DIR"'], ""),
        ("--load", ['"$CHECKPOINT_DIR"'], "resume from the latest checkpoint"),
        ("--save-interval", [str(f.checkpoint_interval_steps)], "the plan's checkpoint interval (Daly)"),
    ]
    if f.layout.zero != 3 or f.stack.fsdp_mixed_precision:  # Megatron FSDP needs fsdp_dtensor instead
        ck.append(("--ckpt-format", ["torch_dist"], "distributed checkpoint (needed for --async-save)"))
        if f.async_checkpoint:
            ck += _async_save_args(warnings, step_schedule)
    elif f.async_checkpoint:
        warnings.append(
            "checkpoint: async save needs the torch_dist format, which Megatron FSDP cannot use; "
            "saves will block"
        )
    warnings.append(_retention_warning(f))
    return ck


def _async_save_args(warnings: list[str], step_schedule: bool) -> list[Arg]:
    """``--async-save`` with ``--use-persistent-ckpt-worker``: from core_v0.16.0 on, validate_args turns async
    saves off for a distributed checkpoint without the persistent worker ("Disabling --async-save",
    megatron/training/arguments.py: core_v0.16.0 ~L1138, core_v0.17.0 ~L1430, core_v0.18.0 ~L1621, core_v0.19.0
    ~L1740, d98e8a64 ~L1814), so every save would block; the flag exists at 000c4ac2 and core_v0.15.0-d98e8a64.
    From core_v0.17.0 the async strategy defaults to ``nvrx`` (training/config/training_config.py), which imports
    nvidia-resiliency-ext, an optional extra, when the worker starts (dist_checkpointing/strategies/torch.py
    get_async_strategy, d98e8a64 ~L1043), else training stops at start-up. The 0.20 target writes
    ``--async-strategy mcore`` (Megatron-Core's own writer; the flag exists from core_v0.17.0, and Megatron
    itself falls back to mcore when async saves are off); the default target cannot (0.15 and 0.16 lack the
    flag), so it warns for 0.17. The mcore writer logs a deprecation from core_v0.17.0 on (async_save in
    strategies/torch.py), said in a warning with how to take nvrx instead."""
    args: list[Arg] = [
        ("--async-save", [], "the plan stages the save through pinned host memory"),
        ("--use-persistent-ckpt-worker", [], "from Megatron-Core 0.16, --async-save is dropped without it"),
    ]
    if step_schedule:
        args.append(
            (
                "--async-strategy",
                ["mcore"],
                "Megatron-Core's writer; nvrx (the default) needs nvidia-resiliency-ext",
            )
        )
        # strategies/torch.py async_save logs mcore as deprecated from core_v0.17.0 (still present at d98e8a64)
        warnings.append(
            "checkpoint: --async-strategy mcore is written because the default, nvrx, needs "
            "nvidia-resiliency-ext (training stops at start-up without it); Megatron logs mcore as deprecated: "
            "with nvidia-resiliency-ext installed, drop the flag to use nvrx"
        )
    else:
        warnings.append(
            "checkpoint: on Megatron-Core 0.17 async saves default to --async-strategy nvrx, which needs "
            "nvidia-resiliency-ext (training stops at start-up without it): install it, or add --async-strategy "
            "mcore (a 0.17 flag; 0.15 and 0.16 have no such flag and use Megatron-Core's own writer)"
        )
    return args


def _retention_warning(f: Facts) -> str:
    """What to delete by hand. --save-retain-interval is not written: with it, each save deletes the previous
    checkpoint unless its iteration is a multiple of the interval (training/checkpointing.py, iter_finalize_fn),
    which would leave only the latest and the milestones, not the plan's rolling generations and rollback points
    that ``runplan monitor --plan`` rolls back to; without it Megatron deletes nothing."""
    return (
        "checkpoint retention: --save-retain-interval is not written (Megatron would delete each previous "
        "checkpoint not at a multiple of it, including the plan's rolling generations and rollback points), so "
        "Megatron keeps every save in $CHECKPOINT_DIR; to hold the plan's storage, delete by hand (after the "
        f"newest save is complete) every iter_* directory except {kept_checkpoints(f)}"
    )


def _eval_args(f: Facts, warnings: list[str]) -> list[Arg]:
    """The plan's canary as Megatron's evaluation (otherwise its defaults: 100 global batches every 1,000 steps,
    a cost the plan does not count). Megatron evaluates whole global batches of the validation split."""
    sequences = f.global_batch_sequences
    iters = -(-f.canary_examples // sequences)
    if iters * sequences > 1.5 * f.canary_examples:
        warnings.append(
            f"evaluation: Megatron evaluates whole global batches, so the canary's {f.canary_examples:,} sequences "
            f"become {iters} x {sequences:,}; each evaluation costs {iters * sequences / f.canary_examples:.1f}x "
            "the plan's canary time. A fixed canary batch also needs a validation split of exactly those sequences "
            "(Megatron draws the next validation batches each time)"
        )
    return [
        ("--eval-interval", [str(f.canary_every_steps)], "the plan's canary cadence (monitoring)"),
        (
            "--eval-iters",
            [str(iters)],
            f"the canary's {f.canary_examples:,} sequences, in whole global batches",
        ),
    ]


def _data_args(f: Facts) -> list[Arg]:
    """Data and tokenizer: placeholders the script refuses to run without."""
    return [
        ("--data-path", ['"$DATA_PATH"'], "your tokenized data prefix(es)"),
        ("--split", ["99,1,0"], "train/valid/test"),
        ("--tokenizer-type", ["HuggingFaceTokenizer"], ""),
        ("--tokenizer-model", ['"$TOKENIZER_MODEL"'], f"the plan assumes a vocabulary of {f.vocab_size:,}"),
        ("--log-interval", ["1"], ""),
    ]


def export_megatron(
    plan: RunPlan, engine_version: str | None = None, extra_warnings: Sequence[str] = ()
) -> ExportResult:
    """Render ``plan`` as a Megatron-LM ``pretrain_gpt.py`` launch script (pure; see the module docstring).

    ``engine_version`` selects the target (``export._versions``): None or a Megatron-Core 0.15-0.17 release, the
    flag list of commit 000c4ac2; a 0.18-0.20 release, commit d98e8a64, where a ramp is
    ``--step-batch-size-schedule``. ``extra_warnings`` (what the CLI finds with the plan file, e.g.
    :func:`memory_as_megatron_runs_it`) are written into the script's WARNINGS block after the exporter's own."""
    from runplan.export import ExportResult
    from runplan.export._versions import MEGATRON_0_20, engine_release

    step_schedule = engine_release("megatron", engine_version) is MEGATRON_0_20
    f = facts(plan)
    arch = architecture(plan)
    warnings: list[str] = unknown_family_warnings(f)  # a stored plan's GPU of no known family
    layout_title = f"parallel layout (DP = world / (t*p*c) = {f.n_gpus} / ({f.layout.tp}*{f.layout.pp}*{f.layout.cp}) = {f.layout.dp})"
    groups: list[tuple[str, list[Arg]]] = [
        ("model shape", _model_args(f, warnings) + _moe_args(f, arch, warnings)),
        ("architecture (catalog: every field, see the header)", _architecture_args(f, arch, warnings)),
        (layout_title, _layout_args(f, warnings)),
        ("batch and recomputation", _batch_args(f, warnings, step_schedule)),
        ("learning rate and length", _lr_args(f, warnings, step_schedule)),
        ("checkpoints", _checkpoint_args(f, warnings, step_schedule)),
        ("evaluation (the plan's canary)", _eval_args(f, warnings)),
        ("data (placeholders)", _data_args(f)),
    ]
    flags = {flag for _, args in groups for flag, _, _ in args}
    warnings += [*_release_warnings(flags, step_schedule), *extra_warnings]
    text = _render(f, arch, _checked_against(step_schedule), groups, warnings)
    filename = f"{file_slug(f.name)}.megatron.sh"
    return ExportResult(target="megatron", text=text, warnings=warnings, filename=filename)


def _checked_against(step_schedule: bool) -> tuple[str, str]:
    """The script header's two lines naming what its flags were checked against (the default target's: the flag
    list's engine and version, as before the option existed)."""
    if not step_schedule:
        data = engine_data(DATA)
        return (
            f"# Flags checked against {data['engine']} {data['version']}:",
            "#   megatron/training/arguments.py (list: runplan/export/data/megatron_arguments.json).",
        )
    return (
        "# Flags checked against Megatron-LM commit d98e8a64ddf34856e74b24714e3bedb2f5a39553 (Megatron-Core 0.20.0),",
        "#   megatron/training/arguments.py (runplan export --engine-version 0.20: Megatron-Core 0.18-0.20).",
    )


def _release_warnings(flags: set[str], step_schedule: bool) -> list[str]:
    """Flags that not every release of the target has. YaRN outside MLA (``--position-embedding-type yarn``,
    ``--yarn-*``): 'yarn' is a choice from core_v0.18.0 and the ``--yarn-*`` flags exist from core_v0.19.0 (each
    tag's add_megatron_arguments parser, built 2026-12-03); 000c4ac2 and core_v0.14.0-core_v0.17.0 have neither."""
    if "--yarn-original-max-position-embeddings" not in flags:
        return []
    if step_schedule:
        return [
            "RoPE: YaRN outside MLA is written as --position-embedding-type yarn with --yarn-* flags, which "
            "Megatron-Core 0.19 and 0.20 have and 0.18 does not (there the script stops at argument parsing)"
        ]
    return [
        "RoPE: YaRN outside MLA is written as --position-embedding-type yarn with --yarn-* flags, which "
        "Megatron-Core 0.15-0.17 do not have (the script stops at argument parsing): on Megatron-Core 0.19 or "
        "0.20 export with --engine-version 0.20"
    ]


def _render(
    f: Facts,
    arch: Architecture,
    checked: tuple[str, str],
    groups: list[tuple[str, list[Arg]]],
    warnings: list[str],
) -> str:
    # both FSDP paths want CUDA_DEVICE_MAX_CONNECTIONS unset (Megatron-LM's FSDP docs)
    fsdp = any(
        flag in ("--use-megatron-fsdp", "--use-torch-fsdp2") for _, args in groups for flag, _, _ in args
    )
    lines = [
        "#!/usr/bin/env bash",
        f"# Megatron-LM launch script for plan '{comment_text(f.name)}', generated by runplan {runplan_version()}.",
        *checked,
        f"# World: {f.n_gpus} GPUs = {f.n_nodes} nodes x {f.gpus_per_node}; t={f.layout.tp} p={f.layout.pp} d={f.layout.dp} c={f.layout.cp} "
        f"e={f.layout.ep} v={f.layout.vpp} ZeRO-{f.layout.zero} b={f.layout.micro_batch} m={f.layout.microbatches} recompute={f.layout.recompute}.",
        f"# Assumed, {ASSUMED_OPTIMIZER_SOURCE}.",
        "# Run on every node: NODE_RANK=<i> MASTER_ADDR=<node 0> DATA_PATH=... TOKENIZER_MODEL=... "
        "CHECKPOINT_DIR=... MEGATRON_LM=<checkout> bash <this file>",
    ]
    lines.append(f"# Architecture (catalog source: {comment_text(arch.source)}):")
    lines += [f"#   {comment_text(line)}" for line in arch.lines()]
    if warnings:
        lines.append("#")
        lines.append("# WARNINGS (what this engine cannot express as planned):")
        lines += [f"#   - {comment_text(w)}" for w in warnings]
    lines += [
        "set -euo pipefail",
        "",
        ': "${MEGATRON_LM:?set MEGATRON_LM to a Megatron-LM checkout}"',
        ': "${DATA_PATH:?set DATA_PATH}"',
        ': "${TOKENIZER_MODEL:?set TOKENIZER_MODEL}"',
        ': "${CHECKPOINT_DIR:?set CHECKPOINT_DIR}"',
        f"GPUS_PER_NODE={f.gpus_per_node}",
        f"NNODES={f.n_nodes}",
    ]
    if (f.layout.tp > 1 or f.layout.cp > 1) and not fsdp:
        lines.append(
            "export CUDA_DEVICE_MAX_CONNECTIONS=1  # Megatron asserts this with TP/CP before Blackwell"
        )
    lines += ["", "ARGS=("]
    for title, args in groups:
        lines.append(f"  # {title}")
        for flag, values, comment in args:
            body = " ".join([flag, *[v if v.startswith('"$') else shell_word(v) for v in values]])
            lines.append(f"  {body}" + (f"  # {comment_text(comment)}" if comment else ""))
    lines += [
        ")",
        "",
        'exec torchrun --nproc-per-node "$GPUS_PER_NODE" --nnodes "$NNODES" --node-rank "${NODE_RANK:-0}" \\',
        '  --master-addr "${MASTER_ADDR:-localhost}" --master-port "${MASTER_PORT:-6000}" \\',
        '  "$MEGATRON_LM/pretrain_gpt.py" "${ARGS[@]}" "$@"',
        "",
    ]
    return "\n".join(lines)
