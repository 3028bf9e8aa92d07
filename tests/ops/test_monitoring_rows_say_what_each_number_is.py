"""Every monitoring row's one line says what its number is, not only its value and key: "100 steps
(monitoring.canary_every_steps)", "1,000 steps (monitoring.grad_norm_window_steps, ...)" and "500 batches" did not
say that the first is how often the canary batch is evaluated, the second the window of the gradient-norm mean,
the third the most batches a PaLM rollback skips (PaLM, arXiv 2204.02311, §5.1: ~100 steps back, 200-500 batches
skipped). The numbers are the defaults (docs/operations.md §4).
"""

from __future__ import annotations

from runplan.ops import MonitoringRequest, MonitoringSpec, plan_monitoring


def _monitoring():
    # 10 s steps of 4.19M tokens (the docs' worked example): canary 4.19M tokens → 3.33 s, 0.33% of 100 steps
    return plan_monitoring(
        MonitoringRequest(
            total_steps=100_000,
            tokens_per_step=4_194_304,
            step_seconds=10.0,
            seq_len=4096,
            checkpoint_interval_steps=100,
            retention_generations=3,
            dp=64,
            spec=MonitoringSpec(),
        )
    )


def test_the_canary_cadence_says_it_is_the_canary_cadence():
    m = _monitoring()
    assert m.canary_every_steps == 100
    assert m.canary_seconds == 10.0 * 4_194_304 / 4_194_304 / 3  # 3.33 s
    assert "canary" in m.notes["canary_every_steps"] and "every 100 steps" in m.notes["canary_every_steps"]


def test_the_grad_norm_window_says_what_it_averages():
    m = _monitoring()
    assert m.grad_norm_window_steps == 1000
    assert (
        "gradient norm" in m.notes["grad_norm_window_steps"] and "mean" in m.notes["grad_norm_window_steps"]
    )


def test_the_skip_range_says_it_is_the_batches_a_rollback_skips():
    m = _monitoring()
    assert (m.skip_batches_min, m.skip_batches_max) == (200, 500)
    assert m.skip_tokens_max == 500 * 4_194_304
    for name in ("skip_batches_min", "skip_batches_max"):
        assert "skip" in m.notes[name] and "PaLM" in m.notes[name]
