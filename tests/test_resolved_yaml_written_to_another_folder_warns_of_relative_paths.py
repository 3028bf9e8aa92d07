"""`runplan plan p.yaml -f yaml -o OTHER/p.yaml` copies the plan's keys as written, and a relative path among them
(calibration:, catalog:, law.file, schedule.hyperparams, model config) is read from the plan file's folder: in
OTHER it named a file that is not there, and the resolved file failed to plan ("cannot read file"). runplan now
says so on stderr, naming each such key, when it writes the resolved plan to another folder; beside the plan,
or with absolute paths, it says nothing."""

from __future__ import annotations

import shutil
from pathlib import Path

from typer.testing import CliRunner

from runplan.cli.app import app

ROOT = Path(__file__).resolve().parents[1]


def run(*args: str):
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "300"})


def _plan_with_a_calibration_beside_it(tmp_path: Path) -> Path:
    (tmp_path / "sub").mkdir()
    shutil.copy(ROOT / "configs" / "calibration.yaml", tmp_path / "sub" / "cal.yaml")
    plan = tmp_path / "plan.yaml"
    plan.write_text((ROOT / "examples" / "70b-512-h100.yaml").read_text() + "calibration: sub/cal.yaml\n")
    return plan


def test_another_folder_names_the_relative_keys(tmp_path):
    plan = _plan_with_a_calibration_beside_it(tmp_path)
    (tmp_path / "out").mkdir()
    result = run("plan", str(plan), "-f", "yaml", "-o", str(tmp_path / "out" / "plan.yaml"))
    assert result.exit_code == 0, result.output
    assert result.stderr.count("runplan: warning:") == 1
    line = " ".join(result.stderr.split())  # folded at the terminal width
    assert "calibration: sub/cal.yaml" in line and "relative to" in line and "beside plan.yaml" in line
    # what the warning is about: planned where it was written, the path names nothing
    assert run("plan", str(tmp_path / "out" / "plan.yaml")).exit_code == 2


def test_beside_the_plan_or_with_absolute_paths_nothing_is_said(tmp_path):
    plan = _plan_with_a_calibration_beside_it(tmp_path)
    beside = run("plan", str(plan), "-f", "yaml", "-o", str(tmp_path / "resolved.yaml"))
    assert beside.exit_code == 0 and "warning" not in beside.stderr
    assert run("check", str(tmp_path / "resolved.yaml")).exit_code == 0
    absolute = tmp_path / "absolute.yaml"
    absolute.write_text(plan.read_text().replace("sub/cal.yaml", str(tmp_path / "sub" / "cal.yaml")))
    (tmp_path / "out").mkdir()
    elsewhere = run("plan", str(absolute), "-f", "yaml", "-o", str(tmp_path / "out" / "plan.yaml"))
    assert elsewhere.exit_code == 0 and "warning" not in elsewhere.stderr


def test_every_kind_of_path_key_is_named(tmp_path):
    from runplan.cli.plan import relative_path_keys
    from runplan.spec import load_plan_text

    spec = load_plan_text(
        "schema_version: 1\nbudget: {flops: 2e23}\ncluster: {gpus: 8}\n"
        "catalog: [a.yaml, /abs/b.yaml]\ncalibration: c.yaml\nlaw: {file: d.yaml}\n"
        "schedule: {hyperparams: e.yaml}\nmodel: f/config.json\n"
    )
    assert relative_path_keys(spec, tmp_path) == [
        "catalog[0]: a.yaml",
        "calibration: c.yaml",
        "law.file: d.yaml",
        "schedule.hyperparams: e.yaml",
        "model: f/config.json",
    ]
    # a checkpoint folder beside the plan is a path when written as one (a "/": runplan.plan.local_config); a
    # bare name is a catalog name or size even where a folder of that name exists (`model: 70b` beside 70b/)
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "70b").mkdir()
    for model, expected in (
        ("{config: g.json}", ["model.config: g.json"]),
        ("ckpt/", ["model: ckpt/"]),
        ("./ckpt", ["model: ./ckpt"]),
        ("ckpt", []),
        ("70b", []),
    ):
        spec = load_plan_text(
            f"schema_version: 1\nbudget: {{tokens: 1T}}\ncluster: {{gpus: 8}}\nmodel: {model}\n"
        )
        assert relative_path_keys(spec, tmp_path) == expected
