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
    need = math.ceil(per_param * params / usable)  # 101 (18 B) or 90 (16 B) GPUs, in whole 8-GPU nodes
    assert f"need at least {math.ceil(need / 8) * 8} h100-sxm" in result.stderr


def test_no_more_gpus_when_the_job_has_enough_for_the_states():
    """70B on 512 GPUs with ZeRO-0 pinned: the states fully sharded need 128 GPUs, fewer than the job's 512,
    so more GPUs are not the advice; ZeRO-3 is. 8B on 2 GPUs misses by 1.7 GB of the margins kept free:
    bf16 gradients and a smaller margin are offered, each alone making it fit: the least layout's 77.7 GB fits under
    80 x (1 - 0.02) = 78.4 GB (0.03 leaves 77.6 GB), or under the 76.0 GB at 5% with the 3 GB reserve 1.7 GB smaller,
    1.3 GB (0.1 GB, rounded down)."""
    argv = ["parallelize", "--model", "70b", "--gpus", "512", "--tp", "1", "--pp", "1", "--zero", "0"]
    text = " ".join(CliRunner().invoke(app, [*argv, "--mbs", "8", "--recompute", "none"]).stderr.split())
    assert "more GPUs" not in text and "ZeRO-3 (--zero 3)" in text
    text = " ".join(CliRunner().invoke(app, ["parallelize", "--model", "8b", "--gpus", "2"]).stderr.split())
    assert "more GPUs" not in text
    assert "bf16 gradients (--bf16-grads), a smaller margin (--headroom 0.02 or --reserve 1.3GB)" in text
    for fix in (["--bf16-grads"], ["--headroom", "0.02"], ["--reserve", "1.3GB"]):
        assert CliRunner().invoke(app, ["parallelize", "--model", "8b", "--gpus", "2", *fix]).exit_code == 0
