"""`runplan --help` and `runplan --version` stay fast: nothing heavy is imported on the way."""

import subprocess
import sys

import pytest

HEAVY = ("scipy", "matplotlib", "numpy")

PROBE = """
import sys
from runplan.cli.app import app
try:
    app(args={args!r}, prog_name="runplan")
except SystemExit:
    pass
heavy = sorted({{m.split('.')[0] for m in sys.modules}} & set({heavy!r}))
print("HEAVY=" + ",".join(heavy), file=sys.stderr)
"""


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["--version"],
        ["allocate", "--help"],
        ["parallelize", "--help"],
        ["plan", "--help"],
        ["catalog", "--help"],
        ["export", "--help"],
        ["check", "--help"],
        ["fit", "--help"],
        ["sweep", "--help"],
    ],
)
def test_help_imports_nothing_heavy(args):
    result = subprocess.run(
        [sys.executable, "-c", PROBE.format(args=args, heavy=HEAVY)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    line = [ln for ln in result.stderr.splitlines() if ln.startswith("HEAVY=")]
    assert line, result.stderr
    assert line[0] == "HEAVY=", f"`runplan {' '.join(args)}` imported {line[0][6:]}"


def test_version_is_eager():
    result = subprocess.run(
        [sys.executable, "-m", "runplan", "--version"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0
    assert result.stdout.startswith("runplan ")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["plan", "--bogus"], "runplan: error: plan: No such option: --bogus (see `runplan plan --help`)"),
        (
            ["check", "examples/70b-512-h100.yaml", "--rtol", "abc"],
            "runplan: error: --rtol: expected a number, got 'abc'",  # parsed as every numeric flag is
        ),
        (["bogus"], "runplan: error: No such command 'bogus'."),
        (["plan"], "runplan: error: plan: Missing argument"),
    ],
)
def test_usage_errors_are_one_line_with_exit_2(args, needle):
    """Click's boxed usage panel is replaced by the project's one-line convention (DESIGN.md)."""
    root = __import__("pathlib").Path(__file__).resolve().parents[1]
    result = subprocess.run(
        [sys.executable, "-m", "runplan", *args], capture_output=True, text=True, timeout=60, cwd=root
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(needle), result.stderr


def test_a_missing_command_module_is_an_error_not_a_missing_command(monkeypatch):
    """A broken install must fail loudly: _register_commands does not skip a module it cannot import."""
    import importlib

    from runplan.cli import app as app_module

    real = importlib.import_module

    def broken(name, *args, **kwargs):
        if name == "runplan.cli.sweep":
            raise ModuleNotFoundError("No module named 'runplan.cli.sweep'", name=name)
        return real(name, *args, **kwargs)

    import typer

    monkeypatch.setattr(app_module, "app", typer.Typer())  # commands before sweep register on a scratch app
    monkeypatch.setattr(importlib, "import_module", broken)
    with pytest.raises(ModuleNotFoundError, match=r"runplan\.cli\.sweep"):
        app_module._register_commands()


@pytest.mark.parametrize(
    "args",
    [
        ["parallelize", "--model", "7b", "--gpus", "8", "--json"],
        ["parallelize", "--model", "7b", "--gpus", "8"],  # the terminal answer's trade line (report/trade.py)
        ["allocate", "--flops", "2e23", "--json"],
    ],
)
def test_flag_commands_do_not_import_the_plan_file_machinery(args):
    """`parallelize --model --gpus` and `allocate --flops` take no plan file: the plan file's models
    (runplan.spec) pull in every ops stage (about 0.4 s of pydantic class building) and scipy is for fits;
    neither is on their path. Nor is numpy.ma (~15 ms), which np.unique imports on its first call."""
    probe = f"""
import sys
from runplan.cli.app import app
try:
    app(args={args!r}, prog_name="runplan")
except SystemExit:
    pass
loaded = sorted(m for m in ("runplan.spec", "runplan.ops", "scipy", "numpy.ma") if m in sys.modules)
print("LOADED=" + ",".join(loaded), file=sys.stderr)
"""
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    line = [ln for ln in result.stderr.splitlines() if ln.startswith("LOADED=")]
    assert line, result.stderr
    assert line[0] == "LOADED=", f"`runplan {' '.join(args)}` imported {line[0][7:]}"


def test_the_command_table_lists_each_modules_commands_in_help_order():
    """main() imports only the module COMMAND_MODULES names for the command it runs: the table must say which
    module registers each command, in the order `runplan --help` lists them."""
    import importlib

    import typer

    from runplan.cli import app as app_module

    names = [info.name for info in app_module.app.registered_commands]
    assert names == list(app_module.COMMAND_MODULES)
    for module in dict.fromkeys(app_module.COMMAND_MODULES.values()):
        scratch = typer.Typer()
        importlib.import_module(f"runplan.cli.{module}").register(scratch)
        registered = [info.name for info in scratch.registered_commands]
        assert registered == [c for c, m in app_module.COMMAND_MODULES.items() if m == module]


RUN_ONE = """
import contextlib, io, sys
from runplan.cli.app import main
with contextlib.redirect_stdout(io.StringIO()) as out:
    try:
        main({args!r})
    except SystemExit:
        pass
loaded = sorted(m for m in sys.modules if m.startswith("runplan.cli.") or m == "typer")
print("LOADED=" + ",".join(loaded), file=sys.stderr)
print("OUT=" + repr(out.getvalue()), file=sys.stderr)
"""

COMMAND_MODULE_NAMES = (
    "allocate",
    "calibrate",
    "catalog",
    "compare",
    "export",
    "fit",
    "monitor",
    "parallelize",
    "plan",
    "schema",
    "sweep",
)


def _run_one(args: list[str]) -> tuple[set[str], str]:
    result = subprocess.run(
        [sys.executable, "-c", RUN_ONE.format(args=args)], capture_output=True, text=True, timeout=120
    )
    lines = {ln.split("=", 1)[0]: ln.split("=", 1)[1] for ln in result.stderr.splitlines() if "=" in ln}
    assert "LOADED" in lines, result.stderr
    return set(filter(None, lines["LOADED"].split(","))), eval(lines["OUT"])


@pytest.mark.parametrize(
    ("args", "own"),
    [
        (["parallelize", "--model", "7b", "--gpus", "8", "--json"], "parallelize"),
        (["allocate", "--flops", "2e23", "--json"], "allocate"),
        (["check", "--help"], "plan"),
    ],
)
def test_a_command_imports_no_other_command_module(args, own):
    """`runplan COMMAND ...` builds that command alone: the other command modules (their imports and typer's
    work on their signatures, ~35 ms, ~60 ms where bytecode is not cached) are not on its path."""
    loaded, _ = _run_one(args)
    others = {f"runplan.cli.{m}" for m in COMMAND_MODULE_NAMES if m != own}
    assert f"runplan.cli.{own}" in loaded
    assert not loaded & others, f"`runplan {' '.join(args)}` imported {sorted(loaded & others)}"


def test_version_alone_is_answered_before_typer_is_imported():
    loaded, out = _run_one(["--version"])
    assert "typer" not in loaded
    from typer.testing import CliRunner

    from runplan.cli.app import app

    assert out == CliRunner().invoke(app, ["--version"]).stdout == "runplan 0.1.0\n"


@pytest.mark.parametrize("command", ["plan", "parallelize", "check", "whatif", "init", "monitor", "sweep"])
def test_a_commands_help_from_main_is_the_full_apps(command, capsys, monkeypatch):
    """main() runs a command from an app holding that command alone: its help reads as the full app's."""
    from runplan.cli.app import app, main

    monkeypatch.setenv("COLUMNS", "100")
    texts = []
    for run in (
        lambda: main([command, "--help"]),
        lambda: app(args=[command, "--help"], prog_name="runplan"),
    ):
        with pytest.raises(SystemExit) as done:
            run()
        assert done.value.code == 0
        texts.append(capsys.readouterr().out)
    assert texts[0] == texts[1]
    assert texts[0].startswith(f"Usage: runplan {command} ")


#: Modules `runplan parallelize` loads only on the branch that needs them: runplan.validation and runplan.cli.flags
#: turn a pydantic error into one line naming the flag (a bad value only); runplan.scaling.budget holds MIN_MFU,
#: read only with --mfu, and builds the Budget and HardwareCost models (~5 ms) on import.
PARALLELIZE_LAZY = ("runplan.validation", "runplan.cli.flags", "runplan.scaling.budget")


@pytest.mark.parametrize(
    "args",
    [["parallelize", "--help"], ["parallelize", "--model", "70b", "--gpus", "512", "--json"]],
)
def test_parallelize_loads_its_error_and_mfu_modules_only_where_used(args):
    probe = f"""
import contextlib, io, sys
from runplan.cli.app import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main({args!r})
    except SystemExit as done:
        assert done.code in (0, None), done.code
loaded = sorted(m for m in {PARALLELIZE_LAZY!r} if m in sys.modules)
print("LOADED=" + ",".join(loaded), file=sys.stderr)
"""
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    line = [ln for ln in result.stderr.splitlines() if ln.startswith("LOADED=")]
    assert line, result.stderr
    assert line[0] == "LOADED=", f"`runplan {' '.join(args)}` imported {line[0][7:]}"


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--mfu", "0.001"], "--mfu: must be at least 0.01, got 0.001"),
        (["--dropout", "2"], "--dropout: must be less than 1, got 2.0"),
        (["--top", "0"], "--top: must be greater than 0"),
    ],
)
def test_parallelize_still_names_the_flag_once_its_error_modules_load_late(args, needle):
    """The branches that import them late still answer: one line, exit 2, naming the flag (--mfu: MIN_MFU from
    runplan.scaling.budget; --dropout: a Stack error through runplan.validation and runplan.cli.flags; --top: a
    build_from_flags error)."""
    result = subprocess.run(
        [sys.executable, "-m", "runplan", "parallelize", "--model", "70b", "--gpus", "512", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], result.stderr
