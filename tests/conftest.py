"""Shared fixtures: where the real data sets live, and whether they must be there."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

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
