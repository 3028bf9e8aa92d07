"""Readers' building blocks, rolling statistics, change points, checkpoints, the CLI views and --follow."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.monitor.generate import event_bytes, file_version_record, record, series, write

from runplan.cli.app import main
from runplan.errors import SpecError
from runplan.monitor.detect_sdc import change_point
from runplan.monitor.events import Checkpoints
from runplan.monitor.readers import read_logs
from runplan.monitor.readers.tfevents import crc32c, event_files
from runplan.monitor.rolling import trailing_mean


def test_crc32c_check_value():
    # the CRC-32C check value of "123456789" (RFC 3720 §B.4 / the CRC catalogue): 0xE3069283
    assert crc32c(b"123456789") == 0xE3069283


def test_tiny_event_file_byte_exact(tmp_path):
    """Three scalars written byte by byte: simple_value (PyTorch) and a DT_FLOAT tensor (TF2)."""
    path = tmp_path / "events.out.tfevents.1.host"
    path.write_bytes(
        file_version_record()
        + record(event_bytes(1, "train/loss", 2.5))
        + record(event_bytes(2, "train/loss", 2.25, tensor=True))
        + record(event_bytes(2, "grad_norm", 0.5))
    )
    log = read_logs([path])
    assert log.format == "tensorboard"
    assert log.steps.tolist() == [1, 2]
    assert log.values["loss"].tolist() == [2.5, 2.25]
    assert np.isnan(log.values["grad_norm"][0]) and log.values["grad_norm"][1] == 0.5


def test_event_file_cut_short_is_said(tmp_path):
    path = tmp_path / "events.out.tfevents.2.host"
    whole = file_version_record() + record(event_bytes(1, "loss", 3.0)) + record(event_bytes(2, "loss", 2.9))
    path.write_bytes(whole[:-5])
    log = read_logs([path])
    assert log.steps.tolist() == [1] and any("cut short" in note for note in log.notes)


def test_event_file_from_a_library(tmp_path):
    writer_module = pytest.importorskip(
        "torch.utils.tensorboard",
        reason="PyTorch is not installed: the byte-exact event file test covers the format",
    )
    writer = writer_module.SummaryWriter(str(tmp_path))
    for step in range(1, 11):
        writer.add_scalar("train/loss", 3.0 - 0.1 * step, step)
    writer.close()
    log = read_logs([tmp_path])
    assert log.steps.tolist() == list(range(1, 11))
    assert log.values["loss"][-1] == pytest.approx(2.0)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(-1e3, 1e3), min_size=1, max_size=60), st.integers(1, 10), st.integers(0, 2**16))
def test_trailing_mean_matches_a_loop(values, window, mask_seed):
    x = np.asarray(values)
    use = np.random.default_rng(mask_seed).random(x.size) > 0.3
    mean, count = trailing_mean(x, use, window)
    for i in range(x.size):
        chosen = [x[j] for j in range(max(0, i - window), i) if use[j]]
        assert count[i] == len(chosen)
        if chosen:
            assert mean[i] == pytest.approx(np.mean(chosen), abs=1e-6)
        else:
            assert np.isnan(mean[i])


@pytest.mark.parametrize("kind", ["jump", "ramp"])
def test_change_point_hand_example(kind):
    steps = np.arange(0, 2000, 100)
    values = 3.0 - 0.0001 * steps
    onset = 1200
    values = values + (
        0.05 * (steps >= onset) if kind == "jump" else 0.0004 * np.maximum(steps - onset + 100, 0)
    )
    assert abs(change_point(steps, values) - onset) <= 100


def test_checkpoints_newest_kept():
    cp = Checkpoints(
        interval_steps=35, retention_generations=3, rollback_every_steps=315, rollback_generations=2
    )
    # log at step 10,000: rolling generations 9,975, 9,940, 9,905 kept (285 × 35 = 9,975); rollback points
    # 9,765 and 9,450 (31 and 30 × 315); 9,870 was rotated away
    assert cp.newest_at_or_before(9_920, now=10_000) == 9_905
    assert cp.newest_at_or_before(9_900, now=10_000) == 9_765
    assert cp.newest_at_or_before(9_000, now=10_000) is None
    assert Checkpoints(saved_steps=[100, 250]).newest_at_or_before(240, now=300) == 100


def test_json_report_and_plot(tmp_path, capsys):
    path = write("jsonl", series("divergence", steps=4000, seed=3), tmp_path / "run.jsonl")
    report, plot = tmp_path / "incident.md", tmp_path / "run.png"
    with pytest.raises(SystemExit) as exit_info:
        main(
            [
                "monitor",
                str(path),
                "--json",
                "--checkpoint-interval",
                "500",
                "--report",
                str(report),
                "--plot",
                str(plot),
            ]
        )
    assert exit_info.value.code == 0
    data = json.loads(capsys.readouterr().out)
    assert list(data) == ["source", "format", "steps", "metrics", "events", "summary", "verdict", "vs_plan"]
    assert data["verdict"] == "act" and data["steps"] == [1, 4000] and data["vs_plan"] is None
    divergence = next(e for e in data["events"] if e["kind"] == "divergence")
    # restart at 2,500, skip through the spike: min(500, max(200, peak − 2,500)) batches = 500 (PaLM §5.1)
    assert divergence["rollback_to_step"] == 2500 and divergence["skip_steps"] == [2501, 3000]
    assert "lower the learning rate" in divergence["why"]  # says not to
    assert report.read_text().startswith("# Incident report") and plot.read_bytes()[:4] == b"\x89PNG"


def test_plan_comparison(tmp_path, capsys):
    path = write("jsonl", series("clean", steps=600, seed=3), tmp_path / "run.jsonl")
    with pytest.raises(SystemExit):
        main(["monitor", str(path), "--json", "--plan", "examples/70b-512-h100.yaml"])
    data = json.loads(capsys.readouterr().out)
    vs = data["vs_plan"]
    assert data["summary"]["thresholds"] == "plan"
    from runplan.cli.common import plan_from_file

    interval = plan_from_file("examples/70b-512-h100.yaml")[2].checkpointing.interval_steps
    assert data["summary"]["checkpoints"].startswith(
        f"the plan: every {interval} steps"
    )  # the plan's Daly interval
    # the log ends in the ramp (step 600): MFU = planned MFU × the main step scaled to the ramp's tokens ÷ the
    # log's ~1.0 s (the model FLOPs of the step; the planned ramp step also holds the pipeline bubble)
    plan = plan_from_file("examples/70b-512-h100.yaml")[2]
    ramp, main_stage = plan.schedule.batch_stages
    scaled = plan.layout.best.step_seconds * ramp.global_batch_tokens / main_stage.global_batch_tokens
    assert vs["planned_step_seconds"] == pytest.approx(ramp.step_seconds) and ramp.step_seconds > scaled
    assert vs["mfu"] == pytest.approx(vs["planned_mfu"] * scaled / vs["step_seconds"])
    assert vs["step_seconds"] == pytest.approx(1.0, rel=0.01)
    assert vs["remaining_steps"] == vs["planned_total_steps"] - 600
    # a 1 s step against a ~37 s plan implies MFU near 1,900%: the log is not this plan's run, and it says so
    assert vs["mfu"] > 1 and len(vs["warnings"]) == 1 and "above 100%" in vs["warnings"][0]


def test_plan_comparison_warns_only_when_the_log_cannot_be_this_plans_run(tmp_path, capsys):
    from runplan.cli.common import plan_from_file
    from runplan.monitor.vs_plan import _stage_at

    plan = plan_from_file("examples/70b-512-h100.yaml")[2]
    # step 600 is in the plan's batch ramp: half the main batch, so about half the main step time
    stage = _stage_at(plan, 600)
    assert stage.global_batch_tokens < plan.layout.best.global_batch_tokens
    planned = stage.step_seconds  # the plan's own ramp step (the layout at the ramp's micro-batches)
    for factor, warned in (
        (1.1, False),
        (0.4, True),
    ):  # 10% slower: within the model's error; 2.5x faster: not
        data = series("clean", steps=600, seed=3)
        data["step_seconds"] = data["step_seconds"] * planned * factor
        data["tokens_per_second"] = data["tokens_per_second"] / (planned * factor)
        path = write("jsonl", data, tmp_path / f"run{factor}.jsonl")
        with pytest.raises(SystemExit):
            main(["monitor", str(path), "--json", "--plan", "examples/70b-512-h100.yaml"])
        vs = json.loads(capsys.readouterr().out)["vs_plan"]
        assert vs["speed_ratio"] == pytest.approx(1 / factor, rel=0.01)
        assert bool(vs["warnings"]) is warned, vs["warnings"]


def test_follow_waits_for_the_log_and_prints_events_as_it_grows(tmp_path):
    """The log does not exist at start; a healthy part appears, then a divergence: each event printed once."""
    import time

    path = tmp_path / "run.jsonl"
    data = series("divergence", steps=3400, seed=5)
    early = {name: values[:2500] for name, values in data.items()}
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "runplan",
            "monitor",
            str(path),
            "--follow",
            "--poll-seconds",
            "0.05",
            "--max-seconds",
            "6",
            "--checkpoint-interval",
            "500",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # the first line on stderr: the monitor is polling the missing log (a fixed sleep before writing it raced
        # a slow start-up on a busy machine, and the log was there before the first poll)
        assert process.stderr is not None
        first = process.stderr.readline()
        write("jsonl", early, path)
        time.sleep(1.0)
        write("jsonl", data, path)
        out, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 0, err
    assert "waiting for" in first, first + err
    lines = out.strip().splitlines()
    assert sum("divergence → rollback" in line for line in lines) == 1, out
    assert len(lines) == len(set(lines))  # each event once, however many polls


def test_follow_ends_on_bad_input(tmp_path):
    path = tmp_path / "run.log"
    path.write_bytes(bytes(range(256)))
    result = subprocess.run(
        [sys.executable, "-m", "runplan", "monitor", str(path), "--follow", "--max-seconds", "5"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2 and "binary" in result.stderr


def test_help_imports_nothing_heavy():
    probe = (
        "import sys\nfrom runplan.cli.app import app\ntry:\n    app(args=['monitor', '--help'], prog_name='runplan')\n"
        "except SystemExit:\n    pass\nprint(sorted({m.split('.')[0] for m in sys.modules} & {'numpy', 'scipy', 'matplotlib'}))"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert result.stdout.strip().endswith("[]"), result.stdout


def test_struct_roundtrip_of_generator_records():
    raw = record(event_bytes(7, "loss", 1.5))
    (length,) = struct.unpack("<Q", raw[:8])
    assert len(raw) == length + 16


def test_plan_never_suggests_lowering_the_lr():
    from runplan.ops.monitoring import MonitoringRequest, plan_monitoring

    plan = plan_monitoring(
        MonitoringRequest(
            total_steps=10_000,
            tokens_per_step=4e6,
            step_seconds=10.0,
            seq_len=4096,
            checkpoint_interval_steps=100,
        )
    )
    text = " ".join(plan.alerts + plan.rollback_procedure).lower()
    assert "lower the lr" not in text and "lower the learning rate" not in text.replace("do not lower", "")
    assert "do not lower the learning rate" in text


def test_two_files_of_one_run_restart_across_files(tmp_path):
    """A job's second log repeats steps after its checkpoint: merged by step, the later file wins, a restart."""
    data = series("clean", steps=400, seed=2)
    first = {name: values[:300] for name, values in data.items()}
    second = {name: values[250:] for name, values in data.items()}
    a = write("jsonl", first, tmp_path / "job1.jsonl")
    b = write("jsonl", second, tmp_path / "job2.jsonl")
    log = read_logs([a, b])
    assert log.steps.tolist() == list(range(1, 401))
    assert [(r.last_step, r.resumed_step) for r in log.restarts] == [(300, 251)]


def test_engine_line_formats(tmp_path):
    """One hand-written sample per engine in the layout its logging code prints (numbers made up)."""
    samples = {
        "megatron": (
            " [2025-03-01 10:00:00] iteration      200/    5000 | consumed samples:       102400 | elapsed time per "
            "iteration (ms): 1520.4 | throughput per GPU (TFLOP/s/GPU): 410.2 | learning rate: 2.000000E-04 | "
            "global batch size:   512 | lm loss: 4.250000E+00 | loss scale: 65536.0 | grad norm: 0.812 | "
            "number of skipped iterations:   0 | number of nan iterations:   0 |\n"
            " saving checkpoint at iteration     200 to /ckpt in torch_dist format\n"
            " validation loss at iteration 200 | lm loss value: 4.310000E+00 | lm loss PPL: 7.4E+01 | \n",
            {
                "loss": 4.25,
                "grad_norm": 0.812,
                "step_seconds": 1.5204,
                "lr": 2e-4,
                "loss_scale": 65536.0,
                "val_loss": 4.31,
            },
        ),
        "nemo": (
            "Epoch 0: :  20%|██        | 200/1000 [05:00<20:00, reduced_train_loss=4.250, global_step=199.0, "
            "consumed_samples=1.02e+5, train_step_timing in s=1.520]\r"
            "Epoch 0: :  20%|██        | 201/1000 [05:01<20:00, reduced_train_loss=4.240, global_step=200.0, "
            "consumed_samples=1.03e+5, train_step_timing in s=1.510]\n",
            {"loss": 4.24, "step_seconds": 1.51},
        ),
        "torchtitan": (
            "[rank0]:[titan] 2025-03-01 10:00:00,000 - root - INFO - \x1b[31mstep: 200  \x1b[32mloss:  4.2500  "
            "\x1b[38;2;180;60;0mgrad_norm:  0.8120  \x1b[36mmemory: 60.12GiB(63.29%)  \x1b[34mtps: 3,210  "
            "\x1b[36mtflops: 180.55  \x1b[35mmfu: 18.26%\x1b[39m\n"
            "[rank0]:[titan] 2025-03-01 10:00:05,000 - root - INFO - \x1b[33mvalidate step: 200  \x1b[32mloss:  "
            "4.3100  \x1b[34mtps: 9,000\x1b[39m\n",
            {
                "loss": 4.25,
                "grad_norm": 0.812,
                "tokens_per_second_per_gpu": 3210.0,
                "mfu": 0.1826,
                "val_loss": 4.31,
            },
        ),
        "llmc": (
            "s:200 tel:4.3100\ns:200 eval:0.2950\ns:200 trl:4.2500 lr:0.000200 norm:0.81\n",
            {"loss": 4.25, "grad_norm": 0.81, "lr": 2e-4, "val_loss": 4.31},
        ),
        "hf": (
            json.dumps(
                {
                    "max_steps": 5000,
                    "save_steps": 100,
                    "log_history": [
                        {"epoch": 0.1, "grad_norm": 0.812, "learning_rate": 2e-4, "loss": 4.25, "step": 200},
                        {"epoch": 0.1, "eval_loss": 4.31, "eval_runtime": 10.0, "step": 200},
                        {"epoch": 1.0, "step": 5000, "train_runtime": 999.0, "train_loss": 3.0},
                    ],
                }
            ),
            {"loss": 4.25, "grad_norm": 0.812, "lr": 2e-4, "val_loss": 4.31},
        ),
    }
    for fmt, (text, expected) in samples.items():
        path = tmp_path / f"{fmt}.log"
        path.write_text(text)
        log = read_logs([path])
        assert log.format == fmt
        row = int(np.searchsorted(log.steps, 200))
        for name, value in expected.items():
            assert log.values[name][row] == pytest.approx(value), (fmt, name)
    megatron = read_logs([tmp_path / "megatron.log"])
    assert megatron.saved_steps == [200] and megatron.total_steps == 5000
    hf = read_logs([tmp_path / "hf.log"])
    assert hf.checkpoint_interval_steps == 100 and hf.total_steps == 5000 and hf.steps.tolist() == [200]


def test_plan_comparison_follows_the_plans_batch_ramp(tmp_path):
    # Megatron lines at steps 1,000-1,009 with 1,024 sequences: the 405B example's ramp stage (half of 2,048),
    # so neither the batch nor the speed is a mismatch
    from runplan.cli.common import plan_from_file
    from runplan.monitor.readers import read_logs
    from runplan.monitor.vs_plan import compare

    plan = plan_from_file("examples/405b-16k-h100-8k.yaml")[2]
    ramp = plan.schedule.batch_stages[0]
    assert ramp.global_batch_sequences == 1024 and ramp.start_step <= 1000 < ramp.end_step
    scaled = plan.layout.best.step_seconds * ramp.global_batch_tokens / plan.layout.best.global_batch_tokens
    # the plan's own ramp step: the layout timed at the ramp's micro-batches keeps the bubble, so it is longer
    # than the main step scaled to the ramp's tokens (schedule.batch_stages[].step_seconds)
    planned = ramp.step_seconds
    assert planned > scaled
    lines = [
        f" iteration     {step}/   27895 | consumed samples: {step * 1024} | elapsed time per iteration (ms): "
        f"{planned * 1000:.1f} | global batch size:  1024 | lm loss: 3.1E+00 | grad norm: 1.00 |"
        for step in range(1000, 1010)
    ]
    path = tmp_path / "ramp.log"
    path.write_text("\n".join(lines) + "\n")
    vs = compare(read_logs([path]), plan)
    assert vs["warnings"] == [] and vs["speed_ratio"] == pytest.approx(1.0, rel=1e-3)
    assert vs["planned_step_seconds"] == pytest.approx(planned)
    # MFU counts the model FLOPs of the ramp's tokens: the planned MFU × the scaled step ÷ the measured one
    assert vs["mfu"] == pytest.approx(plan.layout.best.mfu * scaled / planned, rel=1e-3)
    # the same lines at 2,048 sequences: the log's batch is not the plan's at this step
    path.write_text(path.read_text().replace("global batch size:  1024", "global batch size:  2048"))
    vs = compare(read_logs([path]), plan)
    (warning,) = vs["warnings"]
    assert warning.startswith("the log's global batch is 2,048 sequences, the plan's 1,024")
    # the numbers use the log's batch: 2,048 sequences in the time the plan gives 1,024
    assert vs["tokens_per_second"] == pytest.approx(2 * ramp.global_batch_tokens / planned, rel=1e-3)
    # the log's own batch: the main step scaled to its tokens (2,048 sequences, the main batch), 1.78x the
    # logged ramp-step time (3.45 s, not 2x: the ramp's step keeps its bubble), within the 2x mismatch bound
    assert vs["planned_step_seconds"] == pytest.approx(plan.layout.best.step_seconds)
    assert vs["speed_ratio"] == pytest.approx(plan.layout.best.step_seconds / planned, rel=1e-3)
    assert 1.7 < vs["speed_ratio"] < 2.0


def test_follow_stops_at_max_seconds_during_a_long_poll(tmp_path):
    # --max-seconds 1 with --poll-seconds 3600 slept the whole hour before looking at the clock
    path = tmp_path / "run.log"
    path.write_text("step,loss\n1,3.0\n2,2.9\n")
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "runplan", "monitor", str(path), "--follow"]
        + ["--max-seconds", "1", "--poll-seconds", "3600"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert time.monotonic() - started < 30


def test_a_directory_yields_only_tensorboard_named_files_near_its_top(tmp_path):
    # "tfevents" anywhere in a name matched source files (tfevents.py), and the walk went all the way down
    (tmp_path / "tfevents.py").write_text("print('not an event file')\n")
    near = tmp_path / "run" / "events.out.tfevents.1.host"
    deep = tmp_path / "a" / "b" / "c" / "d" / "e" / "events.out.tfevents.2.host"  # 5 folders down
    for path in (near, deep):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(file_version_record() + record(event_bytes(1, "loss", 3.0)))
    assert event_files(tmp_path) == [near]


def test_a_json_boolean_is_not_read_as_a_number(tmp_path):
    # numpy turned "loss": true into 1.0; a flag is not a metric value, as a text value is not
    path = tmp_path / "run.jsonl"
    path.write_text('{"step": 1, "loss": true}\n{"step": 2, "loss": 2.9}\n{"step": 3, "loss": false}\n')
    log = read_logs([path])
    assert log.steps.tolist() == [2] and log.values["loss"].tolist() == [2.9]


def test_tensorboard_steps_are_checked_and_booleans_skipped_in_every_json_reader(tmp_path):
    # TensorBoard steps skipped the step check (-5 was read as a step); HF trainer_state read true as 1.0
    path = tmp_path / "events.out.tfevents.3.host"
    path.write_bytes(
        file_version_record() + record(event_bytes(1, "loss", 3.0)) + record(event_bytes(-5, "loss", 2.9))
    )
    with pytest.raises(SpecError, match=r"point 2 has step -5"):
        read_logs([path])
    state = tmp_path / "trainer_state.json"
    history = [{"step": 1, "loss": True}, {"step": 2, "loss": 2.9}, {"step": 3, "loss": False}]
    state.write_text(json.dumps({"log_history": history}))
    log = read_logs([state])
    assert log.steps.tolist() == [2] and log.values["loss"].tolist() == [2.9]
