"""Issue 14: an exported file passes what the engine checks at start-up, or the export says why (in the file
and on stderr), or it is refused with exit 2.

The torchtitan stage rule is checked here against hand-derived splits (the opt-in engines check runs
torchtitan's own code on every export)."""

from __future__ import annotations

import tomllib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.export._plans import EXAMPLE_NAMES, EXAMPLES, example_plan, golden_plan, rebalanced, with_layout

from runplan.errors import SpecError
from runplan.export import export_plan
from runplan.export._common import facts
from runplan.export.deepspeed import LrRun, closest_scheduler, deepspeed_lr
from runplan.export.torchtitan import stage_layers, virtual_stages

#: The [parallelism] section runplan exported for examples/70b-512-h100.yaml before issue 14.
OLD_70B_PARALLELISM = """
[parallelism]
data_parallel_replicate_degree = 1
data_parallel_shard_degree = 64
tensor_parallel_degree = 4
pipeline_parallel_degree = 2
pipeline_parallel_schedule = "Interleaved1F1B"
pipeline_parallel_layers_per_stage = 10
pipeline_parallel_microbatch_size = 1
"""
#: torchtitan 0.2.2's defaults for the keys the split reads (config/job_config.py).
TORCHTITAN_DEFAULT_LESS = 1


def _split_of(parallelism: dict, n_layers: int) -> list[int]:
    """Layers per stage as torchtitan would split them for this [parallelism] section."""
    less = parallelism.get("pipeline_parallel_first_stage_less_layers", TORCHTITAN_DEFAULT_LESS)
    assert less == parallelism.get("pipeline_parallel_last_stage_less_layers", TORCHTITAN_DEFAULT_LESS)
    interleaved = parallelism.get("pipeline_parallel_schedule", "1F1B") != "1F1B"
    stages = virtual_stages(
        n_layers,
        parallelism.get("pipeline_parallel_layers_per_stage"),
        parallelism["pipeline_parallel_degree"],
        interleaved,
        less,
    )
    return stage_layers(n_layers, stages, less, less)


def test_stage_layers_hand_derived() -> None:
    # 80 layers + 1 + 1 in 9 parts: 82 = 9*9 + 1, first part one larger, then the weights come off the ends
    assert stage_layers(80, 9, 1, 1) == [9] * 8 + [8]
    assert stage_layers(80, 8, 0, 0) == [10] * 8
    assert stage_layers(126, 128, 1, 1) == [0] + [1] * 126 + [0]  # embedding and loss stages of their own
    assert stage_layers(59, 10, 0, 0) == [6] * 9 + [5]
    with pytest.raises(ValueError):
        stage_layers(126, 128, 0, 0)  # more stages than layers


def test_old_70b_torchtitan_export_had_nine_virtual_stages_and_the_new_one_eight() -> None:
    old = tomllib.loads(OLD_70B_PARALLELISM)["parallelism"]
    with pytest.raises(
        ValueError, match=r"virtual stages \(9\) must be divisible by pipeline parallel size \(2\)"
    ):
        _split_of(old, 80)  # ceil((80 + 1 + 1) / 10) = 9
    # the same pipeline (p 2, v 4; the plan's own is v 1 now) exported today; c 2 halves d to 512 / (4·2·2) = 32,
    # so m = 5,312 / 32 = 166 is even as interleaving needs (the plan's m = 83 is not)
    pinned = rebalanced(golden_plan("70b-512-h100"), vpp=4, cp=2)
    assert (pinned.layout.best.tp, pinned.layout.best.dp, pinned.layout.best.microbatches) == (4, 32, 166)
    new = tomllib.loads(export_plan(pinned, "torchtitan").text)["parallelism"]
    assert _split_of(new, 80) == [10] * 8


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_torchtitan_split_is_the_plans(example: str) -> None:
    plan = golden_plan(example)
    f = facts(plan)
    result = export_plan(plan, "torchtitan")
    doc = tomllib.loads(result.text)
    if f.layout.pp > 1:
        layers = _split_of(doc["parallelism"], f.n_layers)
        assert len(layers) == f.layout.pp * f.layout.vpp
        assert max(sum(layers[rank :: f.layout.pp]) for rank in range(f.layout.pp)) == f.layers_per_stage
    assert not any(w.startswith("pipeline:") for w in result.warnings)
    # required values that make torchtitan refuse to start until they are set
    assert doc["training"]["dataset"].startswith("SET-ME")
    assert doc["model"]["hf_assets_path"].startswith("SET-ME")


@settings(max_examples=40, deadline=None)
@given(n_layers=st.integers(2, 130), pp=st.sampled_from([2, 4, 8]), vpp=st.sampled_from([1, 2, 3, 4]))
def test_torchtitan_split_always_starts(n_layers: int, pp: int, vpp: int) -> None:
    """Whatever the layout, the exported keys give a split torchtitan accepts (or a warning says how it
    differs from the plan's); never a file that raises at start-up."""
    if n_layers < pp * vpp - 2:
        return
    base = golden_plan("70b-512-h100")
    shape = base.model.shape.model_copy(update={"n_layers": n_layers})
    # d = 512 / (4·p), m = 5,312 / d; consistent=False: the point is any (L, p, v), so v need not divide the
    # ⌈L/p⌉ layers of a stage nor p divide m (83 at p 2) as the search would ask
    plan = rebalanced(
        base.model_copy(update={"model": base.model.model_copy(update={"shape": shape})}),
        consistent=False,
        pp=pp,
        vpp=vpp,
        layers_per_stage=-(-n_layers // pp),
    )
    result = export_plan(plan, "torchtitan")
    layers = _split_of(tomllib.loads(result.text)["parallelism"], n_layers)
    if len(layers) != pp * vpp or max(sum(layers[r::pp]) for r in range(pp)) != -(-n_layers // pp):
        assert any(w.startswith("pipeline:") for w in result.warnings)


# ---- DeepSpeed ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("zero", [2, 3])
def test_deepspeed_refuses_zero_2_or_3_with_pipeline(zero: int) -> None:
    plan = with_layout(golden_plan("70b-512-h100"), zero=zero)  # p = 2
    with pytest.raises(SpecError) as caught:
        export_plan(plan, "deepspeed")
    assert caught.value.where == "parallel.zero" and "ZeRO stage 0 or 1" in caught.value.message
    flat = rebalanced(golden_plan("70b-512-h100"), zero=zero, pp=1, vpp=1, tp=8)  # d = 512 / 8 = 64, m = 83
    assert (flat.layout.best.dp, flat.layout.best.microbatches) == (64, 83)
    assert export_plan(flat, "deepspeed").target == "deepspeed"


def test_deepspeed_zero_3_with_pipeline_exits_2(tmp_path) -> None:
    from typer.testing import CliRunner

    from runplan.cli.app import app

    text = (EXAMPLES / "70b-512-h100.yaml").read_text()
    plan_file = tmp_path / "z3.yaml"
    plan_file.write_text(text.replace("operations:", "parallel:\n  zero: 3\n  pp: 4\noperations:"))
    result = CliRunner().invoke(app, ["export", str(plan_file), "--to", "deepspeed"])
    assert result.exit_code == 2
    assert "ZeRO stage 0 or 1" in result.output and "Traceback" not in result.output


def test_deepspeed_lr_formulas_hand_derived() -> None:
    step = np.array([0.0, 5.0, 10.0, 55.0, 100.0])
    warm = {"warmup_min_lr": 0.0, "warmup_max_lr": 1.0, "warmup_num_steps": 10, "warmup_type": "linear"}
    constant = deepspeed_lr({"type": "WarmupLR", "params": warm}, 1.0, step)
    assert constant.tolist() == [0.0, 0.5, 1.0, 1.0, 1.0]
    decay = deepspeed_lr({"type": "WarmupDecayLR", "params": {**warm, "total_num_steps": 100}}, 1.0, step)
    assert decay.tolist() == [0.0, 0.5, 1.0, 0.5, 0.0]  # (100 - 55) / (100 - 10) = 0.5
    cosine = {
        "type": "WarmupCosineLR",
        "params": {
            "total_num_steps": 101,
            "warmup_num_steps": 10,
            "warmup_min_ratio": 0.0,
            "cos_min_ratio": 0.0,
        },
    }
    # progress (step - 10 + 1) / (101 - 10): 0 at step 9, 1/2 at step 54.5, 1 at step 100
    assert deepspeed_lr(cosine, 2.0, np.array([100.0]))[0] == pytest.approx(0.0, abs=1e-12)


@settings(max_examples=30, deadline=None)
@given(steps=st.integers(50, 5000), warm_frac=st.floats(0.0, 0.3))
def test_closest_scheduler_is_exact_when_deepspeed_can_express_the_schedule(
    steps: int, warm_frac: float
) -> None:
    warmup = int(steps * warm_frac)
    # warmup then constant (no cooldown): WarmupLR is the plan's schedule
    scheduler, scores = closest_scheduler(LrRun(steps, warmup, 0, 1e-3, 0.0, "linear"))
    assert scheduler["type"] == "WarmupLR" and scores["WarmupLR"][1] < 1e-12
    # no warmup, linear decay to 0 over the whole run: WarmupDecayLR is the plan's schedule
    scheduler, scores = closest_scheduler(LrRun(steps, 0, steps, 1e-3, 0.0, "linear"))
    assert scheduler["type"] == "WarmupDecayLR" and scores["WarmupDecayLR"][1] < 1e-9


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_deepspeed_file_carries_its_warnings_and_lr_error(example: str) -> None:
    import json

    result = export_plan(example_plan(example), "deepspeed")
    section = json.loads(result.text)["runplan"]
    assert section["warnings"] == result.warnings
    lr = section["lr_schedule"]
    deviation = lr["abs_deviation_of_peak"][lr["exported"]]
    assert all(deviation["mean"] <= other["mean"] for other in lr["abs_deviation_of_peak"].values())
    assert f"{deviation['mean']:.1%}" in next(w for w in result.warnings if w.startswith("LR schedule:"))
