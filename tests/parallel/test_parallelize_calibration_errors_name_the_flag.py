"""`parallelize --calibration FILE` with a file that is missing or not a calibration named neither the flag nor the
command's input it came from ("nope.yaml: cannot read file"); `plan` and `check` name `--calibration`."""

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
