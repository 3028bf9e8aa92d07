"""Read a run's metric log in any supported format into a :class:`~runplan.monitor.series.MetricLog`.

``read_logs(paths, fmt)`` detects each file's format (``fmt="auto"``) from its content, not its name:
a TFRecord header with a valid checksum is TensorBoard; a JSON document with ``log_history`` is a Hugging Face
trainer state, one whose values are ``{"values": {...}}`` maps is Megatron's scalars export; lines of JSON
objects are JSONL (also when the first line was cut); a file that starts with ``{``, does not parse, and has
no whole JSON object in its first lines is a JSON document cut short (said as invalid JSON); a header row
of comma-separated names is CSV; otherwise the engine whose line signature matches (Megatron, NeMo,
torchtitan, llm.c; DeepSpeed's own lines when none of these match). A file whose lines carry two engines' formats, a binary file, an
empty file, and a file nothing recognises end in a one-line error naming the file and the fix.
"""

from __future__ import annotations

import contextlib
import csv
import re
from pathlib import Path
from typing import Any

import numpy as np

from runplan.errors import SpecError
from runplan.fileio import JsonInputError, parse_json, read_bytes
from runplan.monitor.aliases import canonical
from runplan.monitor.readers import tabular, text, tfevents
from runplan.monitor.readers.crash import crash_notes
from runplan.monitor.series import (
    _FORMAT_HINT,
    MAX_RESTARTS,
    MetricLog,
    NoRecords,
    Restart,
    Rows,
    assemble,
    restarts_at,
    whole_steps,
)
from runplan.monitor.words import counted, steps_text

FORMATS = (
    "auto",
    "megatron",
    "torchtitan",
    "nemo",
    "hf",
    "llmc",
    "tensorboard",
    "scalars-json",
    "jsonl",
    "csv",
    "deepspeed",
)
_HINT = "check the file, or name its format with --format"
#: Largest log file read (bytes): runplan.fileio reads at most this much whatever size the file reports
#: (``/dev/zero`` reports 0). JSONL and CSV are parsed in bulk (readers.fastjsonl, numpy): issue 13's
#: 1,000,000-step JSONL log is 192 MB and is read and analysed in about 6 s on 2 cores
#: (benchmarks/bench_monitor.py); 200 MB admits it and keeps issue 17's 10 s / 2 GB (256 MB took 9.7-10.1 s on a
#: busy 2-core machine; benchmarks/bench_limits.py).
MAX_LOG_BYTES = 200_000_000
#: Largest log of the formats read line by line in Python (Megatron, torchtitan, NeMo, llm.c text; HF and
#: scalars JSON documents; TensorBoard event files): a Megatron line is ~330 bytes, so ~190k logged iterations;
#: a 99 MB text log took 7-11 s and 500 MB on a busy 2-core machine, so 64 MB keeps 10 s / 2 GB.
MAX_TEXT_LOG_BYTES = 64_000_000
#: Formats read in bulk, allowed up to MAX_LOG_BYTES; every other format stops at MAX_TEXT_LOG_BYTES.
_BULK_FORMATS = ("jsonl", "csv")
#: Lines sampled (from the start and the end) to recognise a text format and to spot a second one.
SAMPLE_LINES = 5000


def _error(message: str, hint: str = _HINT) -> SpecError:
    return SpecError(message, where="monitor.log", hint=hint)


def read_logs(paths: list[Path], fmt: str = "auto") -> MetricLog:
    """Every file of one run, merged by step (a later file's value wins where both have one)."""
    if not paths:
        raise _error("no log given", hint="name at least one log file")
    logs = [read_log(path, fmt) for path in paths]
    return logs[0] if len(logs) == 1 else merge(logs)


def read_log(path: Path, fmt: str = "auto") -> MetricLog:
    if fmt not in FORMATS:
        raise SpecError(
            f"unknown format '{fmt}'", where="monitor.format", hint=f"one of: {', '.join(FORMATS)}"
        )
    from runplan.fileio import check_name

    check_name(path, "monitor.log")  # Path.exists() raises on a name over 255 bytes
    if not path.exists():
        raise NoRecords(f"'{path}' does not exist", where="monitor.log", hint="give the path of a log file")
    if path.is_dir():
        return _read_directory(path, fmt)
    data = read_bytes(path, MAX_LOG_BYTES)
    if not data.strip():
        raise NoRecords(
            f"'{path}' is empty",
            where="monitor.log",
            hint="nothing has been logged yet; wait, or use --follow",
        )
    if fmt == "tensorboard" or (fmt == "auto" and tfevents.is_event_file(data[:12])):
        _check_line_by_line_size(path, len(data), "tensorboard")
        try:
            return _read_tensorboard([path], str(path))
        except SpecError as error:
            if fmt == "auto" or b"\x00" in data[:65536]:
                raise
            raise _named_format_error(error, _decode(data, path), path, "tensorboard") from None
    body = _decode(data, path)
    kind = fmt if fmt != "auto" else detect(body, path)
    _check_line_by_line_size(path, len(data), kind)
    if fmt == "auto":
        return assemble(parse(body, kind, path), str(path), kind)
    try:
        return assemble(parse(body, kind, path), str(path), kind)
    except SpecError as error:
        raise _named_format_error(error, body, path, kind) from None


def _named_format_error(error: SpecError, body: str, path: Path, kind: str) -> SpecError:
    """The error of a log read with ``--format KIND`` that gave nothing: where the content reads as another format,
    say which and the flag that reads it (not "name its format with --format" to a user who named one); else the
    reader's own error, its hint asking whether the file is a KIND log (a NoRecords stays one: --follow waits)."""
    try:
        found: str | None = detect(body, path)
    except SpecError:
        found = None
    if found is not None and found != kind:
        return SpecError(  # the fix in the message: as a hint its brackets would stand inside the hint's own
            f"'{path}' is not a {kind} log (--format {kind}): it reads as a {found} log: drop --format "
            f"(auto-detects it) or give --format {found}",
            where="monitor.log",
        )
    if error.hint not in (_HINT, _FORMAT_HINT):
        return error
    return type(error)(
        error.message,
        where=error.where,
        source=error.source,
        hint=f"check the file: is it a {kind} log? Leave --format out to detect its format",
    )


def _check_line_by_line_size(path: Path, size: int, kind: str) -> None:
    """A log of a format read line by line in Python is refused above MAX_TEXT_LOG_BYTES (JSONL and CSV, read
    in bulk, go up to MAX_LOG_BYTES)."""
    if kind in _BULK_FORMATS or size <= MAX_TEXT_LOG_BYTES:
        return
    raise _error(
        f"'{path}' is {size / 1e6:,.0f} MB, over the {MAX_TEXT_LOG_BYTES // 1_000_000} MB read for {kind} logs "
        f"(JSONL and CSV, read in bulk, may be up to {MAX_LOG_BYTES // 1_000_000} MB)",
        hint="give the part of the log to look at (e.g. its last lines), or export the metrics as JSONL or CSV",
    )


def _read_directory(path: Path, fmt: str) -> MetricLog:
    files = tfevents.event_files(path)
    if files and fmt in ("auto", "tensorboard"):
        return _read_tensorboard(files, str(path))
    state = path / "trainer_state.json"
    if state.is_file() and fmt in ("auto", "hf"):
        return read_log(state, "hf")
    raise _error(
        f"'{path}' is a directory without TensorBoard event files or trainer_state.json",
        hint="give a log file",
    )


#: The magic numbers of the compressions logs are kept in (RFC 1952 for gzip; bzip2's "BZh"; the xz and zstd file
#: formats' headers), with the command that decompresses a copy beside the file
_COMPRESSED = (
    (b"\x1f\x8b", "gzip", "gunzip -k"),
    (b"BZh", "bzip2", "bunzip2 -k"),
    (b"\xfd7zXZ\x00", "xz", "unxz -k"),
    (b"\x28\xb5\x2f\xfd", "zstd", "unzstd"),
)


def _decode(data: bytes, path: Path) -> str:
    for magic, name, command in _COMPRESSED:
        if data.startswith(magic) and (name != "bzip2" or data[3:4].isdigit()):
            # the command is said in the message: in the hint it would stand in brackets inside the hint's own
            raise SpecError(
                f"'{path}' is {name}-compressed: decompress it first ({command} {path})", where="monitor.log"
            )
    if b"\x00" in data[:65536]:
        raise _error(f"'{path}' is binary, and not a TensorBoard event file", hint="give a text log")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise _error(
            f"'{path}' is not UTF-8 text (byte {error.start:,})", hint="give a text log or an event file"
        ) from None


def detect(body: str, path: Path) -> str:
    """The format of a text log (see the module docstring)."""
    head = body.lstrip()[:1]
    objects, probed = _object_lines(body)
    # JSONL whose first line was cut (``tail -c``) starts mid-object: every probed line but that one is an object
    # (one JSON line among a text log's first lines, a launcher's config, does not make it JSONL)
    cut_jsonl = probed > 1 and objects >= probed - 1
    if head in "{[" or cut_jsonl:
        found = _detect_json(body, f"'{path}'", objects > 0)
        if found:
            return found
    first = body.split("\n", 1)[0]
    if "," in first and _looks_like_header(first):
        return "csv"
    lines = body.splitlines()
    sample = lines[:SAMPLE_LINES] + lines[max(SAMPLE_LINES, len(lines) - 1000) :]
    counts = text.signature_counts(sample) or text.signature_counts(sample, text.FALLBACK_SIGNATURES)
    if not counts:
        _refuse_hf_printed(body, f"'{path}'")
        raise _error(
            f"'{path}': no known log format recognised in its first {min(len(lines), SAMPLE_LINES):,} lines",
            hint=f"name the format with --format, one of: {', '.join(FORMATS[1:])}",
        )
    ranked = sorted(counts.items(), key=lambda item: -item[1][0])
    best, (hits, _) = ranked[0]
    others = [(name, first) for name, (count, first) in ranked[1:] if count >= max(3, 0.02 * hits)]
    if others:
        name, first_line = others[0]
        raise _error(
            f"'{path}' mixes log formats: {best} lines (first at line {counts[best][1]}) and {name} lines "
            f"(first at line {first_line})",
            hint=f"split the file per run, or name one format with --format {best}: the other lines are skipped",
        )
    return best


#: The Hugging Face Trainer's printed log dicts: ``PrinterCallback`` / ``ProgressCallback.on_log`` print
#: ``str(logs)`` (transformers ``trainer_callback.py``), a Python dict without the step (``Trainer.log`` adds
#: ``"step"`` only to the copy it appends to ``state.log_history``); ``tqdm.write`` puts a ``\r`` (the bar cleared)
#: before each when stderr shares the file
_HF_PRINTED = re.compile(
    r"(?:^|\r)\{'(?:loss|grad_norm|learning_rate|epoch|eval_loss|train_runtime)': ", re.MULTILINE
)


def _refuse_hf_printed(body: str, where: str) -> None:
    """A log of the Trainer's printed dicts (in its first 64 kB) cannot be read: they carry no step."""
    if _HF_PRINTED.search(body[:65536]):
        raise _error(
            f"{where} holds the Hugging Face Trainer's printed log dicts ({{'loss': ...}}), which carry no step",
            hint="give the run's trainer_state.json, output_dir/checkpoint-N/trainer_state.json, written at every "
            "save: its log_history holds the same entries with their steps",
        )


#: Non-blank lines looked at to tell JSONL from a JSON document that does not parse (one cut short).
_JSONL_PROBE_LINES = 5


def _detect_json(body: str, where: str, object_lines: bool) -> str | None:
    """The JSON format of ``body``; ``object_lines``: some of its first lines are whole JSON objects."""
    try:
        data = parse_json(body)
    except JsonInputError as error:
        if object_lines:
            return "jsonl"
        if not body.lstrip().startswith("{"):
            return None
        # a document (Megatron's scalars export, a trainer state) cut short or broken: its own error, where it
        # breaks, not a count of its lines that are not JSON objects
        _refuse_hf_printed(body, where)
        if _first_line_cut(body):  # a JSONL log's first object still being written: wait for it
            raise NoRecords(
                f"{where}: its only line (line 1) is cut short (still being written?)",
                where="monitor.log",
                hint="wait for its first whole line, or use --follow",
            ) from None
        raise _not_json(where, error) from None
    if isinstance(data, dict):
        if "log_history" in data:
            return "hf"
        if data and all(isinstance(v, dict) and "values" in v for v in data.values()):
            return "scalars-json"
        if object_lines:  # JSONL of one line
            return "jsonl"
        # a JSON document of another kind (an engine's config): not "N lines are not JSON objects"
        raise _error(
            f"{where} is a JSON document but not a metric log: no 'log_history' (a trainer state) and not "
            '{"<tag>": {"values": {...}}} (Megatron\'s scalars export)',
            hint="give the run's metric log",
        )
    return None


def _first_line_cut(body: str) -> bool:
    """Whether ``body``, one line with no newline yet (the engines end every line with one), is a JSONL log's first
    record cut short: one flat object without the ``}`` a whole one ends with (``{"step": 1, "loss": ``), as a text
    log's last line is told by its format's own end (:data:`_WHOLE_LINE_END`). A JSON document on one line (Megatron's
    scalars export nests an object per tag) keeps its invalid-JSON error, which says where it breaks."""
    return "\n" not in body and body.count("{") == 1 and not body.rstrip().endswith("}")


def _object_lines(body: str) -> tuple[int, int]:
    """(whole JSON objects, lines looked at) among the first few non-blank lines. A JSONL log's lines are
    objects; a JSON document spread over lines has none (``{``, ``"tag": {``, ``"1": 2.0,``), and one on a
    single line that does not parse has none either."""
    objects = probed = 0
    for line in body.split("\n", 100)[:100]:  # not the whole file: this runs on every text log
        if not line.strip():
            continue
        with contextlib.suppress(JsonInputError):
            objects += isinstance(parse_json(line), dict)
        probed += 1
        if probed == _JSONL_PROBE_LINES:
            break
    return objects, probed


def _not_json(where: str, error: JsonInputError) -> SpecError:
    return _error(f"{where}: not valid JSON ({error})", hint="check the file: is it complete?")


def _looks_like_header(line: str) -> bool:
    names = [name.strip().strip('"') for name in line.split(",")]
    return len(names) >= 2 and any(canonical(_wandb_metric(name)) for name in names)


def _wandb_metric(name: str) -> str:
    return name.split(" - ", 1)[1] if " - " in name else name


def parse(body: str, kind: str, path: Path) -> Rows:
    where = f"'{path}'"
    if kind in text.READERS:
        lines = body.splitlines()
        notes = []
        if _last_line_cut(body, lines, kind):
            if len(lines) == 1:  # a job just launched: its first line is not there yet, as in an empty log
                raise NoRecords(
                    f"{where}: its only line (line 1) is cut short (still being written?)",
                    where="monitor.log",
                    hint="wait for its first whole line, or use --follow",
                )
            notes.append(f"the last line (line {len(lines):,}) is cut short (still being written?); left out")
            lines = lines[:-1]
        rows = text.READERS[kind](lines, where)
        if rows.steps.size == 0:
            raise _error(f"{where}: no {kind} log lines found", hint=_HINT)
        record = text.SIGNATURES.get(kind) or text.FALLBACK_SIGNATURES[kind]
        rows.notes += crash_notes(
            body, lines, lambda line: bool(record.search(text.strip_prefix(line))), int(rows.steps[-1])
        )
        rows.notes = notes + rows.notes
        return rows
    if kind in ("hf", "scalars-json"):
        data = _json_document(body, where)
        return tabular.read_hf_state(data, where) if kind == "hf" else tabular.read_scalars_json(data, where)
    if kind == "jsonl":
        return tabular.read_jsonl(body, where)
    # a row being appended may be cut (``51,3.0`` of ``51,3.0,12345``): csv.writer and pandas' to_csv end every
    # row with a newline, so a last row without one is left out, said, unless it reads whole (_whole_csv_row)
    last_line = 0 if body.endswith("\n") else body.count("\n") + 1
    cut = last_line >= 3 and not _whole_csv_row(body)  # a header and a whole row before it
    if cut:
        body = body[: body.rfind("\n") + 1]
    rows = tabular.read_csv(body, where)
    if cut:
        rows.notes.insert(
            0, f"the last line (line {last_line:,}) is cut short (still being written?); left out"
        )
    return tabular.deepspeed_samples_to_steps(rows, path.name, body.split("\n", 1)[0], where)


#: Rows before a CSV's last row whose last cells give the width that row's last cell is held to
_WIDTH_ROWS = 100


def _whole_csv_row(body: str) -> bool:
    """Whether a CSV's last row, written without a final newline, reads whole: spreadsheet exports end so (RFC
    4180 §2 makes the last row's line break optional). Whole: the header's field count, no quote left open, every
    cell empty or a number, or text where the row before has text too (a run name), and a last cell no shorter
    than the shortest of its column in the 100 rows before: a row cut while being written is cut in its last cell,
    to a prefix of its number (``51,3.0,1`` of ``51,3.0,12345``, a 99.99% throughput drop). A cut prefix as long
    as the column's shortest number is not told from a whole one."""
    head = body[: body.find("\n")]
    start = body.rfind("\n") + 1
    earlier: list[str] = []
    end = start - 1
    while end > len(head) and len(earlier) < _WIDTH_ROWS:
        begin = body.rfind("\n", 0, end) + 1
        earlier.append(body[begin:end].rstrip("\r"))
        end = begin - 1
    last = body[start:]
    header, row = next(csv.reader([head]), []), next(csv.reader([last]), [])
    if last.count('"') % 2 or len(row) != len(header) or not earlier:
        return False
    previous = [next(csv.reader([line]), [""]) for line in earlier]
    if not all(_reads(cell) or not _reads((previous[0] + [""] * len(row))[k]) for k, cell in enumerate(row)):
        return False
    widths = [len(cells[-1].strip()) for cells in previous if len(cells) == len(row)]
    return len(row[-1].strip()) >= min(widths, default=0)


def _reads(cell: str) -> bool:
    """A CSV cell that is empty or a number as the CSV reader takes one (``float``: nan and inf included)."""
    try:
        float(cell.strip() or 0)
    except ValueError:
        return False
    return True


#: The text a whole metric line of a format ends with, where it has one: Megatron's fields each end with ``|``;
#: NeMo's progress bar with its postfix's ``]`` (tqdm rewrites the bar after a ``\r``, with no newline until the
#: epoch ends); torchtitan's training line with its last field, ``mfu: M%`` (metrics.py, v0.2.2)
_WHOLE_LINE_END = {"megatron": "|", "nemo": "]", "torchtitan": "%"}


def _last_line_cut(body: str, lines: list[str], kind: str) -> bool:
    """Whether a text log's last line is a metric line still being written: the engines end every line with a
    newline (``print``, ``logging``), so a file that does not end with one has its last line cut, maybe mid-number
    (``tps: 1`` of ``tps: 1,118``). A line that ends as a whole line of its format does (:data:`_WHOLE_LINE_END`)
    is kept; one that starts like a metric record of the format (a Megatron ``iteration N/ T |`` or ``validation
    loss at iteration N |`` line) and lacks that end is cut; a last line that is no metric line is not said
    (Megatron's closing ``[after training is done] datetime: ...``). A Megatron record's wrapped tail cut short
    leaves its record without the closing ``|``: the reader leaves that record out (``text._drop_cut``)."""
    if body.endswith("\n") or not lines:  # a log's only line too: torchtitan's first ``tps: 1`` of 1,118
        return False
    last = text.strip_prefix(lines[-1]).rstrip()
    end = _WHOLE_LINE_END.get(kind)
    if end is not None and last.endswith(end):
        return False
    if kind == "megatron" and text.MEGATRON_VALID.search(last):
        return True
    record = text.SIGNATURES.get(kind) or text.FALLBACK_SIGNATURES[kind]
    return bool(record.search(last))


def _json_document(body: str, where: str) -> dict[str, Any]:
    try:
        data = parse_json(body)
    except JsonInputError as error:
        raise _not_json(where, error) from None
    if not isinstance(data, dict):
        raise _error(f"{where}: a JSON object is expected at the top", hint=_HINT)
    return data


def _read_tensorboard(files: list[Path], source: str) -> MetricLog:
    notes: list[str] = []
    merged: dict[str, list[tuple[int, float]]] = {}
    for file in files:
        for tag, points in tfevents.read_event_file(file, notes).items():
            merged.setdefault(tag, []).extend(points)
    if not merged:
        raise _error(f"'{source}': no scalars in the event file(s)", hint="log scalars with add_scalar")
    merged = _deepspeed_tags(merged, notes)
    rows = _rows_from_tags(merged, f"'{source}'")
    rows.notes = notes + rows.notes
    return assemble(rows, source, "tensorboard")


#: DeepSpeed's monitor tags (``deepspeed/runtime/engine.py`` and ``pipe/engine.py``, commit edaa7221):
#: ``Train/Samples/train_loss``, ``lr``, ``loss_scale``, ``eval_loss``, written at ``self.global_samples``
_DEEPSPEED_TAG = "Train/Samples/"


def _deepspeed_tags(
    tags: dict[str, list[tuple[int, float]]], notes: list[str]
) -> dict[str, list[tuple[int, float]]]:
    """DeepSpeed's ``Train/Samples/<name>`` scalars by ``<name>``, at steps = samples ÷ their greatest common
    divisor: the engine adds the global batch to ``global_samples`` each step (``_take_model_step``), so step k
    is written at k × batch (a constant batch; said in a note). Other tags are left as they are."""
    ours = {tag: points for tag, points in tags.items() if tag.startswith(_DEEPSPEED_TAG)}
    samples = np.asarray([step for points in ours.values() for step, _ in points], dtype=np.int64)
    if samples.size == 0 or samples.min() < 0:
        return tags
    batch = int(np.gcd.reduce(samples))
    if batch <= 1:
        return tags
    out = {tag: points for tag, points in tags.items() if tag not in ours}
    for tag, points in ours.items():
        out[tag[len(_DEEPSPEED_TAG) :]] = [(step // batch, value) for step, value in points]
    notes.append(
        f"DeepSpeed's {_DEEPSPEED_TAG}* scalars are written at the samples seen; steps = samples ÷ {batch:,} "
        "(their greatest common divisor, the global batch if it was constant)"
    )
    return out


def _rows_from_tags(tags: dict[str, list[tuple[int, float]]], where: str) -> Rows:
    """Long (tag, step, value) points as rows in file order: one row per point, one metric each."""
    chosen: dict[str, tuple[str, float, list[tuple[int, float]]]] = {}
    ignored = []
    for tag, points in tags.items():
        found = canonical(tag)
        if found is None or found[0] == "step" or found[0] in {c for c, _, _ in chosen.values()}:
            ignored.append(tag)
            continue
        chosen[tag] = (found[0], found[1], points)
    for _, _, points in chosen.values():  # negative or absurd step counters, as in every other reader
        whole_steps([step for step, _ in points], where, "point")
    total = sum(len(points) for _, _, points in chosen.values())
    steps = np.empty(total, dtype=np.int64)
    values = {target: np.full(total, np.nan) for target, _, _ in chosen.values()}
    present = {target: np.zeros(total, dtype=bool) for target in values}
    at = 0
    for target, factor, points in chosen.values():
        count = len(points)
        steps[at : at + count] = [step for step, _ in points]
        values[target][at : at + count] = [value * factor for _, value in points]
        present[target][at : at + count] = True
        at += count
    # a tag's own points are in file order (a restart shows as its step going back); rows are then ordered
    # by step, stable, so the later of two points at one step stays later
    first_tag = next(iter(chosen.values()))[2] if chosen else []
    tag_steps = np.asarray([step for step, _ in first_tag], dtype=np.int64)
    back = np.flatnonzero(np.diff(tag_steps) < 0)
    restarts = restarts_at(tag_steps, back[:MAX_RESTARTS])
    order = np.argsort(steps, kind="stable")
    return Rows(
        steps=steps[order],
        values={name: column[order] for name, column in values.items()},
        present={name: column[order] for name, column in present.items()},
        ignored_names=ignored,
        source_names={target: tag for tag, (target, _, _) in chosen.items()},
        restarts=restarts,
    )


def merge(logs: list[MetricLog]) -> MetricLog:
    """Several files of one run on the union of their steps. A file that logs a metric again at steps an
    earlier file has is a restart from the first such step: what the earlier files logged from there on
    belongs to the abandoned attempt and is left out (the later file's values are used; steps it has not
    reached again are dropped), as in one file whose step counter goes back."""
    steps = np.unique(np.concatenate([log.steps for log in logs]))
    values: dict[str, np.ndarray] = {}
    nonfinite: dict[str, np.ndarray] = {}
    notes: list[str] = []
    restarts: list[Restart] = []
    abandoned = [log.abandoned_seconds for log in logs]
    reach = [max(int(later.steps[-1]) for later in logs[k:]) for k in range(len(logs))]
    previous_last: int | None = None
    for k, log in enumerate(logs):
        slots = np.searchsorted(steps, log.steps)
        same_history = all(earlier.format == "hf" for earlier in logs[: k + 1])
        again = _repeated_from(log, slots, steps.size, values, nonfinite, notes, same_history)
        if previous_last is not None and again is not None and again <= previous_last:
            restarts.append(Restart(previous_last, again, min(previous_last, reach[k])))
            abandoned.append(_abandon_from(again, reach[k], steps, values, nonfinite, notes))
        for name, column in log.values.items():
            has = np.isfinite(column) | log.nonfinite[name]
            values[name][slots[has]] = column[has]
            nonfinite[name][slots[has]] = log.nonfinite[name][has]
        notes.extend(f"{log.source}: {note}" for note in log.notes)
        previous_last = max(previous_last or 0, int(log.steps[-1]))
    logged = np.logical_or.reduce([np.isfinite(v) | nonfinite[n] for n, v in values.items()])
    first = logs[0]
    return MetricLog(
        source=", ".join(log.source for log in logs),
        format="+".join(dict.fromkeys(log.format for log in logs)),
        steps=steps[logged],
        values={name: column[logged] for name, column in values.items()},
        nonfinite={name: column[logged] for name, column in nonfinite.items()},
        notes=notes,
        saved_steps=sorted({step for log in logs for step in log.saved_steps}),
        restarts=[restart for log in logs for restart in log.restarts] + restarts,
        repeated_steps=sum(log.repeated_steps for log in logs),
        total_steps=next((log.total_steps for log in logs if log.total_steps), None),
        checkpoint_interval_steps=next(
            (log.checkpoint_interval_steps for log in logs if log.checkpoint_interval_steps), None
        ),
        interval_steps=min(log.interval_steps for log in logs),
        gaps=first.gaps if len(logs) == 1 else [],
        source_names={k: v for log in logs for k, v in log.source_names.items()},
        abandoned_seconds=np.concatenate(abandoned),
    )


def _repeated_from(
    log: MetricLog,
    slots: np.ndarray,
    size: int,
    values: dict[str, np.ndarray],
    nonfinite: dict[str, np.ndarray],
    notes: list[str],
    same_history: bool = False,
) -> int | None:
    """The first step at which ``log`` has a metric that an earlier file has too (None: none), said per metric;
    adds the merged columns (on the union of the steps) of metrics not seen before. ``same_history``: trainer
    states (HF), where a later checkpoint's ``log_history`` holds an earlier one's entries as they were (the
    Trainer loads it on resume and appends): a value equal to the earlier file's is that entry again, not a
    redone step; only a value that differs is (a run resumed from an older checkpoint)."""
    again: int | None = None
    copies = np.zeros(log.steps.size, dtype=bool)
    for name, column in log.values.items():
        target = values.setdefault(name, np.full(size, np.nan))
        bad = nonfinite.setdefault(name, np.zeros(size, dtype=bool))
        has = np.isfinite(column) | log.nonfinite[name]
        overlap = has & (np.isfinite(target[slots]) | bad[slots])
        if same_history:
            equal = overlap & ((target[slots] == column) | (bad[slots] & log.nonfinite[name]))
            copies |= equal
            overlap &= ~equal
        if overlap.any():
            first, last = int(log.steps[overlap][0]), int(log.steps[overlap][-1])
            again = first if again is None else min(again, first)
            notes.append(
                f"{log.source} logs {name} again at {int(overlap.sum()):,} steps ({first:,}-{last:,}): a restart; "
                "its values are used"
            )
    if copies.any():
        first, last = int(log.steps[copies][0]), int(log.steps[copies][-1])
        notes.append(
            f"{log.source} holds the earlier file's entries at {counted(int(copies.sum()), 'step')} ({first:,}-"
            f"{last:,}) unchanged: the same log_history, saved again at a later checkpoint, not a restart"
        )
    return again


def _abandon_from(
    again: int,
    reach: int,
    steps: np.ndarray,
    values: dict[str, np.ndarray],
    nonfinite: dict[str, np.ndarray],
    notes: list[str],
) -> np.ndarray:
    """Clear what the earlier files logged at steps ≥ ``again`` (an abandoned attempt); their step times (NaN
    where a row has none) for the goodput. Rows past ``reach``, where the run has not been again, are said."""
    logged = np.logical_or.reduce([np.isfinite(v) | nonfinite[n] for n, v in values.items()])
    cleared = logged & (steps >= again)
    seconds = values.get("step_seconds")
    out = seconds[cleared] if seconds is not None else np.full(int(cleared.sum()), np.nan)
    for name in values:
        values[name][cleared] = np.nan
        nonfinite[name][cleared] = False
    beyond = steps[cleared & (steps > reach)]
    if beyond.size:
        notes.append(
            f"{counted(int(beyond.size), 'row')} an abandoned attempt logged past where the run has reached "
            f"({steps_text(int(beyond.min()), int(beyond.max()))}) left out: the run went on from a checkpoint "
            "before them"
        )
    return out
