"""docs/monitor.md says what `runplan monitor` does today, in the words it prints: each quote below is found in the
doc and is what the program prints for the hand-made log the doc describes (``...`` in a quote stands for the text
the doc leaves out). Commit b441efb changed the monitor (the ETA per batch stage, throughput drops in tokens/s, a
``--format`` naming the wrong engine, a trailing crash, a half-written last line in every format, Megatron's
``number of nan iterations``, compressed logs, ratios under the pause factor) and the doc still said the old;
the ``stall`` event is new. The lists that claim to be complete (the synopsis' flags, the event kinds of
``--json``) are checked against the program.
"""

from __future__ import annotations

import gzip
import inspect
import json
import os
import re
from pathlib import Path

import pytest

from runplan.cli.app import main
from runplan.monitor.analyse import analyse, checkpoints_for
from runplan.monitor.readers import read_logs
from runplan.monitor.render import event_line
from runplan.monitor.stall import STALL_SECONDS, add_stall
from runplan.monitor.thresholds import Thresholds

REPO = Path(__file__).resolve().parents[2]
DOC = " ".join((REPO / "docs" / "monitor.md").read_text().split())
MEGATRON = (
    " iteration {step:>6}/ 1000 | consumed samples: {s} | elapsed time per iteration (ms): {ms} | "
    "learning rate: 3.0E-04 | lm loss: 3.000000E+00 | grad norm: 0.300 |"
)


def quoted(text: str) -> str:
    """``text`` as it stands in the doc (whitespace runs as one space), which must hold it."""
    flat = " ".join(text.split())
    assert flat in DOC, f"docs/monitor.md does not say: {flat}"
    return flat


def says(quote: str, printed: str) -> bool:
    """Whether ``printed`` starts with the doc's ``quote``, ``...`` standing for any text."""
    pattern = ".*?".join(re.escape(part) for part in quoted(quote).split("..."))
    return re.match(pattern, " ".join(printed.split())) is not None


def _report(path: Path, stall_seconds: float = 0.0, now: float | None = None):
    log = read_logs([path])
    report = analyse(log, Thresholds(), checkpoints_for(log, None, None))
    if now is not None:
        add_stall(report, log, [path], stall_seconds, now)
    return report


def _megatron(tmp_path: Path, steps, ms: str = "1000.0", tail: str = "") -> Path:
    path = tmp_path / "run.log"
    path.write_text("".join(MEGATRON.format(step=s, s=8 * s, ms=ms) + "\n" for s in steps) + tail)
    return path


def test_the_synopsis_names_every_flag_of_the_command():
    from runplan.cli.monitor import monitor

    synopsis = DOC[: DOC.index("```", DOC.index("```sh") + 5)]
    flags = [
        name
        for parameter in inspect.signature(monitor).parameters.values()
        for name in getattr(parameter.default, "param_decls", None) or ()
        if name.startswith("--")
    ]
    assert "--stall-seconds" in flags
    assert not [flag for flag in flags if flag not in synopsis]


def test_the_json_event_kinds_are_every_kind_the_detectors_raise():
    sources = "".join(path.read_text() for path in (REPO / "src" / "runplan" / "monitor").glob("*.py"))
    raised = set(re.findall(r'kind="([a-z_]+)",\s*start_step=', sources)) | {"divergence"}
    start = DOC.index("| `events[]` | `kind` (") + len("| `events[]` | `kind` (")
    listed = set(re.findall(r"`([a-z_]+)`", DOC[start : DOC.index(")", start)]))
    assert "stall" in raised and listed == raised, (sorted(raised - listed), sorted(listed - raised))


def test_a_half_written_last_line_is_said_as_the_doc_quotes(tmp_path):
    titan = (
        "[rank0]:[titan] 2026-01-01 00:00:00,000 - root - INFO - step: {step:2d}  loss:  3.0000  "
        "grad_norm:  0.3000  memory: 70.50GiB(88.63%)  tps: 1,118  tflops: 480.80  mfu: 48.61%"
    )
    cut = titan.format(step=41)
    path = tmp_path / "run.log"
    path.write_text(
        "".join(titan.format(step=s) + "\n" for s in range(1, 41)) + cut[: cut.index("tps: ") + 6]
    )
    warnings = _report(path).summary["warnings"]
    quote = quoted("the last line (line 41) is cut short (still being written?); left out")
    assert quote in warnings
    for end in ("`|`", "`]`", "`mfu: M%`"):  # the whole-line ends the doc names
        assert end in DOC[DOC.index("**A last line still being written.**") :][:1200]


def test_a_crash_after_the_last_step_and_one_the_steps_go_on_after_are_said_as_quoted(tmp_path):
    trace = (
        'Traceback (most recent call last):\n  File "pretrain_gpt.py", line 200, in <module>\n'
        "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1269, unhandled system error\n"
    )
    (crash,) = [
        w for w in _report(_megatron(tmp_path, range(1, 41), tail=trace)).summary["warnings"] if "crash" in w
    ]
    assert says(
        "the log ends in a crash after its last logged step 40: line 41, torch.distributed.DistBackendError: NCCL "
        "error in: ...: the job stopped there (the events here are up to step 40); fix the cause and resume from "
        "the newest checkpoint",
        crash,
    )
    path = tmp_path / "again.log"
    path.write_text(
        _megatron(tmp_path, range(1, 21)).read_text() + trace + _megatron(tmp_path, range(21, 41)).read_text()
    )
    (survived,) = [w for w in _report(path).summary["warnings"] if "traceback" in w]
    assert says(
        "line 21: a Python traceback (...); the logged steps go on after it (an error the job survived, or a "
        "restart in the same file)",
        survived,
    )
    assert says(
        "note: the log ends in a crash after its last logged step N: ...",
        "note: " + crash.replace(" 40:", " N:", 1),
    )


def test_a_crash_after_the_last_step_is_the_crash_event_the_doc_quotes(tmp_path):
    """Steps 1-40, then a traceback from line 41; checkpoints every 25 steps: the newest at or before step 40 is
    step 25. The doc's quote is the event's whole ``why``, and the verdict it names is ``act``."""
    trace = 'Traceback (most recent call last):\n  File "pretrain_gpt.py", line 200, in <module>\nRuntimeError: NCCL error\n'
    log = read_logs([_megatron(tmp_path, range(1, 41), tail=trace)])
    report = analyse(log, Thresholds(), checkpoints_for(log, 25, None))
    (crash,) = [e for e in report.events if e.kind == "crash"]
    assert crash.why == quoted(
        "the job crashed after step 40 (line 41, RuntimeError: NCCL error): fix the cause and resume: roll back to "
        "the checkpoint at step 25 (--checkpoint-interval 25)"
    )
    assert (crash.action, crash.rollback_to_step, report.verdict) == ("rollback", 25, "act")
    assert quoted("(`rollback` to the newest checkpoint at or before it, so the verdict is `act`)")


def test_the_stall_is_said_as_quoted_with_the_default_the_doc_names(tmp_path):
    now = 1_800_000_000.0
    path = _megatron(tmp_path, range(1, 41), ms="36000.0")
    os.utime(path, (now - 3600, now - 3600))
    (stall,) = [e for e in _report(path, STALL_SECONDS, now).events if e.kind == "stall"]
    assert says(
        "no new step since step 40, 60 min ago (the log's last write): the next logged step was due 36 s after it "
        "(every step × the median logged step time 36 s), and --stall-seconds 600 s more (the engines' collective "
        "timeout) have passed; the job is hung or stopped without a crash report: check that it is running",
        stall.why,
    )
    assert says(
        "step 40: stall → watch: no new step since step 40, 60 min ago (the log's last write): ...",
        event_line(stall),
    )
    assert quoted("`--stall-seconds` (default 600)") and STALL_SECONDS == 600
    assert (stall.value, stall.baseline) == pytest.approx((3600.0, 636.0))
    stamped = "[2026-01-01 00:00:{:02d}]" + MEGATRON.format(
        step="{}", s=8, ms="36000.0"
    )  # step 40 at 00:00:40
    later = "[2026-01-01 00:15:40] WARNING: a line after the step, 15 min later\n"
    path.write_text("".join(stamped.format(s, s) + "\n" for s in range(1, 41)) + later)
    os.utime(path, (now - 2700, now - 2700))
    (stall,) = [e for e in _report(path, STALL_SECONDS, now).events if e.kind == "stall"]
    assert says(
        "no new step since step 40, 60 min ago (the log's last write 45 min ago, 15 min after the step by its own "
        "timestamps)",
        stall.why,
    )


def test_a_grad_norm_ratio_under_the_pause_factor_reads_as_the_doc_says(tmp_path):
    path = tmp_path / "run.jsonl"
    rows = [{"step": s, "loss": 3.0, "grad_norm": 29.9 if s == 201 else 0.3} for s in range(1, 260)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    (alert,) = _report(path).events
    quoted("29.9 against a mean of 0.3 is `99.7×` beside `watch`, not `100×`")
    assert alert.action == "watch" and "is 99.7× its mean 0.3" in alert.why


def test_megatron_nan_iterations_are_nan_events_said_as_quoted(tmp_path):
    line = (
        " iteration {step:>6}/ 1000 | elapsed time per iteration (ms): 1000.0 | {body} loss scale: 65536.0 |"
    )
    body = {
        True: "number of nan iterations:   1 |",
        False: "lm loss: 3.000000E+00 | number of nan iterations:   0 |",
    }
    path = tmp_path / "run.log"
    path.write_text("".join(line.format(step=s, body=body[s == 100]) + "\n" for s in range(1, 121)))
    (event,) = _report(path).events
    assert (event.kind, event.start_step, event.action) == ("nan", 100, "watch")
    quote = quoted(
        "(Megatron's number of nan iterations: steps skipped for a nan/inf loss, left out of the loss it prints)"
    )
    assert quote in event.why
    quoted("`nan_iterations` (Megatron's `number of nan iterations`")
    assert "nan_iterations" in read_logs([path]).values


def test_a_throughput_drop_is_said_in_the_logs_unit_as_quoted(tmp_path):
    path = tmp_path / "run.jsonl"
    rows = [
        {"step": s, "loss": 3.0, "tokens_per_second": 572.0 * (600 if 31 <= s <= 35 else 1000)}
        for s in range(1, 61)
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    (drop,) = _report(path).events
    assert quoted("`tokens/s 572,000 → 343,200, step time +66.7%`").strip("`") in drop.why


def test_blooms_step_time_drop_is_said_in_seconds_as_quoted(shared_data_dir):
    log = shared_data_dir / "training_logs" / "bigscience" / "tr11-176B-ml.throughput-42780.log"
    (drop,) = [e for e in _report(log).events if e.kind == "throughput_drop"]
    assert quoted("`step time +4.9%: 105.5 → 110.7 s per step`").strip("`") in drop.why


def test_the_eta_notes_and_days_are_what_the_program_gives(tmp_path):
    from runplan.cli.common import plan_from_file
    from runplan.monitor.vs_plan import compare

    plan = plan_from_file(str(REPO / "examples" / "70b-512-h100.yaml"))[2]
    for name, steps, seconds, note in (
        (
            "ramp",
            range(1, 301),
            18.0,
            "steps left per batch stage × its planned step time ÷ the speed ratio 1.014: 2,491 × 18 s + 90,542 × "
            "35.58 s ÷ planned goodput 0.995",
        ),
        ("main", range(2901, 3001), 37.0, "90,333 steps × 37 s ÷ planned goodput 0.995"),
    ):
        path = tmp_path / f"{name}.jsonl"
        path.write_text(
            "".join(json.dumps({"step": s, "loss": 3.0, "step_seconds": seconds}) + "\n" for s in steps)
        )
        vs = compare(read_logs([path]), plan)
        assert vs["notes"]["eta_seconds"] == quoted(note)
        if name == "ramp":
            days = quoted(
                "logged to step 300 at 18.0 s a step has 38.0 days left, where every step left at the ramp's 18 s "
                "would say 19.5"
            )
            assert days and f"{vs['eta_seconds'] / 86400:.1f}" == "38.0"
            every = (vs["remaining_steps"] * 18.0) / plan.reliability.goodput / 86400
            assert f"{every:.1f}" == "19.5"


def test_a_compressed_log_and_a_wrong_format_are_said_as_quoted(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    body = "".join(MEGATRON.format(step=s, s=8 * s, ms="1000.0") + "\n" for s in range(1, 20))
    Path("run.log.gz").write_bytes(gzip.compress(body.encode()))
    Path("run.log").write_text(body)
    for args, quote in (
        (["run.log.gz"], "'run.log.gz' is gzip-compressed: decompress it first (gunzip -k run.log.gz)"),
        (
            ["run.log", "--format", "torchtitan"],
            "'run.log' is not a torchtitan log (--format torchtitan): it reads as a megatron log: drop --format "
            "(auto-detects it) or give --format megatron",
        ),
    ):
        with pytest.raises(SystemExit) as exit_info:
            main(["monitor", *args])
        err = capsys.readouterr().err
        assert exit_info.value.code == 2
        assert err.strip() == f"runplan: error: LOG: {quoted(quote)}"
