"""Leave-one-out holds out a whole source (calibrate.fit.source_folds), so two identical runs that share a
``source:`` are left out together, neither predicted by the other: the warning "left out, each is predicted by the
other ... remove the copy" was printed for them all the same, a false reason to delete a run the user grouped on
purpose. Identical runs are named only when they sit in different sources (each run is its own source by default,
the pasted copy that test_a_pasted_copy_of_a_run_is_named_as_flattering_leave_one_out.py checks)."""

from __future__ import annotations

import json

from tests.calibrate.test_a_pasted_copy_of_a_run_is_named_as_flattering_leave_one_out import RUN, A, B, C
from typer.testing import CliRunner

from runplan.cli.app import app


def _runs(tmp_path, sources: dict[str, str]):
    runs = [("a", A), ("b", B), ("c", C), ("c-again", C)]
    text = "".join(
        RUN.format(id=run_id, **run) + (f"    source: {sources[run_id]}\n" if run_id in sources else "")
        for run_id, run in runs
    )
    path = tmp_path / "measured.yaml"
    path.write_text("runs:\n" + text)
    return path


def _copies(report) -> list[str]:
    return [w for w in report["warnings"] if "same measurement" in w]


def test_identical_runs_of_one_source_are_not_named(tmp_path):
    path = _runs(tmp_path, {"c": "node-7", "c-again": "node-7"})
    report = _calibrate_file(path)
    assert _copies(report) == []


def test_identical_runs_of_two_sources_are_named(tmp_path):
    path = _runs(tmp_path, {"c": "node-7", "c-again": "node-8"})
    (line,) = _copies(_calibrate_file(path))
    assert line.startswith("runs c and c-again are the same job with the same measurement")


def _calibrate_file(path):
    res = CliRunner().invoke(app, ["calibrate", str(path), "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)
