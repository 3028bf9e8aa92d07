"""Hugging Face Trainer, NeMo 2 and llm.c logs as the engines print them, byte for byte, every number checked.

Formats, from the engines' code:
- llm.c (karpathy/llm.c @ f1e2ace6), ``train_gpt2.cu``: stdout ``printf0("step %4d/%d | loss %7.6f (%+.2fz)| norm
  %6.4f (%+.2fz)| lr %.2e | %.2f ms | %.1f%% bf16 MFU | %.0f tok/s\\n", step + 1, ...)`` (earlier commits: ``train
  loss %7.6f | norm %6.4f | lr ...``, the brief's line), ``printf0("val loss %f\\n")`` before the step's training;
  tokens/s = num_processes × B × T × grad_accum ÷ the step's ms (the whole job), an EMA bias-corrected from the
  second step; MFU -1 (printed ``-100.0%``) when the GPU is not in its table. ``llmc/logger.h``: ``s:%d trl:%.4f
  lr:%.6f norm:%.2f`` at the 0-based ``step``, ``s:%d tel:%.4f``; a resumed run (``-y 1``) appends to main.log.
- NeMo 2 (NVIDIA/NeMo @ 8cfedd72): ``nemo/lightning/pytorch/callbacks/progress_printer.py`` ``format_string``:
  ``Training epoch E, iteration n-1/total-1 | name: value`` with ``{val:.4}`` (an integer-valued float as an int);
  ``megatron_strategy.py`` logs ``global_step``, ``max_memory_reserved`` / ``max_memory_allocated``
  (torch.cuda.max_memory_*, bytes) and ``reduced_train_loss``; ``nemo/utils/exp_manager.py`` ``TimingCallback``:
  ``train_step_timing in s`` and ``tokens_per_sec_per_gpu`` = (global batch ÷ accumulate_grad_batches) × seq ÷
  world size ÷ step time (per GPU).
- Hugging Face transformers (``trainer.py`` ``_maybe_log_save_evaluate`` / ``log``; ``trainer_callback.py``
  ``PrinterCallback``/``ProgressCallback.on_log`` print ``str(logs)``, the dict without its step; ``log_history``
  gets ``{**logs, "step": global_step}``; TrainerState saved with ``json.dumps(indent=2, sort_keys=True)``).
"""

from __future__ import annotations

import json
import math

import pytest

from runplan.cli.app import main
from runplan.monitor.analyse import analyse, checkpoints_for
from runplan.monitor.readers import read_logs
from runplan.monitor.thresholds import Thresholds

#: train_gpt2.cu's printf0 formats (C printf: Python's % operator gives the same bytes)
LLMC_PRINTF = (
    "step %4d/%d | loss %7.6f (%+.2fz)| norm %6.4f (%+.2fz)| lr %.2e | %.2f ms | %.1f%% bf16 MFU | %.0f tok/s"
)
LLMC_OLD_PRINTF = (
    "step %4d/%d | train loss %7.6f | norm %6.4f | lr %.2e | %.2f ms | %.1f%% bf16 MFU | %.0f tok/s"
)


def llmc_line(
    step: int, total: int, loss: float, norm: float, lr: float, ms: float, mfu: float, tps: float
) -> str:
    """One line of llm.c's current ``train_gpt2.cu`` printf (z-scores as it prints them)."""
    return LLMC_PRINTF % (step, total, loss, 0.12, norm, -0.3, lr, ms, mfu, tps)


def llmc_old_line(
    step: int, total: int, loss: float, norm: float, lr: float, ms: float, mfu: float, tps: float
) -> str:
    """``train loss`` form of earlier commits (the brief's line)."""
    return LLMC_OLD_PRINTF % (step, total, loss, norm, lr, ms, mfu, tps)


def test_llmc_stdout_line_values_and_units(tmp_path):
    """step 1 printed = after one update; 312.50 ms = 0.3125 s; 45.3% = 0.453; tok/s whole job; the val loss
    printed before "step 2" (weights after 1 update) is at step 1; "-100.0%" MFU (unknown GPU) is left out."""
    path = tmp_path / "llmc.out"
    path.write_text(
        "val loss 11.012345\n"
        + llmc_line(1, 10, 11.009832, 15.4371, 6.0e-6, 1234.56, -100.0, 424712)
        + "\n"
        + "val loss 10.500000\n"
        + llmc_line(2, 10, 10.250000, 2.5000, 1.2e-5, 312.50, 45.3, 1677722)
        + "\n"
        + "total average iteration time: 312.500000 ms\n"
    )
    log = read_logs([path])
    assert log.format == "llmc"
    assert log.steps.tolist() == [0, 1, 2]
    steps, loss = log.points("loss")
    assert steps.tolist() == [1, 2] and loss.tolist() == [11.009832, 10.25]
    assert log.points("grad_norm")[1].tolist() == [15.4371, 2.5]
    assert log.points("lr")[1].tolist() == pytest.approx([6.0e-6, 1.2e-5])
    assert log.points("step_seconds")[1].tolist() == pytest.approx([1.23456, 0.3125])
    assert log.points("tokens_per_second")[1].tolist() == [424712.0, 1677722.0]
    mfu_steps, mfu = log.points("mfu")
    assert mfu_steps.tolist() == [2] and mfu.tolist() == pytest.approx([0.453])
    assert any(note.startswith("MFU is printed below 0 on 1 line") for note in log.notes)
    val_steps, val = log.points("val_loss")
    assert val_steps.tolist() == [0, 1] and val.tolist() == [11.012345, 10.5]
    assert log.total_steps == 10


def test_llmc_stdout_train_loss_form_is_read_the_same(tmp_path):
    path = tmp_path / "llmc.out"
    path.write_text(
        "\n".join(llmc_old_line(s, 40, 4.0 - 0.01 * s, 0.5, 6e-4, 250.0, 45.3, 2097152) for s in range(1, 41))
        + "\n"
    )
    log = read_logs([path])
    assert log.format == "llmc" and log.steps.tolist() == list(range(1, 41))
    assert log.points("loss")[1][-1] == pytest.approx(3.6)
    assert log.points("step_seconds")[1][0] == pytest.approx(0.25)


def _llmc_run() -> list[str]:
    """80 steps, a loss spike at 50 (×1.4 for 1 step), one slow step at 65 (250 → 400 ms); the job dies after
    step 72 and is resumed from the checkpoint at step 60 (llm.c prints "step 61/80" again)."""
    lines = []
    for step in list(range(1, 73)) + list(range(61, 81)):
        loss = 4.0 - 0.01 * step + 0.002 * math.sin(1.3 * step)
        loss *= 1.4 if step == 50 else 1.0
        ms = 400.0 if step == 65 else 250.0 + 0.5 * math.sin(2.1 * step)
        lines.append(
            llmc_line(step, 80, loss, 0.5 + 0.01 * math.sin(step), 6e-4, ms, 45.3, 2097152 * 250 / ms)
        )
    return lines


def test_llmc_stdout_spike_slow_step_and_restart(tmp_path):
    path = tmp_path / "llmc.out"
    path.write_text("\n".join(_llmc_run()) + "\n")
    log = read_logs([path])
    report = analyse(log, Thresholds(), checkpoints_for(log, 20, None))
    kinds = {(e.kind, e.start_step) for e in report.events}
    assert ("loss_spike", 50) in kinds
    assert ("slow_step", 65) in kinds  # 400 ms in both attempts
    restart = next(e for e in report.events if e.kind == "restart")
    assert (restart.start_step, restart.end_step, restart.value) == (61, 72, 12)
    spike = next(e for e in report.events if e.kind == "loss_spike")
    # loss at 50: (4.0 - 0.5 + 0.002 sin 65) × 1.4; baseline the mean of steps 1-49
    expected = (3.5 + 0.002 * math.sin(65.0)) * 1.4
    assert spike.value == pytest.approx(round(expected, 6), abs=1e-6)
    mean = sum(4.0 - 0.01 * s + 0.002 * math.sin(1.3 * s) for s in range(1, 50)) / 49
    assert spike.baseline == pytest.approx(mean, abs=1e-5)


def test_llmc_main_log_restart_and_validation(tmp_path):
    """main.log: s:N is the 0-based step (trl: the loss of update N+1's batch); a resumed run appends from the
    checkpoint step, writing its tel again at that step (step % val_loss_every == 0)."""
    lines = []
    for step in list(range(0, 30)) + list(range(20, 40)):
        if step % 10 == 0:
            lines.append("s:%d tel:%.4f" % (step, 4.5 - 0.01 * step))  # noqa: UP031 (logger.h's fprintf)
        lines.append("s:%d trl:%.4f lr:%.6f norm:%.2f" % (step, 4.0 - 0.01 * step, 6e-4, 0.5))  # noqa: UP031
    path = tmp_path / "main.log"
    path.write_text("\n".join(lines) + "\n")
    log = read_logs([path])
    assert log.format == "llmc"
    assert log.points("lr")[1][0] == pytest.approx(6e-4)
    val_steps, val = log.points("val_loss")
    assert val_steps.tolist() == [0, 10, 20, 30] and val[2] == pytest.approx(4.3)
    report = analyse(log, Thresholds(), checkpoints_for(log, 10, None))
    restart = next(e for e in report.events if e.kind == "restart")
    assert (restart.start_step, restart.end_step) == (20, 29)


def nemo_line(n: int, total: int, metrics: dict[str, float]) -> str:
    """ProgressPrinter.format_string: ``{val:.4}``, an integer-valued float as an int."""
    out = f"Training epoch 0, iteration {n - 1}/{total - 1}"
    for name, value in metrics.items():
        out += f" | {name}: {int(value)}" if float(value).is_integer() else f" | {name}: {value:.4}"
    return out


def _nemo_metrics(n: int, seconds: float = 2.5) -> dict[str, float]:
    return {
        "lr": 3e-4 * min(1.0, n / 10),
        "global_step": float(n - 1),
        "max_memory_reserved": 61234567168.0,
        "max_memory_allocated": 51234567168.0,
        "reduced_train_loss": 5.0 - 0.01 * n,
        "train_step_timing in s": seconds,
        "tokens_per_sec_per_gpu": 256 * 4096 / 64 / seconds,
        "consumed_samples": float(256 * n),
        "global_batch_size": 256.0,
    }


def test_nemo_memory_and_tokens_per_gpu_are_read(tmp_path):
    """``max_memory_reserved: 61234567168`` is bytes (torch.cuda.max_memory_reserved); ``tokens_per_sec_per_gpu``
    256 × 4096 ÷ 64 ÷ 2.5 s = 6,553.6, printed ``6.554e+03`` (4 significant digits)."""
    path = tmp_path / "nemo.log"
    path.write_text("\n".join(nemo_line(n, 100, _nemo_metrics(n)) for n in range(1, 4)) + "\n")
    assert "tokens_per_sec_per_gpu: 6.554e+03" in path.read_text()
    log = read_logs([path])
    assert log.format == "nemo" and log.steps.tolist() == [0, 1, 2]
    assert log.values["peak_memory_reserved_bytes"].tolist() == [61234567168.0] * 3
    assert log.values["peak_memory_allocated_bytes"].tolist() == [51234567168.0] * 3
    assert log.values["tokens_per_second_per_gpu"].tolist() == [6554.0] * 3
    assert log.values["step_seconds"].tolist() == [2.5] * 3
    assert log.values["lr"].tolist() == pytest.approx([3e-5, 6e-5, 9e-5])
    assert log.values["global_batch"].tolist() == [256.0] * 3


def test_hf_printed_dicts_say_to_give_trainer_state(tmp_path, capsys):
    """The Trainer prints ``str(logs)`` without the step (trainer_callback.py on_log): a one-line error that names
    trainer_state.json, exit 2, not "not valid JSON ... is it complete?"."""
    path = tmp_path / "train.out"
    lines = [str({"loss": 2.1, "grad_norm": 0.53, "learning_rate": 5e-05, "epoch": 0.01})] * 3
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(SystemExit) as exit_info:
        main(["monitor", str(path)])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert len(err.strip().splitlines()) == 1 and "trainer_state.json" in err and "step" in err
    assert "is it complete" not in err


def test_hf_printed_dicts_after_other_output_say_the_same(tmp_path, capsys):
    path = tmp_path / "train.out"
    lines = ["***** Running training *****", "  Num examples = 1,000"]
    bar = " 10%|█         | 10/100 [00:05<00:45,  2.00it/s]"
    # tqdm.write clears the bar ("\r", spaces, "\r"), writes the dict and its newline, and redraws the bar
    lines += [
        bar
        + "\r"
        + " " * len(bar)
        + "\r"
        + str({"loss": 2.1, "grad_norm": 0.53, "learning_rate": 5e-05, "epoch": 0.01})
    ] * 3
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(SystemExit) as exit_info:
        main(["monitor", str(path)])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "trainer_state.json" in err


def _hf_state(history: list[dict], **extra) -> str:
    state = {
        "best_metric": None,
        "epoch": history[-1].get("epoch", 0.0),
        "eval_steps": 200,
        "global_step": history[-1]["step"],
        "log_history": history,
        "logging_steps": 10,
        "max_steps": 1000,
        "save_steps": 250,
        "total_flos": 1.2e17,
        "train_batch_size": 8,
        **extra,
    }
    return json.dumps(state, indent=2, sort_keys=True)


def test_hf_trainer_state_with_accumulation_resume_eval_and_summary(tmp_path):
    """With gradient accumulation the step is the optimizer step (global_step); a resumed run's log_history holds
    the old entries up to its checkpoint (250) and the new ones after, no repeat; the eval entries are
    val_loss at their step; the train_runtime summary (its train_loss an average over the run) is not a point."""
    history = []
    for step in range(10, 1001, 10):
        history.append(
            {
                "epoch": step / 400,
                "grad_norm": 0.5,
                "learning_rate": 1e-4,
                "loss": 3.0 - 0.0005 * step,
                "step": step,
            }
        )
        if step % 200 == 0:
            history.append({"epoch": step / 400, "eval_loss": 2.9, "eval_runtime": 12.5, "step": step})
    history.append(
        {
            "epoch": 2.5,
            "step": 1000,
            "total_flos": 1.2e17,
            "train_loss": 9.9,
            "train_runtime": 1234.5,
            "train_samples_per_second": 51.8,
            "train_steps_per_second": 0.81,
        }
    )
    path = tmp_path / "trainer_state.json"
    path.write_text(_hf_state(history))
    log = read_logs([path])
    assert log.format == "hf" and log.interval_steps == 10
    steps, loss = log.points("loss")
    assert steps[0] == 10 and steps[-1] == 1000 and loss[-1] == pytest.approx(2.5)  # not the summary's 9.9
    assert log.points("val_loss")[0].tolist() == [200, 400, 600, 800, 1000]
    assert log.checkpoint_interval_steps == 250 and log.total_steps == 1000
    assert not log.restarts


def test_hf_trainer_state_nan_loss_before_the_first_save_says_restart_from_the_start(tmp_path):
    """json.dumps writes a NaN loss as the bare token NaN (allow_nan); three in a row: rollback. save_steps 250
    and the NaN at 151: no checkpoint is due by then (the first save is at 250), so the run restarts from its
    start; not "the oldest one kept is too new", which is about retention."""
    history = [
        {"loss": 3.0 - 0.001 * s, "grad_norm": 0.5, "learning_rate": 1e-4, "step": s} for s in range(1, 200)
    ]
    for entry in history[150:153]:
        entry["loss"] = float("nan")
    path = tmp_path / "trainer_state.json"
    path.write_text(_hf_state(history))
    assert "NaN" in path.read_text()
    log = read_logs([path])
    report = analyse(log, Thresholds(), checkpoints_for(log, None, None))
    nan = next(e for e in report.events if e.kind == "nan")
    assert (nan.start_step, nan.end_step, nan.action, nan.rollback_to_step) == (151, 153, "rollback", None)
    assert "no checkpoint is due at a step ≤ 150 (the log's save interval 250)" in nan.why
    assert "restart the run from its start" in nan.why and "too new" not in nan.why


def _plan():
    from runplan.cli.common import plan_from_file

    return plan_from_file("examples/70b-512-h100.yaml")[2]


def test_llmc_own_mfu_note_names_llmcs_count_not_torchtitans(tmp_path):
    """llm.c's MFU (gpt2_estimate_mfu: 6N + 6·L·C·T at its GPU table's peak) printed 45.3%: logged_mfu 0.453, and
    the note says how llm.c counts, not torchtitan."""
    from runplan.monitor.vs_plan import compare

    path = tmp_path / "llmc.out"
    path.write_text("\n".join(_llmc_run()) + "\n")
    out = compare(read_logs([path]), _plan())
    assert out["logged_mfu"] == pytest.approx(0.453)
    note = out["notes"]["logged_mfu"]
    assert "llm.c: 6 × all parameters + 6·L·C·T" in note and "torchtitan" not in note


def test_a_one_step_recovery_says_1_step(tmp_path):
    path = tmp_path / "llmc.out"
    path.write_text("\n".join(_llmc_run()) + "\n")
    log = read_logs([path])
    spike = next(
        e for e in analyse(log, Thresholds(), checkpoints_for(log, 20, None)).events if e.kind == "loss_spike"
    )
    assert spike.end_step == 51 and "by step 51 (1 step, under 200)" in spike.why


def test_nemo_memory_against_the_plan(tmp_path):
    """NeMo's max_memory_reserved (bytes) is the reserved peak set against the plan's per-GPU total; a 4 s step
    among 2.5 s ones is a slow step (the printed 4 is 4.0 s, not ms)."""
    from runplan.monitor.vs_plan import compare

    lines = [nemo_line(n, 200, _nemo_metrics(n, 4.0 if n == 120 else 2.5)) for n in range(1, 201)]
    path = tmp_path / "nemo.log"
    path.write_text("\n".join(lines) + "\n")
    assert "train_step_timing in s: 4 |" in path.read_text()
    log = read_logs([path])
    out = compare(log, _plan())
    assert out["peak_memory_kind"] == "reserved" and out["peak_memory_bytes"] == 61234567168.0
    assert out["step_seconds"] == pytest.approx(2.5)
    report = analyse(log, Thresholds(), checkpoints_for(log, None, None))
    slow = next(e for e in report.events if e.kind == "slow_step")
    assert slow.start_step == 119 and slow.value == pytest.approx(4.0)


def tqdm_num(value: float) -> str:
    """tqdm's ``format_num`` (tqdm/std.py), which ``set_postfix`` applies to every number: the ``.3g`` form with
    the exponent's leading zero dropped when that is shorter than ``str(value)``."""
    short = f"{value:.3g}".replace("+0", "+").replace("-0", "-")
    return short if len(short) < len(str(value)) else str(value)


def nemo_bar(n: int, total: int, loss: float, seconds: float) -> str:
    """MegatronProgressBar (nemo/lightning/pytorch/callbacks/progress_bar.py): ``{desc}: {percentage:3.0f}%|{bar}|
    {n_fmt}/{total_fmt} [{elapsed}<{remaining}{postfix}]``, n = current_epoch_step (steps done), the postfix the
    progress-bar metrics as floats: ``global_step`` is trainer.global_step at training_step, n - 1."""
    metrics = {
        "lr": 3e-4,
        "global_step": float(n - 1),
        "reduced_train_loss": loss,
        "train_step_timing in s": seconds,
        "consumed_samples": float(256 * n),
    }
    postfix = ", ".join(f"{k}={tqdm_num(v)}" for k, v in metrics.items())
    filled = 10 * n // total
    return f"Epoch 0: {100 * n / total:3.0f}%|{'█' * filled}{' ' * (10 - filled)}| {n}/{total} [10:00<10:00, {postfix}]"


def test_nemo_bar_global_step_rounded_by_tqdm_is_taken_from_the_counter(tmp_path):
    """tqdm prints global_step 2001.0 as "2e+3" (shorter than "2001.0"), 2010.0 as "2010.0": read as 2000, step
    2001 would repeat step 2000 (a false restart). The bar's own counter n = 2002 gives n - 1 = 2001, which
    tqdm rounds to the same "2e+3"."""
    assert tqdm_num(2001.0) == "2e+3" and tqdm_num(2010.0) == "2010.0" and tqdm_num(199.0) == "199"
    path = tmp_path / "nemo.log"
    bars = [nemo_bar(n, 4000, 4.0 - 1e-4 * n, 0.6) for n in range(1991, 2021)]
    path.write_text("\r".join(bars) + "\n")
    assert "global_step=2e+3," in path.read_text()
    log = read_logs([path])
    assert log.steps.tolist() == list(range(1990, 2020))
    assert not log.restarts
    assert log.values["loss"][11] == pytest.approx(3.8)  # step 2001 (n 2002): 4.0 - 0.2002, printed 3 digits


def test_nemo_bar_step_that_the_counter_cannot_give_is_left_out_and_said(tmp_path):
    """A rounded global_step whose bar counter does not round to it (a second epoch: the counter restarts) is
    not a step: left out, said."""
    path = tmp_path / "nemo.log"
    bars = [nemo_bar(n, 4000, 4.0, 0.6) for n in range(1995, 2006)]
    bars[6] = bars[6].replace("| 2001/4000 [", "| 7/4000 [")  # n 2001: global_step 2000 = "2e+3"
    path.write_text("\r".join(bars) + "\n")
    log = read_logs([path])
    assert 2000 not in log.steps.tolist() and 2001 in log.steps.tolist()
    assert any("rounded" in note and note.startswith("1 progress-bar line left out") for note in log.notes)


def test_nemo_tensorboard_tags(tmp_path):
    """NeMo 2's scalars through Lightning's TensorBoardLogger, at x = the logged ``step`` (trainer.global_step):
    ``reduced_train_loss``, ``lr``, ``train_step_timing in s``, ``tokens_per_sec_per_gpu``, ``max_memory_reserved``
    (bytes), ``val_loss``; ``global_step`` and ``consumed_samples`` are not metrics. Values are float32."""
    from tests.monitor.generate import event_bytes, file_version_record, record

    chunks = [file_version_record()]
    for step in range(0, 50):
        for tag, value in (
            ("reduced_train_loss", 5.0 - 0.01 * step),
            ("lr", 3e-4),
            ("global_step", float(step)),
            ("consumed_samples", 256.0 * (step + 1)),
            ("train_step_timing in s", 2.5),
            ("tokens_per_sec_per_gpu", 6553.6),
            ("max_memory_reserved", 61234567168.0),
        ):
            chunks.append(record(event_bytes(step, tag, value)))
    chunks.append(record(event_bytes(49, "val_loss", 4.75)))
    path = tmp_path / "events.out.tfevents.1700000000.host.1.0"
    path.write_bytes(b"".join(chunks))
    log = read_logs([path])
    assert log.format == "tensorboard" and log.steps.tolist() == list(range(50))
    assert log.points("loss")[1][10] == pytest.approx(4.9, rel=1e-6)
    assert log.points("step_seconds")[1][0] == 2.5
    assert log.points("tokens_per_second_per_gpu")[1][0] == pytest.approx(6553.6, rel=1e-6)
    assert log.points("peak_memory_reserved_bytes")[1][0] == pytest.approx(61234567168.0, rel=1e-6)
    assert log.points("val_loss")[0].tolist() == [49]


def test_the_terminal_says_1_event_needing_nothing(tmp_path, capsys):
    """The llm.c run's one slow step (65): "1 event needing nothing", not "1 events"."""
    path = tmp_path / "llmc.out"
    path.write_text("\n".join(_llmc_run()) + "\n")
    with pytest.raises(SystemExit) as exit_info:
        main(["monitor", str(path)])
    out = capsys.readouterr().out
    assert exit_info.value.code == 0 and "1 event needing nothing (slow step)" in out


def test_a_jsonl_mfu_column_is_not_said_to_be_torchtitans(tmp_path):
    """An ``mfu`` column of any JSONL log: the note does not name torchtitan's count, which it may not be."""
    from runplan.monitor.vs_plan import compare

    rows = [{"step": s, "loss": 3.0, "step_time": 17.0, "mfu": 0.5} for s in range(1, 40)]
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    note = compare(read_logs([path]), _plan())["notes"]["logged_mfu"]
    assert "torchtitan" not in note and "by its own count" in note


def _history(last: int, changed_from: int | None = None) -> list[dict]:
    """Entries every 10 steps to ``last``; from ``changed_from`` on, the values of a second attempt."""
    out = []
    for step in range(10, last + 1, 10):
        again = changed_from is not None and step >= changed_from
        loss = 3.0 - 0.0005 * step + (0.0123 if again else 0.0)
        out.append({"epoch": step / 400, "grad_norm": 0.5, "learning_rate": 1e-4, "loss": loss, "step": step})
    return out


def test_hf_checkpoint_states_given_together_are_one_history_not_restarts(tmp_path):
    """checkpoint-250's and checkpoint-500's trainer_state.json and the final one: each later log_history holds
    the earlier's entries as they were; no restart, steps 10-1000 once."""
    paths = []
    for last in (250, 500, 1000):
        path = tmp_path / f"checkpoint-{last}" / "trainer_state.json"
        path.parent.mkdir()
        path.write_text(_hf_state(_history(last)))
        paths.append(path)
    log = read_logs(paths)
    assert not log.restarts and log.steps.tolist() == list(range(10, 1001, 10))
    report = analyse(log, Thresholds(), checkpoints_for(log, None, None))
    assert not [e for e in report.events if e.kind == "restart"]
    assert any("unchanged" in note and "25 steps (10-250)" in note for note in log.notes)


def test_hf_run_resumed_from_an_older_checkpoint_is_a_restart(tmp_path):
    """The first attempt reached 300; the run was resumed from checkpoint-250 (a rollback): its log_history holds
    10-250 as they were and new values from 260: a restart at 260, redoing 260-300 (5 logged steps)."""
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    first.write_text(_hf_state(_history(300)))
    second.write_text(_hf_state(_history(600, changed_from=260)))
    log = read_logs([first, second])
    report = analyse(log, Thresholds(), checkpoints_for(log, None, None))
    restart = next(e for e in report.events if e.kind == "restart")
    assert (restart.start_step, restart.end_step) == (260, 300)
    assert log.points("loss")[1][25] == pytest.approx(3.0 - 0.13 + 0.0123)  # step 260: the second attempt's


def test_nemo_resumed_run_appended_is_a_restart(tmp_path):
    """The job died after global_step 149 and resumed from the checkpoint saved after 100 steps (NeMo's
    ``step=100`` checkpoint: global_step 100 is the next to run): lines from 100 again, a restart of 100-149."""
    steps = list(range(0, 150)) + list(range(100, 200))
    path = tmp_path / "nemo.log"
    path.write_text("\n".join(nemo_line(s + 1, 200, _nemo_metrics(s + 1)) for s in steps) + "\n")
    log = read_logs([path])
    report = analyse(log, Thresholds(), checkpoints_for(log, 100, None))
    restart = next(e for e in report.events if e.kind == "restart")
    assert (restart.start_step, restart.end_step, restart.value) == (100, 149, 50)
    assert log.steps.tolist() == list(range(200))


def test_llmc_nan_loss_as_glibc_prints_it(tmp_path):
    """glibc's printf writes a negative NaN as ``-nan`` (``loss    -nan``): 3 in a row from step 40 → rollback to
    the checkpoint at 20 (every 20 steps), the newest before it."""
    lines = [llmc_line(s, 60, 4.0 - 0.01 * s, 0.5, 6e-4, 250.0, 45.3, 2e6) for s in range(1, 61)]
    for step in (40, 41, 42):
        lines[step - 1] = llmc_line(step, 60, math.nan, math.nan, 6e-4, 250.0, 45.3, 2e6).replace(
            "loss     nan", "loss    -nan"
        )
    assert "loss    -nan (+0.12z)| norm    nan" in lines[39]
    path = tmp_path / "llmc.out"
    path.write_text("\n".join(lines) + "\n")
    log = read_logs([path])
    nan = next(
        e for e in analyse(log, Thresholds(), checkpoints_for(log, 20, None)).events if e.kind == "nan"
    )
    assert (nan.start_step, nan.end_step, nan.action, nan.rollback_to_step) == (40, 42, "rollback", 20)
