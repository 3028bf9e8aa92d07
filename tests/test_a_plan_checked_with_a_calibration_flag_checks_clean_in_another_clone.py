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


def test_the_key_is_relative_to_the_plan_folder(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "plans").mkdir()
    (tmp_path / "cal").mkdir()
    cal = tmp_path / "cal" / "mine.yaml"
    cal.write_text("")
    plan = tmp_path / "plans" / "p.yaml"
    assert calibration_key(cal, plan, None) == "../cal/mine.yaml"
    assert calibration_key(cal, plan, "../cal/./mine.yaml") == "../cal/./mine.yaml"  # the key as written
    assert calibration_key(tmp_path / "plans" / "c.yaml", plan, "../cal/mine.yaml") == "c.yaml"


def test_outside_the_repository_the_path_stays_absolute(tmp_path):
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    plan = tmp_path / "repo" / "p.yaml"
    cal = tmp_path / "elsewhere" / "cal.yaml"
    assert calibration_key(cal, plan, None) == str(cal.resolve())


def test_without_a_repository_only_the_plans_own_folder_is_relative(tmp_path):
    (tmp_path / "plans" / "cal").mkdir(parents=True)
    plan = tmp_path / "plans" / "p.yaml"
    assert calibration_key(tmp_path / "plans" / "cal" / "c.yaml", plan, None) == "cal/c.yaml"
    assert calibration_key(tmp_path / "c.yaml", plan, None) == str((tmp_path / "c.yaml").resolve())
