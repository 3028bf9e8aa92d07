"""Readers of the engines' text logs (line formats read from each engine's logging code).

- Megatron-LM (``megatron/training/training.py``, ``training_log``) and Megatron-DeepSpeed: one line per logged
  iteration, fields separated by ``|``::

      [2024-05-01 10:00:00] iteration      100/    5000 | consumed samples: ... |
      elapsed time per iteration (ms): 1234.5 | learning rate: 1.5E-04 | ... | lm loss: 6.54E+00 |
      loss scale: 1.0 | grad norm: 1.234 | number of skipped iterations:   0 | ...

  Step time in ``(ms)`` (Megatron-LM) or ``(s)`` (Megatron-DeepSpeed, e.g. BLOOM); launcher prefixes such as
  ``[default7]:`` are skipped; validation lines ``validation loss at iteration N | lm loss value: ...`` give
  ``val_loss``; ``saving checkpoint at iteration N`` gives a saved step. A line wrapped onto several lines
  (fields without an ``iteration N/T`` head) is joined to the record it continues. ``report_memory``'s ``[Rank N]
  (after N iterations) memory (MB) | ... | max allocated: X | ...`` gives the step's peak allocated memory (the
  largest of the ranks that print it).
- NeMo: ``Training epoch 0, iteration 1/249 | lr: ... | global_step: 1 | reduced_train_loss: 1.653 |
  train_step_timing in s: 2.505`` (NeMo 2) and the Lightning progress bar
  ``Epoch 0: ... [01:23<10:12, reduced_train_loss=5.43, global_step=119.0, train_step_timing in s=0.689]``.
- torchtitan (``torchtitan/components/metrics.py``): ``step: 10  loss:  9.1234  grad_norm:  1.2345  memory:
  12.34GiB(15.62%)  tps: 12,345  tflops: 123.45  mfu: 12.34%`` with ANSI colours (``memory``: the peak reserved,
  GiB); ``validate step: N  loss: ...``.
- llm.c (``train_gpt2.cu`` logger): ``s:N trl:L lr:X norm:G`` (train), ``s:N tel:L`` (validation); its stdout
  ``step N/M | loss L (Zz)| norm G (Zz)| lr X | T ms | Y% bf16 MFU | R tok/s`` and ``val loss V``.
- DeepSpeed (commit edaa7221): ``steps: N loss: L iter time (s): T samples/sec: S`` (pipeline engine) and
  ``[Rank 0] step=N, skipped=K, lr=[X, ...], mom=[...]`` (engine progress); the timer's ``global_step=N, ...
  CurrSamplesPerSec=S, MemAllocated=...GB, MaxMemAllocated=XGB`` (commit 38327e07); read only when no other
  format's lines are there (a Megatron-DeepSpeed log holds them too).

Text logs are read leniently: they mix metric lines with any other output, so lines and fields not recognised
are skipped. A metric field of a Megatron or NeMo record whose value is not a number (``lm loss: GARBAGE``) is
left out too, but counted, and the count and the first line are said in a note.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable

from runplan.monitor.aliases import canonical
from runplan.monitor.series import Rows, rows_from_lists
from runplan.monitor.words import counted

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_NUMBER = r"[-+]?(?:\d[\d,]*\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|nan|NaN|inf|-inf|Infinity)"

MEGATRON_HEAD = re.compile(r"\biteration\s+(\d+)\s*/\s*(\d+)\s*\|")
MEGATRON_FIELD = re.compile(r"([A-Za-z][A-Za-z0-9 _\-/().%]*?)\s*:\s*(" + _NUMBER + r")\s*(?=\||$)")
#: A ``name: value`` field whatever its value, to find a metric whose value is not a number (``lm loss: GARBAGE``)
ANY_FIELD = re.compile(r"([A-Za-z][A-Za-z0-9 _\-/().%]*?)\s*:\s*([^|]*?)\s*(?=\||$)")
MEGATRON_VALID = re.compile(r"validation loss at iteration\s+(\d+)\s*\|(.*)")
#: ``report_memory`` (Megatron-LM and Megatron-DeepSpeed ``megatron/utils.py``): ``[Rank 0] (after 10 iterations)
#: memory (MB) | allocated: ... | max reserved: ...``, printed right after the first logged iteration: its ``|``
#: fields are not a wrapped part of that record (and its last field does not end with ``|``)
MEGATRON_MEMORY = re.compile(r"\bmemory \(MB\)\s*\|")
#: the step and ``max allocated`` of a ``report_memory`` line: ``(after N iterations)`` or ``(before|after
#: save_checkpoint for iteration N)`` (megatron/training/training.py @ d98e8a64); MB = 1024 × 1024 bytes
MEGATRON_MEMORY_PEAK = re.compile(
    r"\((?:after (\d+) iterations|(?:before|after) save_checkpoint for iteration (\d+))\) memory \(MB\).*?"
    r"\|\s*max allocated:\s*(" + _NUMBER + r")"
)
MEGATRON_SAVE = re.compile(r"saving checkpoint at iteration\s+(\d+)|saved checkpoint from iteration\s+(\d+)")
NEMO_PIPE = re.compile(r"Training epoch \d+, iteration \d+/\d+\s*\|(.*)")
#: A number as tqdm's ``format_num`` prints it (``str`` or ``.3g``): never with thousands separators, so a whole
#: number is not run on into the bar's ``, `` separator (``global_step=199, ...`` read as ``199,``)
_BAR_NUMBER = r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|nan|NaN|inf|-inf|Infinity)"
NEMO_BAR = re.compile(r"(?:^|[\[,]\s*)([A-Za-z_][A-Za-z0-9_ /]*?)=(" + _BAR_NUMBER + r")")
TITAN_STEP = re.compile(r"(?<![A-Za-z_])(validate )?step:\s*(\d+)\s+loss:\s*(" + _NUMBER + r")")
#: torchrun's ``--tee`` prefix of rank N's lines: ``[rank3]:`` (``--role rank``), ``[default3]:`` (the default role)
TITAN_RANK = re.compile(r"^\[[A-Za-z_]*(\d+)\]:")
TITAN_FIELD = re.compile(r"\b(grad_norm|tps|tflops|mfu|memory):\s*(" + _NUMBER + r")(%|GiB)?")
#: DeepSpeed (commit edaa7221): ``PipelineEngine.train_batch`` prints ``steps: N loss: L [name: v ...] iter time
#: (s): T samples/sec: S`` (``deepspeed/runtime/pipe/engine.py``); ``DeepSpeedEngine._report_progress`` logs
#: ``[Rank 0] step=N, skipped=K, lr=[...], mom=[...]`` (``deepspeed/runtime/engine.py``; one lr per param group)
DS_PIPE = re.compile(
    r"(?<![A-Za-z_])steps: (\d+) loss: (" + _NUMBER + r") .*?iter time \(s\): (" + _NUMBER + r")"
)
DS_PROGRESS = re.compile(r"\[Rank \d+\] step=(\d+), skipped=\d+, lr=\[(" + _NUMBER + r")")
DS_SAMPLES = re.compile(r"samples/sec: (" + _NUMBER + r")")
#: ``ThroughputTimer.stop`` (deepspeed/utils/timer.py @ 38327e07): ``epoch=E/micro_step=M/global_step=N,
#: RunningAvgSamplesPerSec=..., CurrSamplesPerSec=S, MemAllocated=...GB, MaxMemAllocated=XGB`` (X in GiB: ÷ 1024**3)
DS_TIMER = re.compile(
    r"global_step=(\d+), RunningAvgSamplesPerSec=\S+, CurrSamplesPerSec=(" + _NUMBER + r"), "
    r"MemAllocated=\S+?GB, MaxMemAllocated=(" + _NUMBER + r")GB"
)
LLMC = re.compile(r"^s:(\d+)\s+(trl|tel|eval):(" + _NUMBER + r")(.*)$")
LLMC_FIELD = re.compile(r"\b(lr|norm):(" + _NUMBER + r")")
#: llm.c's stdout (karpathy/llm.c @ f1e2ace6, ``train_gpt2.cu``): ``printf0("step %4d/%d | loss %7.6f (%+.2fz)| norm
#: %6.4f (%+.2fz)| lr %.2e | %.2f ms | %.1f%% bf16 MFU | %.0f tok/s\n", step + 1, ...)``; earlier commits print
#: ``train loss`` without the z-scores (and ``A100 fp16 MFU``), ``train_gpt2.py`` ``| (T ms | Y tok/s)``, the
#: first ones ``step N/M: train loss L norm G lr X (T ms, Y tok/s)``. The printed step is ``step + 1``: the updates
#: done once the line is printed
LLMC_STDOUT = re.compile(r"^step\s+(\d+)/(\d+)\s*[|:]\s*(?=(?:train )?loss\s)(.*)$")
LLMC_STDOUT_FIELDS = (
    ("trl", re.compile(r"\bloss\s+(" + _NUMBER + r")")),
    ("norm", re.compile(r"\bnorm\s+(" + _NUMBER + r")")),
    ("lr", re.compile(r"\blr\s+(" + _NUMBER + r")")),
    ("dt_ms", re.compile(r"(" + _NUMBER + r") ms\b")),
    ("mfu(%)", re.compile(r"(" + _NUMBER + r")%[^|]*?MFU")),
    ("tok/s", re.compile(r"(" + _NUMBER + r") tok/s")),
)
#: ``printf0("val loss %f\n", val_loss)``: computed at the top of loop step ``step``, before its update, so on
#: the weights after ``step`` updates: the printed step of the line before (``step`` = the next line's ``step + 1``
#: − 1)
LLMC_VAL = re.compile(r"^val loss\s+(" + _NUMBER + r")\s*$")

#: format name -> regex whose hits in a sample of lines decide the format (``detect``)
SIGNATURES: dict[str, re.Pattern[str]] = {
    "megatron": re.compile(r"^(?!.*reduced_train_loss).*\biteration\s+\d+\s*/\s*\d+\s*\|"),
    "nemo": re.compile(r"reduced_train_loss[=:]"),
    "torchtitan": re.compile(r"(?<![A-Za-z_])step:\s*\d+\s+loss:"),
    "llmc": re.compile(r"^s:\d+\s+(trl|tel):|" + LLMC_STDOUT.pattern),
}


#: Formats recognised only when no format of SIGNATURES is: DeepSpeed's own lines also appear in a
#: Megatron-DeepSpeed log (the engine under Megatron's loop), which is Megatron's format, not two mixed
FALLBACK_SIGNATURES: dict[str, re.Pattern[str]] = {
    "deepspeed": re.compile(DS_PIPE.pattern + "|" + DS_PROGRESS.pattern),
}


#: ``_Collector.known``'s answer for a field name not seen yet
_UNSEEN: tuple[str, float] = ("", 0.0)


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def unreadable_fields(text: str) -> list[tuple[str, str]]:
    """(name, value) of the metric fields of a ``|``-separated record whose value is not a number."""
    out = []
    for name, value in ANY_FIELD.findall(text):
        metric = canonical(name)
        if metric is not None and metric[0] != "step" and not re.fullmatch(_NUMBER, value):
            out.append((name.strip(), value))
    return out


class _Collector:
    """Rows keyed by step, in file order; unknown field names remembered for the notes."""

    def __init__(self) -> None:
        self.steps: list[int] = []
        self.records: list[dict[str, float]] = []
        self.ignored: set[str] = set()
        self.names: dict[str, str] = {}
        self.saved: list[int] = []
        self.total: int | None = None
        self.unreadable = 0
        self.first_unreadable = ""  # "line N: name 'value'", for the note
        self.known: dict[str, tuple[str, float] | None] = {}  # field name as written -> its metric

    def unreadable_in(self, number: int, text: str) -> None:
        """Count the metric values of line ``number`` that are not numbers (a corrupt line): a text log is read
        leniently (lines and fields it does not know are skipped), so these are left out and said in a note.
        Callers call this only when fewer fields were read as numbers than the line has ``:`` (one per field):
        calling it on every line cost 10% of a 37 MB log's read time."""
        bad = unreadable_fields(text)
        if bad and not self.unreadable:
            name, value = bad[0]
            self.first_unreadable = f"line {number:,}: {name} {value[:40]!r}"
        self.unreadable += len(bad)

    def add(self, step: int, fields: Iterable[tuple[str, str]]) -> dict[str, float]:
        record: dict[str, float] = {}
        self.steps.append(step)
        self.records.append(record)
        self.update(record, fields)
        return record

    def update(self, record: dict[str, float], fields: Iterable[tuple[str, str]]) -> None:
        """Each field a metric maps to, into ``record``. The same few names come on every line, so each name's
        metric is looked up once (``known``) and a value is parsed by ``float`` first (thousands separators
        only when that fails): about 40% of a 200,000-line llm.c log's read time was spent here."""
        known, names = self.known, self.names
        for raw, text in fields:
            found = known.get(raw, _UNSEEN)
            if found is _UNSEEN:
                found = known[raw] = self._first_sight(raw)
            if found is None:
                continue
            name, factor = found
            try:
                value = float(text)
            except ValueError:
                try:
                    value = _number(text)
                except ValueError:
                    continue
            record[name] = value * factor
            if name not in names:
                names[name] = raw.strip()

    def _first_sight(self, raw: str) -> tuple[str, float] | None:
        """The metric a field name maps to; None for the step and for names that map to none (remembered)."""
        found = canonical(raw)
        if found is None:
            self.ignored.add(raw.strip())
        return None if found is None or found[0] == "step" else found

    def rows(self, where: str) -> Rows:
        rows = rows_from_lists(self.steps, self.records, where)
        rows.ignored_names = sorted(self.ignored)
        rows.source_names = self.names
        rows.saved_steps = self.saved
        rows.total_steps = self.total
        if self.unreadable:
            rows.notes.append(
                f"{counted(self.unreadable, 'metric value')} could not be read as a number and "
                f"{'was' if self.unreadable == 1 else 'were'} left out (the first at {self.first_unreadable})"
            )
        return rows


def read_megatron(lines: list[str], where: str = "the log") -> Rows:
    out = _Collector()
    current: dict[str, float] | None = None
    # per training record (index in ``out``): its last line's number and whether that line ends with "|"
    ends: dict[int, tuple[int, bool]] = {}
    peaks: dict[int, dict[str, float]] = {}  # the last reported step -> the row that holds its peak
    for number, line in enumerate(lines, start=1):
        head = MEGATRON_HEAD.search(line)
        if head:
            out.total = int(head.group(2))
            fields = MEGATRON_FIELD.findall(line[head.end() :])
            current = out.add(int(head.group(1)), fields)
            ends[len(out.steps) - 1] = (number, line.rstrip().endswith("|"))
            if len(fields) < line.count(":", head.end()):
                out.unreadable_in(number, line[head.end() :])
            continue
        valid = MEGATRON_VALID.search(line)
        if valid:
            out.add(int(valid.group(1)), [("lm loss value", v) for k, v in _val(valid.group(2))])
            current = None
            continue
        if MEGATRON_MEMORY.search(line):
            current = None
            _memory_peak(out, peaks, line)
            continue
        save = MEGATRON_SAVE.search(line)
        if save:
            out.saved.append(int(save.group(1) or save.group(2)))
            continue
        if current is not None and "|" in line:  # a wrapped record: more fields of the current iteration
            fields = MEGATRON_FIELD.findall(line)
            out.update(current, fields)
            ends[len(out.steps) - 1] = (number, line.rstrip().endswith("|"))
            if len(fields) < line.count(":"):
                out.unreadable_in(number, line)
    notes = _drop_cut(out, ends)
    rows = out.rows(where)
    rows.notes = notes + rows.notes
    return rows


def _memory_peak(out: _Collector, peaks: dict[int, dict[str, float]], line: str) -> None:
    """``max allocated`` of a ``report_memory`` line, into the record of its step: the last training record when it
    is that step's (the report follows it), else one row per step, at the step's first report. Each pipeline
    stage's data-parallel rank 0 prints one line (``[Rank N]``): the largest is kept, the most loaded stage, the
    one the plan's ``memory_bytes`` describes."""
    match = MEGATRON_MEMORY_PEAK.search(line)
    if not match:
        return
    step = int(match.group(1) or match.group(2))
    record = peaks.get(step)
    if record is None:  # a new step: its reports start a record (a restart's repeat of a step is a new one)
        record = out.records[-1] if out.steps and out.steps[-1] == step else out.add(step, [])
        peaks.clear()
        peaks[step] = record
    before = record.get("peak_memory_allocated_bytes")
    out.update(record, [("max allocated (MB)", match.group(3))])
    _keep_largest(record, "peak_memory_allocated_bytes", before)


def _keep_largest(record: dict[str, float], name: str, before: float | None) -> None:
    """Keep the larger of ``record[name]`` and the value it had ``before`` another rank's line (a value that is not
    a number does not replace a number)."""
    if before is not None and math.isfinite(before) and not record.get(name, -math.inf) >= before:
        record[name] = before


def _drop_cut(out: _Collector, ends: dict[int, tuple[int, bool]]) -> list[str]:
    """Leave out the training records whose last line does not end with "|" (cut short mid-file: a crash, a
    copy that lost bytes) and say where. Megatron ends every field with " |" (``training_log`` builds the line
    as ``' {}: {} |'.format(...)``), so a record that does not is cut, and its last value may be cut mid-number
    (``lm loss: 2.34`` of ``2.345279E+00``): the whole record is left out, as a cut last line is. A log whose
    records mostly do not end with "|" is another engine's layout, left as it is."""
    cut = [(index, number) for index, (number, whole) in ends.items() if not whole]
    if not cut or 2 * len(cut) >= len(ends):
        return []
    first_index, first_line = cut[0]
    step = out.steps[first_index]
    for index, _ in reversed(cut):
        del out.steps[index], out.records[index]
    if len(cut) == 1:
        return [f"line {first_line:,} (step {step:,}) is cut short; left out"]
    return [
        f"{counted(len(cut), 'line')} are cut short and left out (the first: line {first_line:,}, step {step:,})"
    ]


def _val(text: str) -> list[tuple[str, str]]:
    return [(k, v) for k, v in MEGATRON_FIELD.findall(text) if k.strip().lower().endswith("loss value")]


def read_nemo(lines: list[str], where: str = "the log") -> Rows:
    out = _Collector()
    rounded = 0  # bar lines whose global_step tqdm rounded and whose counter does not give it
    for number, raw in enumerate(lines, start=1):
        for line in raw.split("\r"):
            pipe = NEMO_PIPE.search(line)
            fields = MEGATRON_FIELD.findall(pipe.group(1)) if pipe else NEMO_BAR.findall(line)
            if pipe and len(fields) < pipe.group(1).count(":"):  # a record, even one skipped below
                out.unreadable_in(number, pipe.group(1))
            by_name = {k.strip(): v for k, v in fields}
            text = by_name.get("global_step")
            if text is None or "reduced_train_loss" not in by_name:
                continue
            step = int(float(text)) if pipe else _bar_step(text, line)
            if step is None:
                rounded += 1
                continue
            out.add(step, [(k, v) for k, v in fields if k.strip() != "global_step"])
    rows = out.rows(where)
    if rounded:
        rows.notes.append(
            f"{counted(rounded, 'progress-bar line')} left out: tqdm rounded its global_step to 3 significant "
            "digits and the bar's counter does not give it (use NeMo's ProgressPrinter or TensorBoard for exact steps)"
        )
    return rows


#: The bar's counter ``| n/total [`` (MegatronProgressBar's ``{n_fmt}/{total_fmt} [``)
NEMO_BAR_COUNT = re.compile(r"\|\s*(\d+)/\d+\s*\[")


def _tqdm_text(value: float) -> str:
    """How tqdm's ``format_num`` (tqdm/std.py, applied by ``set_postfix`` to every number) prints ``value``: the
    ``.3g`` form, its exponent without a leading zero, where that is shorter than ``str(value)``."""
    short = re.sub(r"e([-+])0", r"e\1", format(value, ".3g"))
    return short if len(short) < len(str(value)) else str(value)


def _bar_step(text: str, line: str) -> int | None:
    """The step of a Lightning progress-bar line. tqdm prints the float ``global_step`` (trainer.global_step at
    training_step) in 3 significant digits where that is shorter (2001.0 as ``2e+3``, every step from 99,999):
    then the step is the bar's counter − 1 (MegatronProgressBar's n is ``current_epoch_step``, the steps done,
    one more than the global_step logged during the step, in the first epoch) when tqdm prints that as ``text``;
    else None (not known: ``2e+3`` may be any step from 1,995 to 2,004)."""
    if "e" not in text.lower():  # printed whole: "199", "2010.0"
        return int(float(text))
    count = NEMO_BAR_COUNT.search(line)
    if count and _tqdm_text(float(int(count.group(1)) - 1)) == text:
        return int(count.group(1)) - 1
    return None


def read_torchtitan(lines: list[str], where: str = "the log") -> Rows:
    """torchtitan's lines of one rank. ``run_train.sh`` runs ``torchrun --role rank --tee 3``, which puts
    ``[rank<N>]:`` before rank N's lines; with ``LOG_RANK=0,4`` each step is printed once per rank, and the
    ranks' pipes reach the file in any order, so one rank is read (:func:`_titan_rank`). A negative loss is
    not a loss: a pipeline stage without the loss returns -1 per microbatch (torchtitan v0.2.2, ``train.py``
    ``forward_backward_step``, ``torch.tensor([-1.0])``), summed over the microbatches; it is left out, said."""
    by_rank: dict[int | None, list[tuple[int, int, list[tuple[str, str]]]]] = {}
    for number, raw in enumerate(lines):
        line = ANSI.sub("", raw)
        match = TITAN_STEP.search(line)
        if not match:
            continue
        prefix = TITAN_RANK.match(line)
        records = by_rank.setdefault(int(prefix.group(1)) if prefix else None, [])
        if match.group(1):  # "validate step:"
            records.append((number, int(match.group(2)), [("val_loss", match.group(3))]))
            continue
        fields = [("loss", match.group(3))]
        for name, value, percent in TITAN_FIELD.findall(line[match.end() :]):
            fields.append((f"{name}({percent})" if percent else name, value))
        records.append((number, int(match.group(2)), fields))
    out = _Collector()
    unprefixed = by_rank.pop(None, [])  # not through torchrun's tee: kept whichever rank is read
    rank, notes = _titan_rank(by_rank)
    negative = ""
    for _, step, fields in sorted(unprefixed + by_rank.get(rank, [])):  # in file order
        kept = [(k, v) for k, v in fields if not (k == "loss" and _number(v) < 0)]
        negative = negative or next((v for k, v in fields if k == "loss" and _number(v) < 0), "")
        out.add(step, kept)
    if negative:
        notes.append(
            f"the loss is printed as {negative.strip()}, below 0: a pipeline stage without the loss prints -1 per "
            "microbatch; left out. Add the last stage's first rank to LOG_RANK (torchtitan's run_train.sh)"
        )
    rows = out.rows(where)
    rows.notes = notes + rows.notes
    return rows


def _titan_rank(
    by_rank: dict[int | None, list[tuple[int, int, list[tuple[str, str]]]]],
) -> tuple[int | None, list[str]]:
    """The rank to read: the lowest whose losses are not negative (a rank of the last pipeline stage), else the
    lowest; with the note saying which, when the log holds several."""
    if len(by_rank) < 2:
        return next(iter(by_rank), None), []
    ranks = sorted(r for r in by_rank if r is not None)

    def has_loss(rank: int | None) -> bool:
        return any(_number(v) >= 0 for _, _, fields in by_rank[rank] for k, v in fields if k == "loss")

    chosen = next((r for r in ranks if has_loss(r)), ranks[0])
    shown = ", ".join(str(r) for r in ranks)
    return chosen, [f"the log holds the lines of ranks {shown}; rank {chosen}'s are read (one rank's steps)"]


def read_deepspeed(lines: list[str], where: str = "the log") -> Rows:
    """DeepSpeed's own lines: the pipeline engine's loss, step time and samples/s, the engine's learning rate (of
    the first parameter group), the timer's samples/s and peak allocated memory. The engine's lines come at one
    step as rows with different metrics (one record); the timer's join them (:func:`_ds_timer`)."""
    out = _Collector()
    timed: list[tuple[int, dict[str, float]]] = []  # the last timer line's step and the record holding it
    engine_step: int | None = None  # the step of the engine's last own line (progress or pipeline)
    for line in lines:
        pipe = DS_PIPE.search(line)
        if pipe:
            engine_step = int(pipe.group(1))
            fields = [("loss", pipe.group(2)), ("iter time (s)", pipe.group(3))]
            samples = DS_SAMPLES.search(line, pipe.end())
            step = int(pipe.group(1))
            if samples and not (timed and timed[-1][0] == step):  # the timer's samples/s times the same step
                fields.append(("samples/sec", samples.group(1)))
            out.add(step, fields)
            continue
        timer = DS_TIMER.search(line)
        if timer:
            # ThroughputTimer counts the steps of this process from 0 (timer.py global_step_count, never loaded
            # from a checkpoint), the engine its global step (restored on resume): engine.step prints its
            # progress line, then the timer's, for the same step (engine.py _take_model_step, then
            # tput_timer.stop @ edaa7221), so the engine's last step is the timer line's; its own count stands
            # only in a log without the engine's lines. Both print every steps_per_print of their own counts: a
            # run resumed off that cadence prints its timer lines between the engine's, and the same lines would
            # come from a run resumed on it, so they are placed on the engine's last printed step, up to
            # steps_per_print - 1 steps early (docs/monitor.md)
            step = int(timer.group(1)) if engine_step is None else engine_step
            _ds_timer(out, timed, step, timer.group(2), timer.group(3))
            continue
        progress = DS_PROGRESS.search(line)
        if progress:
            engine_step = int(progress.group(1))
            out.add(engine_step, [("lr", progress.group(2))])
    return out.rows(where)


def _ds_timer(
    out: _Collector, timed: list[tuple[int, dict[str, float]]], step: int, samples: str, max_gib: str
) -> None:
    """The timer line's whole-job samples/s and peak allocated memory. The engine asks the timer to report on
    global rank 0 only (engine.py ``step``: ``report_speed=report_progress`` @ edaa7221), so its memory is rank 0's;
    a second line at the step of the last timer line (two launches' logs merged) joins the same record (its
    largest memory kept; the first samples/s). Else it joins the last row when that is
    at its step (the engine's progress line: one record, and the goodput counts an abandoned attempt's rows), else
    it is a row of its own."""
    fields = [("CurrSamplesPerSec", samples), ("MaxMemAllocated (GiB)", max_gib)]
    if timed and timed[-1][0] == step:
        record = timed[-1][1]
        before = record.get("peak_memory_allocated_bytes")
        out.update(record, fields[1:])
        _keep_largest(record, "peak_memory_allocated_bytes", before)
        return
    last = out.records[-1] if out.steps and out.steps[-1] == step else None
    if last is None or "peak_memory_allocated_bytes" in last:
        last = out.add(step, [])
    out.update(last, fields if "samples_per_second" not in last else fields[1:])  # the pipeline line's, first
    timed[:] = [(step, last)]


def read_llmc(lines: list[str], where: str = "the log") -> Rows:
    """llm.c's ``main.log`` (``llmc/logger.h``: ``s:%d trl:%.4f lr:%.6f norm:%.2f`` at the 0-based step, ``s:%d
    tel:%.4f``, ``s:%d eval:%.4f``) or its stdout (:data:`LLMC_STDOUT`, at the printed 1-based step); a file
    with stdout step lines is read as stdout."""
    if any(LLMC_STDOUT.match(line.strip()) for line in lines):
        return _read_llmc_stdout(lines, where)
    out = _Collector()
    names = {"trl": "trl", "tel": "tel"}
    for line in lines:
        match = LLMC.match(line.strip())
        if not match or match.group(2) == "eval":  # eval: HellaSwag accuracy, not a loss
            continue
        fields = [(names[match.group(2)], match.group(3))]
        fields += [(k, v) for k, v in LLMC_FIELD.findall(match.group(4))]
        out.add(int(match.group(1)), fields)
    return out.rows(where)


def _read_llmc_stdout(lines: list[str], where: str) -> Rows:
    """The stdout lines: ``ms`` is the step's time (cudaEvent, ÷ 1000 to seconds); ``tok/s`` the whole job's
    (num_processes × B × T × grad_accum ÷ the step's time), an EMA bias-corrected from the second step; MFU
    ``-100.0%`` (``gpt2_estimate_mfu`` returns -1 for a GPU not in its table) is not a value and is left out,
    said. A ``val loss`` line goes at the step before the next step line's (the last step at the end)."""
    out = _Collector()
    pending: list[str] = []
    last, unknown_mfu = 0, 0
    for raw in lines:
        line = raw.strip()
        val = LLMC_VAL.match(line)
        if val:
            pending.append(val.group(1))
            continue
        match = LLMC_STDOUT.match(line)
        if not match:
            continue
        last = int(match.group(1))
        out.total = int(match.group(2))
        for value in pending:
            out.add(last - 1, [("tel", value)])
        pending = []
        fields = [
            (name, hit.group(1))
            for name, pattern in LLMC_STDOUT_FIELDS
            if (hit := pattern.search(match.group(3)))
        ]
        kept = [(name, value) for name, value in fields if not (name == "mfu(%)" and _number(value) < 0)]
        unknown_mfu += len(fields) - len(kept)
        out.add(last, kept)
    for value in pending:
        out.add(last, [("tel", value)])
    rows = out.rows(where)
    if unknown_mfu:
        rows.notes.append(
            f"MFU is printed below 0 on {counted(unknown_mfu, 'line')} (llm.c prints -100% when its GPU table "
            "has no peak for the GPU); left out"
        )
    return rows


READERS: dict[str, Callable[[list[str], str], Rows]] = {
    "megatron": read_megatron,
    "nemo": read_nemo,
    "torchtitan": read_torchtitan,
    "llmc": read_llmc,
    "deepspeed": read_deepspeed,
}


def strip_prefix(line: str) -> str:
    """Drop ANSI colours; launcher prefixes such as ``[default7]:`` stay (the regexes search, not match)."""
    return ANSI.sub("", line)


def signature_counts(
    lines: list[str], signatures: dict[str, re.Pattern[str]] = SIGNATURES
) -> dict[str, tuple[int, int]]:
    """Per text format: (lines matching its signature, first line number) in ``lines``."""
    counts: dict[str, tuple[int, int]] = {}
    for number, raw in enumerate(lines, start=1):
        line = strip_prefix(raw)
        for name, pattern in signatures.items():
            if pattern.search(line):
                hits, first = counts.get(name, (0, number))
                counts[name] = (hits + 1, first)
    return counts
