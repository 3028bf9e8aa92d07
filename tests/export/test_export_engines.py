"""Opt-in (``pytest -m engines``): feed every exported file to the engine's own config parser.

    .venv/bin/python -m pytest -m engines tests/export -q

creates or reuses the separate virtualenv ``.venv-engines`` with ``tests/export/engines_setup.sh`` (torch CPU
build, torchtitan 0.2.2, DeepSpeed 0.19.8; nothing goes into the project's .venv; RUNPLAN_ENGINES_VENV moves it),
then runs ``tests/export/engines_check.py`` there: torchtitan's ConfigManager for the TOML files, DeepSpeed's
DeepSpeedConfig for the JSON files. Megatron-LM's parser is not installable from a package (the megatron-core
wheel ships megatron/core only, not megatron/training/arguments.py), so the Megatron scripts are checked against
the checked-in argument list (tests/export/test_export_keys.py, rebuilt as an argparse parser) and, when
MEGATRON_LM points to a Megatron-LM checkout importable in the engines venv, by its real parse_args.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.export._plans import EXAMPLE_NAMES, REPO, example_plan, parse_script_args

from runplan.export import export_plan
from runplan.export._common import facts

pytestmark = pytest.mark.engines
HERE = Path(__file__).resolve().parent
VENV = Path(os.environ.get("RUNPLAN_ENGINES_VENV", REPO / ".venv-engines"))


@pytest.fixture(scope="module")
def engines_python() -> Path:
    proc = subprocess.run(
        ["bash", str(HERE / "engines_setup.sh")],
        capture_output=True,
        text=True,
        env={**os.environ, "RUNPLAN_ENGINES_VENV": str(VENV)},
    )
    if proc.returncode:
        pytest.fail(
            f"engines_setup.sh failed (exit {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        )
    return VENV / "bin" / "python"


@pytest.fixture(scope="module")
def parsed(engines_python: Path, tmp_path_factory) -> dict[str, dict]:
    out = tmp_path_factory.mktemp("exports")
    manifest = []
    for example in EXAMPLE_NAMES:
        plan = example_plan(example)
        f = facts(plan)
        for target in ("torchtitan", "deepspeed"):
            result = export_plan(plan, target)
            path = out / result.filename
            path.write_text(result.text)
            manifest.append(
                {
                    "path": str(path),
                    "target": target,
                    "example": example,
                    "expect": {
                        "dp": f.dp,
                        "tp": f.tp,
                        "pp": f.pp,
                        "cp": f.cp,
                        "ep": f.ep,
                        "global_batch": f.global_batch_sequences,
                        "zero": f.zero,
                        "interval": f.checkpoint_interval_steps,
                    },
                }
            )
    (out / "manifest.json").write_text(json.dumps(manifest))
    proc = subprocess.run(
        [str(engines_python), str(HERE / "engines_check.py"), str(out / "manifest.json")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert lines and "versions" in lines[0], proc.stderr[-3000:]
    print(f"\nengines: {lines[0]['versions']}", file=sys.stderr)
    by_path = {line["path"]: line for line in lines[1:]}
    return {
        f"{m['example']}.{m['target']}": {
            **by_path.get(m["path"], {"ok": False, "error": "no result"}),
            "expect": m["expect"],
        }
        for m in manifest
    }


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_torchtitan_config_manager_reads_the_export(parsed, example: str) -> None:
    item = parsed[f"{example}.torchtitan"]
    assert item["ok"], item.get("error")
    got, expect = item["got"], item["expect"]
    for key in ("tp", "pp", "cp", "ep", "dp", "global_batch", "interval"):
        assert got[key] == expect[key], key


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_deepspeed_config_reads_the_export(parsed, example: str) -> None:
    item = parsed[f"{example}.deepspeed"]
    assert item["ok"], item.get("error")
    got, expect = item["got"], item["expect"]
    assert got["world_size"] == expect["dp"]
    assert (
        got["train_batch_size"] == got["micro"] * got["accumulation"] * expect["dp"] == expect["global_batch"]
    )
    assert got["zero_stage"] == expect["zero"] and got["bf16"] is True and got["clip"] == 1.0


def test_megatron_real_parser_when_available(engines_python: Path, tmp_path) -> None:
    checkout = os.environ.get("MEGATRON_LM")
    if not checkout:
        pytest.skip(
            "Megatron-LM's parser is not installable from a package (megatron-core ships megatron/core "
            "only); the scripts were checked against the checked-in argument list "
            "(test_export_keys.py). Set MEGATRON_LM=<checkout> to also run its parse_args."
        )
    code = (
        "import sys; from megatron.training.arguments import parse_args; sys.argv=['x', *sys.argv[1:]]; "
        "a=parse_args(); print(a.tensor_model_parallel_size)"
    )
    for example in EXAMPLE_NAMES:
        argv = [
            a.replace("$DATA_PATH", "data")
            .replace("$TOKENIZER_MODEL", "tok")
            .replace("$CHECKPOINT_DIR", "ck")
            for a in parse_script_args(export_plan(example_plan(example), "megatron").text)
        ]
        proc = subprocess.run(
            [str(engines_python), "-c", code, *argv],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": checkout},
        )
        assert proc.returncode == 0, f"{example}: {proc.stderr[-2000:]}"
