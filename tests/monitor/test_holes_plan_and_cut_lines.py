"""A hole in the log (baselines and recoveries do not reach across it), the goodput's first logged step, the
log's own global batch and the plan's end in the vs-plan comparison, and a line cut short mid-file.

The real logs are BLOOM-176B's two excerpts (steps 31,214-31,251 and 42,780-42,784, ../shared/data/training_logs)
and Mixtral's scalars export; every number asserted is derived by hand in the comments from the lines shown.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from runplan.cli.common import plan_from_file
from runplan.monitor.analyse import analyse, checkpoints_for
from runplan.monitor.readers import read_logs
from runplan.monitor.rolling import Window, carried, first_confirmed, trailing_mean
from runplan.monitor.thresholds import Thresholds
from runplan.monitor.vs_plan import compare, first_point_steps

SPIKE = "bigscience/tr11-176B-ml.spike-31214.log"
THROUGHPUT = "bigscience/tr11-176B-ml.throughput-42780.log"
MIXTRAL = "megatron/mixtral_8x7b_alltoall_tp2pp4ep4_release.dgx_h100.json"
PLAN = "examples/70b-512-h100.yaml"


@pytest.fixture
def logs(shared_data_dir):
    return shared_data_dir / "training_logs"


def _report(path, interval=None):
    log = read_logs([path])
    return log, analyse(log, Thresholds(), checkpoints_for(log, interval, None))


@pytest.fixture
def both(logs, tmp_path):
    """The two BLOOM excerpts as one file (``cat spike throughput``): a hole of 11,528 steps between them."""
    path = tmp_path / "both.log"
    path.write_text((logs / SPIKE).read_text() + (logs / THROUGHPUT).read_text())
    return _report(path, interval=100)[1]


# 1. windows are in steps: nothing before a hole longer than the window is in a baseline


def test_throughput_baseline_after_a_hole_is_the_100_steps_before(both):
    """The 100 steps before 42,783 hold 42,780-42,782: 105.16, 105.17, 106.25 s, mean 105.527 s; the slow level
    (110.17 + 111.14) / 2 = 110.655 s: +4.86% step time, a 4.63% drop (1 − 105.527 / 110.655 = 0.046345), as the throughput file alone says. The
    window of 100 points reached back to 31,214-31,251 (14 points, mean 106.2 s, a 4.0% drop)."""
    (drop,) = [e for e in both.events if e.kind == "throughput_drop"]
    assert drop.start_step == 42783 and drop.baseline_points == 3
    assert drop.baseline == pytest.approx((105.16 + 105.17 + 106.25) / 3)
    assert drop.value == pytest.approx((110.17 + 111.14) / 2)
    assert 1 - drop.baseline / drop.value == pytest.approx(0.046345, abs=1e-6)
    assert "down 4.6%" in drop.why and "+4.9%" in drop.why


def test_loss_spike_recovery_is_not_confirmed_across_a_hole(both):
    """Back within 5% of 2.2096 (= (2.198845 + 2.220424) / 2; 5% above it is 2.3201) at 31,250 and 31,251, then
    nothing until 42,780: the third point 11,529 steps later is not "3 in a row", and the deadline 31,416 lies
    in the hole, so the log cannot say recovered (it said "back by 31,250: recovered by itself") nor diverged."""
    (spike,) = [e for e in both.events if e.kind in ("loss_spike", "divergence")]
    assert spike.kind == "loss_spike" and spike.action == "watch" and spike.recovered is None
    assert spike.baseline == pytest.approx((2.198845 + 2.220424) / 2)
    assert spike.end_step == 42780  # 2.117, 2.117, 2.111 at 42,780-42,782: three in a row after the hole
    assert "recovered by itself" not in spike.why
    assert "no steps 31,252-42,779, which hold the deadline 31,416" in spike.why
    assert "back within 5% at the last 2 logged points before it" in spike.why
    assert spike.rollback_to_step == 31100 and spike.skip_steps == [31101, 31300]


def test_grad_norm_recovery_is_confirmed_only_after_the_hole(both):
    """Under 5 × 1.193 = 5.96 at 31,250 (0.267) and 31,251 (0.205), then 42,780-42,782 (0.150, 0.140, 0.144):
    confirmed from 42,780, not from 31,250 with 42,780 as its third point."""
    (alert,) = [e for e in both.events if e.kind == "grad_norm_alert"]
    assert alert.end_step == 42780 and alert.recovered is True
    assert "31,252-42,779 are not in the log" in alert.why


def test_a_level_change_across_a_hole_is_not_a_grad_norm_alert(tmp_path):
    """Grad norm 0.3 at steps 1-200, nothing logged until 5,000, then 2.0 (6.7×, above the 5× alert level).
    The 1,000-step window of 5,000 holds no point: no baseline, no alert (a window of 1,000 points held the 0.3s
    and raised an alert that lasted to the end of the log)."""
    rows = [{"step": s, "loss": 3.0, "grad_norm": 0.3} for s in range(1, 201)]
    rows += [{"step": s, "loss": 3.0, "grad_norm": 2.0} for s in range(5000, 5101)]
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    _, report = _report(path)
    assert not [e for e in report.events if e.kind == "grad_norm_alert"]


def test_window_holds_only_the_points_within_its_steps():
    """Steps 1, 2, 3, 1,000, 1,001 with a 10-point window logged every step (10 steps): 1,000's window is empty,
    1,001's holds 1,000 alone (value 5); a 10-point window reached back to steps 1-3 (mean 1)."""
    steps = np.array([1, 2, 3, 1000, 1001])
    values = np.array([1.0, 1.0, 1.0, 5.0, 7.0])
    window = Window.over(steps, 10, 1)
    mean, count = trailing_mean(values, np.ones(5, dtype=bool), window)
    assert count.tolist() == [0, 1, 2, 0, 1]
    assert mean[2] == 1.0 and math.isnan(mean[3]) and mean[4] == 5.0
    assert window.empty().tolist() == [True, False, False, True, False]
    assert window.holes(steps).tolist() == [False, False, False, True, False]


def test_carried_baseline_spans_a_long_event_but_not_a_hole():
    """Index 1 has a baseline (2.0 from 1 point); 2 holds only flagged points: carried (a long event); 3 is
    after a hole (its window is empty): nothing carried into it or past it, to 4."""
    mean = np.array([np.nan, 2.0, np.nan, np.nan, np.nan])
    count = np.array([0, 1, 0, 0, 0])
    empty = np.array([True, False, False, True, False])
    carried_mean, carried_count = carried(mean, count, empty)
    assert carried_mean[2] == 2.0 and carried_count.tolist() == [0, 1, 1, 0, 0]
    assert math.isnan(carried_mean[3]) and math.isnan(carried_mean[4])


def test_points_in_a_row_do_not_straddle_a_hole():
    back = np.array([False, True, True, True, True])
    holes = np.array([False, False, False, True, False])
    assert first_confirmed(back, 1, 3) == (1, 0)  # no holes: 1, 2, 3 in a row
    assert first_confirmed(back, 1, 3, holes) == (
        None,
        2,
    )  # 1, 2 | hole | 3, 4: two at the end, after the hole


# 2. goodput: the first logged step stands for the steps it covers


def test_first_point_covers_the_steps_up_to_it_from_the_start_else_the_interval():
    assert first_point_steps(1, 5) == 1  # step 1 of a 1-based counter: 1 step
    assert first_point_steps(5, 5) == 5  # steps 1-5
    assert first_point_steps(0, 5) == 1  # a 0-based counter's step 0
    assert first_point_steps(42780, 1) == 1 and first_point_steps(1005, 10) == 10  # mid-run: the interval


def test_goodput_counts_mixtrals_start_up_step_as_one_step(logs, tmp_path):
    """Mixtral's export cut at step 2,400: step 1 took 92.35 s, then every 5 steps (5, 10, ...). Spans 1, 4, 5,
    5, ...; useful = 2,400 steps × the median of the last 1,000 steps' times; spent = Σ time × span. Step 1 as
    a span of 5 (the interval) gave 96.0%; as 1 step, 97.4%."""
    data = json.loads((logs / MIXTRAL).read_text())
    cut = {
        tag: {**v, "values": {k: x for k, x in v["values"].items() if int(k) <= 2400}}
        for tag, v in data.items()
    }
    path = tmp_path / "mixtral2400.json"
    path.write_text(json.dumps(cut))
    times = {int(k): float(x) for k, x in cut["iteration-time"]["values"].items() if x != "nan"}
    steps = np.array(sorted(times))
    seconds = np.array([times[s] for s in steps])
    assert steps[:3].tolist() == [1, 5, 10] and seconds[0] == pytest.approx(92.35132)
    median = float(np.median(seconds[steps > 1400]))
    spent = float(np.sum(seconds * np.diff(steps, prepend=0)))
    vs = compare(read_logs([path]), plan_from_file(PLAN)[2])
    assert vs["goodput"] == pytest.approx(2400 * median / spent)
    assert vs["goodput"] == pytest.approx(0.97404, abs=1e-5)


# 3. the log's global batch; 4. a log past the plan's end

BLOOM_HALF_PLAN = """schema_version: 1
name: bloom-176b-half-batch
model:
  shape: {n_layers: 70, d_model: 14336, n_heads: 112, n_kv_heads: 112, head_dim: 128, ffn_hidden: 57344, mlp: gelu, vocab_size: 250880, tied_embeddings: true, norm: layernorm, linear_bias: true}
budget:
  tokens: 483637100544
training:
  seq_len: 2048
cluster:
  gpu: a100-80gb
  gpus: 384
parallel: {tp: 4, pp: 12, dp: 8, zero: 1, micro_batch: 2, microbatches: 64, vpp: 1, recompute: full}
stack: {preset: megatron-2022, flash_attention: false}
schedule:
  global_batch_tokens: 2097152
  peak_lr: 6e-5
  warmup_tokens: 375M
  cooldown_fraction: 0.99
  cooldown_shape: cosine
  final_lr_fraction: 0.1
  batch_ramp: [{batch_fraction: 1, token_fraction: 0.0}]
"""


def test_vs_plan_uses_the_logs_global_batch(logs, tmp_path):
    """BLOOM's lines print 2,048 sequences of 2,048 tokens (4,194,304 tokens a step); a plan of 1,024 sequences.
    Median step time 106.33 s: 4,194,304 / 106.33 = 39,446 tokens/s (the plan's batch gave 19,723). The plan's
    483,636,805,632 scheduled tokens take ⌈115,307.5⌉ = 115,308 steps at 4,194,304: 84,057 left after 31,251
    (the plan's count gave 199,365 and an ETA of 246.4 days); ETA 84,057 × 106.33 / the plan's goodput."""
    (tmp_path / "half.yaml").write_text(BLOOM_HALF_PLAN)
    plan = plan_from_file(str(tmp_path / "half.yaml"))[2]
    assert plan.schedule.batch_stages[-1].global_batch_sequences == 1024
    assert plan.schedule.batch_stages[-1].end_tokens == 483636805632
    vs = compare(read_logs([logs / SPIKE]), plan)
    assert vs["step_seconds"] == pytest.approx(106.33)
    assert vs["tokens_per_second"] == pytest.approx(4194304 / 106.33)  # 39,446
    assert vs["remaining_steps"] == 84057
    assert vs["eta_seconds"] == pytest.approx(84057 * 106.33 / plan.reliability.goodput)
    assert vs["eta_seconds"] / 86400 == pytest.approx(103.9, abs=0.05)
    (warning,) = vs["warnings"]
    assert warning.startswith("the log's global batch is 2,048 sequences, the plan's 1,024")


def test_vs_plan_says_when_the_log_is_past_the_plans_last_step(tmp_path):
    plan = plan_from_file(PLAN)[2]
    total = int(plan.schedule.total_steps)  # 93,333
    path = tmp_path / "run.jsonl"
    rows = [{"step": total + k, "loss": 2.0, "step_seconds": 30.0} for k in range(-5, 13)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    vs = compare(read_logs([path]), plan)
    assert vs["remaining_steps"] == 0 and vs["eta_seconds"] == 0
    past = [w for w in vs["warnings"] if "past the plan's last step" in w]
    assert past == [
        f"the log is at step {total + 12:,}, 12 steps past the plan's last step {total:,}: the run went on past "
        "the plan (a longer budget?) or is not this plan's run; steps left and ETA are 0"
    ]


# 5. a line cut short in the middle of a log


def test_a_line_cut_mid_file_is_left_out_and_said(logs, tmp_path):
    """Step 31,218's line (line 5) cut at "| lm lo": it had been read as a row without a loss, silently."""
    lines = (logs / SPIKE).read_text().splitlines()
    assert "iteration    31218/" in lines[4]
    lines[4] = lines[4][: lines[4].index("| lm loss") + len("| lm lo")]
    path = tmp_path / "cut.log"
    path.write_text("\n".join(lines) + "\n")
    log, _ = _report(path)
    assert "line 5 (step 31,218) is cut short; left out" in log.notes
    assert 31218 not in log.steps.tolist() and log.steps.size == 10


def test_a_value_cut_mid_number_is_not_read(logs, tmp_path):
    """Line 5 cut inside its loss, "lm loss: 2.3" of 2.345279E+00: read as 2.3 it was a wrong value."""
    lines = (logs / SPIKE).read_text().splitlines()
    lines[4] = lines[4][: lines[4].index("| lm loss") + len("| lm loss: 2.3")]
    path = tmp_path / "cut.log"
    path.write_text("\n".join(lines) + "\n")
    log = read_logs([path])
    assert 31218 not in log.steps.tolist()
    assert any(note.startswith("line 5 (step 31,218) is cut short") for note in log.notes)
