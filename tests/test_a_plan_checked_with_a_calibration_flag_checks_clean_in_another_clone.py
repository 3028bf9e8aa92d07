"""`runplan check --update --calibration cal/mine.yaml plans/p.yaml` records a calibration inside the plan's
repository relative to the plan file's folder (as plan keys are read), so the same repository cloned at another
path checks clean; a file outside the repository keeps its absolute path. Before, the flag's
absolute path went into `resolved.inputs.calibration` and `layout.calibration`, and a teammate's clone or a CI
runner reported drift (exit 1)."""

from __future__ import annotations

import shutil
from pathlib import Path

from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.cli.common import calibration_key

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()


def _repo(at: Path) -> Path:
    (at / ".git").mkdir(parents=True)  # a repository's root, as calibration_key finds it
    (at / "plans").mkdir()
    (at / "cal").mkdir()
    shutil.copy(ROOT / "examples" / "70b-512-h100.yaml", at / "plans" / "p.yaml")
    shutil.copy(ROOT / "configs" / "calibration.yaml", at / "cal" / "mine.yaml")
    return at / "plans" / "p.yaml"


def test_resolved_in_one_clone_checks_clean_in_another(tmp_path, monkeypatch):
    plan = _repo(tmp_path / "alice")
    monkeypatch.chdir(tmp_path / "alice")
    result = runner.invoke(app, ["check", "--update", "--calibration", "cal/mine.yaml", "plans/p.yaml"])
    assert result.exit_code == 0, result.output
    text = plan.read_text()
    assert "calibration: ../cal/mine.yaml" in text and str(tmp_path) not in text
    shutil.copytree(tmp_path / "alice", tmp_path / "bob")
    monkeypatch.chdir(tmp_path / "bob")
    result = runner.invoke(app, ["check", "--calibration", "cal/mine.yaml", "plans/p.yaml"])
    assert result.exit_code == 0, result.output


def test_the_key_is_relative_to_the_plan_folder(tmp_path, monkeypatch):
    (tmp_path / ".git").mkdir()
    (tmp_path / "plans").mkdir()
    (tmp_path / "cal").mkdir()
    (tmp_path / "cal" / "mine.yaml").write_text("")
    monkeypatch.chdir(tmp_path)  # the flag as typed from the repository's root
    plan = tmp_path / "plans" / "p.yaml"
    assert calibration_key("cal/mine.yaml", plan, None) == "../cal/mine.yaml"
    assert (
        calibration_key("cal/mine.yaml", plan, "../cal/./mine.yaml") == "../cal/./mine.yaml"
    )  # the key as written
    assert calibration_key("plans/c.yaml", plan, "../cal/mine.yaml") == "c.yaml"


def test_outside_the_repository_the_path_stays_absolute(tmp_path, monkeypatch):
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "repo")
    plan = tmp_path / "repo" / "p.yaml"
    assert calibration_key("../elsewhere/cal.yaml", plan, None) == str(tmp_path / "elsewhere" / "cal.yaml")


def test_without_a_repository_only_the_plans_own_folder_is_relative(tmp_path, monkeypatch):
    (tmp_path / "plans" / "cal").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    plan = tmp_path / "plans" / "p.yaml"
    assert calibration_key("plans/cal/c.yaml", plan, None) == "cal/c.yaml"
    assert calibration_key("c.yaml", plan, None) == str(tmp_path / "c.yaml")


def test_an_absolute_flag_is_recorded_as_typed(tmp_path):
    """An absolute --calibration stays absolute: `plan sub/p.yaml --calibration /abs/cal.yaml -f yaml -o a/b/r.yaml`
    then `check a/b/r.yaml --calibration /abs/cal.yaml` recorded '../cal/mine.yaml' and then '../../cal/mine.yaml'
    (each relative to its own file's folder) and reported drift."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "cal").mkdir()
    cal = tmp_path / "cal" / "mine.yaml"
    cal.write_text("")
    assert calibration_key(cal.resolve(), tmp_path / "sub" / "p.yaml", None) == str(cal.resolve())
    assert calibration_key(cal.resolve(), tmp_path / "a" / "b" / "r.yaml", None) == str(cal.resolve())


def test_a_symlink_in_the_repository_is_recorded_as_the_link(tmp_path, monkeypatch):
    """`cal/link.yaml` pointing outside the repository is recorded as the link (relative), not as its target's
    machine path: a clone with the same link checks clean."""
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    (tmp_path / "repo" / "cal").mkdir()
    (tmp_path / "elsewhere").mkdir()
    target = tmp_path / "elsewhere" / "x.yaml"
    target.write_text("")
    (tmp_path / "repo" / "cal" / "link.yaml").symlink_to(target)
    monkeypatch.chdir(tmp_path / "repo")
    assert calibration_key("cal/link.yaml", tmp_path / "repo" / "p.yaml", None) == "cal/link.yaml"
