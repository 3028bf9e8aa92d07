"""The loss-scale collapse needs a fall: a constant scale (bf16 logs 1.0 on every line) raises nothing.

Megatron prints ``get_loss_scale()`` on every training line; with bf16 there is no grad scaler and that is a
constant 1.0 (``megatron/core/optimizer/optimizer.py``). With fp16 the ``DynamicGradScaler`` halves the scale
on each overflow (``backoff_factor=0.5``), so a collapse is a run of halvings below the maximum seen.
"""

from __future__ import annotations

import numpy as np
import pytest
from tests.monitor.generate import series, write

from runplan.cli.app import main
from runplan.monitor.analyse import analyse, checkpoints_for
from runplan.monitor.readers import read_logs
from runplan.monitor.thresholds import Thresholds


def _megatron_log(path, scales):
    """A Megatron training log, one line per step, loss falling slowly, the given loss scale on each line."""
    lines = [
        f" [2024-01-01 00:00:00] iteration {step:>8}/  100000 | consumed samples: {step * 1024} | "
        f"elapsed time per iteration (ms): 36800.0 | learning rate: 3.000E-04 | global batch size: 1024 | "
        f"lm loss: {3.0 - 0.001 * step:.6E} | loss scale: {scale:.1f} | grad norm: 1.000 | "
        "number of skipped iterations:   0 | number of nan iterations:   0 |"
        for step, scale in enumerate(scales, start=1)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def _scale_events(path):
    log = read_logs([path])
    report = analyse(log, Thresholds(), checkpoints_for(log, 100, None))
    return report, [e for e in report.events if e.kind == "loss_scale_collapse"]


@pytest.mark.parametrize("scale", [1.0, 0.5, 4096.0])
def test_constant_scale_is_no_collapse(tmp_path, scale):
    # 1.0: bf16's constant; 0.5 is below the floor of 1 yet never fell; 4096: a static fp16 scale
    report, events = _scale_events(_megatron_log(tmp_path / "bf16.log", [scale] * 500))
    assert events == [] and report.verdict == "healthy"


def test_bf16_log_cli_is_healthy(tmp_path, capsys):
    """The reviewer's case: 500 bf16 lines with `loss scale: 1.0` once reported `act` ("fell from 1 to 1")."""
    path = _megatron_log(tmp_path / "bf16.log", [1.0] * 500)
    with pytest.raises(SystemExit) as exit_info:
        main(["monitor", str(path)])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("verdict: healthy") and "loss_scale_collapse" not in out


def test_growing_scale_is_no_collapse(tmp_path):
    # fp16 scaler growing from 1 (×2 every 100 clean steps): every point is at its running maximum
    scales = [2.0 ** (i // 100) for i in range(500)]
    assert _scale_events(_megatron_log(tmp_path / "grow.log", scales))[1] == []


def test_halvings_to_the_floor_fire_at_the_first_fall(tmp_path):
    """65536 for steps 1-200, then halved every step from step 201: 2¹⁰ below the maximum at step 210 (64),
    the floor 1 at step 216; the event starts at the first halving (step 201) and its minimum is 1 (clamped
    there as Megatron's min scale 1 does)."""
    scales = [65536.0] * 200 + [max(65536.0 / 2.0**k, 1.0) for k in range(1, 301)]
    _, events = _scale_events(_megatron_log(tmp_path / "fp16.log", scales))
    assert len(events) == 1
    event = events[0]
    assert (event.start_step, event.value, event.baseline, event.action) == (201, 1.0, 65536.0, "rollback")
    assert event.rollback_to_step == 200  # newest 100-step checkpoint at or before step 200
    assert "fell from 65,536 to 1" in event.why


def test_one_halving_is_no_collapse(tmp_path):
    # 65536 → 32768 is one overflow, routine for fp16: 2¹ is far from the 2¹⁰ drop and from the floor
    scales = [65536.0] * 250 + [32768.0] * 250
    assert _scale_events(_megatron_log(tmp_path / "one.log", scales))[1] == []


def test_generated_fp16_collapse_still_found_and_bf16_variant_is_clean(tmp_path):
    data = series("loss_scale_collapse", steps=5000, seed=7)
    _, events = _scale_events(write("megatron", data, tmp_path / "fp16.log"))
    assert [e.start_step for e in events] == [3000]
    clean = series("clean", steps=5000, seed=7)
    clean["loss_scale"] = np.ones_like(clean["loss_scale"])
    report, events = _scale_events(write("megatron", clean, tmp_path / "bf16.log"))
    assert events == [] and report.verdict == "healthy"
