"""`runplan whatif PLAN --gpus ...`: the GPU count its user typed is the flag's, so an infeasible size's reason and
the everything-infeasible message name `--gpus`, not the plan key `cluster.gpus` (it said ``(at least
cluster.gpus: 24)`` after the user typed ``--gpus 8,16``). Other plan keys stay plan keys (whatif reads a plan
file), and `cluster.gpus_per_node` is not the GPU count."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from runplan.cli.app import app

PLAN70 = Path(__file__).resolve().parents[1] / "examples" / "70b-512-h100.yaml"


def run(*args: str):
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})


# 70.55 B params × 18 bytes/param of model states (2 weights + 4 gradients + 12 optimizer) = 1,270 GB, over
# 76 GB usable per H100 (80 GB less 5% headroom, less the 3 GB reserve: 73 GB) = 17.4 GPUs, in whole 8-GPU nodes 24
def test_a_size_too_small_says_the_flag_value_that_fits():
    result = run("whatif", str(PLAN70), "--gpus", "8,512")
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    assert "infeasible at 8 GPUs:" in text
    assert "(at least --gpus 24)" in text
    assert "cluster.gpus:" not in text and "cluster.gpus)" not in text
    records = json.loads(run("whatif", str(PLAN70), "--gpus", "8,512", "--json").stdout)
    assert "(at least --gpus 24)" in records[0]["infeasible"]
    assert "cluster.gpus" not in records[0]["infeasible"]


def test_every_size_infeasible_says_the_flag_value_that_fits():
    result = run("whatif", str(PLAN70), "--gpus", "8,16")
    assert result.exit_code == 1
    text = " ".join(result.output.split())
    assert "at least --gpus 24" in text
    assert "cluster.gpus" not in text


def test_a_plan_key_of_the_file_stays_a_plan_key():
    from runplan.cli.compare import gpus_as_flag
    from runplan.errors import Infeasible

    error = gpus_as_flag(
        Infeasible(
            "fewer GPUs (cluster.gpus); cluster.gpus_per_node: 4 splits the job",
            suggestions=["at least cluster.gpus: 24", "set parallel.zero: 3", "cluster.gpus: 1,024"],
        )
    )
    assert error.reason == "fewer GPUs (--gpus); cluster.gpus_per_node: 4 splits the job"
    # a size as --gpus takes it: "--gpus 1,024" would be the two sizes 1 and 24
    assert error.suggestions == ["at least --gpus 24", "set parallel.zero: 3", "--gpus 1024"]
