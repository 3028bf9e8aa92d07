"""The MFU a GPU-time budget is converted at is the one that turns its GPU-days into the run's FLOPs: model FLOPs
per second over peak (PaLM, Chowdhery et al. 2022, §4.1 and App. B), so MFU = 6·N·D / (GPUs × peak × seconds)
with 6·N·D the training FLOPs the allocation trains. `runplan plan --format json` gave `allocation.mfu` 0.291 and
`runplan allocate FILE --json` 0.487 for the same inference-optimal days budget: the plan divided the budget's C
(the compute whose compute-optimal loss is the target) by the GPU-days, though the inference-optimal model trains
1.68x that C. Both now take the rate from one function, on the training FLOPs."""

from __future__ import annotations

import json

import pytest
import yaml
from typer.testing import CliRunner

from runplan.cli.app import app

GPUS, PEAK, DAYS = 512, 989e12, 30.0  # h100-sxm bf16 dense peak (configs/gpus.yaml)


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    path = tmp_path_factory.mktemp("mfu") / "inf.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "schema_version": 1,
                "name": "inf",
                "budget": {"days": DAYS},
                "objective": {"kind": "inference_optimal", "inference_tokens": 2e13},
                "training": {"seq_len": 4096},
                "cluster": {"gpu": "h100-sxm", "gpus": GPUS},
            }
        )
    )
    plan = CliRunner().invoke(app, ["plan", str(path), "--format", "json"])
    allocate = CliRunner().invoke(app, ["allocate", str(path), "--json"])
    assert plan.exit_code == 0 and allocate.exit_code == 0, plan.output + allocate.output
    return json.loads(plan.stdout), json.loads(allocate.stdout)


def test_the_rate_is_the_training_flops_over_the_budget_s_gpu_seconds(both):
    plan, _ = both
    a = plan["allocation"]
    assert a["objective"] == "inference_optimal" and a["days"] == DAYS
    training = 6 * a["params"] * a["tokens"]
    assert a["flops"] == pytest.approx(training, rel=1e-9)
    # the inference-optimal D trains more than the budget's C: the rate on the budget's C was 0.291
    assert a["flops"] > 1.5 * a["budget_flops"]
    assert a["mfu"] == pytest.approx(training / (GPUS * PEAK * DAYS * 86_400), rel=1e-9)
    # by hand: 6 × 21.63e9 × 4.707e12 = 6.109e23 FLOPs over 512 × 989e12 × 2.592e6 s = 1.3125e24: 0.4654 (the
    # budget's C, 3.61e23, gave 0.275); below the layout's MFU, which counts 6N plus attention (PaLM App. B)
    assert a["mfu"] == pytest.approx(0.4654, abs=0.005)
    assert a["mfu"] < plan["layout"]["best"]["mfu"]


def test_plan_and_allocate_agree_on_the_rate_and_what_it_converts(both):
    plan, allocate = both
    for key in ("objective", "budget_flops", "flops", "params", "tokens", "days"):
        assert plan["allocation"][key] == allocate[key], key
    assert plan["allocation"]["mfu"] == pytest.approx(allocate["mfu"], rel=1e-12)
    # allocate's GPU-hours are the budget's: the training FLOPs at that rate take the budget's days
    assert allocate["gpu_hours"] == pytest.approx(GPUS * DAYS * 24, rel=1e-9)


def test_the_budget_row_gives_the_training_flops_rate_and_the_inference_objective_s_share(both):
    """The report's budget row said the rate (29.1%) was below the layout's MFU because "C = 6·N·D leaves out the
    attention FLOPs": the gap was the budget's C against the training FLOPs. The rate is now the training FLOPs',
    and the row says how much more than the budget's C the inference objective trains."""
    from runplan.plan import RunPlan
    from runplan.report.sections import plan_sections

    plan = RunPlan.model_validate(both[0])
    rows = {row[0]: row for section in plan_sections(plan) for row in section.rows}
    why = rows["budget"][2]
    assert f"{plan.allocation.mfu:.1%}" in why
    ratio = plan.allocation.flops / plan.allocation.budget_flops
    assert f"the inference objective trains {ratio:.2f}× that C" in why
    assert f"training FLOPs 6·N·D = GPUs × peak × {plan.allocation.mfu:.1%} × days" in why
