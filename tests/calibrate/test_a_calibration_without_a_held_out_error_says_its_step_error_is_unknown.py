"""A calibration file whose runs gave no held-out step error (one fitted run: nothing to leave out) says so in the
line every predicted time carries, as a B200 on Hopper's constants says "error unknown": without it the line
quoted nothing about the times, and a 1-run fit reproduces its run exactly (0.0% in-fit error)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from runplan.calibrate.calibration import load_calibration
from runplan.catalog import load_catalog
from runplan.cli.app import app

from .one_run import ONE_RUN

runner = CliRunner()

ONE = ONE_RUN.replace("MEASURED", "{step_seconds: 2.0}")


def test_a_one_run_calibration_says_its_step_error_is_unknown(tmp_path: Path):
    measured = tmp_path / "measured.yaml"
    measured.write_text(ONE)
    written = tmp_path / "cal.yaml"
    assert runner.invoke(app, ["calibrate", str(measured), "-o", str(written)]).exit_code == 0
    cal = load_calibration(written)
    assert cal.families["hopper"].held_out is None
    label = cal.label(load_catalog([]).gpu("h100-sxm"))
    assert f"{written} (measured, hopper: 1 run, fitted " in label
    assert label.endswith(
        "; step error on runs it has not seen not measured: 1 fitted run, none to leave out"
    )
    result = runner.invoke(
        app, ["parallelize", "--model", "llama-3.1-8b", "--gpus", "8", "--calibration", str(written)]
    )
    assert result.exit_code == 0, result.output
    assert "none to leave out" in " ".join(result.output.split())


def test_a_file_written_before_held_out_errors_says_it_records_none(tmp_path: Path):
    measured = tmp_path / "measured.yaml"
    measured.write_text(ONE + ONE.removeprefix("runs:\n").replace("id: r0", "id: r1").replace("2.0}", "2.2}"))
    written = tmp_path / "cal.yaml"
    assert runner.invoke(app, ["calibrate", str(measured), "-o", str(written)]).exit_code == 0
    cal = load_calibration(written)
    assert cal.families["hopper"].held_out is not None  # 2 runs: each predicted by a fit on the other
    families = {f: c.model_copy(update={"held_out": None}) for f, c in cal.families.items()}
    old = cal.model_copy(update={"families": families})
    assert old.label(load_catalog([]).gpu("h100-sxm")).endswith(
        "; step error on runs it has not seen not recorded (refit to record it)"
    )


def test_a_family_the_file_lacks_quotes_what_the_shipped_constants_it_falls_back_to_are_worth(tmp_path: Path):
    # an H100-only file on an A100 plan said "runplan's shipped ampere constants" and nothing of their error
    from runplan.calibrate.calibration import shipped_calibration

    measured = tmp_path / "measured.yaml"
    measured.write_text(ONE)
    written = tmp_path / "cal.yaml"
    assert runner.invoke(app, ["calibrate", str(measured), "-o", str(written)]).exit_code == 0
    a100 = load_catalog([]).gpu("a100-80gb")
    shipped = shipped_calibration().label(a100)
    assert "held-out step error" in shipped
    assert load_calibration(written).label(a100) == (
        f"{written} has no ampere runs: runplan's shipped ampere constants, {shipped}"
    )
