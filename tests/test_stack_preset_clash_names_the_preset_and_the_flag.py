"""A stack flag that clashes with a setting its --stack preset made names both: the user typed the preset and the
flag, not the preset's field, so "drop one of them" alone left them without a flag to drop."""

from __future__ import annotations

from typer.testing import CliRunner

from runplan.cli.app import app


def run(*argv: str):
    return CliRunner().invoke(app, ["parallelize", "--model", "70b", "--gpus", "512", *argv])


def test_bf16_moments_over_the_fsdp2_preset_name_the_preset_and_the_flag(one_error_line):
    line = one_error_line(run("--stack", "torchtitan-fsdp2", "--optimizer-state-dtype", "bf16"))
    assert line.startswith(
        "runplan: error: --stack torchtitan-fsdp2 with --optimizer-state-dtype: optimizer_state_dtype bf16"
    )
    assert "drop --optimizer-state-dtype or choose a --stack preset without it" in line


def test_a_bad_value_of_one_flag_still_names_only_that_flag():
    """Only a clash of the whole stack is re-worded; a field's own bound names its flag, as before."""
    result = run("--stack", "megatron-core", "--dropout", "1.5")
    assert result.exit_code == 2
    assert result.output.startswith("runplan: error: --dropout: must be less than 1, got 1.5")


def test_a_flag_the_clash_is_not_about_is_not_named(one_error_line):
    line = one_error_line(
        run(
            "--stack",
            "torchtitan-fsdp2",
            "--precision",
            "bf16",
            "--dropout",
            "0.1",
            "--optimizer-state-dtype",
            "bf16",
        )
    )
    assert line.startswith("runplan: error: --stack torchtitan-fsdp2 with --optimizer-state-dtype: ")
    assert "--dropout" not in line and "--precision" not in line
