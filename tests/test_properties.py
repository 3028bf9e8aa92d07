"""Property tests across stages. Memory monotonicity in TP/PP/ZeRO/recompute/micro-batch is covered
by tests/parallel/test_formulas.py and test_search.py; here: allocation identities, optimality, every reported
layout meeting every constraint, the schedule's step-boundary search, and plan → YAML → check with no drift.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from runplan.catalog import load_catalog
from runplan.cli.app import app
from runplan.ops.schedule import BatchStage, _nearest_boundary, tokens_at_step
from runplan.parallel.layout import Constraints, ParallelRequest
from runplan.parallel.search import search
from runplan.scaling.allocate import Objective, allocate
from runplan.scaling.laws import shipped_laws

LAWS = shipped_laws()
FLOPS = st.floats(1e18, 1e28)


@settings(max_examples=40, deadline=None)
@given(FLOPS, st.floats(1.01, 100.0), st.sampled_from(sorted(LAWS)))
def test_allocation_spends_the_budget_and_grows_with_it(flops, factor, name):
    law = LAWS[name]
    small = allocate(flops, Objective(), law)
    big = allocate(flops * factor, Objective(), law)
    for a, c in ((small, flops), (big, flops * factor)):
        assert a.flops == pytest.approx(6 * a.params * a.tokens, rel=1e-12)
        assert a.flops == pytest.approx(c, rel=1e-9)
    assert big.params > small.params and big.tokens > small.tokens and big.loss < small.loss


@settings(max_examples=60, deadline=None)
@given(FLOPS, st.floats(-2.0, 2.0), st.sampled_from(sorted(LAWS)))
def test_compute_optimal_loss_is_never_beaten_at_the_same_budget(flops, log10_shift, name):
    law = LAWS[name]
    best = allocate(flops, Objective(), law)
    n = best.params * 10**log10_shift
    assert law.loss(n, flops / (6 * n)) >= best.loss - 1e-12


MODELS = ["llama-3.1-8b", "llama-2-13b", "mixtral-8x7b"]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(MODELS),
    st.sampled_from([8, 16, 32, 64]),
    st.sampled_from([2048, 4096]),
    st.floats(0.05, 0.3),
)
def test_every_reported_layout_meets_every_constraint(model, gpus, seq_len, max_bubble):
    catalog = load_catalog()
    request = ParallelRequest(
        model=catalog.model(model),
        gpu=catalog.gpu("h100-sxm"),
        n_gpus=gpus,
        seq_len=seq_len,
        constraints=Constraints(max_bubble_fraction=max_bubble),
        top=10,
    )
    result = search(request)
    low, high = result.batch_range_tokens
    for x in result.layouts:
        assert x.tp * x.pp * x.dp * x.cp == gpus
        assert x.tp <= 8  # within a node (no cross-node TP allowed by default)
        assert x.memory_bytes.total <= x.memory_limit_bytes * (1 + 1e-12)
        assert x.bubble_fraction <= max_bubble + 1e-12
        assert low * (1 - 1e-9) <= x.global_batch_tokens <= high * (1 + 1e-9)
        assert not x.violations
        assert x.step_seconds > 0 and math.isfinite(x.step_seconds)


_NOTED = [
    "start_step",
    "end_step",
    "steps",
    "start_tokens",
    "end_tokens",
    "tokens",
    "global_batch_sequences",
    "global_batch_tokens",
    "microbatches_per_replica",
]


@st.composite
def stages(draw) -> list[BatchStage]:
    out, step, tokens = [], 0, 0.0
    for i in range(draw(st.integers(1, 4))):
        steps = draw(st.integers(1, 300))
        batch = float(draw(st.integers(1, 64)) * 1024)
        out.append(
            BatchStage(
                name=f"s{i}",
                start_step=step,
                end_step=step + steps,
                steps=steps,
                start_tokens=tokens,
                end_tokens=tokens + steps * batch,
                tokens=steps * batch,
                global_batch_sequences=1,
                global_batch_tokens=batch,
                microbatches_per_replica=1,
                notes=dict.fromkeys(_NOTED, "test"),
            )
        )
        step, tokens = step + steps, tokens + steps * batch
    return out


@settings(max_examples=60, deadline=None)
@given(stages(), st.floats(-1e5, 2e7))
def test_nearest_boundary_matches_the_brute_force(batch_stages, target):
    boundaries = tokens_at_step(batch_stages, np.arange(batch_stages[-1].end_step + 1))
    assert _nearest_boundary(batch_stages, target) == int(np.argmin(np.abs(boundaries - target)))


@settings(
    max_examples=3,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(st.sampled_from(["1e20", "3e20", "1e21"]), st.sampled_from([8, 16, 32]), st.sampled_from([2048, 4096]))
def test_plan_yaml_check_round_trip_has_no_drift(tmp_path, flops, gpus, seq_len):
    src = tmp_path / f"p-{flops}-{gpus}-{seq_len}.yaml"
    src.write_text(
        f"schema_version: 1\nbudget: {{flops: {flops}}}\ntraining: {{seq_len: {seq_len}, vocab_size: 32000}}\n"
        f"cluster: {{gpus: {gpus}}}\n"
    )
    resolved = src.with_suffix(".resolved.yaml")
    runner = CliRunner()
    made = runner.invoke(app, ["plan", str(src), "-f", "yaml", "-o", str(resolved)])
    assert made.exit_code == 0, made.stderr
    checked = runner.invoke(app, ["check", str(resolved)])
    assert checked.exit_code == 0, checked.stderr
    assert "every derived number matches" in checked.stdout
