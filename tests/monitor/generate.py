"""Seeded synthetic training logs with known injected events, written in every format `runplan monitor` reads.

``series(scenario, steps, seed)`` returns per-step metrics of a healthy run (loss falling as a power law with
0.5% noise, grad norm near 0.3 with 5% log-normal noise, 1.0 s steps with 0.5% jitter, a canary every 100
steps) with one event injected; ``write(fmt, series, path, interval)`` writes it as that format's engine
would. ``EXPECTED`` says what the monitor must report for each scenario.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from runplan.monitor.readers.tfevents import masked_crc

CANARY_EVERY = 100
TOKENS_PER_STEP = 1_048_576
GPUS = 8


@dataclass(frozen=True)
class Expected:
    kind: str
    step: int
    action: str
    metric_needed: str  # the scenario needs a format that carries this metric


#: scenario -> the event the monitor must find (kind, start step, action)
EXPECTED = {
    "spike": Expected("loss_spike", 3000, "watch", "loss"),
    "divergence": Expected("divergence", 3000, "rollback", "loss"),
    "canary_drift": Expected("canary_drift", 3000, "quarantine", "canary"),
    "straggler": Expected("throughput_drop", 3000, "quarantine", "speed"),
    "nan": Expected("nan", 3000, "rollback", "loss"),
    "loss_scale_collapse": Expected("loss_scale_collapse", 3000, "rollback", "loss_scale"),
    "restart": Expected("restart", 2900, "none", "restart"),
    "replica": Expected("replica_disagreement", 3000, "quarantine", "replicas"),
}
REPLICAS = 4


def series(scenario: str, steps: int = 5000, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    step = np.arange(1, steps + 1)
    smooth = 2.0 + 3.0 * (1.0 + step / 1000.0) ** -0.5
    loss = smooth * (1 + 0.005 * rng.standard_normal(steps))
    grad = 0.3 * np.exp(0.05 * rng.standard_normal(steps))
    seconds = 1.0 * (1 + 0.005 * rng.standard_normal(steps))
    canary = smooth + 0.02 + 0.002 * rng.standard_normal(steps)
    scale = np.full(steps, 65536.0)
    lr = 3e-4 * np.minimum(1.0, step / 500.0)
    at = 3000 - 1  # index of step 3000
    if scenario == "spike":
        loss[at : at + 20] *= 1 + 0.6 * np.exp(-np.arange(20) / 3.0)
        grad[at - 3 : at + 3] *= 50
    elif scenario == "divergence":
        loss[at:] *= 1.3
        grad[at:] *= 10
    elif scenario == "canary_drift":
        canary[at:] += 0.0002 * np.arange(steps - at)  # +0.02 per 100 steps
    elif scenario == "straggler":
        seconds[at:] *= 1.10
    elif scenario == "nan":
        loss[at : at + 5] = np.nan
        grad[at : at + 5] = np.nan
    elif scenario == "loss_scale_collapse":
        scale[at:] = np.maximum(65536.0 / 2.0 ** np.minimum(np.arange(1, steps - at + 1), 40), 2.0**-10)
        loss[at + 20 :] *= 1.3
    out = {
        "step": step,
        "loss": loss,
        "grad_norm": grad,
        "lr": lr,
        "step_seconds": seconds,
        "tokens_per_second": TOKENS_PER_STEP / seconds,
        "canary_loss": np.where(step % CANARY_EVERY == 0, canary, np.nan),
        "loss_scale": scale,
    }
    if scenario == "replica":  # data-parallel replica 2's host starts computing wrong gradients at step 3000
        for replica in range(REPLICAS):
            local = grad * (1 + 0.02 * rng.standard_normal(steps))
            if replica == 2:
                local[at:] *= 1.6
            out[f"grad_norm_replica_{replica}"] = local
    if scenario == "restart":  # the job died after step 3050 and resumed from the checkpoint at step 2899
        again = (step >= 2900) & (step <= 3050)
        order = np.concatenate(
            (np.flatnonzero(step <= 3050), np.flatnonzero(again), np.flatnonzero(step > 3050))
        )
        out = {name: values[order] for name, values in out.items()}
    return out


# which formats carry which scenario's metric (an engine that does not log it cannot show the event)
CARRIES = {
    "megatron": {"restart", "loss", "canary", "speed", "loss_scale"},
    "torchtitan": {"restart", "loss", "canary", "speed"},
    "nemo": {"restart", "loss", "canary", "speed"},
    "llmc": {"restart", "loss", "canary"},
    "hf": {"restart", "loss", "canary"},
    "tensorboard": {"restart", "loss", "canary", "speed", "loss_scale", "replicas"},
    "scalars-json": {"loss", "canary", "speed", "loss_scale"},
    "jsonl": {"restart", "loss", "canary", "speed", "loss_scale", "replicas"},
    "csv": {"restart", "loss", "canary", "speed", "loss_scale", "replicas"},
}
#: logging interval per format (sparse logging: events are found within one interval)
INTERVAL = {"hf": 5, "scalars-json": 5, "csv": 10}


def _rows(data: dict[str, np.ndarray], interval: int):
    for i in range(data["step"].size):
        step = int(data["step"][i])
        if step % interval == 0 or step == 1 or not np.isnan(data["canary_loss"][i]):
            yield (
                step,
                {name: float(values[i]) for name, values in data.items() if name != "step"},
                step % interval == 0,
            )


def _fmt(value: float, spec: str) -> str:
    return "nan" if not np.isfinite(value) else format(value, spec)


def write(fmt: str, data: dict[str, np.ndarray], path: Path, interval: int | None = None) -> Path:
    interval = interval or INTERVAL.get(fmt, 1)
    writer = {
        "megatron": _megatron,
        "torchtitan": _torchtitan,
        "nemo": _nemo,
        "llmc": _llmc,
        "hf": _hf,
        "jsonl": _jsonl,
        "csv": _csv,
        "scalars-json": _scalars,
        "tensorboard": _tensorboard,
    }[fmt]
    writer(data, path, interval)
    return path


def _megatron(data, path, interval):
    total = int(data["step"].max())
    lines = []
    for step, v, train in _rows(data, interval):
        if train:
            lines.append(
                f"[default0]: [2024-05-01 10:00:00] iteration {step:>8}/{total:>8} | consumed samples: {step * 512:>12} "
                f"| elapsed time per iteration (ms): {v['step_seconds'] * 1000:.1f} | learning rate: {v['lr']:.6E} "
                f"| global batch size:   512 | lm loss: {_fmt(v['loss'], '.6E')} | loss scale: {v['loss_scale']:.1f} "
                f"| grad norm: {_fmt(v['grad_norm'], '.3f')} | number of skipped iterations:   0 "
                "| number of nan iterations:   0 |"
            )
        if np.isfinite(v["canary_loss"]):
            lines.append(
                f" validation loss at iteration {step} | lm loss value: {v['canary_loss']:.6E} | lm loss PPL: 1.0E+01 | "
            )
    path.write_text("\n".join(lines) + "\n")


def _torchtitan(data, path, interval):
    lines = []
    for step, v, train in _rows(data, interval):
        if train:
            tps = v["tokens_per_second"] / GPUS
            lines.append(
                f"[rank0]:[titan] 2025-01-01 12:00:00,000 - root - INFO - \x1b[31mstep: {step:2}  \x1b[32mloss: "
                f"{_fmt(v['loss'], '7.4f')}  \x1b[33mgrad_norm: {_fmt(v['grad_norm'], '7.4f')}  \x1b[36mmemory: "
                f"42.10GiB(44.30%)  \x1b[34mtps: {round(tps):,}  \x1b[36mtflops: 300.12  \x1b[35mmfu: 30.35%\x1b[39m"
            )
        if np.isfinite(v["canary_loss"]):
            lines.append(
                f"[titan] INFO - \x1b[33mvalidate step: {step:2}  \x1b[32mloss: {v['canary_loss']:7.4f}\x1b[39m"
            )
    path.write_text("\n".join(lines) + "\n")


def _nemo(data, path, interval):
    lines = []
    for step, v, train in _rows(data, interval):
        if not train:
            continue
        extra = f" | val_loss: {v['canary_loss']:.4f}" if np.isfinite(v["canary_loss"]) else ""
        lines.append(
            f"Training epoch 0, iteration {step}/99999 | lr: {v['lr']:.4e} | global_batch_size: 512 | global_step: "
            f"{step} | reduced_train_loss: {_fmt(v['loss'], '.4f')} | train_step_timing in s: {v['step_seconds']:.4f} "
            f"| grad_norm: {_fmt(v['grad_norm'], '.4f')}{extra} | consumed_samples: {step * 512}"
        )
    path.write_text("\n".join(lines) + "\n")


def _llmc(data, path, interval):
    lines = []
    for step, v, train in _rows(data, interval):
        if np.isfinite(v["canary_loss"]):
            lines.append(f"s:{step} tel:{v['canary_loss']:.4f}")
        if train:
            lines.append(
                f"s:{step} trl:{_fmt(v['loss'], '.4f')} lr:{v['lr']:.6f} norm:{_fmt(v['grad_norm'], '.2f')}"
            )
    path.write_text("\n".join(lines) + "\n")


def _num(value: float):
    return value if np.isfinite(value) else "NaN"


def _hf(data, path, interval):
    history = []
    for step, v, train in _rows(data, interval):
        if train:
            history.append(
                {
                    "epoch": step / 10000,
                    "grad_norm": _num(v["grad_norm"]),
                    "learning_rate": v["lr"],
                    "loss": _num(v["loss"]),
                    "step": step,
                }
            )
        if np.isfinite(v["canary_loss"]):
            history.append({"epoch": step / 10000, "eval_loss": v["canary_loss"], "step": step})
    state = {
        "global_step": int(data["step"].max()),
        "logging_steps": interval,
        "save_steps": 500,
        "max_steps": 10000,
        "log_history": history,
    }
    path.write_text(json.dumps(state).replace('"NaN"', "NaN"))


def _jsonl(data, path, interval):
    lines = []
    for step, v, train in _rows(data, interval):
        record = {"step": step}
        if train:
            record.update({k: v[k] for k in v if k.startswith("grad_norm_replica_")})
            record.update(
                {
                    k: _num(v[k])
                    for k in ("loss", "grad_norm", "lr", "step_seconds", "tokens_per_second", "loss_scale")
                }
            )
        if np.isfinite(v["canary_loss"]):
            record["canary_loss"] = v["canary_loss"]
        lines.append(json.dumps(record).replace('"NaN"', "NaN"))
    path.write_text("\n".join(lines) + "\n")


_CSV = ("loss", "grad_norm", "lr", "step_seconds", "tokens_per_second", "canary_loss", "loss_scale")


def _csv(data, path, interval):
    names = list(_CSV) + [name for name in data if name.startswith("grad_norm_replica_")]
    lines = ["Step," + ",".join(f"run-7 - train/{name}" for name in names) + ",run-7 - train/loss__MIN"]
    for step, v, train in _rows(data, interval):
        cells = []
        for name in names:
            if name == "canary_loss":
                cells.append(_fmt(v[name], ".6g") if np.isfinite(v[name]) else "")
            else:
                cells.append(_fmt(v[name], ".6g") if train else "")
        lines.append(f"{step}," + ",".join(cells) + "," + (_fmt(v["loss"], ".6g") if train else ""))
    path.write_text("\n".join(lines) + "\n")


_TAGS = {
    "loss": "lm loss",
    "grad_norm": "grad-norm",
    "lr": "learning-rate",
    "step_seconds": "iteration-time",
    "canary_loss": "canary loss",
    "loss_scale": "loss-scale",
}


def _scalars(data, path, interval):
    out = {}
    for name, tag in _TAGS.items():
        values = {}
        for step, v, train in _rows(data, interval):
            if name == "canary_loss":
                if np.isfinite(v[name]):
                    values[str(step)] = v[name]
            elif train:
                values[str(step)] = v[name] if np.isfinite(v[name]) else "nan"
        out[tag] = {
            "start_step": 1,
            "end_step": int(data["step"].max()),
            "step_interval": interval,
            "values": values,
        }
    path.write_text(json.dumps(out))


# --- TensorBoard, byte by byte (TFRecord framing + Event/Summary protocol buffers) ---


def _varint(value: int) -> bytes:
    out = bytearray()
    value &= (1 << 64) - 1
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _key(number: int, wire: int) -> bytes:
    return _varint(number << 3 | wire)


def _bytes_field(number: int, payload: bytes) -> bytes:
    return _key(number, 2) + _varint(len(payload)) + payload


def event_bytes(step: int, tag: str, value: float, wall_time: float = 1.7e9, tensor: bool = False) -> bytes:
    """One Event with one scalar: ``simple_value`` (PyTorch, tensorboardX) or a DT_FLOAT tensor (TF2)."""
    if tensor:
        proto = _key(1, 0) + _varint(1) + _bytes_field(2, b"") + _bytes_field(4, struct.pack("<f", value))
        scalar = _bytes_field(8, proto)
    else:
        scalar = _key(2, 5) + struct.pack("<f", value)
    summary_value = _bytes_field(1, tag.encode()) + scalar
    summary = _bytes_field(1, summary_value)
    return _key(1, 1) + struct.pack("<d", wall_time) + _key(2, 0) + _varint(step) + _bytes_field(5, summary)


def record(data: bytes) -> bytes:
    length = struct.pack("<Q", len(data))
    return length + struct.pack("<I", masked_crc(length)) + data + struct.pack("<I", masked_crc(data))


def file_version_record() -> bytes:
    return record(_key(1, 1) + struct.pack("<d", 1.7e9) + _bytes_field(3, b"brain.Event:2"))


def _tensorboard(data, path, interval):
    tags = {
        "loss": "train/loss",
        "grad_norm": "train/grad_norm",
        "lr": "train/learning_rate",
        "step_seconds": "step_time",
        "canary_loss": "canary/loss",
        "loss_scale": "loss_scale",
    }
    tags.update(
        {n: f"grad_norm/replica_{n.rsplit('_', 1)[1]}" for n in data if n.startswith("grad_norm_replica_")}
    )
    chunks = [file_version_record()]
    for step, v, train in _rows(data, interval):
        for name, tag in tags.items():
            if (train and name != "canary_loss") or (name == "canary_loss" and np.isfinite(v[name])):
                chunks.append(record(event_bytes(step, tag, v[name], tensor=(name == "lr"))))
    path.write_bytes(b"".join(chunks))
