"""Errors carry a field path; the CLI prints the flag for it from one table (runplan.cli.flags)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.main import get_command
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.cli.flags import COMMAND_FLAG_FOR_PATH, FLAG_FOR_PATH, flag_for, with_flag
from runplan.errors import Infeasible, SpecError
from runplan.scaling.laws import shipped_laws
from runplan.scaling.sweep import SweepRequest

SRC = Path(__file__).resolve().parents[1] / "src" / "runplan"
LAW = shipped_laws()["besiroglu2024"]


def _options_by_command() -> dict[str, set[str]]:
    group = get_command(app)
    found: dict[str, set[str]] = {}
    for name, command in group.commands.items():  # type: ignore[attr-defined]
        found[name] = {opt for param in command.params for opt in (*param.opts, *param.secondary_opts)}
    return found


def test_every_flag_in_the_table_is_an_option_of_a_command():
    options = _options_by_command()
    every = set().union(*options.values())
    for command, table in COMMAND_FLAG_FOR_PATH.items():
        # a value that is no flag keeps the plan key where the command has no flag for it (whatif's node size)
        flags = {flag for flag in table.values() if flag.startswith("-")}
        assert flags <= options[command], command
        assert all(flag.startswith("-") or flag == path for path, flag in table.items()), command
    # an upper-case name is a positional argument (monitor's LOG), not an option
    missing = {path: flag for path, flag in FLAG_FOR_PATH.items() if flag not in every and not flag.isupper()}
    assert not missing
    # a `<command>.<option>` path names an option of that command
    for path, flag in FLAG_FOR_PATH.items():
        command = path.split(".")[0]
        if command in options and not flag.isupper():
            assert flag in options[command], (path, flag)


#: Raise sites not converted yet (none left).
PENDING: set[str] = set()


def test_library_code_names_no_flag_in_where():
    offenders = []
    for path in SRC.rglob("*.py"):
        if "cli" in path.relative_to(SRC).parts:
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"where=\"-", line) and str(path.relative_to(SRC)) not in PENDING:
                offenders.append(f"{path.relative_to(SRC)}:{number}")
    assert offenders == []


def test_with_flag_renames_a_path_only_for_errors_without_a_source():
    assert flag_for("budget.flops") == "--flops" and flag_for("row 12") == "row 12" and flag_for(None) is None
    renamed = with_flag(SpecError("must be positive", where="sweep.span_decades", hint="e.g. 1"))
    assert str(renamed) == "--span: must be positive (e.g. 1)"
    located = SpecError("must be positive", where="budget.flops", source="plan.yaml:3")
    assert with_flag(located) is located and str(located) == "plan.yaml:3: budget.flops: must be positive"
    assert (
        flag_for("budget", "allocate") == "--flops"
        and flag_for("budget", "parallelize") == "--training-tokens"
    )
    infeasible = Infeasible("nothing fits")
    assert with_flag(infeasible) is infeasible


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("fraction", 1.0, "fraction must be in (0, 1), got 1"),
        ("sizes", 16, "need 3 to 15 sizes per budget, got 16"),
        ("budgets", 0, "need 1 to 6 budgets, got 0"),
        ("span_decades", 3.5, "span must be in (0, 3] decades, got 3.5"),
        ("cooldown_fraction", 0.0, "cooldown fraction must be in (0, 1), got 0"),
        ("mfu", 0.005, "MFU must be in [0.01, 1], got 0.005"),
        ("seq_len", 0, "must be a positive number of tokens up to 1e+08, got 0"),
        ("vocab_size", 10**8, "must be positive and at most 1e+07, got 1e+08"),
        ("flops", 1e31, "a budget of 1e+31 FLOPs is beyond any trainable run"),
    ],
)
def test_sweep_request_bounds_name_the_field_path(field, value, message):
    from runplan.cli.common import build_from_flags

    with pytest.raises(SpecError) as info:
        build_from_flags(SweepRequest, "sweep", "sweep.flops", **{"flops": 2e23, "law": LAW, field: value})
    assert info.value.where == f"sweep.{field}" and message in info.value.message


def test_sweep_flag_errors_print_the_flag():
    result = CliRunner().invoke(app, ["sweep", "--flops", "2e23", "--span", "4"])
    assert result.exit_code == 2
    assert result.stderr == "runplan: error: --span: span must be in (0, 3] decades, got 4\n"


def test_suggestions_name_flags_for_parallelize_and_plan_keys_for_plan_files(tmp_path):
    from runplan.cli.flags import paths_for_user

    text = "ZeRO-3 (parallel.zero=3), a smaller micro-batch (parallel.micro_batch=1); unpin parallel.tp"
    assert (
        paths_for_user(text, "parallelize")
        == "ZeRO-3 (--zero 3), a smaller micro-batch (--mbs 1); unpin --tp"
    )
    assert paths_for_user(text, "plan") == (
        "ZeRO-3 (parallel.zero: 3), a smaller micro-batch (parallel.micro_batch: 1); unpin parallel.tp"
    )
    plan70 = str(Path(__file__).resolve().parents[1] / "examples" / "70b-512-h100.yaml")
    runner = CliRunner()
    # 70B's fully sharded states need 18 GPUs: on 64, the pinned ZeRO-1 is what to relax
    pinned = ["--tp", "1", "--pp", "1", "--zero", "1"]
    flags = runner.invoke(app, ["parallelize", "--model", "70b", "--gpus", "64", *pinned])
    assert flags.exit_code == 1 and "(--zero 3)" in flags.stderr and "parallel." not in flags.stderr
    pinned_plan = tmp_path / "pinned.yaml"
    pinned_plan.write_text(Path(plan70).read_text() + "parallel: {tp: 1, pp: 1, zero: 1}\n")
    keys = runner.invoke(app, ["whatif", str(pinned_plan), "--gpus", "64"])
    assert keys.exit_code == 1 and "(parallel.zero: 3)" in keys.stderr and "--zero" not in keys.stderr


def test_a_request_only_the_constraints_together_rule_out_says_how_far_each_is():
    result = CliRunner().invoke(app, ["parallelize", "--model", "70b", "--gpus", "1e6"])
    assert result.exit_code == 1
    assert "to make it feasible" in result.stderr and "the smallest global batch of a layout" in result.stderr
    misses = [line for line in result.stderr.splitlines() if line.startswith("    TP")]
    assert len(misses) == 3 and len(set(misses)) == 3


def test_init_names_the_flag_its_value_came_from_and_writes_defaults_that_parse():
    from runplan.spec import load_plan_text

    runner = CliRunner()
    for flag in ("--flops", "--days", "--gpus", "--seq-len"):
        result = runner.invoke(app, ["init", flag, "0"])
        assert result.exit_code == 2 and result.stderr.startswith(f"runplan: error: {flag}:"), result.stderr
    text = runner.invoke(app, ["init"]).stdout
    assert '# batch_ramp: [{"batch_fraction": 0.5, "token_fraction": 0.015}]' in text
    uncommented = text.replace("# schedule:", "schedule:").replace("  # batch_ramp:", "  batch_ramp:")
    ramp = load_plan_text(uncommented).schedule.batch_ramp
    assert [(s.batch_fraction, s.token_fraction) for s in ramp] == [(0.5, 0.015)]


def test_runplan_alone_prints_the_help_as_written(capsys):
    from runplan.cli.app import main

    with pytest.raises(SystemExit) as info:
        main([])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("Usage: runplan") and "\n  plan " in err and len(err.splitlines()) > 10


def test_a_calibration_flag_error_names_the_flag_not_the_plan_file(tmp_path):
    plan70 = str(Path(__file__).resolve().parents[1] / "examples" / "70b-512-h100.yaml")
    for command in ("plan", "check"):
        result = CliRunner().invoke(app, [command, plan70, "--calibration", str(tmp_path / "none.yaml")])
        assert result.exit_code == 2 and result.stderr.startswith("runplan: error: --calibration:"), (
            result.stderr
        )


def test_a_sweep_budget_too_small_for_any_proxy_blames_the_budget_not_the_fraction():
    runner = CliRunner()
    # valid flags with no answer: infeasible (exit 1), the fix naming the flag to change
    tiny = runner.invoke(app, ["sweep", "--flops", "1"])
    said = " ".join(tiny.stderr.split())  # (folded at the terminal width)
    assert tiny.exit_code == 1 and "feasible: a budget this small" in said, tiny.stderr
    assert "--flops" in said and "--fraction" not in said
    # a budget whose proxies fit at a larger fraction: raising --fraction is the fix
    small = runner.invoke(app, ["sweep", "--flops", "1e19"])
    assert small.exit_code == 1 and "feasible: raise --fraction" in " ".join(small.stderr.split()), (
        small.stderr
    )


def test_batches_stepping_over_the_range_name_the_nearest_on_both_sides():
    result = CliRunner().invoke(
        app, ["parallelize", "--model", "70b", "--gpus", "100000", "--global-batch", "20M"]
    )
    assert result.exit_code == 1
    unfolded = " ".join(result.stderr.split())  # (folded at the terminal width)
    assert "step over [18,000,000, 22,000,000]: the nearest are 12,800,000 or 25,600,000 tokens" in unfolded
    assert "--batch-tolerance" in unfolded


def test_a_plan_whose_sweep_keys_leave_no_proxy_names_a_key_it_can_set(tmp_path):
    # the fix named sweep.flops, which is not a plan key
    plan = tmp_path / "p.yaml"
    plan.write_text(
        "schema_version: 1\nmodel: 7b\nbudget: {tokens: 2e6}\ncluster: {gpu: h100-sxm, gpus: 8}\n"
        "sweep: {fraction: 0.01}\n"
    )
    result = CliRunner().invoke(app, ["plan", str(plan)])
    assert result.exit_code == 1 and "budget.flops" in result.stderr and "sweep.flops" not in result.stderr
