"""`parallelize --calibration FILE` with a file that is missing or not a calibration named neither the flag nor the
command's input it came from ("nope.yaml: cannot read file"); `plan` and `check` name `--calibration`."""

from pathlib import Path

from typer.testing import CliRunner

from runplan.cli.app import app


def _error(*argv: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["parallelize", "--model", "70b", "--gpus", "512", *argv])
    return result.exit_code, " ".join(result.stderr.split())


def test_a_missing_calibration_file_names_the_flag(tmp_path):
    missing = tmp_path / "nope.yaml"
    code, text = _error("--calibration", str(missing))
    assert code == 2
    assert text == f"runplan: error: --calibration: {missing}: cannot read file: No such file or directory"


def test_a_file_that_is_no_calibration_names_the_flag(tmp_path):
    other = tmp_path / "runs.yaml"
    other.write_text("x: 1\n")
    code, text = _error("--calibration", str(other))
    assert code == 2
    assert text.startswith(f"runplan: error: --calibration: {other}: not a calibration file")


def test_a_bad_key_of_a_calibration_file_names_the_flag_and_the_key(tmp_path):
    """A calibration file with a key missing said "FILE:1: name: required key is missing" with no flag, where
    `check --calibration` says "--calibration: FILE:1: name: ..."."""
    broken = tmp_path / "cal.yaml"
    broken.write_text("families: {}\n")
    code, text = _error("--calibration", str(broken))
    assert code == 2
    assert text.startswith(f"runplan: error: --calibration: {broken}:1: name: required key is missing")
    plan = Path(__file__).resolve().parents[2] / "examples" / "70b-512-h100.yaml"
    check = CliRunner().invoke(app, ["check", str(plan), "--calibration", str(broken)])
    assert check.exit_code == 2
    assert " ".join(check.stderr.split()).startswith(f"runplan: error: --calibration: {broken}:1: name:")


def test_beside_a_plan_file_a_bad_calibration_flag_names_the_flag_not_a_line_of_the_plan(tmp_path):
    """`parallelize plan.yaml --calibration missing.yaml` said "plan.yaml:3: calibration: missing.yaml: cannot
    read file", a `calibration:` key at line 3 that the plan does not have (line 3 is schema_version); `check`
    names the flag."""
    plan = Path(__file__).resolve().parents[2] / "examples" / "70b-512-h100.yaml"
    missing = tmp_path / "nope.yaml"
    result = CliRunner().invoke(app, ["parallelize", str(plan), "--calibration", str(missing)])
    assert result.exit_code == 2
    text = " ".join(result.stderr.split())
    assert text == f"runplan: error: --calibration: {missing}: cannot read file: No such file or directory"
