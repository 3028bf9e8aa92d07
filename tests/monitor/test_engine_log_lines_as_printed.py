"""torchtitan and (Megatron-)DeepSpeed logs as the engines print them, byte for byte, read with every number checked.

Line formats, from the engines' code:
- torchtitan v0.2.2 (tag v0.2.2, commit 73a0e697), ``torchtitan/components/metrics.py`` ``MetricsProcessor.log``;
  the logger's ``[titan] %(asctime)s - %(name)s - %(levelname)s - %(message)s`` (``torchtitan/tools/logging.py``);
  the colours of ``torchtitan/tools/utils.py`` ``Color``; ``run_train.sh`` runs ``torchrun --role rank --tee 3``,
  which puts ``[rank<N>]:`` before every line of rank N. With pipeline parallelism, a stage that has no loss
  returns ``torch.tensor([-1.0])`` per microbatch (``torchtitan/train.py`` ``forward_backward_step``), summed
  over the microbatches, so a first-stage rank prints a negative loss.
- Megatron-DeepSpeed (commit 4efb479d), ``megatron/training.py`` ``training_log`` and ``evaluate_and_print_results``;
  ``megatron/utils.py`` ``report_memory`` (``[Rank N] (after N iterations) memory (MB) | allocated: ...``, printed
  once, right after the first logged iteration, by every data-parallel rank 0).
- DeepSpeed (commit edaa7221), ``deepspeed/monitor/csv_monitor.py``: one file per event, header ``step,<leaf>``,
  with the engine's events at ``self.global_samples`` (``deepspeed/runtime/engine.py``: ``Train/Samples/lr``).
"""

from __future__ import annotations

import math

import pytest

from runplan.monitor.analyse import analyse, checkpoints_for
from runplan.monitor.readers import read_logs
from runplan.monitor.thresholds import Thresholds

RED, GREEN, BLUE, CYAN, MAGENTA, RESET = (
    "\033[31m",
    "\033[32m",
    "\033[34m",
    "\033[36m",
    "\033[35m",
    "\033[39m",
)
ORANGE, TURQUOISE = "\033[38;2;180;60;0m", "\033[38;2;54;234;195m"


def titan_line(rank: int, step: int, loss: float, grad_norm: float, tps: float, mfu: float) -> str:
    """One torchtitan v0.2.2 training line, as ``MetricsProcessor.log`` formats it, behind torchrun's prefix."""
    mem_gib, mem_pct, tflops = 61.23, 77.37, 400.0
    return (
        f"[rank{rank}]:[titan] 2025-10-01 12:{step // 60 % 60:02d}:{step % 60:02d},123 - root - INFO - "
        f"{RED}step: {step:2}  "
        f"{GREEN}loss: {loss:8.5f}  "
        f"{ORANGE}grad_norm: {grad_norm:7.4f}  "
        f"{TURQUOISE}memory: {mem_gib:5.2f}GiB"
        f"({mem_pct:.2f}%)  "
        f"{BLUE}tps: {round(tps):,}  "
        f"{CYAN}tflops: {tflops:,.2f}  "
        f"{MAGENTA}mfu: {mfu:.2f}%{RESET}"
    )


def titan_loss(step: int) -> float:
    return 8.0 - 0.002 * step + 0.01 * math.sin(1.7 * step)


def test_torchtitan_line_values_and_units(tmp_path):
    path = tmp_path / "titan.log"
    path.write_text(
        titan_line(0, 1, 10.5, 3.25, 1234.4, 40.41) + "\n" + titan_line(0, 2, 10.25, 2.5, 12345.6, 40.5)
    )
    log = read_logs([path])
    assert log.format == "torchtitan"
    assert log.steps.tolist() == [1, 2]
    assert log.values["loss"].tolist() == [10.5, 10.25]
    assert log.values["grad_norm"].tolist() == [3.25, 2.5]
    # tps is printed rounded with a thousands comma; it is tokens/s per GPU (metrics.py divides by the
    # non-data-parallel size the tokens of one data-parallel rank)
    assert log.values["tokens_per_second_per_gpu"].tolist() == [1234.0, 12346.0]
    assert log.values["mfu"].tolist() == pytest.approx([0.4041, 0.405])  # printed in %


def _pipeline_log(first_stage_first: bool) -> str:
    """LOG_RANK=0,4 on 8 GPUs with 2 pipeline stages (as ``ensure_pp_loss_visible`` asks): rank 0, the first
    stage, prints -1 per microbatch (8 microbatches: -8.0); rank 4, the last stage, the loss."""
    lines = []
    for step in range(1, 301):
        loss = titan_loss(step) * (1.5 if step == 250 else 1.0)
        first = titan_line(0, step, -8.0, 1.0, 1178, 40.4)
        last = titan_line(4, step, loss, 1.0, 1178, 40.4)
        lines += [first, last] if first_stage_first else [last, first]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("first_stage_first", [True, False])
def test_torchtitan_pipeline_stage_without_loss_is_not_read_as_the_loss(tmp_path, first_stage_first):
    path = tmp_path / "titan_pp.log"
    path.write_text(_pipeline_log(first_stage_first))
    log = read_logs([path])
    assert log.values["loss"][0] == pytest.approx(titan_loss(1), abs=5e-6)
    assert log.values["loss"].min() > 0
    assert log.repeated_steps == 0
    assert any("rank 4" in note for note in log.notes)
    report = analyse(log, Thresholds(), checkpoints_for(log, None, None))
    spikes = [event for event in report.events if event.kind == "loss_spike"]
    assert [event.start_step for event in spikes] == [250]


def test_torchtitan_only_a_first_stage_logged_leaves_the_loss_out_and_says_why(tmp_path):
    path = tmp_path / "titan_rank0.log"
    path.write_text("\n".join(titan_line(0, step, -8.0, 1.0, 1178, 40.4) for step in range(1, 51)) + "\n")
    log = read_logs([path])
    assert "loss" not in log.values
    assert any("LOG_RANK" in note and "-8" in note for note in log.notes)


def test_torchtitan_two_ranks_whose_lines_come_out_of_order_are_not_a_restart(tmp_path):
    """LOG_RANK=0,1: rank 1's output reaches the file late (torchrun tees each rank through its own pipe)."""
    rank0 = [titan_line(0, step, titan_loss(step), 1.0, 1178, 40.4) for step in range(1, 101)]
    rank1 = [titan_line(1, step, titan_loss(step), 1.0, 1181, 40.5) for step in range(1, 101)]
    path = tmp_path / "titan_2ranks.log"
    path.write_text("\n".join(rank0[:60] + rank1[:50] + rank0[60:] + rank1[50:]) + "\n")
    log = read_logs([path])
    assert log.restarts == [] and log.repeated_steps == 0
    assert log.steps.tolist() == list(range(1, 101))
    assert set(log.values["tokens_per_second_per_gpu"].tolist()) == {1178.0}  # rank 0's, one rank read


def mds_line(iteration: int, ms: float, loss: float, grad_norm: float) -> str:
    """One Megatron-DeepSpeed ``training_log`` line (bf16: loss scale 1.0), 512 GPUs, 1,024 × 2,048 tokens: the
    engine's ``.format`` fields, as f-strings with the same format specs."""
    consumed = 1024 * iteration
    samples_per_second = 1024 / (ms / 1000)
    s = f" iteration {iteration:8d}/{100000:8d} |"
    s += f" consumed samples: {consumed:12d} |"
    s += f" consumed tokens: {consumed * 2048:12d} |"
    s += f" elapsed time per iteration (ms): {ms:.1f} |"
    s += f" learning rate: {3e-4 * min(1.0, iteration / 100):.3E} |"
    s += f" global batch size: {1024:5d} |"
    s += " {}: {:.6E} |".format("lm loss", loss)
    s += f" loss scale: {1.0:.1f} |"
    s += f" grad norm: {grad_norm:.3f} |"
    s += f" actual seqlen: {2048:5d} |"
    s += f" number of skipped iterations: {0:3d} |"
    s += f" number of nan iterations: {0:3d} |"
    s += f" samples per second: {samples_per_second:.3f} |"
    s += f" tokens per gpu per second (tgs): {samples_per_second * 2048 / 512:.3f} |"
    s += f" TFLOPs: {400.0:.2f} |"
    return s


def mds_validation(iteration: int, loss: float) -> list[str]:
    string = f" validation loss at iteration {iteration} | "
    string += "{} value: {:.6E} | ".format("lm loss", loss)
    string += "{} PPL: {:.6E} | ".format("lm loss", math.exp(loss))
    return ["-" * (len(string) + 1), string, "-" * (len(string) + 1)]


def _mds_log(steps: int = 300) -> str:
    lines = ["[before the start of training step] datetime: 2025-10-01 12:00:00 "]
    for it in range(1, steps + 1):
        ms = 15000.0 if it == 200 else 7000.0
        lines.append(mds_line(it, ms, 6.0 - 0.001 * it, 0.9))
        if it == 1:
            lines.append(
                "[Rank 0] (after 1 iterations) memory (MB) | allocated: 20512.5 | max allocated: 51234.25 | "
                "reserved: 60000.0 | max reserved: 60000.0"
            )
        if it % 100 == 0:
            lines.append(f"saving checkpoint at iteration     {it} to /ckpt")
            lines += mds_validation(it, 6.05 - 0.001 * it)
    return "\n".join(lines) + "\n"


def test_megatron_memory_report_after_the_first_iteration_does_not_cut_it(tmp_path):
    path = tmp_path / "mds.log"
    path.write_text(_mds_log())
    log = read_logs([path])
    assert log.format == "megatron"
    assert int(log.steps[0]) == 1
    assert not any("cut short" in note for note in log.notes)
    assert log.values["step_seconds"][0] == pytest.approx(7.0)
    assert log.values["lr"][0] == pytest.approx(3e-6)
    assert log.values["loss"][0] == pytest.approx(5.999)


def test_megatron_validation_at_a_trained_step_is_not_a_step_logged_twice(tmp_path):
    path = tmp_path / "mds.log"
    path.write_text(_mds_log())
    log = read_logs([path])
    assert log.repeated_steps == 0
    assert not any("more than once" in note for note in log.notes)
    index = log.steps.tolist().index(200)
    assert log.values["val_loss"][index] == pytest.approx(5.85)
    assert log.values["loss"][index] == pytest.approx(5.8)
    assert log.saved_steps == [100, 200, 300]


def test_megatron_deepspeed_tokens_per_gpu_per_second_is_read(tmp_path):
    path = tmp_path / "mds.log"
    path.write_text(_mds_log())
    log = read_logs([path])
    # 1,024 samples / 7 s × 2,048 tokens / 512 GPUs = 585.143 tokens/s per GPU, printed to 3 decimals
    assert log.values["tokens_per_second_per_gpu"][0] == pytest.approx(585.143, abs=1e-3)


def test_megatron_goodput_counts_the_slow_step_not_the_validation_lines(tmp_path):
    """Goodput = 300 steps × the median 7 s ÷ (299 × 7 s + 15 s), hand-derived: 2,100 / 2,108 = 0.99620."""
    from runplan.monitor.vs_plan import _goodput

    path = tmp_path / "mds.log"
    path.write_text(_mds_log())
    log = read_logs([path])
    goodput = _goodput(log, log.steps, log.values["step_seconds"], 7.0)
    assert goodput == pytest.approx(2100 / 2108)


def test_deepspeed_monitor_csv_step_column_is_samples(tmp_path):
    """csv_monitor.py writes (name, value, global_samples): a 1,024-sequence batch logs 1,024, 2,048, ..."""
    path = tmp_path / "Train_Samples_train_loss.csv"
    path.write_text("step,train_loss\n" + "".join(f"{1024 * s},{6 - 0.001 * s}\n" for s in range(1, 201)))
    log = read_logs([path])
    assert log.steps.tolist() == list(range(1, 201))
    assert log.interval_steps == 1
    assert any("samples" in note for note in log.notes)


def test_deepspeed_monitor_tensorboard_tags_are_read_at_steps(tmp_path):
    """DeepSpeed's TensorBoard monitor: ``Train/Samples/train_loss`` and ``Train/Samples/lr`` at global_samples."""
    from tests.monitor.generate import event_bytes, file_version_record, record

    data = file_version_record()
    for step in range(1, 101):
        data += record(event_bytes(512 * step, "Train/Samples/train_loss", 6 - 0.001 * step))
        data += record(event_bytes(512 * step, "Train/Samples/lr", 3e-4))
    (tmp_path / "events.out.tfevents.1.host").write_bytes(data)
    log = read_logs([tmp_path])
    assert log.steps.tolist() == list(range(1, 101))
    assert log.values["loss"][9] == pytest.approx(5.99, abs=1e-6)  # float32 in the event file
    assert log.values["lr"][0] == pytest.approx(3e-4)


def test_megatron_deepspeed_tensorboard_tags_are_read(tmp_path):
    """Megatron-DeepSpeed ``training_log`` writes ``lm-loss-training/lm loss``, ``learning-rate/learning-rate``,
    ``grad-norm/grad-norm``, ``iteration-time/iteration-time`` (seconds) at the iteration; the ``... vs samples``
    and ``... vs tokens`` twins are at other x-axes and are not read."""
    from tests.monitor.generate import event_bytes, file_version_record, record

    data = file_version_record()
    for it in range(1, 51):
        data += record(event_bytes(it, "lm-loss-training/lm loss", 6 - 0.01 * it))
        data += record(event_bytes(1024 * it, "lm-loss-training/lm loss vs samples", 6 - 0.01 * it))
        data += record(event_bytes(it, "learning-rate/learning-rate", 1e-4))
        data += record(event_bytes(it, "grad-norm/grad-norm", 0.75))
        data += record(event_bytes(it, "iteration-time/iteration-time", 7.0))
    (tmp_path / "events.out.tfevents.2.host").write_bytes(data)
    log = read_logs([tmp_path])
    assert log.steps.tolist() == list(range(1, 51))
    assert log.values["loss"][0] == pytest.approx(5.99, abs=1e-6)
    assert log.values["grad_norm"][0] == 0.75 and log.values["step_seconds"][0] == 7.0
    assert log.values["lr"][0] == pytest.approx(1e-4)


def test_megatron_deepspeed_sequence_length_unlike_the_plans_is_said(tmp_path):
    """The log prints ``actual seqlen:  2048``; the 70B example plans 4,096-token sequences: tokens/s here are
    the log's batch × the plan's sequence (1,024 × 4,096 ÷ 7 s = 599,186), so the comparison must say so."""
    from runplan.cli.common import plan_from_file
    from runplan.monitor.vs_plan import compare

    path = tmp_path / "mds.log"
    path.write_text(_mds_log())
    log = read_logs([path])
    assert log.values["seq_len"][0] == 2048
    out = compare(log, plan_from_file("examples/70b-512-h100.yaml")[2])
    assert out["tokens_per_second"] == pytest.approx(1024 * 4096 / 7.0)
    assert any(
        w.startswith("the log's sequence length is 2,048 tokens, the plan's 4,096") for w in out["warnings"]
    )


DS_PREFIX = "[2025-10-01 12:00:00,000] [INFO] [logging.py:128:log_dist] "


def ds_progress(step: int, lr: float) -> str:
    """``DeepSpeedEngine._report_progress`` through ``log_dist`` (``[Rank 0] `` prefix, DeepSpeed's formatter)."""
    return DS_PREFIX + f"[Rank 0] step={step}, skipped=0, lr=[{lr}, {lr}], mom=[(0.9, 0.95), (0.9, 0.95)]"


def ds_pipe(step: int, loss: float, seconds: float) -> str:
    """``PipelineEngine.train_batch``'s ``print`` on global rank 0: 1,024 samples per step."""
    return f"steps: {step} loss: {loss:0.4f} iter time (s): {seconds:0.3f} samples/sec: {1024 / seconds:0.3f}"


def ds_timer(step: int) -> str:
    return (
        "[2025-10-01 12:00:00,000] [INFO] [timer.py:264:stop] "
        f"epoch=0/micro_step={8 * step}/global_step={step}, RunningAvgSamplesPerSec=146.1, "
        "CurrSamplesPerSec=146.2, MemAllocated=12.34GB, MaxMemAllocated=40.5GB"
    )


def _ds_log() -> str:
    lines = []
    for step in list(range(1, 181)) + list(range(151, 301)):  # a restart from step 150 after step 180
        loss = 6.0 - 0.001 * step + (2.0 if step == 250 else 0.0)
        seconds = 14.0 if step == 275 else 7.0
        lines += [ds_progress(step, 3e-4), ds_timer(step), ds_pipe(step, loss, seconds)]
    return "\n".join(lines) + "\n"


def test_deepspeed_pipeline_log_is_read(tmp_path):
    path = tmp_path / "ds.log"
    path.write_text(_ds_log())
    log = read_logs([path])
    assert log.format == "deepspeed"
    assert log.steps.tolist() == list(range(1, 301))
    assert [(r.resumed_step, r.last_step) for r in log.restarts] == [(151, 180)]
    assert log.values["loss"][9] == pytest.approx(5.99)
    assert log.values["step_seconds"][9] == 7.0 and log.values["step_seconds"][274] == 14.0
    assert log.values["lr"][9] == pytest.approx(3e-4)
    report = analyse(log, Thresholds(), checkpoints_for(log, None, None))
    kinds = {(event.kind, event.start_step) for event in report.events}
    assert ("loss_spike", 250) in kinds and ("slow_step", 275) in kinds and ("restart", 151) in kinds


def test_deepspeed_engine_log_without_a_loss_reads_the_learning_rate(tmp_path):
    path = tmp_path / "ds_engine.log"
    path.write_text("\n".join(ds_progress(step, 1e-4 * step) for step in range(10, 110, 10)) + "\n")
    log = read_logs([path])
    assert log.format == "deepspeed" and log.steps.tolist() == list(range(10, 110, 10))
    assert log.values["lr"].tolist() == pytest.approx([1e-4 * step for step in range(10, 110, 10)])
    assert "loss" not in log.values


def test_megatron_deepspeed_log_with_the_engines_own_lines_is_megatron(tmp_path):
    """Megatron-DeepSpeed runs under the DeepSpeed engine, whose lines (steps_per_print) come in between."""
    lines = []
    for it in range(1, 51):
        lines += [ds_progress(it, 3e-4), ds_pipe(it, 9.0, 70.0), mds_line(it, 7000.0, 6.0 - 0.001 * it, 0.9)]
    path = tmp_path / "mds_ds.log"
    path.write_text("\n".join(lines) + "\n")
    log = read_logs([path])
    assert log.format == "megatron"
    assert log.values["loss"][0] == pytest.approx(5.999) and log.values["step_seconds"][0] == pytest.approx(
        7.0
    )


def test_deepspeed_goodput_charges_each_abandoned_step_once(tmp_path):
    """The attempt abandoned at the restart did steps 151-180 (30 × 7 s = 210 s), each logged as two rows (the
    learning rate, the loss and step time). Goodput = 300 × 7 s ÷ (299 × 7 s + 14 s + 210 s) = 2,100 / 2,317."""
    from runplan.monitor.vs_plan import _goodput

    path = tmp_path / "ds.log"
    path.write_text(_ds_log())
    log = read_logs([path])
    assert _goodput(log, log.steps, log.values["step_seconds"], 7.0) == pytest.approx(2100 / 2317)
