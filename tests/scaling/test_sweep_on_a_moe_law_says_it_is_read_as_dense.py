"""`runplan sweep --law krajewski2024-moe` centres dense proxies on the MoE law read as a dense law, and says so.

Krajewski et al. 2024 (arXiv 2402.07871, Eq. 5) count every expert in N and carry a granularity term g/G^γ. The
sweep's proxies are dense Llama-style shapes, so it takes N as every parameter active (C = 6·N·D) and drops the
granularity term, as `runplan allocate --law krajewski2024-moe` does; allocate warned, the sweep printed its
21 dense proxies (5.4B..50B at 2e21, 0.3 to 13 tokens per parameter) with only an extrapolation warning.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.scaling import DEFAULT_MOE_LAW
from runplan.scaling.laws import shipped_laws
from runplan.scaling.sweep import SweepRequest, design_sweep

MOE = shipped_laws()[DEFAULT_MOE_LAW]
runner = CliRunner()


def test_the_moe_law_sweep_warns_that_it_is_read_as_dense():
    sweep = design_sweep(SweepRequest(flops=2e23, law=MOE))
    (note,) = [w for w in sweep.warnings if "mixture-of-experts" in w]
    assert f"law '{DEFAULT_MOE_LAW}'" in note and "dense" in note and "6·N·D" in note
    # the sizes still straddle the law's (dense-read) optimum: N_opt = G·(C/6)^a at 2e21 (Hoffmann Eq. 4)
    n_opt = MOE.G * (2e21 / 6) ** MOE.a
    top = [r.params for r in sweep.runs if r.budget_flops == pytest.approx(2e21)]
    assert min(top) < n_opt < max(top)
    assert all(r.params == r.non_embedding_params for r in sweep.runs)  # the law's count


def test_a_dense_law_and_a_moe_model_s_rewritten_law_do_not_warn():
    dense = design_sweep(SweepRequest(flops=2e23, law=shipped_laws()["besiroglu2024"]))
    rewritten = design_sweep(SweepRequest(flops=2e23, law=MOE.for_moe(4.644e10, 1.262e10, 1.0)))
    for sweep in (dense, rewritten):
        assert not any("mixture-of-experts" in w for w in sweep.warnings)


def test_the_warning_reaches_the_terminal_and_json():
    args = ["sweep", "--flops", "2e23", "--law", DEFAULT_MOE_LAW]
    data = json.loads(runner.invoke(app, [*args, "--json"]).stdout)
    assert any("mixture-of-experts" in w for w in data["warnings"])
    result = runner.invoke(app, args)
    assert result.exit_code == 0 and "mixture-of-experts" in result.stderr.replace("\n  ", " ")
