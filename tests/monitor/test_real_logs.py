"""Acceptance on real logs in ../shared/data/training_logs/ (its README says what each file holds)."""

from __future__ import annotations

import pytest

from runplan.monitor.analyse import analyse, checkpoints_for
from runplan.monitor.readers import read_logs
from runplan.monitor.thresholds import Thresholds


def _report(path, interval=None):
    log = read_logs([path])
    return log, analyse(log, Thresholds(), checkpoints_for(log, interval, None))


@pytest.fixture
def logs(shared_data_dir):
    return shared_data_dir / "training_logs"


def test_bloom_spike_grad_norm_leads_and_recovery_cannot_be_shown(logs):
    _, report = _report(logs / "bigscience/tr11-176B-ml.spike-31214.log", interval=100)
    alert = next(e for e in report.events if e.kind == "grad_norm_alert")
    spike = next(e for e in report.events if e.kind == "loss_spike")
    assert spike.peak_step == 31219 and spike.value == pytest.approx(5.098124)
    assert alert.start_step == 31217 < spike.peak_step  # grad norm 15.9 against a 3-point mean of 1.19
    assert alert.action == "pause" and alert.value == pytest.approx(960.351)
    assert alert.baseline == pytest.approx((0.242 + 0.947 + 2.390) / 3)
    # back within 5% only at 31250-31251, after a hole (31223-31249): 2 points, not the 3 that confirm it
    assert spike.recovered is None and spike.action == "wait_until" and spike.wait_until_step == 31416
    # the grad norm is back under its alert level at the same 2 points: not confirmed either (31222 is still 545×)
    assert alert.end_step is None and alert.recovered is None
    assert spike.rollback_to_step == 31100  # newest multiple of 100 at or before 31216 - 100
    assert spike.baseline_points == 2 and "only 2 logged points" in spike.why
    assert "31,223-31,249" in spike.why
    assert report.verdict == "act"


def test_bloom_throughput_drop_of_about_five_percent(logs):
    _, report = _report(logs / "bigscience/tr11-176B-ml.throughput-42780.log")
    (drop,) = [e for e in report.events if e.kind == "throughput_drop"]
    assert drop.start_step == 42783 and drop.end_step is None
    # baseline: the 3 steps before (105.16, 105.17, 106.25 s), slow level (110.17 + 111.14) / 2 = 110.655 s
    assert 1 - drop.baseline / drop.value == pytest.approx(1 - 105.527 / 110.655, abs=1e-3)  # 4.6%
    assert "only 5 logged steps" in " ".join(report.summary["warnings"])


def test_mixtral_recovered_spikes_no_divergence_and_the_unlogged_tail(logs):
    log, report = _report(logs / "megatron/mixtral_8x7b_alltoall_tp2pp4ep4_release.dgx_h100.json")
    spikes = {e.start_step: e for e in report.events if e.kind == "loss_spike"}
    for step in (3850, 4260):
        assert step in spikes and spikes[step].recovered is True and spikes[step].action == "watch"
    assert spikes[3850].value == pytest.approx(3.41116)
    assert not [e for e in report.events if e.kind == "divergence"]
    assert "steps 22,690-24,000: every metric is nan (nothing was logged there)" in report.summary["warnings"]
    assert log.steps[-1] == 22685 and log.interval_steps == 5


def test_t5_no_divergence(logs):
    _, report = _report(logs / "megatron/t5_release.dgx_h100.json")
    assert not [e for e in report.events if e.kind in ("divergence", "nan")]
    assert report.verdict in ("healthy", "watch")


def test_plan_comparison_reads_the_logs_global_batch(logs):
    # BLOOM's lines print "global batch size:  2048"; the 70B example plans d·b·m = 32·1·164 = 5,248 sequences
    from runplan.cli.common import plan_from_file
    from runplan.monitor.vs_plan import compare

    log = read_logs([logs / "bigscience/tr11-176B-ml.throughput-42780.log"])
    plan = plan_from_file("examples/70b-512-h100.yaml")[2]
    best = plan.layout.best
    assert log.has("global_batch") and set(log.points("global_batch")[1]) == {2048.0}
    planned = best.dp * best.micro_batch * best.microbatches
    warnings = compare(log, plan)["warnings"]
    assert warnings[0].startswith(f"the log's global batch is 2,048 sequences, the plan's {planned:,}")


def test_an_infeasible_plan_still_gives_its_thresholds_and_the_log_is_read(logs, tmp_path):
    """BLOOM's spike log with a plan that no layout fits now (176B on 8 A100s) stopped the monitor with the
    planner's answer (exit 1) while the run it watches is under way: the log is read with the plan file's own
    `monitoring:` thresholds (grad_norm_factor 20: the alert moves to step 31,218, 145.1 / 4.87 = 29.8x, as a
    reviewer found with a feasible plan), without predictions, and a warning says why."""
    from typer.testing import CliRunner

    from runplan.cli.app import app

    plan = tmp_path / "bloom8.yaml"
    plan.write_text(
        "schema_version: 1\nname: bloom8\nmodel:\n  shape: {n_layers: 70, d_model: 14336, n_heads: 112, "
        "n_kv_heads: 112, head_dim: 128, ffn_hidden: 57344, mlp: gelu, vocab_size: 250880, tied_embeddings: true, "
        "norm: layernorm, linear_bias: true}\nbudget: {tokens: 4.8e11}\ntraining: {seq_len: 2048}\n"
        "cluster: {gpu: a100-80gb, gpus: 8}\nmonitoring: {grad_norm_factor: 20}\n"
    )
    log = logs / "bigscience" / "tr11-176B-ml.spike-31214.log"
    result = CliRunner().invoke(app, ["monitor", str(log), "--plan", str(plan), "--json"])
    assert result.exit_code == 0, result.output
    assert "is infeasible as runplan plans it now" in " ".join(result.stderr.split())
    import json

    data = json.loads(result.stdout)
    alert = next(e for e in data["events"] if e["kind"] == "grad_norm_alert")
    assert alert["start_step"] == 31218 and data["vs_plan"] is None
