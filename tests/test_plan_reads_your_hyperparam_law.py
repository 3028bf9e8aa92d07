"""`schedule.hyperparams`: the batch/LR law `runplan fit --hyperparams -o` writes sets a plan's batch and peak LR."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from runplan.cli.app import app

EXAMPLE = "examples/70b-512-h100.yaml"
DEEPSEEK = {"batch_coef": 0.2920, "batch_exp": 0.3271, "lr_coef": 0.3118, "lr_exp": -0.1250}


def _plan(tmp_path, schedule: dict | None) -> dict:
    spec = yaml.safe_load(Path(EXAMPLE).read_text())
    if schedule is not None:
        spec["schedule"] = {**spec.get("schedule", {}), **schedule}
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(spec))
    result = CliRunner().invoke(app, ["plan", str(path), "-f", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _law_file(tmp_path, **coefs: float) -> str:
    law = {"name": "hyperparams:sweep.csv", "flops_min": 1e17, "flops_max": 1e20, "source": "test"}
    (tmp_path / "laws").mkdir(exist_ok=True)
    (tmp_path / "laws" / "hp.yaml").write_text(yaml.safe_dump(law | DEEPSEEK | coefs))
    return "laws/hp.yaml"  # relative to the plan file


def test_deepseek_coefficients_in_a_law_file_plan_the_same_batch_and_lr(tmp_path):
    default = _plan(tmp_path, None)["schedule"]
    own = _plan(tmp_path, {"hyperparams": _law_file(tmp_path)})["schedule"]
    assert own["law_batch_tokens"] == pytest.approx(default["law_batch_tokens"], rel=1e-12)
    assert own["peak_lr"] == pytest.approx(default["peak_lr"], rel=1e-12)
    assert own["peak_lr_source"] == "hyperparams:sweep.csv (schedule.hyperparams)"


def test_your_law_sets_the_batch_target_and_the_peak_lr(tmp_path):
    # k_B doubled and k_η halved: B_opt(C) twice DeepSeek's and η_opt(C) half, at the same C = M·D
    default = _plan(tmp_path, None)
    own = _plan(tmp_path, {"hyperparams": _law_file(tmp_path, batch_coef=0.584, lr_coef=0.1559)})
    c = default["schedule"]["compute_flops"]
    assert own["schedule"]["compute_flops"] == c
    assert own["schedule"]["law_batch_tokens"] == pytest.approx(0.584 * c**0.3271, rel=1e-12)
    assert own["schedule"]["peak_lr"] == pytest.approx(0.1559 * c**-0.125, rel=1e-12)
    assert own["layout"]["target_global_batch_tokens"] == pytest.approx(0.584 * c**0.3271, rel=1e-12)
    batch = own["layout"]["best"]["global_batch_tokens"]
    assert abs(batch / (0.584 * c**0.3271) - 1) <= 0.10  # the search aims at the target ± 10%
    # C = 8.9e23 is 8,859× the largest budget fitted (1e20): said, with the way out
    (warning,) = [w for w in own["warnings"] if "extrapolates your law" in w]
    assert (
        "8859× the largest budget it was fitted on (1.000e+20)" in warning and "schedule.peak_lr" in warning
    )


def test_a_missing_law_file_names_the_key(tmp_path):
    spec = yaml.safe_load(Path(EXAMPLE).read_text()) | {"schedule": {"hyperparams": "nope.yaml"}}
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(spec))
    result = CliRunner().invoke(app, ["plan", str(path)])
    assert result.exit_code == 2
    assert "schedule.hyperparams" in result.output and "Traceback" not in result.output
