"""`runplan whatif` where no size is feasible: the error names the constraint that ruled out each size, not the
first size's alone (`--gpus 8,1m` on a 70B plan said only "at 8 GPUs: ... memory" and "more GPUs", hiding that
a million GPUs fail the other way, on the global batch)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from runplan.cli.app import app

PLAN70 = str(Path(__file__).resolve().parents[1] / "examples" / "70b-512-h100.yaml")


def _whatif(sizes: str):
    return CliRunner().invoke(app, ["whatif", PLAN70, "--gpus", sizes], env={"COLUMNS": "80"})


def test_each_size_says_its_own_constraint():
    result = _whatif("8,1m")
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output and result.stdout == ""
    text = " ".join(result.stderr.split())
    assert "at 8 GPUs: every one of the 2,544 candidates breaks the memory constraint" in text
    # 1m GPUs of a 70B plan: DP alone is 1e6 / (TP 8 × PP ≤ 80) ≥ 1,562 replicas of ≥ 1 sequence of 4,096
    # tokens, ≥ 6.4e9 tokens a step, far above the ~22 M-token target batch: the batch constraint rules it out
    assert "at 1,000,000 GPUs:" in text and "global_batch" in text.split("at 1,000,000 GPUs:")[1]


def test_a_suggestion_every_size_shares_is_said_once():
    result = _whatif("8,16")
    assert result.exit_code == 1, result.output
    text = " ".join(result.stderr.split())
    # 70.55e9 params × 18 bytes / 76 GB usable = 16.7 GPUs, 24 in whole nodes of 8: said once, not per size
    assert text.count("need at least 24 h100-sxm GPUs") == 1
    # each size's own smallest memory (8 GPUs: 162.9 GB; 16 GPUs: 83.2 GB), each named by its size
    assert "at 8 GPUs: the smallest memory of any layout is 162.9 GB" in text
    assert "at 16 GPUs: the smallest memory of any layout is 83.2 GB" in text
