"""When activations are the largest term of the smallest layout and no layout fits, the advice "more GPUs, to split
the activations further" names the fewest GPU count at which the same search finds a layout that passes
(search._fewest_gpus_that_fit): that count plans, and the count a node below it does not."""

import re

from typer.testing import CliRunner

from runplan.cli.app import app

ARGS = ["parallelize", "--model", "llama-3.1-8b", "--seq-len", "131072", "--recompute", "none"]


def _run(gpus: int):
    return CliRunner().invoke(app, [*ARGS, "--gpus", str(gpus)], env={"COLUMNS": "400"})


def test_more_gpus_for_the_activations_names_a_count_that_fits():
    result = _run(8)
    assert result.exit_code == 1
    (line,) = [x for x in result.output.splitlines() if "to split the activations further" in x]
    found = re.search(r"a layout first fits at ([\d,]+) GPUs \(--gpus (\d+)\)", line)
    assert found, line
    count = int(found.group(2))
    assert count > 8 and count % 8 == 0
    assert _run(count).exit_code == 0
    assert _run(count - 8).exit_code == 1
