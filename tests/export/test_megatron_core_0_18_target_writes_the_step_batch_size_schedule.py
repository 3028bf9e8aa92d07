"""``runplan export --to megatron --engine-version 0.18`` (to 0.20): the script for Megatron-LM after #4411
(commit 532ad926, first in core_v0.18.0), where ``--rampup-batch-size`` parses but is ignored. The ramp is written
as ``--step-batch-size-schedule`` (thresholds in tokens) with ``--eval-global-batch-size`` the main batch, and no
``--global-batch-size`` (validate_args @ d98e8a64 raises on both); the warning that gave the schedule is gone. The
default target (no option, or a 0.15-0.17 release) is the export as before, byte for byte.

Golden files: ``golden/<example>.megatron-0.20.sh`` and ``.megatron-0.20.warnings.txt`` for the 70B example (a
dense ramp over PP and interleaving) and Mixtral (MoE, EP); regenerate with RUNPLAN_UPDATE_GOLDEN=1, as the others.
These exports, and those of every example and stack variant the engines check names, were run through
``parse_args`` and ``validate_args`` of core_v0.18.0, core_v0.19.0 and d98e8a64 (imported, torch 2.13 CPU), and
``update_train_iters`` with each one's own step-schedule calculator gave the plan's stages, 2026-12-03.
"""

from __future__ import annotations

import pytest
from tests.export._plans import EXAMPLE_NAMES, GOLDEN, golden_plan, parse_script_args
from tests.export.test_export_golden import _check
from tests.export.test_export_keys import megatron_parser
from tests.export.test_megatron_rampup_is_ignored_after_step_schedules import (
    _replay,
    _stages,
    three_stage_ramp_plan,
)

from runplan.errors import SpecError
from runplan.export import export_plan
from runplan.export._versions import MEGATRON_0_17, MEGATRON_0_20, engine_release

NEW = "0.20"


def _value(args: list[str], flag: str, missing: str | None = None) -> str:
    if missing is not None and flag not in args:
        return missing
    return args[args.index(flag) + 1]


@pytest.mark.parametrize("example", ["70b-512-h100", "moe-mixtral-8x7b"])
def test_golden_for_the_new_target(example: str) -> None:
    result = export_plan(golden_plan(example), "megatron", NEW)
    _check(GOLDEN / f"{example}.megatron-0.20.sh", result.text)
    _check(GOLDEN / f"{example}.megatron-0.20.warnings.txt", "\n".join(result.warnings) + "\n")


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
@pytest.mark.parametrize("version", [None, "0.17", "0.15", "0.16.1", "0.16.0rc0", "core_v0.17.1", "v0.15"])
def test_the_default_target_is_the_export_as_before(example: str, version: str | None) -> None:
    """Every 0.15-0.17 spelling gives the default export, whose golden file is unchanged."""
    plan = golden_plan(example)
    assert export_plan(plan, "megatron", version) == export_plan(plan, "megatron")
    assert engine_release("megatron", version) is MEGATRON_0_17


def test_the_70b_ramp_is_a_step_schedule_with_the_plans_stages() -> None:
    """2,791 steps at 2,624 sequences of 4,096 tokens = 29,997,400,064 tokens before the main batch of 5,312."""
    plan = golden_plan("70b-512-h100")
    assert _stages(plan) == [(2624, 2791), (5312, 90542)]
    result = export_plan(plan, "megatron", NEW)
    args = parse_script_args(result.text)
    assert "--global-batch-size" not in args and "--rampup-batch-size" not in args
    schedule = _value(args, "--step-batch-size-schedule")
    assert schedule == "0:2624 29997400064:5312"
    assert 2791 * 2624 * 4096 == 29_997_400_064
    assert _value(args, "--eval-global-batch-size") == "5312"
    # the calculator's rule over --train-samples replays the stages (update_train_iters' loop @ d98e8a64)
    assert _replay(schedule, 4096, int(_value(args, "--train-samples"))) == _stages(plan)
    assert not [w for w in result.warnings if "#4411" in w or w.startswith("batch ramp")]
    assert "--step-batch-size-schedule" not in " ".join(result.warnings)


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_every_example_differs_only_in_header_batch_flags_and_warning(example: str) -> None:
    """The new target changes the header, the batch flags, the ramp warning and one comment, and writes
    --async-strategy mcore where the default target warns that 0.17's nvrx default needs nvidia-resiliency-ext
    (megatron._async_save_args), nothing else: every other flag the default target writes parses in
    Megatron-Core 0.18-0.20 as it is (each tag's parser)."""
    plan = golden_plan(example)
    old, new = export_plan(plan, "megatron"), export_plan(plan, "megatron", NEW)
    old_args, new_args = parse_script_args(old.text), parse_script_args(new.text)
    ramp_flags = {
        "--global-batch-size",
        "--rampup-batch-size",
        "--step-batch-size-schedule",
        "--eval-global-batch-size",
        "--async-strategy",
    }

    def rest(args: list[str]) -> list[str]:
        out, skip = [], False
        for arg in args:
            if arg.startswith("--"):
                skip = arg in ramp_flags
            if not skip:
                out.append(arg)
        return out

    assert rest(old_args) == rest(new_args)
    assert ("--async-save" in new_args) == (_value(new_args, "--async-strategy", "") == "mcore")
    kept = [w for w in old.warnings if "#4411" not in w and not w.startswith("batch ramp")]
    assert [w for w in kept if "nvidia-resiliency-ext" not in w] == [
        w for w in new.warnings if "nvidia-resiliency-ext" not in w
    ]
    g = int(_value(old_args, "--global-batch-size"))
    assert _value(new_args, "--eval-global-batch-size") == str(g)
    assert int(_value(new_args, "--step-batch-size-schedule").split()[-1].split(":")[1]) == g
    assert _value(new_args, "--step-batch-size-schedule").startswith("0:")


def test_unequal_ramp_stages_need_no_approximation_warning(tmp_path) -> None:
    """Three stages (384, 768, then the main batch 1,536): --rampup-batch-size could only approximate them (a
    warning); the schedule is exact, so the new target has no batch-ramp warning at all."""
    plan = three_stage_ramp_plan(tmp_path)
    assert len(_stages(plan)) == 3
    old = export_plan(plan, "megatron")
    assert any("ramps linearly in equal increments" in w for w in old.warnings)
    new = export_plan(plan, "megatron", NEW)
    assert not [w for w in new.warnings if w.startswith("batch ramp")]
    args = parse_script_args(new.text)
    schedule = _value(args, "--step-batch-size-schedule")
    assert len(schedule.split()) == 3
    assert _replay(schedule, 4096, int(_value(args, "--train-samples"))) == _stages(plan)


def test_a_plan_without_a_ramp_keeps_its_global_batch(tmp_path) -> None:
    """No ramp (one stage at the full batch, docs/operations.md): --global-batch-size and iteration-based length,
    the same flags for both targets."""
    from runplan.plan import build_plan
    from runplan.spec import load_plan

    path = tmp_path / "flat.yaml"
    path.write_text(
        "schema_version: 1\nname: flat\nmodel: llama-3.1-8b\nbudget: {tokens: 500B}\n"
        "training: {seq_len: 4096}\ncluster: {gpu: h100-sxm, gpus: 64}\nschedule:\n  batch_ramp:\n"
        "    - {batch_fraction: 1, token_fraction: 0.015}\n"
    )
    plan = build_plan(load_plan(path), tmp_path)
    assert len(_stages(plan)) == 1
    old, new = export_plan(plan, "megatron"), export_plan(plan, "megatron", NEW)
    old_args, new_args = parse_script_args(old.text), parse_script_args(new.text)
    i = new_args.index("--async-strategy")  # the new target's only other difference (_async_save_args)
    assert (
        new_args[i : i + 2] == ["--async-strategy", "mcore"] and new_args[:i] + new_args[i + 2 :] == old_args
    )
    assert [w for w in old.warnings if "nvidia-resiliency-ext" not in w] == [
        w for w in new.warnings if "nvidia-resiliency-ext" not in w
    ]
    args = parse_script_args(new.text)
    assert _value(args, "--global-batch-size") == str(_stages(plan)[0][0]) and "--train-iters" in args


def test_new_flags_parse_with_the_types_d98e8a64_gives_them() -> None:
    """--step-batch-size-schedule is a str field and --eval-global-batch-size an int (TrainingConfig and
    _add_training_args @ d98e8a64, both read with the parser); the rest as in the checked-in list."""
    parser = megatron_parser()
    parser.add_argument("--step-batch-size-schedule", type=str)
    parser.add_argument("--eval-global-batch-size", type=int)
    parser.add_argument(
        "--async-strategy", choices=["nvrx", "mcore"]
    )  # TrainingConfig Literal, core_v0.17.0 on
    argv = [
        a.replace("$", "")
        for a in parse_script_args(export_plan(golden_plan("70b-512-h100"), "megatron", NEW).text)
    ]
    a = parser.parse_args(argv)
    assert a.step_batch_size_schedule == "0:2624 29997400064:5312" and a.eval_global_batch_size == 5312
    assert a.async_strategy == "mcore" and a.use_persistent_ckpt_worker and a.async_save
    assert a.global_batch_size is None and a.rampup_batch_size is None


@pytest.mark.parametrize(
    "version", ["0.18", "0.19", "0.20", "0.18.0", "0.20.0rc1", "core_v0.18.0", "core_r0.19.0", " 0.20 "]
)
def test_each_0_18_to_0_20_spelling_selects_the_new_target(version: str) -> None:
    assert engine_release("megatron", version) is MEGATRON_0_20


@pytest.mark.parametrize(
    ("target", "version"),
    [
        ("megatron", "0.14"),  # core_v0.14.0 lacks global_aux_loss and --window-size: not covered
        ("megatron", "0.21"),
        ("megatron", "1.0"),
        ("megatron", "latest"),
        ("megatron", ""),
        ("megatron", "0.18.0.1"),
        ("torchtitan", "0.3"),  # 0.3 dropped TOML job files
        ("torchtitan", "0.20"),
        ("deepspeed", "0.18"),
        ("deepspeed", "0.20"),
    ],
)
def test_a_version_no_checked_target_covers_is_refused(target: str, version: str) -> None:
    with pytest.raises(SpecError) as info:
        export_plan(golden_plan("70b-512-h100"), target, version)
    assert info.value.where == "export.engine_version"
    assert "no checked" in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("target", "version"), [("torchtitan", "0.2"), ("torchtitan", "0.2.2"), ("deepspeed", "0.19.8")]
)
def test_the_one_checked_release_of_torchtitan_and_deepspeed_is_their_export(
    target: str, version: str
) -> None:
    plan = golden_plan("70b-512-h100")
    assert export_plan(plan, target, version) == export_plan(plan, target)
