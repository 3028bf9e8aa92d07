"""The MFU row says which peak it divides by: the bf16 one, also for fp8 stacks (docs/parallel.md, FP8)."""

from __future__ import annotations

from typer.testing import CliRunner

from runplan.cli.app import app


def test_the_mfu_row_divides_by_the_bf16_peak():
    result = CliRunner().invoke(app, ["plan", "examples/70b-512-h100.yaml", "-f", "markdown"])
    assert result.exit_code == 0, result.output
    assert (
        "model FLOPs per second / bf16 peak (fp8 stacks too); model FLOPs = 6N + attention" in result.output
    )
