"""Every flag a Megatron export writes is a flag of the Megatron-LM commit its target was checked against:
d98e8a64 (Megatron-Core 0.20.0) for ``--engine-version 0.18``-``0.20``, 000c4ac2 for the default target. The
flag names are read from the commit's own arguments.py and config dataclasses (``_megatron_flag_names``), for
every example and the stack variants named in the brief: the megatron-core and megatron-2022 presets, each fp8
recipe, MoE with EP (Mixtral, DeepSeek-V3, Qwen3-30B-A3B), CP and interleaved PP (the 405B examples), full and
selective recompute, ZeRO 0/2/3 and FSDP2, bf16 optimizer moments and gradients, the ramp (every example).

Skipped, with the reason, when no Megatron-LM git directory with the commit is found (``MEGATRON_LM_GIT``, else
``../.mirror/NVIDIA+Megatron-LM/repo`` beside this checkout).
"""

from __future__ import annotations

from functools import cache

import pytest
from tests.export._megatron_flag_names import flag_names, has_commit, megatron_git
from tests.export._plans import EXAMPLE_NAMES, golden_plan, parse_script_args, rebalanced, with_layout

from runplan.export import export_plan

NEW, OLD = "d98e8a64ddf34856e74b24714e3bedb2f5a39553", "000c4ac24f61159c138b0975def722c65245983c"


def _needs(commit: str) -> None:
    if not has_commit(commit):
        pytest.skip(
            f"no Megatron-LM git directory with commit {commit[:8]} at {megatron_git()} (set MEGATRON_LM_GIT to a "
            "clone of NVIDIA/Megatron-LM, or fetch it to ../.mirror/NVIDIA+Megatron-LM/repo)"
        )


def _with_stack(plan, **stack):
    return plan.model_copy(update={"inputs": {**plan.inputs, "stack": stack}})


@cache
def _moe_plan(name: str):
    import tempfile
    from pathlib import Path

    from tests.export.test_torchtitan_moe_flavors import _plan_file

    from runplan.cli.common import plan_from_file

    model, gpus, pin = {"dsv3": ("deepseek-v3", 2048, "cp: 1"), "qwen3": ("qwen3-30b-a3b", 256, "pp: 1")}[
        name
    ]
    folder = Path(tempfile.mkdtemp(prefix=f"runplan-{name}-"))
    return plan_from_file(str(_plan_file(folder, name, model, gpus, pin)))[2]


_P70 = "70b-512-h100"
VARIANTS = {
    "megatron-core": lambda: _with_stack(golden_plan(_P70), preset="megatron-core"),
    "megatron-2022": lambda: _with_stack(golden_plan(_P70), preset="megatron-2022"),
    "fp8-delayed-param-gather": lambda: _with_stack(
        golden_plan(_P70), precision="fp8", fp8_recipe="delayed", fp8_param_gather=True
    ),
    "fp8-tensorwise": lambda: _with_stack(golden_plan(_P70), precision="fp8", fp8_recipe="tensorwise"),
    "fp8-blockwise": lambda: _with_stack(golden_plan(_P70), precision="fp8", fp8_recipe="blockwise"),
    "fp8-mxfp8": lambda: _with_stack(golden_plan(_P70), precision="fp8", fp8_recipe="mxfp8"),
    "full-recompute-block": lambda: _with_stack(
        with_layout(golden_plan(_P70), recompute="full"),
        full_recompute_method="block",
        full_recompute_layers=4,
    ),
    "zero0": lambda: with_layout(golden_plan(_P70), zero=0),
    "zero2": lambda: with_layout(golden_plan(_P70), zero=2),
    "zero3": lambda: with_layout(golden_plan(_P70), zero=3),
    "fsdp2": lambda: _with_stack(  # FSDP2 runs without pipeline stages: t 8 keeps d = 512 / 8 = 64, m = 83
        rebalanced(golden_plan(_P70), zero=3, pp=1, vpp=1, tp=8), fsdp_mixed_precision=True
    ),
    "bf16-moments-and-grads": lambda: _with_stack(
        golden_plan(_P70), optimizer_state_dtype="bf16", gradient_dtype="bf16"
    ),
    "mixtral-zero3": lambda: with_layout(golden_plan("moe-mixtral-8x7b"), zero=3),
    "deepseek-v3": lambda: _moe_plan("dsv3"),
    "qwen3-30b-a3b": lambda: _moe_plan("qwen3"),
}
CASES = [*EXAMPLE_NAMES, *VARIANTS]


def _plan(case: str):
    return VARIANTS[case]() if case in VARIANTS else golden_plan(case)


def _flags(text: str) -> set[str]:
    return {arg for arg in parse_script_args(text) if arg.startswith("--")}


@pytest.mark.parametrize("case", CASES)
def test_the_0_20_target_writes_only_flags_of_d98e8a64(case: str) -> None:
    _needs(NEW)
    flags = _flags(export_plan(_plan(case), "megatron", "0.20").text)
    assert flags - flag_names(NEW) == set()


@pytest.mark.parametrize("case", CASES)
def test_the_default_target_writes_only_flags_of_000c4ac2(case: str) -> None:
    _needs(OLD)
    flags = _flags(export_plan(_plan(case), "megatron").text)
    assert flags - flag_names(OLD) == set()


def test_the_flag_reader_tells_the_two_commits_apart() -> None:
    """Known differences, read in each arguments.py: #4411 added --step-batch-size-schedule (a TrainingConfig
    field) and --eval-global-batch-size; non-MLA YaRN's --yarn-* flags came later still; --rampup-batch-size is
    in both (parsed, ignored after #4411); store_false fields are --no-/--disable- switches."""
    _needs(NEW)
    _needs(OLD)
    new, old = flag_names(NEW), flag_names(OLD)
    added = {
        "--step-batch-size-schedule",
        "--eval-global-batch-size",
        "--yarn-original-max-position-embeddings",
    }
    assert added <= new and not added & old
    assert {"--rampup-batch-size", "--global-batch-size", "--tensor-model-parallel-size"} <= new & old
    assert {"--no-gradient-accumulation-fusion", "--disable-bias-linear"} <= new
    assert "--rampup-batch-sizes" not in new  # argparse's abbreviations are off (allow_abbrev=False)


def test_yarn_outside_mla_is_warned_for_the_releases_that_lack_its_flags() -> None:
    """--position-embedding-type yarn and --yarn-*: absent from 000c4ac2 and core_v0.14.0-core_v0.17.0, 'yarn' a
    choice from core_v0.18.0, the --yarn-* flags from core_v0.19.0 (each tag's parser, 2026-12-03)."""
    from tests.export.test_export_architecture import plan_with

    from runplan.model import RopeScaling

    base = plan_with("llama-3.1-8b")
    yarn = RopeScaling(
        type="yarn", factor=4.0, original_max_position_embeddings=32768, beta_fast=32.0, beta_slow=1.0
    )
    shape = base.model.shape.model_copy(update={"rope_scaling": yarn})
    plan = base.model_copy(update={"model": base.model.model_copy(update={"shape": shape})})
    old, new = export_plan(plan, "megatron"), export_plan(plan, "megatron", "0.20")
    assert "--yarn-original-max-position-embeddings" in _flags(old.text) and "--yarn-beta-fast" in _flags(
        new.text
    )
    (old_warning,) = [w for w in old.warnings if w.startswith("RoPE: YaRN outside MLA")]
    (new_warning,) = [w for w in new.warnings if w.startswith("RoPE: YaRN outside MLA")]
    assert "0.15-0.17 do not have" in old_warning and "--engine-version 0.20" in old_warning
    assert "0.18 does not" in new_warning
    assert not [w for w in export_plan(base, "megatron").warnings if "YaRN" in w]
