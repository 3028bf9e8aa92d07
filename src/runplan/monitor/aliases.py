"""Metric names as engines write them, mapped to the names the detectors use.

Canonical names (SI units: seconds, tokens per second; fractions in [0, 1]):

| canonical | what | written as (normalised: lower case, runs of space/_/- as one `_`) |
|---|---|---|
| `step` | optimizer step | `step`, `iteration`, `global_step`, `trainer/global_step`, `_step`, `s` (llm.c) |
| `loss` | training loss | `loss`, `lm_loss` (Megatron), `reduced_train_loss` (NeMo), `train_loss`, `trl` (llm.c), `loss_metrics/global_avg_loss` (torchtitan) |
| `grad_norm` | global gradient norm before clipping | `grad_norm` (Megatron `grad norm`, torchtitan, HF), `norm` (llm.c), `gradient_norm`, `total_norm` |
| `lr` | learning rate | `lr`, `learning_rate` |
| `step_seconds` | wall time of one step | `elapsed_time_per_iteration_(s)` and `_(ms)` (Megatron, ÷1000), `iteration_time` (Megatron TensorBoard), `train_step_timing_in_s` (NeMo), `iter time (s)` (DeepSpeed pipeline engine), `time_metrics/end_to_end(s)` (torchtitan), `step_time` |
| `tokens_per_second` | whole-job throughput | `tokens_per_second`, `tokens_per_sec`, `tok/s` |
| `tokens_per_second_per_gpu` | throughput per GPU | `tps`, `tokens_per_sec_per_gpu` (NeMo's TimingCallback), `throughput(tps)` (torchtitan: tokens over time × non-data-parallel size per data-parallel rank, i.e. per GPU), `tokens per gpu per second (tgs)` (Megatron-DeepSpeed: tokens/s ÷ world size) |
| `mfu` | model FLOPs utilisation (fraction) | `mfu`, `mfu(%)` (÷100) |
| `canary_loss` | loss of a fixed held-out batch | `canary_loss`, `canary`, `canary/loss` |
| `val_loss` | validation loss | `val_loss`, `eval_loss` (HF), `tel` (llm.c), `lm_loss_value` (Megatron validation line), `validation_metrics/loss` (torchtitan) |
| `loss_scale` | fp16 dynamic loss scale | `loss_scale`, `loss-scale`, `scaler/scale` |
| `nan_iterations` | steps of the logging interval skipped for a nan/inf loss, which the printed loss leaves out | `number of nan iterations` (Megatron) |
| `global_batch` | sequences per optimizer step (checked against the plan's by `monitor --plan`) | `global batch size` (Megatron), `global_batch_size` |
| `seq_len` | tokens per sequence (checked against the plan's by `monitor --plan`) | `actual seqlen` (Megatron-DeepSpeed), `seq_len`, `seq_length` |
| `peak_memory_reserved_bytes` | peak memory the allocator reserved on the logged GPU, bytes | `memory` (torchtitan's line, `memory: 61.23GiB(64.46%)`: `reserved_bytes.all.peak` over the logging interval, GiB = 2^30), `memory/max_reserved(GiB)`, `max_memory_reserved` (NeMo 2, bytes) |
| `peak_memory_allocated_bytes` | peak memory allocated to tensors, bytes | `max allocated` of Megatron's `report_memory` line (MB = 2^20 bytes), `mem-max-allocated-bytes` (Megatron TensorBoard), `MaxMemAllocated` (DeepSpeed's timer line, GiB though printed "GB"), `max_memory_allocated` (NeMo 2, bytes) |
| `samples_per_second` | whole-job sequences per second | `samples/sec` (DeepSpeed pipeline engine: train_batch_size ÷ iter time), `CurrSamplesPerSec` (DeepSpeed timer: train_batch_size ÷ the step's time), `samples per second` (Megatron-DeepSpeed) |
| `tflops_per_gpu` | TFLOP/s per GPU as the engine counts its FLOPs | `tflops` (torchtitan: its FLOPs per token × tps ÷ 1e12), `TFLOPs` (Megatron-DeepSpeed: its own count, with the recompute forward when activations are checkpointed), `throughput per GPU (TFLOP/s/GPU)` (Megatron-LM `--log-throughput`: its own count per step ÷ (step time × 1e12 × world size), no recompute) |
| `grad_norm_replica_<r>` | gradient norm of data-parallel replica r | `grad_norm_replica_<r>`, `grad_norm/replica_<r>`, `grad_norm_rank<r>`, `replica_<r>/grad_norm` |

Prefixes dropped: `train/`, `training/`, `trainer/`, `metrics/`, and Megatron-DeepSpeed's TensorBoard groups
(`lm-loss-training/lm loss`, `grad-norm/grad-norm`, ...; their `... vs samples` / `vs tokens` twins are not read).
Anything else is kept out and listed in the log's notes, so a misspelt column is visible.
"""

from __future__ import annotations

import functools
import re

#: normalised engine name -> (canonical name, factor to SI)
ALIASES: dict[str, tuple[str, float]] = {}


def _add(canonical: str, names: tuple[str, ...], factor: float = 1.0) -> None:
    for name in names:
        ALIASES[normalise(name)] = (canonical, factor)


def normalise(name: str) -> str:
    """Lower case, surrounding space dropped, runs of space, `_` and `-` as one `_`."""
    return re.sub(r"[\s_\-]+", "_", name.strip().lower())


_add("step", ("step", "steps", "iteration", "iter", "global_step", "trainer/global_step", "_step", "s"))
_add(
    "loss",
    (
        "loss",
        "lm loss",
        "lm_loss",
        "train_loss",
        "training_loss",
        "train/loss",
        "train/lm_loss",
        "reduced_train_loss",
        "trl",
        "loss_metrics/global_avg_loss",
    ),
)
_add(
    "grad_norm",
    (
        "grad_norm",
        "grad norm",
        "gradient_norm",
        "grad_norm_unclipped",
        "total_norm",
        "norm",
        "train/grad_norm",
    ),
)
_add("lr", ("lr", "learning_rate", "learning rate", "train/learning_rate", "lr_scheduler/lr"))
_add(
    "step_seconds",
    (
        "step_seconds",
        "elapsed time per iteration (s)",
        "iteration-time",
        "iteration_time",
        "train_step_timing in s",
        "iter time (s)",
        "time_metrics/end_to_end(s)",
        "step_time",
        "step_time_s",
        "time_per_step",
    ),
)
_add("step_seconds", ("elapsed time per iteration (ms)", "step_time_ms", "dt_ms"), 1e-3)
_add(
    "tokens_per_second",
    ("tokens_per_second", "tokens_per_sec", "tok/s", "tokens/s", "throughput/tokens_per_sec"),
)
_add(
    "tokens_per_second_per_gpu",
    # "tokens per gpu per second (tgs)": Megatron-DeepSpeed megatron/training.py training_log (commit 4efb479d),
    # tokens/s ÷ world size
    # "tokens_per_sec_per_gpu": NeMo's TimingCallback (nemo/utils/exp_manager.py @ 8cfedd72), (global batch ÷
    # accumulate_grad_batches) × seq ÷ world size ÷ the step's time
    (
        "tps",
        "throughput(tps)",
        "tokens_per_second_per_gpu",
        "tokens per gpu per second (tgs)",
        "tokens_per_sec_per_gpu",
    ),
)
_add("mfu", ("mfu",))
_add("mfu", ("mfu(%)", "mfu_percent"), 1e-2)
_add("canary_loss", ("canary_loss", "canary", "canary/loss", "eval/canary_loss"))
_add(
    "val_loss",
    (
        "val_loss",
        "eval_loss",
        "validation_loss",
        "tel",
        "lm loss value",
        "validation_metrics/loss",
        "eval/loss",
        "lm loss validation",
    ),
)
_add("loss_scale", ("loss_scale", "loss scale", "loss-scale", "scaler/scale"))
_add("nan_iterations", ("number of nan iterations", "nan_iterations"))
#: torchtitan v0.2.2 ``torchtitan/components/metrics.py`` (commit 73a0e697) ``MetricsProcessor.log``: the line's
#: ``memory: {max_reserved_gib:5.2f}GiB`` is ``reserved_bytes.all.peak`` ÷ 2^30 (``DeviceMemoryMonitor._to_gib``),
#: reset after each log; the reader names the field ``memory(GiB)``
_add("peak_memory_reserved_bytes", ("memory(GiB)", "memory/max_reserved(GiB)"), 2.0**30)
#: Megatron-LM ``report_memory`` (megatron/training/utils/common_utils.py @ d98e8a64): ``max allocated`` is
#: torch.cuda.max_memory_allocated() ÷ (1024 × 1024); the reader names it ``max allocated (MB)``.
#: ``mem-max-allocated-bytes``: ``allocated_bytes.all.peak`` (training.py @ d98e8a64). DeepSpeed's timer line
#: (deepspeed/utils/timer.py @ 38327e07): ``MaxMemAllocated`` = max_memory_allocated() / 1024**3, named by the reader
#: ``MaxMemAllocated (GiB)``
_add("peak_memory_allocated_bytes", ("max allocated (MB)",), 2.0**20)
_add("peak_memory_allocated_bytes", ("mem-max-allocated-bytes", "peak_memory_allocated_bytes"))
_add("peak_memory_allocated_bytes", ("MaxMemAllocated (GiB)",), 2.0**30)
_add("peak_memory_reserved_bytes", ("peak_memory_reserved_bytes",))
#: NeMo 2 ``MegatronStrategy.training_step`` with ``log_memory_usage`` (nemo/lightning/pytorch/strategies/
#: megatron_strategy.py @ 8cfedd72): torch.cuda.max_memory_reserved() and max_memory_allocated(), in bytes, never
#: reset (the peak since the process started)
_add("peak_memory_reserved_bytes", ("max_memory_reserved",))
_add("peak_memory_allocated_bytes", ("max_memory_allocated",))
#: DeepSpeed (deepspeed/runtime/pipe/engine.py and utils/timer.py @ 38327e07): ``samples/sec`` =
#: train_batch_size() ÷ iter time; ``CurrSamplesPerSec`` = train_batch_size() ÷ the step's elapsed time: the global
#: batch, so whole-job sequences per second. Megatron-DeepSpeed's ``samples per second`` is the same.
_add("samples_per_second", ("samples/sec", "CurrSamplesPerSec", "samples per second", "samples_per_second"))
#: torchtitan ``tflops`` = num_flops_per_token × tps ÷ 1e12 (metrics.py @ 73a0e697), per GPU. Megatron-LM
#: ``throughput per GPU (TFLOP/s/GPU)`` (megatron/training/training.py ``training_log`` @ d98e8a64, with
#: --log-throughput) = num_floating_point_operations(args, batch) ÷ (elapsed time per iteration × 10^12 × world
#: size): model FLOPs by Megatron's own count (monitor/engine_flops.py), per GPU, per second
_add("tflops_per_gpu", ("tflops", "tflops_per_gpu", "throughput per GPU (TFLOP/s/GPU)"))
_add("global_batch", ("global batch size", "global_batch_size"))
#: "actual seqlen": Megatron-DeepSpeed training_log (commit 4efb479d), the sequence length of the step
_add("seq_len", ("actual seqlen", "seq_len", "seq_length"))

_REPLICA = re.compile(
    r"^(?:grad_norm(?:/|_)(?:replica|rank|dp)_?(?P<a>\d+)|(?:replica|rank|dp)_?(?P<b>\d+)/grad_norm)$"
)
_PREFIXES = (
    "train/",
    "training/",
    "trainer/",
    "metrics/",
    # Megatron-DeepSpeed's TensorBoard groups (megatron/training.py training_log, commit 4efb479d):
    # "lm-loss-training/lm loss", "lm-loss-validation/lm loss validation", "learning-rate/learning-rate",
    # "grad-norm/grad-norm", "loss-scale/loss-scale", "iteration-time/iteration-time" (seconds)
    "lm_loss_training/",
    "lm_loss_validation/",
    "learning_rate/",
    "grad_norm/",
    "loss_scale/",
    "iteration_time/",
)


@functools.lru_cache(maxsize=4096)
def canonical(name: str) -> tuple[str, float] | None:
    """(canonical name, factor to SI) for an engine's metric name, or None when it is not one we use. Cached: a
    text log repeats the same few field names on every line (1.7M calls for a 64 MB Megatron log, over half its
    read time); ALIASES is fixed once this module is imported."""
    key = normalise(name)
    keys = [key] + [key[len(prefix) :] for prefix in _PREFIXES if key.startswith(prefix)]
    for candidate in keys:
        if candidate in ALIASES:
            return ALIASES[candidate]
    for candidate in keys:
        match = _REPLICA.match(candidate)
        if match:
            return f"grad_norm_replica_{int(match['a'] or match['b'])}", 1.0
    return None


def replica_names(names: list[str]) -> list[str]:
    """The per-replica gradient-norm metrics among ``names``, in replica order."""
    found = [name for name in names if name.startswith("grad_norm_replica_")]
    return sorted(found, key=lambda name: int(name.rsplit("_", 1)[1]))
