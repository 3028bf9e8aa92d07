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
            "runplan: error: check: Invalid value for '--rtol'",
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
    [["parallelize", "--model", "7b", "--gpus", "8", "--json"], ["allocate", "--flops", "2e23", "--json"]],
)
def test_flag_commands_do_not_import_the_plan_file_machinery(args):
    """`parallelize --model --gpus` and `allocate --flops` take no plan file: the plan file's models
    (runplan.spec) pull in every ops stage (about 0.4 s of pydantic class building) and scipy is for fits;
    neither is on their path."""
    probe = f"""
import sys
from runplan.cli.app import app
try:
    app(args={args!r}, prog_name="runplan")
except SystemExit:
    pass
loaded = sorted(m for m in ("runplan.spec", "runplan.ops", "scipy") if m in sys.modules)
print("LOADED=" + ",".join(loaded), file=sys.stderr)
"""
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    line = [ln for ln in result.stderr.splitlines() if ln.startswith("LOADED=")]
    assert line, result.stderr
    assert line[0] == "LOADED=", f"`runplan {' '.join(args)}` imported {line[0][7:]}"
