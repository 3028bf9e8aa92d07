"""docs/export.md quotes the 70B example's Megatron export (the step schedule, its stages and the run length when
#4411 ignores the ramp): it quoted '0:2560 29999759360:5248' and 2,861 steps after the plan had become
'0:2624 29997400064:5312' and 2,791. Each number here is read from what ``runplan export`` prints for
examples/70b-512-h100.yaml today, so the doc and the program cannot drift apart alone."""

from __future__ import annotations

import json

from tests.export._plans import EXAMPLES, REPO, parse_script_args
from tests.export.test_megatron_rampup_is_ignored_after_step_schedules import _replay
from typer.testing import CliRunner

from runplan.cli.app import app


def _export(*version: str) -> list[str]:
    args = ["export", str(EXAMPLES / "70b-512-h100.yaml"), "--to", "megatron", "--json", *version]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return parse_script_args(json.loads(result.stdout)["text"])


def _value(args: list[str], flag: str) -> str:
    return args[args.index(flag) + 1]


def test_export_md_quotes_the_70b_step_schedule_as_exported() -> None:
    doc = " ".join((REPO / "docs" / "export.md").read_text(encoding="utf-8").split())
    new = _export("--engine-version", "0.20")
    schedule, main = _value(new, "--step-batch-size-schedule"), _value(new, "--eval-global-batch-size")
    samples = int(_value(new, "--train-samples"))
    (b1, n1), (b2, n2) = _replay(schedule, 4096, samples)
    threshold = int(schedule.split()[1].split(":")[0])
    assert threshold == n1 * b1 * 4096 and str(b2) == main
    assert (
        f"`--step-batch-size-schedule '{schedule}' --eval-global-batch-size {main}` ({n1:,} steps × {b1:,} "
        f"sequences × 4,096 tokens = {threshold:,})" in doc
    )
    assert f"`--train-samples {samples}`, give its {n1:,} steps at {b1:,} and {n2:,} at {b2:,}" in doc
    assert f"the plan's {n1 + n2:,}" in doc
    old = (
        _export()
    )  # the default target: --rampup-batch-size, which #4411 ignores (the main batch throughout)
    assert int(_value(old, "--train-samples")) == samples and int(_value(old, "--global-batch-size")) == b2
    assert (
        f"run the 70B plan as {samples // b2:,} steps at {b2:,}, `--train-samples` {samples:,} // {b2:,}, "
        f"the schedule as its {b1:,} × {n1:,} and {b2:,} × {n2:,} steps" in doc
    )
