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
