"""Opt-in (``pytest -m engines``): the engines' own start-up checks on every exported file, on CPU.

    .venv/bin/python -m pytest -m engines tests/export -q
    MEGATRON_LM=<Megatron-LM checkout> .venv/bin/python -m pytest -m engines tests/export -q

creates or reuses the separate virtualenv ``.venv-engines`` with ``tests/export/engines_setup.sh`` (torch CPU
build, torchtitan 0.2.2, DeepSpeed 0.19.8; nothing goes into the project's .venv; RUNPLAN_ENGINES_VENV moves it),
then runs ``tests/export/engines_check.py`` there (what each engine check does is in its docstring): torchtitan's
config parser, mesh construction over a fake process group of the plan's world size, its pipeline split and its
dataset/tokenizer loading on the placeholders; DeepSpeed's config with the plan's DP and its pipeline engine's
ZeRO assertion; Megatron-LM's ``parse_args`` and ``validate_args`` from the checkout in MEGATRON_LM (importable
in the engines venv; the megatron-core wheel ships megatron/core only, not megatron/training).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.export._plans import EXAMPLE_NAMES, REPO, golden_plan, parse_script_args, rebalanced, with_layout

from runplan.export import export_plan
from runplan.export._common import engine_data, facts

pytestmark = pytest.mark.engines
HERE = Path(__file__).resolve().parent
VENV = Path(os.environ.get("RUNPLAN_ENGINES_VENV", REPO / ".venv-engines"))
OLD = "old-70b-512-h100"  # the torchtitan export before issue 14: torchtitan's default stage weights


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


def _expect(plan) -> dict:
    f = facts(plan)
    return {
        "dp": f.layout.dp,
        "tp": f.layout.tp,
        "pp": f.layout.pp,
        "vpp": f.layout.vpp,
        "cp": f.layout.cp,
        "ep": f.layout.ep,
        "global_batch": f.global_batch_sequences,
        "zero": f.layout.zero,
        "gradient_dtype": f.stack.gradient_dtype,
        "interval": f.checkpoint_interval_steps,
        "n_layers": f.n_layers,
        "n_gpus": f.n_gpus,
        "layers_per_stage": f.layers_per_stage,
        "vocab_size": f.vocab_size,
    }


def _megatron_argv(text: str) -> list[str]:
    values = {"$DATA_PATH": "data", "$TOKENIZER_MODEL": "tok", "$CHECKPOINT_DIR": "ck"}
    argv = []
    for arg in parse_script_args(text):
        for key, value in values.items():
            arg = arg.replace(key, value)
        argv.append(arg)
    return argv


ZERO3 = "70b-512-h100-zero3"  # ZeRO-3 with p = 2: DeepSpeed refuses it (exit 2), the other two must start


def _plans() -> dict[str, tuple[object, tuple[str, ...]]]:
    plans: dict[str, tuple[object, tuple[str, ...]]] = {
        example: (golden_plan(example), ("torchtitan", "deepspeed", "megatron")) for example in EXAMPLE_NAMES
    }
    plans[ZERO3] = (with_layout(golden_plan("70b-512-h100"), zero=3), ("torchtitan", "megatron"))
    return plans


def _manifest(out: Path) -> list[dict]:
    manifest = []
    for example, (plan, targets) in _plans().items():
        for target in targets:
            result = export_plan(plan, target)
            path = out / f"{example}.{target}"
            path.write_text(result.text)
            item = {"path": str(path), "target": target, "example": example, "expect": _expect(plan)}
            if target == "megatron":
                item["argv"] = _megatron_argv(result.text)
                exported = "export CUDA_DEVICE_MAX_CONNECTIONS=1" in result.text
                item["env"] = {"CUDA_DEVICE_MAX_CONNECTIONS": "1"} if exported else {}
            manifest.append(item)
    # the pre-issue-14 torchtitan file: an interleaved export without the first/last-stage weights. The 70B
    # plan interleaved when this was written; it no longer does (v = 1: torchtitan's 1F1B needs no layer count
    # per stage), so v = 4 is pinned: 80 layers / (p 2 · v 4) = 10 per virtual stage, and torchtitan's default
    # 1 + 1 fewer layers make (80 + 2) / 10 round up to 9 virtual stages, not divisible by p = 2
    interleaved = rebalanced(golden_plan("70b-512-h100"), tp=8, vpp=4)
    new = export_plan(interleaved, "torchtitan").text
    old = "\n".join(line for line in new.splitlines() if "_stage_less_layers" not in line)
    (out / f"{OLD}.toml").write_text(old)
    manifest.append(
        {
            "path": str(out / f"{OLD}.toml"),
            "target": "torchtitan",
            "example": OLD,
            "expect": _expect(interleaved),
        }
    )
    return manifest


def _run(python: Path, args: list[str], env: dict) -> list[dict]:
    proc = subprocess.run(
        [str(python), str(HERE / "engines_check.py"), *args],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert lines and "versions" in lines[0], proc.stderr[-3000:]
    print(f"\nengines: {lines[0]['versions']}", file=sys.stderr)
    return lines[1:]


@pytest.fixture(scope="module")
def checked(engines_python: Path, tmp_path_factory) -> dict[str, dict]:
    out = tmp_path_factory.mktemp("exports")
    manifest = _manifest(out)
    (out / "manifest.json").write_text(json.dumps(manifest))
    lines = _run(engines_python, [str(out / "manifest.json")], dict(os.environ))
    checkout = os.environ.get("MEGATRON_LM")
    if checkout:
        env = {**os.environ, "PYTHONPATH": checkout}
        lines += _run(engines_python, ["--megatron", str(out / "manifest.json")], env)
    by_path = {line["path"]: line for line in lines}
    return {
        f"{m['example']}.{m['target']}": {**by_path.get(m["path"], {"ok": False, "error": "no result"}), **m}
        for m in manifest
    }


@pytest.mark.parametrize("example", [*EXAMPLE_NAMES, ZERO3])
def test_torchtitan_starts_with_the_export(checked, example: str) -> None:
    item = checked[f"{example}.torchtitan"]
    assert item["ok"], item.get("error")
    got, expect = item["got"], item["expect"]
    for key in ("tp", "pp", "cp", "ep", "dp", "global_batch", "interval"):
        assert got[key] == expect[key], key
    if expect["pp"] > 1:  # torchtitan's own split: p*v stages, the plan's busiest rank
        assert got["stages"] == expect["pp"] * expect["vpp"]
        assert got["busiest_rank_layers"] == expect["layers_per_stage"]
    assert got["dataset_placeholder_raises"] and got["tokenizer_placeholder_raises"]
    if got["flavor"] is not None:  # runplan's copy of the flavor is what torchtitan builds
        doc = engine_data("torchtitan_flavors")["llama3"]
        flavor = next(spec for spec in doc.values() if spec["n_layers"] == got["flavor"]["n_layers"])
        for key, value in got["flavor"].items():
            assert flavor[key] == value, key


def test_old_torchtitan_export_fails_torchtitans_stage_check(checked) -> None:
    item = checked[f"{OLD}.torchtitan"]
    assert not item["ok"]
    assert "Number of virtual stages (9) must be divisible by pipeline parallel size (2)" in item["error"]


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_deepspeed_starts_with_the_export(checked, example: str) -> None:
    item = checked[f"{example}.deepspeed"]
    assert item["ok"], item.get("error")
    got, expect = item["got"], item["expect"]
    assert got["world_size"] == expect["dp"]
    assert (
        got["train_batch_size"] == got["micro"] * got["accumulation"] * expect["dp"] == expect["global_batch"]
    )
    assert got["zero_stage"] == expect["zero"] and got["bf16"] is True and got["clip"] == 1.0
    # gradients reduced and accumulated in the plan's dtype, not DeepSpeed's bf16 default
    torch_dtype = {"fp32": "torch.float32", "bf16": "torch.bfloat16"}[expect["gradient_dtype"]]
    assert got["communication_data_type"] == torch_dtype
    fp32_without_zero = expect["zero"] == 0 and expect["gradient_dtype"] == "fp32"  # DeepSpeed refuses it
    assert got["grad_accum_dtype"] == (None if fp32_without_zero else expect["gradient_dtype"])
    # AutoTP only without pipeline and context parallelism (it cannot share their process groups)
    assert got["autotp_size"] == (
        expect["tp"] if expect["tp"] > 1 and expect["pp"] == expect["cp"] == 1 else 0
    )
    if expect["pp"] > 1:  # DeepSpeed's pipeline engine accepts the stage, and would refuse ZeRO-3
        assert got["pipeline_zero_assertion"] == ""
        assert "incompatible with pipeline parallelism" in got["pipeline_zero3_assertion"]


@pytest.mark.parametrize("example", [*EXAMPLE_NAMES, ZERO3])
def test_megatron_parse_and_validate_args(checked, example: str) -> None:
    if not os.environ.get("MEGATRON_LM"):
        pytest.skip(
            "set MEGATRON_LM=<Megatron-LM checkout> to run its parse_args/validate_args (not installable from "
            "a package: the megatron-core wheel ships megatron/core only)"
        )
    item = checked[f"{example}.megatron"]
    assert item["ok"], item.get("error")
    got, expect = item["got"], item["expect"]
    assert (got["dp"], got["tp"], got["pp"]) == (expect["dp"], expect["tp"], expect["pp"])
    assert got["global_batch"] == expect["global_batch"]
    assert got["padded_vocab"] == expect["vocab_size"]
    shape = golden_plan(example.removesuffix("-zero3")).model.shape
    assert got["rotary_base"] == (
        shape.rope_theta or 10000
    )  # unpublished: Megatron's default, with a warning
    assert got["use_rope_scaling"] == (shape.rope_scaling is not None)
    assert (got["norm_epsilon"], got["init_method_std"]) == (shape.norm_eps or 1e-5, shape.init_std or 0.02)
