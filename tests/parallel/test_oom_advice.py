"""When nothing fits in memory, the advice counts 2 + gradient + 12 bytes per parameter."""

from __future__ import annotations

import math

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app


@pytest.mark.parametrize(("bf16", "per_param"), [(False, 18), (True, 16)])
def test_oom_advice_counts_2_plus_gradient_plus_12_bytes(bf16, per_param):
    argv = ["parallelize", "--model", "llama-3.1-405b", "--gpus", "8"] + (["--bf16-grads"] if bf16 else [])
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 1
    from runplan.catalog import load_catalog

    params = load_catalog().model("llama-3.1-405b").total_params
    usable = 80e9 * 0.95 - 3e9  # headroom 5 %, reserve 3 GB (Constraints defaults)
    assert f"{per_param} bytes/param" in result.stderr
    assert f"need at least {math.ceil(per_param * params / usable)} h100-sxm" in result.stderr
