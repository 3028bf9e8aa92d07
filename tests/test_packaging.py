"""The wheel carries the top-level configs/ (GPUs, models, laws, stack presets, calibration) and runs from outside
the checkout."""

from __future__ import annotations

import site
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_wheel_ships_configs_and_runs_outside_the_checkout(tmp_path):
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            str(ROOT),
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert built.returncode == 0, built.stderr[-2000:]
    wheel = next(tmp_path.glob("runplan-*.whl"))
    unpacked = tmp_path / "unpacked"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(unpacked)
    for shipped in sorted((ROOT / "configs").glob("*.yaml")):  # the files a user reads, copies and extends
        assert (unpacked / "runplan" / "configs" / shipped.name).read_bytes() == shipped.read_bytes()
    # -S: no .pth files, so neither an editable install nor the checkout can stand in for the wheel's package
    paths = [str(unpacked), *site.getsitepackages()]
    code = (
        f"import sys; sys.path[:0] = {paths!r}; import runplan; print(runplan.__file__, file=sys.stderr); "
        "from runplan.cli.app import main; sys.argv = ['runplan', 'catalog', 'models']; main()"
    )
    ran = subprocess.run([sys.executable, "-S", "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert ran.stderr.startswith(str(unpacked))
    assert "llama-3.1-70b" in ran.stdout and "mixtral-8x7b" in ran.stdout
