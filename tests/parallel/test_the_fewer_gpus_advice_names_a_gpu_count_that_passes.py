"""When every layout's batch d·b·m·s is over the ceiling and fewer GPUs (a smaller d) would lower it, the advice
"fewer GPUs" names the most GPUs below the job's at which the same search finds a layout that passes
(search._most_gpus_below_that_pass), not a bare "fewer GPUs (--gpus)"."""

import re

from typer.testing import CliRunner

from runplan.cli.app import app

# 8B pinned to TP 1 PP 1 CP 1 at 4,096 tokens a sequence, a 1M-token target ± 10%: ceiling 1,100,000 tokens. At 512
# GPUs d = 512 and the least batch is 512·1·1·4096 = 2,097,152 tokens: infeasible. Fewer GPUs lower d = GPUs;
# the most whole 8-GPU nodes with d·4096 <= 1,100,000 is d = 264 (1,081,344 tokens; 272 gives 1,114,112).
ARGS = ["parallelize", "--model", "llama-3.1-8b", "--seq-len", "4096", "--global-batch", "1M"]
PINS = ["--tp", "1", "--pp", "1", "--cp", "1"]


def _run(gpus: int):
    return CliRunner().invoke(app, [*ARGS, *PINS, "--gpus", str(gpus)], env={"COLUMNS": "400"})


def test_fewer_gpus_names_the_most_that_pass():
    result = _run(512)
    assert result.exit_code == 1
    found = re.search(r"fewer GPUs \(a layout passes at ([\d,]+): --gpus (\d+)\)", result.output)
    assert found, result.output
    assert int(found.group(2)) == 264
    assert _run(264).exit_code == 0
    assert _run(272).exit_code == 1
