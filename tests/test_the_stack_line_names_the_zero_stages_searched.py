"""`runplan parallelize`'s stack line names the ZeRO stages the search really tries: the engine's
(``stack.zero_stages``: megatron-2022 has 0 and 1) that ``stack.distributed_optimizer`` allows (false: ZeRO-0 only,
true: ZeRO >= 1; search.build_grid), with the key that narrowed them, not the engine's whole list."""

import json
import re
from pathlib import Path

import pytest
from tests._small_plan import small_8b_plan
from typer.testing import CliRunner

from runplan.cli.app import app


def _plan(tmp_path: Path, stack: str) -> Path:
    path = tmp_path / "plan.yaml"
    path.write_text(small_8b_plan("zero-stages-line", f"stack:\n{stack}"))
    return path


def _run(*args: str):
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "400"})


@pytest.mark.parametrize(
    ("stack", "shown", "searched"),
    [
        (
            "  preset: megatron-2022\n  distributed_optimizer: false\n",
            "zero_stages 0 (distributed_optimizer off)",
            {0},
        ),
        (
            "  preset: megatron-2022\n  distributed_optimizer: true\n",
            "zero_stages 1 (distributed_optimizer on)",
            {1},
        ),
        ("  preset: megatron-2022\n", "zero_stages 0+1,", {0, 1}),
    ],
)
def test_the_stack_line_names_the_stages_searched(tmp_path: Path, stack: str, shown: str, searched: set[int]):
    path = _plan(tmp_path, stack)
    result = _run("parallelize", str(path))
    assert result.exit_code == 0, result.output
    (line,) = [x for x in result.output.splitlines() if x.startswith("training stack:")]
    assert shown in line
    assert len(re.findall("zero_stages", line)) == 1
    found = json.loads(_run("parallelize", str(path), "--json", "--top", "200").output)
    assert found["layouts"] and {x["zero"] for x in found["layouts"]} <= searched
