"""Shared fixtures: where the real data sets live, and whether they must be there."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest
from hypothesis import settings

# No per-example deadline: a busy 2-core CI machine must not turn a slow example into a failure. Under CI the
# examples are derandomized, so a red run is reproducible and never a dice roll; locally they explore.
settings.register_profile("runplan", deadline=None)
settings.register_profile("runplan-ci", deadline=None, derandomize=True, print_blob=True)
settings.load_profile("runplan-ci" if os.environ.get("CI") else "runplan")

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data_dir() -> Path:
    """``../shared/data`` beside the checkout; skipped when absent unless RUNPLAN_REQUIRE_SHARED_DATA=1."""
    if SHARED_DATA.is_dir():
        return SHARED_DATA
    message = f"real data sets not found at {SHARED_DATA} (they live in ../shared/data beside the checkout)"
    if os.environ.get("RUNPLAN_REQUIRE_SHARED_DATA") == "1":
        pytest.fail(message + "; RUNPLAN_REQUIRE_SHARED_DATA=1 requires them")
    pytest.skip(message)


@pytest.fixture(scope="session")
def stored_70b_plan(tmp_path_factory) -> Path:
    """examples/70b-512-h100.yaml as `runplan plan -f json -o` stores it, in a folder of its own (not beside its
    plan file): the stored-plan tests of export, monitor and the commands that refuse one share it (each planned
    it again before, some 3 s apiece)."""
    from typer.testing import CliRunner

    from runplan.cli.app import app

    path = tmp_path_factory.mktemp("stored") / "plan.json"
    example = REPO_ROOT / "examples" / "70b-512-h100.yaml"
    result = CliRunner().invoke(app, ["plan", str(example), "-f", "json", "-o", str(path)])
    assert result.exit_code == 0, result.output
    return path


def _one_error_line(result) -> str:
    """The single line a CLI run printed for bad input, after checking it exited 2 without a traceback."""
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    return lines[0]


@pytest.fixture
def one_error_line():
    """:func:`_one_error_line`: bad input is one line and exit 2 (the project's error rule), as a fixture."""
    return _one_error_line


@pytest.fixture(scope="session")
def validate():
    """benchmarks/validate.py, a script outside the package, loaded once as a module (its predictions of the
    published runs are what docs/validation.md prints)."""
    spec = importlib.util.spec_from_file_location(
        "runplan_validate", REPO_ROOT / "benchmarks" / "validate.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["runplan_validate"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def published(validate):
    """(the published-runs document, its prepared runs, ...) as validate.load_published returns them."""
    return validate.load_published()
