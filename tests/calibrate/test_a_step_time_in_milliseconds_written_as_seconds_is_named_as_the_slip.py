"""A step time in milliseconds written as seconds (2000 for 2 s) was fitted with only a bound warning
(gemm_peak_fraction on its lower bound), which never named the run or the unit. Such a run implies an MFU a
thousand times below a real one; below 0.1% (72 times below the slowest of the 166 published runs, 7.2%) the
run is named with the value it probably meant. Warned, not refused: it is still fitted as written.

Hand-derived: Llama 3.1 8B at 8,192 tokens has 6 x 7.504e9 matmul parameters (32 layers of 4096 x (4096 + 1024
+ 1024 + 4096) + 3 x 4096 x 14336, plus the 4096 x 128,256 head) + 12 x 32 x 4096 x 8192 attention = 57.91e9
model FLOPs per token. 16 x 8192 tokens per step on 8 GPUs in 2 s is 8,192 tokens/s per GPU: 474.4 TFLOP/s,
MFU 0.4797 of the H100's 989 TFLOP/s; written as 2000 s, 0.048%."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from runplan.calibrate.fit import IMPLAUSIBLE_MFU, SLOWEST_PUBLISHED_MFU
from runplan.cli.app import app

from .one_run import ONE_RUN

runner = CliRunner()
REPO = Path(__file__).resolve().parents[2]


def _calibrate(tmp_path: Path, measured: str) -> tuple[int, str]:
    path = tmp_path / "measured.yaml"
    path.write_text(ONE_RUN.replace("MEASURED", measured))
    result = runner.invoke(app, ["calibrate", str(path)], env={"COLUMNS": "400"})
    return result.exit_code, " ".join(result.stderr.split())


def test_milliseconds_written_as_seconds_name_the_seconds_meant(tmp_path: Path):
    code, stderr = _calibrate(tmp_path, "{step_seconds: 2000}")
    assert code == 0  # warned, not refused
    assert (
        "run 'r0': step_seconds implies MFU 0.048% of the bf16 peak, under 0.1% (the slowest published run: "
        "7.2%); milliseconds written as seconds? step_seconds: 2 would be MFU 48.0%"
    ) in stderr


def test_a_slow_real_run_is_not_warned(tmp_path: Path):
    # 200 s: MFU 0.48%, 15 times below the slowest published run, yet a possible job: fitted without the warning
    for seconds in ("2.0", "200"):
        code, stderr = _calibrate(tmp_path, f"{{step_seconds: {seconds}}}")
        assert code == 0 and "implies MFU" not in stderr, stderr


def test_a_value_whose_thousandth_is_still_implausible_offers_no_number(tmp_path: Path):
    # 2e6 s: 4.8e-7; read as milliseconds, 2000 s, still 0.048%: no value offered, only the unit to check
    code, stderr = _calibrate(tmp_path, "{step_seconds: 2e6}")
    assert code == 0
    assert "step_seconds implies MFU 0.000% of the bf16 peak" in stderr
    assert "(the slowest published run: 7.2%): check its unit" in stderr
    assert "would be MFU" not in stderr


def test_a_throughput_as_implausible_is_warned_without_the_millisecond_reading(tmp_path: Path):
    # 8.192 tokens/s per GPU is the 2000 s step: the same MFU, and no step time to offer
    code, stderr = _calibrate(tmp_path, "{tokens_per_second_per_gpu: 8.192}")
    assert code == 0
    assert "tokens_per_second_per_gpu implies MFU 0.048% of the bf16 peak" in stderr
    assert "check its unit" in stderr and "milliseconds" not in stderr


def test_the_bound_is_far_below_every_published_run():
    """SLOWEST_PUBLISHED_MFU is the least MFU the published runs imply, and the bound is 72 times below it."""
    from runplan.cli.calibrate import load_measured

    prepared, _ = load_measured(REPO / "benchmarks" / "published_runs.yaml", [])
    mfus = [p.mfu for p in prepared if p.mfu is not None]
    assert len(mfus) == 166
    assert min(mfus) == pytest.approx(SLOWEST_PUBLISHED_MFU, abs=5e-4)
    ratio = SLOWEST_PUBLISHED_MFU / IMPLAUSIBLE_MFU
    assert ratio == pytest.approx(72)
