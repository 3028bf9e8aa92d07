"""Peak memory, the engine's own MFU and DeepSpeed's samples/s, read from the logs as the engines print them and
compared with the plan (docs/monitor.md, "With --plan").

Hand-derived numbers against ``examples/70b-512-h100.yaml`` (``runplan plan ... -f json``): the best layout's
``memory_bytes.total`` is 72,689,341,952 bytes on the first stage, of which ``other`` is the 3e9-byte reserve
(``constraints.reserve_bytes``); the model's FLOPs per token are 449,230,454,784 (PaLM: 6 × matmul params +
attention at 4,096 tokens); 512 H100-SXM at 989 TFLOP/s bf16.
"""

from __future__ import annotations

import math

import pytest
from tests.monitor.test_engine_log_lines_as_printed import (
    ds_pipe,
    ds_progress,
    mds_line,
)

from runplan.monitor.readers import read_logs

GIB = 2**30
MIB = 2**20
PLAN_TOTAL = 72_689_341_952.0
PLAN_RESERVE = 3e9
PLAN_FLOPS_PER_TOKEN = 449_230_454_784.0
H100_PEAK = 989e12
RESET = "\x1b[39m"


def titan_line(step: int, tps: float, flops_per_token: float, mem_gib: float, peak: float = H100_PEAK) -> str:
    """torchtitan v0.2.2 ``MetricsProcessor.log`` (metrics.py, commit 73a0e697): tflops = FLOPs/token × tps / 1e12,
    mfu = 100 × FLOPs/token × tps / peak, memory = max reserved GiB (2^30) over the interval."""
    tflops = flops_per_token * tps / 1e12
    mfu = 100 * flops_per_token * tps / peak
    return (
        f"[rank0]:[titan] 2025-10-01 12:00:00,123 - root - INFO - \x1b[31mstep: {step:2}  "
        f"\x1b[32mloss: {8.0 - 0.001 * step:8.5f}  \x1b[33mgrad_norm: {1.0:7.4f}  "
        f"\x1b[36mmemory: {mem_gib:5.2f}GiB({100 * mem_gib / 79.19:.2f}%)  "
        f"\x1b[34mtps: {round(tps):,}  \x1b[36mtflops: {tflops:,.2f}  \x1b[35mmfu: {mfu:.2f}%{RESET}"
    )


def _titan_log(tmp_path, flops_per_token: float = 4.6e11, steps: int = 60):
    path = tmp_path / "titan.log"
    mems = [60.0 + 0.01 * (step % 7) for step in range(1, steps + 1)]
    mems[29] = 61.23  # the peak, at step 30
    lines = [titan_line(step, 800, flops_per_token, mems[step - 1]) for step in range(1, steps + 1)]
    path.write_text("\n".join(lines) + "\n")
    return path


def _plan():
    from runplan.cli.common import plan_from_file

    return plan_from_file("examples/70b-512-h100.yaml")[2]


def test_torchtitan_memory_is_read_as_peak_reserved_bytes(tmp_path):
    """``memory: 61.23GiB(77.32%)`` is ``max_reserved_gib`` (reserved_bytes.all.peak ÷ 2^30)."""
    log = read_logs([_titan_log(tmp_path)])
    assert log.values["peak_memory_reserved_bytes"][29] == pytest.approx(61.23 * GIB)
    assert log.values["peak_memory_reserved_bytes"][0] == pytest.approx(60.01 * GIB)
    assert log.source_names["peak_memory_reserved_bytes"] == "memory(GiB)"


def test_torchtitan_peak_memory_against_the_plan_is_said_with_both_numbers(tmp_path):
    """61.23 GiB = 65,745,216,307 bytes (65.75 GB), the log's max; the plan's reserved-comparable figure is
    memory_bytes.total (it holds the 3 GB reserve): 72.69 GB; 65.745 / 72.689 − 1 = −9.55%."""
    from runplan.monitor.render import vs_plan_text
    from runplan.monitor.vs_plan import compare

    out = compare(read_logs([_titan_log(tmp_path)]), _plan())
    assert out["peak_memory_bytes"] == pytest.approx(61.23 * GIB)
    assert out["peak_memory_kind"] == "reserved"
    assert out["planned_memory_bytes"] == pytest.approx(PLAN_TOTAL)
    note = out["notes"]["peak_memory"]
    assert "61.23 GiB" in note and "65.7 GB" in note and "72.7 GB" in note and "-9.6%" in note
    assert "step 30" in note
    assert vs_plan_text(out).splitlines()[1] == note


@pytest.mark.parametrize("memory_first", [False, True])
def test_megatron_report_memory_max_allocated_is_read_in_mib(tmp_path, memory_first):
    """``report_memory`` (megatron/training/utils/common_utils.py @ d98e8a64): MB = 1024 × 1024 bytes; every
    pipeline stage's data-parallel rank 0 prints one line: the most loaded is the peak (the plan's stage). The
    iteration line is the last rank's (``print_rank_last``), so rank 0's report can reach the file before it."""
    lines = []
    lines.append(
        "[Rank 0] (after 1 iterations) memory (MB) | allocated: 20512.5 | max allocated: 51234.25 | "
        "reserved: 60000.0 | max reserved: 60000.0"
    )
    lines.append(
        "[Rank 4] (after 1 iterations) memory (MB) | allocated: 20512.5 | max allocated: 61234.50 | "
        "reserved: 70000.0 | max reserved: 70000.0"
    )
    lines.insert(len(lines) if memory_first else 0, mds_line(1, 7000.0, 6.0, 0.9))
    lines += [mds_line(it, 7000.0, 6.0 - 0.001 * it, 0.9) for it in range(2, 30)]
    path = tmp_path / "mds.log"
    path.write_text("\n".join(lines) + "\n")
    log = read_logs([path])
    assert log.repeated_steps == 0 and log.restarts == []
    assert log.steps.tolist() == list(range(1, 30))
    assert log.values["peak_memory_allocated_bytes"][0] == pytest.approx(61234.50 * MIB)
    assert log.values["loss"][0] == pytest.approx(6.0)


def test_allocated_peak_is_compared_without_the_reserve(tmp_path):
    """max allocated holds no CUDA context, NCCL buffers or allocator slack: the plan's 72.689 GB less its 3 GB
    reserve = 69.689 GB; 61,234.5 MiB = 64,209,305,600 bytes: 64.209 / 69.689 − 1 = −7.86%."""
    from runplan.monitor.vs_plan import compare

    lines = []
    for it in range(1, 30):
        lines.append(mds_line(it, 7000.0, 6.0 - 0.001 * it, 0.9))
        if it == 1:
            lines.append(
                "[Rank 0] (after 1 iterations) memory (MB) | allocated: 20512.5 | max allocated: 61234.50 | "
                "reserved: 70000.0 | max reserved: 70000.0"
            )
    path = tmp_path / "mds.log"
    path.write_text("\n".join(lines) + "\n")
    out = compare(read_logs([path]), _plan())
    assert out["peak_memory_kind"] == "allocated"
    assert out["planned_memory_bytes"] == pytest.approx(PLAN_TOTAL - PLAN_RESERVE)
    assert "-7.9%" in out["notes"]["peak_memory"] and "reserve" in out["notes"]["peak_memory"]


def test_torchtitan_mfu_is_compared_with_the_plans_and_the_difference_explained(tmp_path):
    """tps 800 per GPU: the plan's MFU = 449,230,454,784 × 800 ÷ 989e12 = 36.338%; torchtitan's = 4.6e11 × 800 ÷
    989e12 = 37.209% (printed 37.21). tflops 368.00 ÷ tps 800 = 4.6e11 FLOPs/token (×1.024 the plan's); peak =
    368.00e12 ÷ 0.3721 = 989 TFLOP/s (×1.000)."""
    from runplan.monitor.render import vs_plan_text
    from runplan.monitor.vs_plan import compare

    out = compare(read_logs([_titan_log(tmp_path)]), _plan())
    assert out["mfu"] == pytest.approx(PLAN_FLOPS_PER_TOKEN * 800 / H100_PEAK, rel=1e-6)
    assert out["logged_mfu"] == pytest.approx(0.3721)
    note = out["notes"]["logged_mfu"]
    assert "4.6e+11" in note and "4.492e+11" in note and "×1.024" in note
    assert "989 TFLOP/s" in note
    speed, *lines = vs_plan_text(out).splitlines()
    assert "MFU 36.3% (planned 53.5%; the log's own 37.2%)" in speed
    assert lines[-1] == note  # the explanation once, on its own line; `mfu` stays the plan's definition


def test_log_without_its_own_mfu_has_no_logged_mfu(tmp_path):
    from runplan.monitor.vs_plan import compare

    path = tmp_path / "mds.log"
    path.write_text("\n".join(mds_line(it, 7000.0, 6.0, 0.9) for it in range(1, 30)) + "\n")
    out = compare(read_logs([path]), _plan())
    assert out["logged_mfu"] is None and "logged_mfu" not in out["notes"]
    assert out["peak_memory_bytes"] is None


def ds_timer(step: int, samples_per_second: float, max_gib: float) -> str:
    """``ThroughputTimer.stop`` (deepspeed/utils/timer.py @ 38327e07): batch_size = train_batch_size() (the
    global batch), so CurrSamplesPerSec is whole-job sequences/s; MaxMemAllocated is max_memory_allocated / 1024**3
    (GiB, though printed "GB")."""
    return (
        "[2025-10-01 12:00:00,000] [INFO] [timer.py:264:stop] "
        f"epoch=0/micro_step={8 * step}/global_step={step}, RunningAvgSamplesPerSec=146.1, "
        f"CurrSamplesPerSec={samples_per_second}, MemAllocated=12.34GB, MaxMemAllocated={max_gib}GB"
    )


def test_deepspeed_samples_per_second_is_read_and_gives_tokens_per_second_with_the_plan(tmp_path):
    """No step time in the log: tokens/s = CurrSamplesPerSec × the plan's 4,096-token sequence = 146.2 × 4,096 =
    598,835.2; step time = the ramp stage's 2,624 sequences ÷ 146.2 = 17.948 s."""
    from runplan.monitor.vs_plan import compare

    lines = []
    for step in range(1, 41):
        lines += [ds_progress(step, 3e-4), ds_timer(step, 146.2, 40.5 if step != 20 else 41.25)]
    path = tmp_path / "ds_engine.log"
    path.write_text("\n".join(lines) + "\n")
    log = read_logs([path])
    assert log.format == "deepspeed" and log.steps.tolist() == list(range(1, 41))
    assert log.values["samples_per_second"][0] == pytest.approx(146.2)
    assert log.values["peak_memory_allocated_bytes"][19] == pytest.approx(41.25 * GIB)
    out = compare(log, _plan())
    assert out["tokens_per_second"] == pytest.approx(146.2 * 4096)
    assert out["step_seconds"] == pytest.approx(2624 / 146.2)
    assert out["peak_memory_bytes"] == pytest.approx(41.25 * GIB)


def test_deepspeed_pipeline_samples_per_sec_is_read_once_per_step(tmp_path):
    """``steps: N ... samples/sec: S`` (pipe/engine.py): train_batch_size() ÷ iter time, whole-job sequences/s;
    1,024 / 7 = 146.286 (printed to 3 decimals). With the timer line too, the step is timed twice: the timer's
    (first in the file) is read, the step is not taken for one logged twice, and the timer line joins the
    engine's row at its step, so an abandoned attempt's step still counts as the two rows it always did."""
    path = tmp_path / "ds.log"
    path.write_text("\n".join(ds_pipe(step, 6.0, 7.0) for step in range(1, 41)) + "\n")
    assert read_logs([path]).values["samples_per_second"][0] == pytest.approx(146.286)
    lines = []
    for step in range(1, 41):
        lines += [ds_progress(step, 3e-4), ds_timer(step, 146.2, 40.5), ds_pipe(step, 6.0, 7.0)]
    path.write_text("\n".join(lines) + "\n")
    log = read_logs([path])
    assert log.values["samples_per_second"][0] == pytest.approx(146.2)
    assert log.repeated_steps == 0 and log.restarts == []
    assert not any("not used" in note for note in log.notes)
    lines = [line for step in range(1, 41) for line in (ds_pipe(step, 6.0, 7.0), ds_timer(step, 146.2, 40.5))]
    path.write_text("\n".join(lines) + "\n")  # the pipeline line first: its samples/s is read, and once
    log = read_logs([path])
    assert log.values["samples_per_second"][0] == pytest.approx(146.286)
    assert log.values["peak_memory_allocated_bytes"][0] == pytest.approx(40.5 * GIB)
    assert log.repeated_steps == 0 and log.restarts == []


def test_plan_peak_is_derived_from_the_plans_own_numbers():
    """The plan's MFU implies its peak: FLOPs/token × tokens/s ÷ (GPUs × MFU) = 989 TFLOP/s for H100 SXM."""
    plan = _plan()
    best = plan.layout.best
    peak = plan.model.flops_per_token * best.tokens_per_second / (512 * best.mfu)
    assert math.isclose(peak, H100_PEAK, rel_tol=1e-9)


MIXTRAL = "mixtral_8x7b_alltoall_tp2pp4ep4_release.dgx_h100.json"


def test_deepspeed_samples_per_second_alone_feeds_the_throughput_detector(tmp_path):
    """A DeepSpeed engine log without the pipeline line has no step time: its samples/s stand in (1/samples/s is
    proportional to the step time). 146.2 → 138.0 samples/s from step 91 on, to the end: the step time is
    146.2 / 138.0 − 1 = +5.9%, past the 3% threshold: a throughput drop still open at the end (quarantine)."""
    from runplan.monitor.analyse import analyse, checkpoints_for
    from runplan.monitor.thresholds import Thresholds

    lines = []
    for step in range(1, 101):
        lines += [ds_progress(step, 3e-4), ds_timer(step, 146.2 if step < 91 else 138.0, 40.5)]
    path = tmp_path / "ds_engine.log"
    path.write_text("\n".join(lines) + "\n")
    log = read_logs([path])
    report = analyse(log, Thresholds(), checkpoints_for(log, None, None))
    drops = [event for event in report.events if event.kind == "throughput_drop"]
    assert [(event.start_step, event.action) for event in drops] == [(91, "quarantine")]
    assert drops[0].value == pytest.approx(138.0)


def test_deepspeed_timer_line_of_every_rank_is_one_record(tmp_path):
    """``ThroughputTimer`` logs through ``logger.info`` on every rank (timer.py @ 38327e07: ``logging_fn`` None), so
    a launcher's merged output holds its line once per rank at each step, around rank 0's pipeline line: one
    record, not a step logged twice; its peak memory is the largest rank's (41.0 GiB), its samples/s the first."""
    lines = []
    for step in range(1, 41):
        lines += [ds_progress(step, 3e-4), ds_timer(step, 146.2, 40.5), ds_pipe(step, 6.0, 7.0)]
        lines += [ds_timer(step, 146.1, 41.0), ds_timer(step, 146.3, 39.0)]
    path = tmp_path / "ds_ranks.log"
    path.write_text("\n".join(lines) + "\n")
    log = read_logs([path])
    assert log.repeated_steps == 0 and log.restarts == []
    assert log.steps.tolist() == list(range(1, 41))
    assert log.values["peak_memory_allocated_bytes"][0] == pytest.approx(41.0 * GIB)
    assert log.values["samples_per_second"][0] == pytest.approx(146.2)


def test_a_resumed_deepspeed_runs_timer_lines_take_the_engines_steps(tmp_path):
    # resumed at step 1,000: the engine prints step=1001.., its ThroughputTimer counts this process's steps from
    # 1 (timer.py global_step_count is never loaded from the checkpoint); read at the timer's own count they were
    # 50 restarts and the engine's rows an "abandoned attempt"
    lines = []
    for step in range(1001, 1051):
        lines += [ds_progress(step, 3e-4), ds_timer(step - 1000, 146.2, 40.5 if step != 1020 else 41.25)]
    path = tmp_path / "ds_resumed.log"
    path.write_text("\n".join(lines) + "\n")
    log = read_logs([path])
    assert log.steps.tolist() == list(range(1001, 1051))
    assert not log.restarts
    assert log.values["samples_per_second"][0] == pytest.approx(146.2)
    assert log.values["peak_memory_allocated_bytes"][19] == pytest.approx(41.25 * GIB)


def test_timer_lines_alone_keep_their_own_count(tmp_path):
    # (a log grepped down to the timer's lines is not recognised on its own: named with --format)
    path = tmp_path / "timer_only.log"
    path.write_text("\n".join(ds_timer(step, 146.2, 40.5) for step in range(1, 31)) + "\n")
    assert read_logs([path], "deepspeed").steps.tolist() == list(range(1, 31))
