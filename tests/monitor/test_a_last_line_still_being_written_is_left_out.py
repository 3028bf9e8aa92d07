"""A live log's last line may be half written: a file that does not end with a newline has its last metric line
cut, and a value there may be cut mid-number (torchtitan's ``tps: 1,118`` read as ``tps: 1``, a 99.9% throughput
drop that never happened). That line is left out and said with its line number, in every text format, as it was
for Megatron only (a Megatron record still counts as whole when it ends with its closing ``|``)."""

from __future__ import annotations

from runplan.monitor.analyse import analyse, checkpoints_for
from runplan.monitor.readers import read_logs
from runplan.monitor.thresholds import Thresholds

TITAN = (
    "[rank0]:[titan] 2026-01-01 00:00:00,000 - root - INFO - step: {step:2d}  loss:  3.0000  grad_norm:  0.3000  "
    "memory: 70.50GiB(88.63%)  tps: 1,118  tflops: 480.80  mfu: 48.61%"
)


def _read(tmp_path, body):
    path = tmp_path / "run.log"
    path.write_text(body)
    log = read_logs([path])
    return log, analyse(log, Thresholds(), checkpoints_for(log, None, None))


def test_a_torchtitan_line_cut_in_its_tps_is_left_out_not_a_throughput_drop(tmp_path):
    whole = "".join(TITAN.format(step=s) + "\n" for s in range(1, 41))
    cut = TITAN.format(step=41)
    cut = cut[: cut.index("tps: ") + 6]  # "... tps: 1"
    log, report = _read(tmp_path, whole + cut)
    assert int(log.steps[-1]) == 40
    assert not [e for e in report.events if e.kind == "throughput_drop"]
    assert (
        "the last line (line 41) is cut short (still being written?); left out" in report.summary["warnings"]
    )


def test_an_llmc_line_cut_mid_number_is_left_out(tmp_path):
    whole = "".join(f"s:{s} trl:3.0000 lr:0.000100 norm:0.3000\n" for s in range(0, 30))
    log, report = _read(tmp_path, whole + "s:30 trl:1")  # 1x.xxxx being written
    assert int(log.steps[-1]) == 29
    assert (
        "the last line (line 31) is cut short (still being written?); left out" in report.summary["warnings"]
    )


def test_a_megatron_record_ending_in_its_bar_is_whole_without_a_newline(tmp_path):
    line = (
        " iteration {step:>6}/ 1000 | elapsed time per iteration (ms): 1000.0 | learning rate: 3.0E-04 | "
        "lm loss: 3.000000E+00 | grad norm: 0.300 |"
    )
    body = "\n".join(line.format(step=s) for s in range(1, 31))  # no newline after step 30's "|"
    log, report = _read(tmp_path, body)
    assert int(log.steps[-1]) == 30
    assert not [w for w in report.summary["warnings"] if "cut short" in w]
    log, report = _read(tmp_path, body[:-30])  # step 30 cut inside "lm loss"
    assert int(log.steps[-1]) == 29
    assert (
        "the last line (line 30) is cut short (still being written?); left out" in report.summary["warnings"]
    )


def test_a_log_ending_with_a_newline_keeps_its_last_line(tmp_path):
    log, report = _read(tmp_path, "".join(TITAN.format(step=s) + "\n" for s in range(1, 41)))
    assert int(log.steps[-1]) == 40
    assert not [w for w in report.summary["warnings"] if "cut short" in w]


def test_a_nemo_progress_bar_rewritten_after_a_carriage_return_is_whole_at_its_closing_bracket(tmp_path):
    bar = (
        "Epoch 0: {pct}%|#| {n}/1000 [00:10<01:30, 1.00it/s, v_num=0, reduced_train_loss=3.000, "
        "global_step={step}.0, consumed_samples=64.0, train_step_timing in s=1.000]"
    )
    body = "".join("\r" + bar.format(pct=n // 10, n=n, step=n - 1) for n in range(1, 31))
    log, report = _read(tmp_path, body)
    assert int(log.steps[-1]) == 29 and not [w for w in report.summary["warnings"] if "cut short" in w]
    log, report = _read(tmp_path, body[:-40])  # cut inside global_step's bar update: that one is left out
    assert int(log.steps[-1]) == 28
    assert (
        "the last line (line 31) is cut short (still being written?); left out" in report.summary["warnings"]
    )


def test_a_csv_row_cut_mid_number_is_left_out(tmp_path):
    """A CSV log being appended to: ``51,3.0,1`` of ``51,3.0,12345`` would be a 99.99% throughput drop."""
    rows = "".join(f"{s},3.0,12345\n" for s in range(1, 51))
    path = tmp_path / "run.csv"
    path.write_text("step,loss,tokens_per_second\n" + rows + "51,3.0,1")
    log = read_logs([path])
    report = analyse(log, Thresholds(), checkpoints_for(log, None, None))
    assert int(log.steps[-1]) == 50
    assert not [e for e in report.events if e.kind == "throughput_drop"]
    assert (
        "the last line (line 52) is cut short (still being written?); left out" in report.summary["warnings"]
    )
