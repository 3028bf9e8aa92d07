"""`runplan export ARGS` through the CLI with stderr kept apart from stdout (typer's Click separates them;
older Click needs mix_stderr=False), for tests that read the file on stdout and the warnings on stderr."""

from __future__ import annotations

from typing import Any

from typer.testing import CliRunner

from runplan.cli.app import app


def run_export(*args: str) -> Any:
    runner = (
        CliRunner(mix_stderr=False)  # type: ignore[call-arg]
        if "mix_stderr" in CliRunner.__init__.__code__.co_varnames
        else CliRunner()
    )
    return runner.invoke(app, ["export", *args])
