"""TensorBoard event files (``events.out.tfevents.*``) without TensorFlow: every scalar, not a sample.

File layout (TFRecord, ``tensorflow/core/lib/io/record_writer.cc``): each record is ``uint64 length``,
``uint32 masked CRC-32C of the length``, ``length`` bytes of data, ``uint32 masked CRC-32C of the data``,
all little-endian; masked = ((crc >> 15) | (crc << 17)) + 0xa282ead8 mod 2³². The data is an ``Event``
protocol buffer (``tensorflow/core/util/event.proto``): field 1 wall_time (double), 2 step (int64),
5 summary. ``Summary`` (``summary.proto``) repeats field 1 ``Value``: 1 tag, 2 simple_value (float; what
PyTorch's SummaryWriter and tensorboardX write), 8 tensor (``TensorProto``, what TF2's ``tf.summary.scalar``
writes: 1 dtype, 4 tensor_content, 5 float_val, 6 double_val, 7 int_val, 10 int64_val).

The length CRC of every record is checked (a wrong one means a corrupt file: one-line error); the data CRC is
not (pure-Python CRC over every byte would dominate the run time). A record cut short at the end of the file
(the writer still running) is left out and said.
"""

from __future__ import annotations

import struct
from pathlib import Path

from runplan.errors import SpecError

_DTYPES = {1: "<f", 2: "<d", 3: "<i", 9: "<q"}  # DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64


def _crc_table() -> list[int]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_TABLE = _crc_table()


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli), the checksum TFRecord uses."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc(data: bytes) -> int:
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result, shift = 0, 0
    while True:
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def _fields(buf: bytes):  # -> Iterator[(field, wire, value)]; value: int or bytes
    pos, end = 0, len(buf)
    while pos < end:
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
            yield number, wire, value
        elif wire == 1:
            yield number, wire, buf[pos : pos + 8]
            pos += 8
        elif wire == 2:
            size, pos = _varint(buf, pos)
            yield number, wire, buf[pos : pos + size]
            pos += size
        elif wire == 5:
            yield number, wire, buf[pos : pos + 4]
            pos += 4
        else:
            raise ValueError(f"wire type {wire}")
        if pos > end:
            raise ValueError("field runs past the message")


def _tensor_scalar(buf: bytes) -> float | None:
    """The value of a one-element numeric TensorProto, else None (histograms, text, images)."""
    dtype, content, packed = 0, b"", {}
    for number, _wire, value in _fields(buf):
        if number == 1:
            dtype = int(value)
        elif number == 4:
            content = bytes(value)
        elif number in (5, 6, 7, 10):
            packed[number] = value
    fmt = _DTYPES.get(dtype)
    if fmt is None:
        return None
    size = struct.calcsize(fmt)
    if len(content) == size:
        return float(struct.unpack(fmt, content)[0])
    field = {1: 5, 2: 6, 3: 7, 9: 10}[dtype]
    value = packed.get(field)
    if isinstance(value, bytes) and len(value) == size and dtype in (1, 2):
        return float(struct.unpack(fmt, value)[0])
    if isinstance(value, int):  # a single non-packed varint (int_val / int64_val)
        return float(value)
    if isinstance(value, bytes) and dtype in (3, 9):
        number, _ = _varint(value, 0)
        return float(number)
    return None


def _summary_values(buf: bytes):  # -> Iterator[(tag, value)]
    for number, _wire, value in _fields(buf):
        if number != 1 or not isinstance(value, bytes):
            continue
        tag, scalar = None, None
        for inner, wire, item in _fields(value):
            if inner == 1 and isinstance(item, bytes):
                tag = item.decode("utf-8", "replace")
            elif inner == 2 and wire == 5 and isinstance(item, bytes):
                scalar = float(struct.unpack("<f", item)[0])
            elif inner == 8 and isinstance(item, bytes):
                scalar = _tensor_scalar(item)
        if tag is not None and scalar is not None:
            yield tag, scalar


def read_event_file(path: Path, notes: list[str]) -> dict[str, list[tuple[int, float]]]:
    """tag -> [(step, value)] in file order, for every scalar in one event file."""
    from runplan.fileio import read_bytes
    from runplan.monitor.readers import MAX_TEXT_LOG_BYTES

    data = read_bytes(path, MAX_TEXT_LOG_BYTES)
    out: dict[str, list[tuple[int, float]]] = {}
    pos = 0
    while pos < len(data):
        if pos + 12 > len(data):
            notes.append(f"{path.name}: the last record is cut short (still being written?); left out")
            break
        header = data[pos : pos + 8]
        (length,) = struct.unpack("<Q", header)
        (length_crc,) = struct.unpack("<I", data[pos + 8 : pos + 12])
        if masked_crc(header) != length_crc:
            raise SpecError(
                f"'{path}': not a TensorBoard event file, or corrupt at byte {pos:,} (record length checksum)",
                where="monitor.log",
                hint="check the file, or name its format with --format",
            )
        start, stop = pos + 12, pos + 12 + length
        if stop + 4 > len(data):
            notes.append(f"{path.name}: the last record is cut short (still being written?); left out")
            break
        try:
            _event(data[start:stop], out)
        except (ValueError, IndexError, struct.error):
            raise SpecError(
                f"'{path}': record at byte {pos:,} is not an Event message",
                where="monitor.log",
                hint="the file is corrupt",
            ) from None
        pos = stop + 4
    return out


def _event(buf: bytes, out: dict[str, list[tuple[int, float]]]) -> None:
    step, summary = 0, None
    for number, _wire, value in _fields(buf):
        if number == 2 and isinstance(value, int):
            step = value - (1 << 64) if value >= 1 << 63 else value
        elif number == 5 and isinstance(value, bytes):
            summary = value
    if summary is not None:
        for tag, scalar in _summary_values(summary):
            out.setdefault(tag, []).append((step, scalar))


def is_event_file(head: bytes) -> bool:
    """Whether ``head`` starts with a TFRecord whose length checksum is right."""
    return len(head) >= 12 and masked_crc(head[:8]) == struct.unpack("<I", head[8:12])[0]


#: How deep below a directory given as the log event files are looked for: TensorBoard's layouts put them at
#: most a few levels down (logdir/run/events..., Megatron's tensorboard-dir/events..., HF's runs/<date>/events...).
MAX_EVENT_DEPTH = 4


def event_files(path: Path) -> list[Path]:
    """The event files of ``path``: itself, or those in a directory (up to MAX_EVENT_DEPTH levels down), in
    name order. TensorBoard names them ``events.out.tfevents.<time>.<host>``; other names are not theirs (a file
    called tfevents.py is source code). Unreadable folders are passed over, symbolic links not followed."""
    import os

    if not path.is_dir():
        return [path]
    found = []
    for root, folders, names in os.walk(path):
        if len(Path(root).relative_to(path).parts) >= MAX_EVENT_DEPTH:
            folders.clear()
        found += [Path(root) / name for name in names if name.startswith("events.out.tfevents")]
    return sorted(found)
