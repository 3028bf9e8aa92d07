"""The memory limit is HBM x (1 - headroom) and the reserve comes out of it (docs/parallel.md, Memory per GPU):
when a headroom the user set leaves less than the default reserve (3 GB), the one-line error names the headroom
they typed, not the reserve they never set. `--headroom 0.999` on an 80 GB H100 leaves 80 x 0.001 = 0.08 GB; it
said "--reserve: a reserve of 3 GB is not below the 0.08 GB ...". A reserve the user set is still named."""

from __future__ import annotations

from typer.testing import CliRunner

from runplan.cli.app import app

BASE = ["parallelize", "--model", "8b", "--gpus", "64"]


def _error(*argv: str) -> str:
    result = CliRunner().invoke(app, [*BASE, *argv])
    assert result.exit_code == 2, result.output
    return " ".join(result.stderr.split())


def test_a_headroom_alone_is_named():
    text = _error("--headroom", "0.999")
    assert text.startswith("runplan: error: --headroom: ")
    assert "a reserve of 3 GB is not below the 0.08 GB" in text


def test_a_reserve_the_user_set_is_named():
    assert _error("--reserve", "100GB").startswith("runplan: error: --reserve: a reserve of 100 GB")
    assert _error("--headroom", "0.5", "--reserve", "50GB").startswith("runplan: error: --reserve: ")
