"""How many points a metric has and which points a window holds: Megatron's scalars export writes "nan" where a
sparser tag logged nothing (a placeholder, not a value), throughput events need a baseline of 10 logged points
when the log starts at the run's start, and a loss spike's noise σ uses only differences inside its window.
Every log is a tiny hand-made one written in tmp_path."""

from __future__ import annotations

import json

from runplan.monitor.analyse import analyse, checkpoints_for
from runplan.monitor.readers import read_logs
from runplan.monitor.thresholds import Thresholds


def _report(path):
    log = read_logs([path])
    return log, analyse(log, Thresholds(), checkpoints_for(log, None, None))


def _scalars(path, tags: dict[str, dict[int, float | str]]) -> None:
    body = {
        tag: {
            "start_step": 1,
            "end_step": max(values),
            "step_interval": 5,
            "values": {str(k): v for k, v in values.items()},
        }
        for tag, values in tags.items()
    }
    path.write_text(json.dumps(body))


# 1. "nan" placeholders of a sparser tag in Megatron's scalars export are not points and not non-finite


def test_scalars_json_placeholders_of_a_sparser_tag_are_not_points(tmp_path):
    grid = [1, *range(5, 1001, 5)]
    loss: dict[int, float | str] = {step: 3.0 - step * 1e-4 for step in grid}
    loss[500] = "nan"  # a real nan loss at a step the loss is logged: still non-finite
    seconds: dict[int, float | str] = {step: 0.2 if step % 100 == 0 else "nan" for step in grid}
    path = tmp_path / "s.json"
    _scalars(path, {"lm loss": loss, "iteration-time": seconds})
    log, report = _report(path)
    time_steps, _ = log.points("step_seconds")
    assert time_steps.tolist() == list(range(100, 1001, 100))
    assert int(log.nonfinite["step_seconds"].sum()) == 0
    assert report.metrics["step_seconds"]["points"] == 10
    assert report.metrics["step_seconds"]["nonfinite"] == 0
    assert int(log.nonfinite["loss"].sum()) == 1 and report.metrics["loss"]["nonfinite"] == 1
    assert report.metrics["loss"]["points"] == len(grid)


def test_scalars_json_nan_on_a_sparse_tags_own_grid_is_still_nonfinite(tmp_path):
    grid = [1, *range(5, 1001, 5)]
    seconds: dict[int, float | str] = {step: 0.2 if step % 100 == 0 else "nan" for step in grid}
    seconds[600] = "nan"  # on the tag's own every-100 grid: a value written as nan
    path = tmp_path / "s.json"
    _scalars(path, {"lm loss": {step: 3.0 for step in grid}, "iteration-time": seconds})
    _, report = _report(path)
    assert report.metrics["step_seconds"]["nonfinite"] == 1
    assert report.metrics["step_seconds"]["points"] == 10


# 2. a throughput event needs a baseline of 10 logged points, unless the log is an excerpt that starts mid-run


def _times(path, first: int, slow: dict[int, float], count: int = 60) -> None:
    lines = []
    for step in range(first, first + count):
        seconds = slow.get(step, 1.0 + 0.01 * (step % 2))
        lines.append(json.dumps({"step": step, "loss": 3.0, "step_seconds": seconds}))
    path.write_text("\n".join(lines) + "\n")


def _throughput(report):
    return [
        (e.kind, e.start_step, e.baseline_points)
        for e in report.events
        if e.kind in ("throughput_drop", "slow_step")
    ]


def test_no_throughput_event_on_a_start_up_baseline_of_under_10_points(tmp_path):
    path = tmp_path / "start.jsonl"
    _times(
        path, 1, {1: 5.0, 5: 1.2, 6: 1.2, 8: 1.3}
    )  # 3 and 5 usable points before them (step 1 is start-up)
    _, report = _report(path)
    assert _throughput(report) == []


def test_a_throughput_drop_after_10_points_of_baseline_is_still_raised(tmp_path):
    path = tmp_path / "later.jsonl"
    _times(path, 1, {1: 5.0, 30: 1.2, 31: 1.2})
    _, report = _report(path)
    assert _throughput(report) == [("throughput_drop", 30, 28)]  # steps 2-29


def test_a_masked_slow_step_does_not_silence_the_next_slowdown(tmp_path):
    """The 10-point rule is for the run's start only: logged every 10 steps, a 100-step window holds 10 points,
    so one slow step left out of the baseline used to leave 9 and hide a slowdown right after it."""
    path = tmp_path / "every10.csv"
    rows = ["step,loss,step_seconds"]
    for step in range(10, 1010, 10):
        seconds = 2.0 if step == 450 else (1.1 if step >= 500 else 1.0) + 0.001 * (step % 20 == 0)
        rows.append(f"{step},3.0,{seconds}")
    path.write_text("\n".join(rows) + "\n")
    _, report = _report(path)
    kinds = [(kind, start) for kind, start, _ in _throughput(report)]
    assert ("slow_step", 450) in kinds and ("throughput_drop", 500) in kinds


def test_an_excerpt_that_starts_mid_run_raises_on_the_baseline_it_has(tmp_path):
    path = tmp_path / "excerpt.jsonl"
    _times(path, 42780, {42784: 1.2, 42785: 1.2}, count=10)  # nothing before step 42,780 in the log (BLOOM)
    _, report = _report(path)
    assert _throughput(report) == [("throughput_drop", 42784, 4)]


# 3. a loss spike's noise σ uses only the differences between points inside its 100-step window


def test_loss_spike_sigma_leaves_out_the_difference_reaching_outside_the_window(tmp_path):
    # loss every 5 steps: the window before a point is its 20 previous points; the step from the point before
    # them (3.6, outside the window) to the first of them (-0.6) is no noise of the window, and counted it
    # made 4σ ≈ 0.38, hiding a +6.7% spike
    losses = (
        [3.6]
        + [3.0 + 0.002 * (i % 2) for i in range(20)]
        + [3.2]
        + [3.0 + 0.002 * (i % 2) for i in range(40)]
    )
    path = tmp_path / "loss.jsonl"
    lines = [json.dumps({"step": 5 * (i + 1), "loss": loss}) for i, loss in enumerate(losses)]
    path.write_text("\n".join(lines) + "\n")
    _, report = _report(path)
    spikes = [(e.kind, e.start_step, e.baseline_points) for e in report.events if e.kind == "loss_spike"]
    assert spikes == [("loss_spike", 110, 20)]


def test_scalars_json_nans_among_few_or_irregular_values_stay_nonfinite(tmp_path):
    path = tmp_path / "s.json"
    loss: dict[int, float | str] = {1: 2.0, 2: "nan", 3: "nan", 4: 2.0, 5: "nan", 6: "nan", 7: "nan", 8: 2.0}
    loss.update({9: 2.1, 10: "nan", 11: 2.0})  # finite at 1, 4, 8, 9, 11: no regular sparser interval
    _scalars(path, {"lm loss": loss})
    log, _ = _report(path)
    assert int(log.nonfinite["loss"].sum()) == 6
