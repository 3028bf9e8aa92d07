"""Measured speed against the plan's prediction, the ETA and the goodput so far.

- step time: the median of the logged step times over the last 1,000 steps (a median, so checkpoint saves and
  evaluations do not move it), at the log's last global batch, or, where it prints none, from no earlier than the
  start of the plan's batch stage of its last step (:func:`_recent`); from tokens/s when the log has no step time
  (tokens per step ÷ tokens/s).
- tokens/s = tokens per step ÷ measured step time: the plan's tokens per step, or, where the log prints its own
  global batch and it is not the plan's, that batch × the plan's sequence length (and the planned step time and
  the steps left at that batch).
- planned step time: the plan's own step at the stage's micro-batches (``batch_stages[].step_seconds``; a ramp
  keeps the pipeline bubble), or at the log's own batch the main step scaled to its tokens.
- MFU = the plan's MFU × the main step time scaled to this step's tokens ÷ measured step time: the same model
  FLOPs per step (PaLM §4.1 counts model FLOPs only), done in a different time.
- ETA = Σ over the batch stages left of their steps left × planned step time ÷ (planned ÷ measured step time now):
  in the main stage (or at the log's own batch) the steps left × the measured step time; a log in the batch ramp
  has the main stage's longer steps ahead. Failures and restarts add to it by 1 / the plan's goodput (its
  reliability section). A log past the plan's last step is said in a warning.
- goodput so far = time of the steps that count ÷ time spent on all logged steps, where the steps that count
  take the median step time (× their batch stage's planned step ÷ the last one's, or × their printed batch ÷ the
  last: :func:`_stage_factors`), and the steps an attempt abandoned at a restart (redone later or never reached
  again; their logged time, else the median) and slow steps count in full in the time spent (restart downtime
  between jobs is not in a metric log and is left out). Each logged time stands for the steps since the point
  before it; the first point for :func:`first_point_steps`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from runplan.monitor.aliases import normalise
from runplan.monitor.engine_flops import megatron_flops_per_token
from runplan.monitor.series import MetricLog

if TYPE_CHECKING:
    from runplan.ops.schedule import BatchStage
    from runplan.parallel.layout import LayoutEstimate
    from runplan.plan import RunPlan


def _step_seconds(
    log: MetricLog, tokens_per_step: float, gpus: int, sequence_tokens: float
) -> tuple[np.ndarray, np.ndarray] | None:
    """Step times from what the log has: step time; else tokens/s (whole job or per GPU × the plan's GPUs); else
    DeepSpeed's whole-job samples/s (sequences per step ÷ samples/s; tokens/s = samples/s × the plan's sequence)."""
    if log.has("step_seconds"):
        return log.points("step_seconds")
    if log.has("tokens_per_second"):
        steps, tps = log.points("tokens_per_second")
        return steps[tps > 0], tokens_per_step / tps[tps > 0]
    if log.has("tokens_per_second_per_gpu"):
        steps, tps = log.points("tokens_per_second_per_gpu")
        return steps[tps > 0], tokens_per_step / (tps[tps > 0] * gpus)
    if log.has("samples_per_second"):
        steps, sps = log.points("samples_per_second")
        return steps[sps > 0], tokens_per_step / sequence_tokens / sps[sps > 0]
    return None


def _planned_step(plan: RunPlan, stage: BatchStage) -> float:
    """The plan's step time at ``stage``: the layout timed at the stage's micro-batch count, as the plan records it
    (``schedule.batch_stages[].step_seconds``; a ramp keeps the pipeline bubble and the per-step fixed costs),
    else, for a plan resolved before that key, the main step scaled to the stage's tokens."""
    if stage.step_seconds is not None:
        return float(stage.step_seconds)
    best = plan.layout.best
    return best.step_seconds * float(stage.global_batch_tokens) / float(best.global_batch_tokens)


def _stage_at(plan: RunPlan, step: int) -> BatchStage:
    """The plan's batch stage (a ramp stage or the main one) that ``step`` falls in; past the end, the last."""
    stages = plan.schedule.batch_stages
    return next((s for s in stages if s.start_step <= step < s.end_step), stages[-1])


def compare(log: MetricLog, plan: RunPlan) -> dict[str, Any]:
    best = plan.layout.best
    last = int(log.steps[-1])
    # the batch stage the log has reached: a ramp stage runs a smaller batch in a shorter step (the plan's own
    # for that stage: the layout timed at its micro-batches)
    stage = _stage_at(plan, last)
    # a log that prints its own global batch (Megatron) runs at that batch, whatever the plan says: its tokens
    # per step are that batch × the plan's sequence length, and the main step time is scaled to it
    logged = _logged_batch(log, stage)
    sequence_tokens = float(stage.global_batch_tokens) / stage.global_batch_sequences
    tokens_per_step = float(stage.global_batch_tokens) if logged is None else logged * sequence_tokens
    # the main step scaled to this step's tokens: the model FLOPs' share of a step, which MFU compares with
    scaled_step = best.step_seconds * tokens_per_step / float(best.global_batch_tokens)
    planned_step = _planned_step(plan, stage) if logged is None else scaled_step
    total_steps = int(plan.schedule.total_steps)
    end_step = _end_step(plan, None if logged is None else tokens_per_step)
    gpus = int(plan.inputs.get("cluster", {}).get("gpus", 0) or 0) or 1
    found = _step_seconds(log, tokens_per_step, gpus, sequence_tokens)
    out: dict[str, Any] = {
        "planned_step_seconds": planned_step,
        "planned_tokens_per_second": best.tokens_per_second,
        "planned_mfu": best.mfu,
        "planned_total_steps": total_steps,
        "planned_goodput": plan.reliability.goodput,
        "step_seconds": None,
        "tokens_per_second": None,
        "mfu": None,
        "speed_ratio": None,
        "remaining_steps": max(0, end_step - last),
        "eta_seconds": None,
        "goodput": None,
        "peak_memory_bytes": None,
        "peak_memory_kind": None,
        "planned_memory_bytes": None,
        "logged_mfu": None,
        "logged_tflops_per_gpu": None,
        "notes": {},
        "warnings": [],
    }
    memory_note = _peak_memory(log, plan, out)
    if found is None:
        out["notes"]["step_seconds"] = "the log has no step time or throughput: nothing to compare"
        out["notes"].update(memory_note)
        return out
    steps, seconds = found
    window, since = _recent(log, steps, last, stage)
    recent = seconds[window]
    measured = float(np.median(recent if recent.size else seconds))
    ratio = planned_step / measured
    eta = _eta(plan, last, out["remaining_steps"], logged is None, measured, ratio)
    out.update(
        step_seconds=measured,
        tokens_per_second=tokens_per_step / measured,
        mfu=best.mfu * scaled_step / measured,
        speed_ratio=ratio,
        eta_seconds=eta[0],
        goodput=_goodput(
            log, steps, seconds, measured * _stage_factors(log, plan, steps, stage, logged is None)
        ),
    )
    out["notes"] = {
        "step_seconds": f"median of {recent.size or seconds.size} logged step times ({since})",
        "tokens_per_second": f"{tokens_per_step:.4g} tokens per step ÷ {measured:.4g} s",
        "mfu": f"planned {best.mfu:.1%} × {scaled_step:.4g} s (the main step at this step's tokens) ÷ measured "
        f"{measured:.4g} s",
        "planned_step_seconds": _planned_step_note(plan, stage, logged, tokens_per_step),
        "speed_ratio": "planned step time ÷ measured (above 1: faster than planned)",
        "eta_seconds": eta[1],
        "goodput": "useful step time ÷ time of every logged step (slow steps and an abandoned attempt's steps "
        "included; restart downtime is not in the log)",
        **memory_note,
        **_own_mfu(log, plan, out, gpus),
        **_megatron_flops(log, plan, out, gpus, tokens_per_step),
    }
    out["warnings"] += _batch_mismatch(logged, stage) + _seq_mismatch(log, sequence_tokens)
    out["warnings"] += _mismatch(best.mfu * scaled_step / measured, ratio)
    out["warnings"] += _past_end(last, end_step, logged is not None)
    return out


def _planned_step_note(plan: RunPlan, stage: BatchStage, logged: float | None, tokens_per_step: float) -> str:
    """Where the planned step time comes from: the stage's own (:func:`_planned_step`), or the main step scaled to
    the tokens of the log's batch (or of the stage, for a plan resolved before stages recorded their step)."""
    if logged is None and stage.step_seconds is not None:
        return (
            f"the {stage.name} stage's step in the plan (the layout timed at its "
            f"{stage.microbatches_per_replica:,} micro-batches per replica)"
        )
    best = plan.layout.best
    sequence_tokens = float(stage.global_batch_tokens) / stage.global_batch_sequences
    whose = (
        f"the {stage.name} stage's batch ({stage.global_batch_sequences:,} sequences)"
        if logged is None
        else f"the log's batch ({logged:,.0f} sequences × {sequence_tokens:,.0f} tokens)"
    )
    return (
        f"{whose}: {best.step_seconds:.4g} s × {tokens_per_step:.4g} / {best.global_batch_tokens:.4g} tokens"
    )


def _eta(
    plan: RunPlan, last: int, remaining: int, plans_batch: bool, measured: float, ratio: float
) -> tuple[float, str]:
    """(seconds left, its one-line reason): each batch stage's steps left at its planned step time
    (:func:`_planned_step`) ÷ the measured speed ratio, ÷ the plan's goodput. A log still in the batch ramp has
    the main stage's longer steps ahead: the ramp's measured step time for every step left would put the end
    about twice too early. A log at its own batch (not the plan's) counts every step left at the measured time
    (the ramp is not in that comparison)."""
    goodput = max(plan.reliability.goodput, 1e-9)
    tail = f"÷ planned goodput {plan.reliability.goodput:.3f}"
    left = [
        (min(stage.steps, stage.end_step - last), _planned_step(plan, stage) / ratio)
        for stage in plan.schedule.batch_stages
        if stage.end_step > last
    ]
    if not plans_batch or len(left) < 2:
        return remaining * measured / goodput, f"{remaining:,} steps × {measured:.4g} s {tail}"
    terms = " + ".join(f"{steps:,} × {seconds:.4g} s" for steps, seconds in left)
    return sum(steps * seconds for steps, seconds in left) / goodput, (
        f"steps left per batch stage × its planned step time ÷ the speed ratio {ratio:.3f}: {terms} {tail}"
    )


def _logged_batch(log: MetricLog, stage: BatchStage) -> float | None:
    """The global batch (sequences) the log prints at its last step where it is not the plan's at that step
    (its batch stage, within 1%); None where the log prints none or the plan's. The last value, not one for
    the whole log: Megatron prints the batch on every line and it grows during a batch ramp
    (``--rampup-batch-size``)."""
    if not log.has("global_batch"):
        return None
    logged = float(log.points("global_batch")[1][-1])
    return None if abs(logged / stage.global_batch_sequences - 1) <= 0.01 else logged


def _end_step(plan: RunPlan, tokens_per_step: float | None) -> int:
    """The plan's last step; at a logged batch unlike the plan's, the step at which the run, at that batch
    from step 1 (a ramp before the log's batch is not in the comparison), has done the plan's tokens."""
    if tokens_per_step is None:
        return int(plan.schedule.total_steps)
    return int(np.ceil(plan.schedule.batch_stages[-1].end_tokens / tokens_per_step - 1e-9))


def _recent(log: MetricLog, steps: np.ndarray, last: int, stage: BatchStage) -> tuple[np.ndarray, str]:
    """(which step times count, where from in words): those of the last 1,000 steps (last − 999 to last) at the
    log's last global batch where it prints one: a step time logged at a smaller batch of a ramp is not this
    batch's. A log that prints none is taken to run the plan's batches: its window starts no earlier than
    ``stage``, the plan's batch stage of its last step (:func:`_stage_at`), else the ramp's half-batch steps
    would halve the median just after the ramp (2.00× the planned speed, the ETA half the true one). At least the
    last step time logged counts (a sparse log may have none in the stage yet)."""
    keep = steps > last - 1000
    if log.has("global_batch"):
        batch = log.values["global_batch"][np.searchsorted(log.steps, steps)]
        now = float(log.points("global_batch")[1][-1])
        keep &= ~np.isfinite(batch) | (batch == now)
        return keep, "last 1,000 steps"
    in_stage = keep & (steps >= stage.start_step)
    if (in_stage == keep).all():
        return keep, "last 1,000 steps"
    if not in_stage.any():
        in_stage[-1] = True
    return in_stage, f"last 1,000 steps, from the {stage.name} stage's start at step {stage.start_step:,}"


def _past_end(last: int, end_step: int, at_logged_batch: bool) -> list[str]:
    """A warning when the log has passed the plan's last step: nothing is left by the plan's count."""
    if last <= end_step:
        return []
    at = " (at the log's batch)" if at_logged_batch else ""
    return [
        f"the log is at step {last:,}, {last - end_step:,} steps past the plan's last step {end_step:,}{at}: "
        "the run went on past the plan (a longer budget?) or is not this plan's run; steps left and ETA are 0"
    ]


def _batch_mismatch(logged: float | None, stage: BatchStage) -> list[str]:
    """A warning when the log prints its global batch (Megatron) and the last one is not the plan's at that step
    (its batch stage): the numbers above use the log's batch, so the log is not quite the plan's run."""
    if logged is None:
        return []
    return [
        f"the log's global batch is {logged:,.0f} sequences, the plan's {stage.global_batch_sequences:,.0f}: "
        "tokens/s, MFU, steps left and the ETA here use the log's batch (the planned step time scaled to it)"
    ]


def _seq_mismatch(log: MetricLog, planned: float) -> list[str]:
    """A warning when the log prints its sequence length (Megatron-DeepSpeed's ``actual seqlen``) and the last one
    is not the plan's: tokens per step here are the batch × the plan's sequence length, so they would be off by
    the ratio of the two."""
    if not log.has("seq_len"):
        return []
    logged = float(log.points("seq_len")[1][-1])
    if abs(logged / planned - 1) <= 0.01:
        return []
    return [
        f"the log's sequence length is {logged:,.0f} tokens, the plan's {planned:,.0f}: tokens/s, MFU and steps "
        "left here use the plan's, so the log is not this plan's run (or its tokens per step are not the plan's)"
    ]


#: A log this many times faster or slower than the plan is taken for another run (the time model's worst miss on
#: published runs it never saw is about 30%, docs/validation.md).
MISMATCH_SPEED_RATIO = 2.0


def _mismatch(mfu: float, ratio: float) -> list[str]:
    """Warnings when the log cannot be a run of this plan: the measured time implies an MFU above 100%, or a
    speed far from the plan (another model, batch, GPU count or sequence length)."""
    if mfu > 1.0:
        return [
            f"the logged step time implies MFU {mfu:.0%} for this plan, above 100%: the log is not a run of this "
            "plan (another model, batch, GPU count or sequence length), so these numbers mean nothing"
        ]
    if ratio > MISMATCH_SPEED_RATIO or ratio < 1 / MISMATCH_SPEED_RATIO:
        return [
            f"the log runs at {ratio:.2g}× the planned speed, beyond the time model's error: check that it is this "
            "plan's run (model, global batch, GPU count, sequence length) before reading the comparison"
        ]
    return []


def first_point_steps(first_step: int, interval_steps: int) -> int:
    """Steps the log's first logged time stands for. A log from the run's start (first step ≤ the interval)
    covers the steps up to it: step 1 of a 1-based counter is 1 step (Mixtral's step 1, 92.35 s of start-up
    before the next point at step 5, is one step, not five), step 5 of a log every 5 steps is steps 1-5, a
    0-based counter's step 0 is 1 step. A log that starts mid-run (an excerpt, a resumed job) covers the
    interval since the point before it, logged or not: where a resumed job's first log came sooner after its
    checkpoint, that is not in the log, and the interval is the usual case."""
    return max(1, min(interval_steps, first_step))


def _stage_factors(
    log: MetricLog, plan: RunPlan, steps: np.ndarray, stage: BatchStage, plans_batch: bool
) -> np.ndarray:
    """Each logged step's expected time ÷ that of the last step: a ramp step is worth its own stage's planned
    step (:func:`_planned_step`), not the main step (just past the ramp, counting its short steps at the main
    median capped the goodput at 100%). A log that prints its own batch (not the plan's): the batch it printed
    at that step ÷ its last (a step's time taken in proportion to its batch)."""
    if not plans_batch:
        batch_steps, batch = log.points("global_batch")
        at = np.clip(np.searchsorted(batch_steps, steps, side="right") - 1, 0, batch.size - 1)
        return batch[at] / batch[-1]
    stages = plan.schedule.batch_stages
    now = _planned_step(plan, stage)
    factors = np.array([_planned_step(plan, s) / now for s in stages])
    # the stage each step falls in (_stage_at: start_step <= step < end_step; past the end, the last)
    index = np.searchsorted(np.array([s.end_step for s in stages]), steps, side="right")
    return factors[np.minimum(index, len(stages) - 1)]


def _goodput(
    log: MetricLog, steps: np.ndarray, seconds: np.ndarray, expected: float | np.ndarray
) -> float | None:
    """Useful step time ÷ the time of every logged step; ``expected``: each logged step's useful time (the
    measured median at the last step's stage, × :func:`_stage_factors`), or one for every step."""
    if steps.size < 2:
        return None
    expected = np.broadcast_to(np.asarray(expected, dtype=np.float64), steps.shape)
    median = float(expected[-1])
    first_span = first_point_steps(int(steps[0]), log.interval_steps)
    spans = np.diff(steps, prepend=steps[0] - first_span).astype(np.float64)
    # an abandoned attempt's rows (left out of the log's steps: redone or never reached again) took their logged
    # time, or the median where they logged none; repeated rows kept in the steps (TensorBoard) the median
    abandoned = log.abandoned_seconds
    lost = float(np.sum(np.where(np.isfinite(abandoned), abandoned, median))) * log.interval_steps
    spent = float(np.sum(seconds * spans)) + lost + log.repeated_steps * median
    useful = float(np.sum(spans * expected))
    return min(1.0, useful / spent) if spent > 0 else None


def _peak_memory(log: MetricLog, plan: RunPlan, out: dict[str, Any]) -> dict[str, str]:
    """The log's peak memory per GPU (its largest logged value) against the plan's total of the pipeline stage
    the log's peak is (:func:`_planned_stage`): ``memory_total_bytes_by_stage`` of that stage where the log names
    it, else ``memory_bytes.total`` of the most loaded. A reserved peak (torchtitan's ``memory:``,
    max_memory_reserved) is compared with the total, which holds ``constraints.reserve_bytes`` for the CUDA
    context, NCCL buffers and allocator slack; an allocated peak (Megatron's ``max allocated``, DeepSpeed's
    ``MaxMemAllocated``) with the total less that reserve, as ``runplan calibrate`` compares a measured peak
    (calibrate/fit.py ``memory_error``). Sets the ``peak_memory_*`` and ``planned_memory_bytes`` keys of ``out``;
    returns the note."""
    kind = next((k for k in ("reserved", "allocated") if log.has(f"peak_memory_{k}_bytes")), None)
    if kind is None:
        return {}
    steps, values = log.points(f"peak_memory_{kind}_bytes")
    at = int(np.argmax(values))
    figure, total, where, warnings = _planned_stage(
        log.source_names.get(f"peak_memory_{kind}_bytes", ""), plan.layout.best
    )
    reserve = float(plan.inputs.get("constraints", {}).get("reserve_bytes", 0.0) or 0.0)
    planned = total if kind == "reserved" else total - reserve
    measured = float(values[at])
    out.update(peak_memory_bytes=measured, peak_memory_kind=kind, planned_memory_bytes=planned)
    out["warnings"] += warnings
    what = (
        f"{figure} {planned / 1e9:.1f} GB, with its {reserve / 1e9:.1f} GB reserve"
        if kind == "reserved"
        else f"{figure} {total / 1e9:.1f} GB less its {reserve / 1e9:.1f} GB reserve, which an allocated "
        f"peak does not hold: {planned / 1e9:.1f} GB"
    )
    return {
        "peak_memory": f"peak {kind} memory {measured / 2**30:.2f} GiB = {measured / 1e9:.1f} GB per GPU (the log's "
        f"largest, step {int(steps[at]):,}, of the rank it logs) against the plan's {what} ({where}): "
        f"{measured / planned - 1:+.1%}"
    }


#: the pipeline stage whose memory a log's peak is, by the name it is written as ("max": the largest of every
#: stage's, so the most loaded one's):
#: - ``mem-max-allocated-bytes``: Megatron writes TensorBoard (and so its scalars export) on the last rank only
#:   (megatron/training/global_vars.py ``_set_tensorboard_writer``, ``args.rank == args.world_size - 1``,
#:   @ d98e8a64); the highest rank is on the last pipeline stage whatever the rank order (``tp-cp-ep-dp-pp`` or
#:   ``--use-tp-pp-dp-mapping``'s ``tp-cp-ep-pp-dp``, megatron/training/initialize.py)
#: - ``memory/max_reserved(GiB)``: torchtitan's TensorBoard and W&B scalars come from one rank, the first rank of
#:   the last pipeline stage (torchtitan/components/metrics.py ``_get_metrics_rank`` @ b5bcd76c), for the 1F1B and
#:   Interleaved1F1B schedules runplan exports (not ZBVZeroBubble: rank 0; not ``save_for_all_ranks``)
#: - ``max allocated (MB)``: ``report_memory`` prints on data-parallel rank 0 of every pipeline stage (Megatron-LM
#:   megatron/training/utils/common_utils.py @ d98e8a64, Megatron-DeepSpeed megatron/utils.py @ 4efb479d) and
#:   the reader keeps the largest (docs/monitor.md)
_LOGGED_STAGE = {
    "mem-max-allocated-bytes": "last",
    "memory/max_reserved(GiB)": "last",
    "max allocated (MB)": "max",
}


def _planned_stage(as_written: str, best: LayoutEstimate) -> tuple[str, float, str, list[str]]:
    """(the plan's figure by its JSON key, its total bytes, which stage in words, warnings) to compare a log's peak
    memory with. Where the log names its stage (:data:`_LOGGED_STAGE`), that stage's total; where it does not and
    p > 1, the most loaded stage's, with a warning. A plan written before ``memory_total_bytes_by_stage`` (None)
    compares with the most loaded stage and warns where the log's stage is known to be the other one."""
    stage = _LOGGED_STAGE.get(as_written)
    total = float(best.memory_bytes.total)
    if best.pp == 1:
        return "memory_bytes.total", total, "its one pipeline stage", []
    most = f"{best.memory_stage} stage, the most loaded of {best.pp}"
    by_stage = best.memory_total_bytes_by_stage
    if stage == "max":
        return "memory_bytes.total", total, f"{most}: the log's is the largest of every stage's", []
    if stage is not None and by_stage is not None:
        figure = f"memory_total_bytes_by_stage.{stage}"
        return (
            figure,
            float(getattr(by_stage, stage)),
            f"{stage} stage of {best.pp}, the one the log's peak is from",
            [],
        )
    if stage is not None:  # a plan from before the per-stage totals
        return "memory_bytes.total", total, most, _other_stage(as_written, best.pp, best.memory_stage)
    other = "last" if best.memory_stage == "first" else "first"
    also = (
        f"; the {other} stage's total is {getattr(by_stage, other) / 1e9:.1f} GB"
        if by_stage is not None
        else ""
    )
    return (
        "memory_bytes.total",
        total,
        most,
        [
            f"the log does not say which of the {best.pp} pipeline stages its peak memory ({as_written}) is: it is "
            f"compared with the most loaded stage's ({best.memory_stage}){also}"
        ],
    )


def _other_stage(as_written: str, pp: int, plan_stage: str) -> list[str]:
    """A warning when the log's peak memory is known to be another pipeline stage's than the plan's figure (the most
    loaded stage's) and the plan has no per-stage totals: the two are different GPUs, so their difference is not
    the memory model's error."""
    stage = _LOGGED_STAGE.get(as_written)
    if pp < 2 or stage is None or stage == plan_stage:
        return []
    return [
        f"the log's peak memory ({as_written}) is the {stage} pipeline stage's, the plan's the {plan_stage} "
        f"stage's, the most loaded of its {pp}: they are different GPUs, so the difference is not the memory "
        "model's error (a plan written before memory_total_bytes_by_stage; plan it again to compare the same stage)"
    ]


#: How each engine that prints an MFU counts it, for the note. llm.c (karpathy/llm.c @ f1e2ace6, train_gpt2.cu
#: ``gpt2_estimate_mfu``): 6 × every parameter (embeddings and biases included) + 6·L·C·T per token, at the bf16
#: peak of its own GPU table (llmc/mfu.h ``get_flops_promised``)
_OWN_MFU = {
    "torchtitan": "torchtitan: 6 × non-embedding parameters + attention at its bf16 peak",
    "llmc": "llm.c: 6 × all parameters + 6·L·C·T at the bf16 peak of its GPU table",
}


def _own_mfu(log: MetricLog, plan: RunPlan, out: dict[str, Any], gpus: int) -> dict[str, str]:
    """The engine's own MFU (torchtitan's ``mfu``) beside the plan's definition (docs/parallel.md: PaLM model
    FLOPs per token × tokens/s ÷ (GPUs × bf16 peak)), with the difference explained. torchtitan (metrics.py @
    73a0e697) prints mfu = FLOPs/token × tps ÷ peak and tflops = FLOPs/token × tps ÷ 1e12, so its FLOPs per token
    are tflops × 1e12 ÷ tps and its peak tflops × 1e12 ÷ mfu; the plan's peak is its FLOPs per token × planned
    tokens/s ÷ (GPUs × planned MFU). The ratio of the two MFUs is the ratio of FLOPs per token × the inverse ratio
    of peaks × the ratio of the tokens/s each reads (the log's over its interval, here the median step time).
    Medians over the same steps as the step time (:func:`_recent`). Sets ``logged_mfu``; returns the note."""
    if not log.has("mfu"):
        return {}
    last = int(log.steps[-1])
    stage = _stage_at(plan, last)

    def recent(name: str) -> float | None:
        if not log.has(name):
            return None
        steps, values = log.points(name)
        keep = _recent(log, steps, last, stage)[0]
        return float(np.median(values[keep] if keep.any() else values))

    own, mfu = recent("mfu"), out["mfu"]
    out["logged_mfu"] = own
    tflops, tps = recent("tflops_per_gpu"), recent("tokens_per_second_per_gpu")
    if own is None or mfu is None or not own > 0:
        return {}
    head = f"the log's own MFU {own:.1%} against {mfu:.1%} here"
    if tflops is None or tps is None or not tps > 0:
        return {
            "logged_mfu": f"{head} (×{own / mfu:.3f}): the engine counts its own FLOPs per token and peak "
            f"({_OWN_MFU.get(log.format, 'by its own count')}), the plan PaLM's (docs/parallel.md)"
        }
    best = plan.layout.best
    flops, plan_flops = tflops * 1e12 / tps, float(plan.model.flops_per_token)
    peak, plan_peak = tflops * 1e12 / own, plan_flops * best.tokens_per_second / (gpus * best.mfu)
    rest = own / mfu / (flops / plan_flops) / (plan_peak / peak)
    return {
        "logged_mfu": f"{head}: it counts {flops:.4g} FLOPs per token (tflops ÷ tps) against the plan's "
        f"{plan_flops:.4g} (×{flops / plan_flops:.3f}), at a {peak / 1e12:.0f} TFLOP/s peak (tflops ÷ mfu) against "
        f"{plan_peak / 1e12:.0f} TFLOP/s (×{plan_peak / peak:.3f}); the tokens/s each reads ×{rest:.3f} (its "
        "interval's mean per GPU against the median step time here)"
    }


#: Megatron-LM's per-GPU TFLOP/s as written (megatron/training/training.py ``training_log`` @ d98e8a64)
MEGATRON_TFLOPS = "throughput per GPU (TFLOP/s/GPU)"


def _megatron_flops(
    log: MetricLog, plan: RunPlan, out: dict[str, Any], gpus: int, tokens_per_step: float
) -> dict[str, str]:
    """Megatron-LM's own TFLOP/s per GPU beside the plan's count at the measured speed, with the gap explained.
    Megatron prints throughput = its FLOPs per step ÷ (elapsed time per iteration × 10^12 × world size), both from
    the same interval, so TFLOP/s/GPU × step time × 10^12 × GPUs (the plan's) ÷ tokens per step is its FLOPs per
    token, exact up to the printed rounding. That is set against the plan's (PaLM, docs/parallel.md) and against
    Megatron's formula on the plan's shape (engine_flops.py: causal attention at half, no norms, biases or router,
    no recompute); what is left is a padded vocabulary, or another model, sequence length or GPU count. Medians
    over the last 1,000 steps at the last logged batch (or the plan's batch stage), as the step time. Sets ``logged_tflops_per_gpu``."""
    as_written = log.source_names.get("tflops_per_gpu", "")
    if normalise(as_written) != normalise(MEGATRON_TFLOPS) or out["tokens_per_second"] is None:
        return {}
    if not log.has("step_seconds"):
        return {}
    tflops, seconds = log.values["tflops_per_gpu"], log.values["step_seconds"]
    both = np.isfinite(tflops) & np.isfinite(seconds) & (tflops > 0) & (seconds > 0)
    if not both.any():
        return {}
    last = int(log.steps[-1])
    keep = _recent(log, log.steps[both], last, _stage_at(plan, last))[0]
    keep = keep if keep.any() else np.ones_like(keep)
    own = float(np.median(tflops[both][keep]))
    out["logged_tflops_per_gpu"] = own
    flops = float(np.median((tflops * seconds)[both][keep])) * 1e12 * gpus / tokens_per_step
    plan_flops = float(plan.model.flops_per_token)
    seq_len = round(
        plan.schedule.batch_stages[-1].global_batch_tokens
        / plan.schedule.batch_stages[-1].global_batch_sequences
    )
    shape = plan.model.shape
    formula = megatron_flops_per_token(shape, seq_len)
    plan_tflops = plan_flops * out["tokens_per_second"] / gpus / 1e12
    # Megatron's count has no window term; the plan's counts a windowed layer at 2w - w²/s (model.window_context)
    window = ", no sliding window" if 0 < shape.sliding_window < seq_len else ""
    return {
        "logged_tflops_per_gpu": f"Megatron's own {own:.1f} TFLOP/s per GPU against {plan_tflops:.1f} by the "
        f"plan's count ({plan_flops:.4g} FLOPs per token × {out['tokens_per_second']:,.0f} tokens/s ÷ {gpus:,} "
        f"GPUs): it counts {flops:.4g} FLOPs per token (TFLOP/s/GPU × step time × {gpus:,} GPUs ÷ "
        f"{tokens_per_step:,.0f} tokens) against the plan's {plan_flops:.4g} (×{flops / plan_flops:.3f}); "
        f"{formula:.4g} by Megatron's formula on the plan's shape (×{formula / plan_flops:.3f}: causal attention "
        f"at half, no norms, biases or router, no recompute{window}), the rest ×{flops / formula:.3f} (a padded "
        "vocabulary; more: another model, sequence length or GPU count)"
    }
