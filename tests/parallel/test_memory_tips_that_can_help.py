"""When nothing fits, 'bf16 gradients' is offered only where halving the gradients alone covers the excess."""

from __future__ import annotations

from typer.testing import CliRunner

from runplan.cli.app import app


def _tips(*args: str) -> str:
    result = CliRunner().invoke(app, ["parallelize", *args])
    assert result.exit_code == 1, result.output
    return " ".join(result.output.split())


def test_bf16_gradients_are_offered_where_they_cover_the_excess():
    # 13B, ZeRO-1 on 8 GPUs: fp32 gradients 4 x 13B = 52 GB, half of it covers the 96.5 - 76 = 20.5 GB excess
    args = ("--model", "13b", "--gpus", "8", "--zero", "1", "--tp", "1", "--pp", "1", "--recompute", "full")
    assert "bf16 gradients (--bf16-grads)" in _tips(*args, "--mbs", "1")


def test_bf16_gradients_are_not_offered_for_an_activation_shortfall():
    # 125M at a million tokens: 104 GB of activations; its gradients (0.5 GB) could never close the gap
    tips = _tips("--model", "125m", "--gpus", "8", "--seq-len", "1m")
    assert "bf16 gradients" not in tips
    assert "need at least 1 h100-sxm GPU " in tips + " "  # one GPU, not "1 ... GPUs"
