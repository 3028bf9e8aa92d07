"""A target batch below one sequence is refused in one line that repeats the batch as typed: `--global-batch 1.5`
said "a global batch of 2 tokens" (rounded to a whole number), a value the user never wrote."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app


@pytest.mark.parametrize(
    ("typed", "said"), [("1.5", "1.5 tokens"), ("100", "100 tokens"), ("4095", "4,095 tokens")]
)
def test_the_refused_batch_is_said_as_typed(typed, said):
    result = CliRunner().invoke(
        app, ["parallelize", "--model", "8b", "--gpus", "64", "--global-batch", typed]
    )
    assert result.exit_code == 2
    text = " ".join(result.stderr.split())
    assert f"--global-batch: a global batch of {said} is less than one sequence of 4,096" in text
