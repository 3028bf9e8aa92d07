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
        assert set(table.values()) <= options[command], command
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
