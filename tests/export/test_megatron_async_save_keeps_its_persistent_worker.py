"""An exported Megatron script that asks for async saves gets them on every covered release.

From core_v0.16.0 on, validate_args turns ``--async-save`` off when the checkpoint is distributed
(``ckpt_format != "torch"``) and ``--use-persistent-ckpt-worker`` is not given ("Disabling --async-save";
megatron/training/arguments.py: core_v0.16.0 ~L1138, core_v0.17.0 ~L1430, core_v0.18.0 ~L1621, core_v0.19.0
~L1740, d98e8a64 ~L1814; absent at 000c4ac2 and core_v0.15.0), so every save of the plan would block. The
flag exists at every covered tag. From core_v0.17.0 the async strategy defaults to ``nvrx``
(training_config.py ``async_strategy``), which imports nvidia-resiliency-ext (an optional ``dev`` extra of
Megatron-Core) when the persistent worker starts (initialize.py -> async_utils.init_persistent_async_worker ->
dist_checkpointing/strategies/torch.py get_async_strategy, d98e8a64 ~L1043): the 0.20 target writes
``--async-strategy mcore`` (Megatron-Core's own writer; the flag exists from core_v0.17.0), the default target
cannot (0.15 and 0.16 lack the flag) and warns. The source checks skip when no Megatron-LM git directory is found.
"""

from __future__ import annotations

import pytest
from tests.export._megatron_flag_names import _git, flag_names, has_commit, megatron_git
from tests.export._plans import EXAMPLES, parse_script_args, with_layout
from typer.testing import CliRunner

from runplan.cli.app import app

DEFAULT_TAGS = ("000c4ac2", "core_v0.15.0", "core_v0.16.0", "core_v0.17.0")
NEW_TAGS = ("core_v0.18.0", "core_v0.19.0", "d98e8a64")
DISABLES = ("core_v0.16.0", "core_v0.17.0", *NEW_TAGS)
DISABLING = "'--async-save is not supported without --use-persistent-ckpt-worker. '"


def _script(version: str | None) -> tuple[list[str], str]:
    args = ["export", str(EXAMPLES / "70b-512-h100.yaml"), "--to", "megatron", "--json"]
    result = CliRunner().invoke(app, [*args, *(["--engine-version", version] if version else [])])
    assert result.exit_code == 0, result.output
    import json

    payload = json.loads(result.stdout)
    return parse_script_args(payload["text"]), "\n".join(payload["warnings"])


@pytest.mark.parametrize("version", [None, "0.17", "0.20"])
def test_async_save_comes_with_the_persistent_worker(version: str | None) -> None:
    argv, _ = _script(version)
    assert "--async-save" in argv
    assert argv.index("--use-persistent-ckpt-worker") == argv.index("--async-save") + 1


def test_the_0_20_target_saves_with_megatron_cores_own_async_writer() -> None:
    """mcore needs no extra package; Megatron logs it as deprecated from core_v0.17.0 (strategies/torch.py
    async_save), so a warning says how to take nvrx instead."""
    argv, warnings = _script("0.20")
    assert argv[argv.index("--async-strategy") + 1] == "mcore"
    assert (
        "Megatron logs mcore as deprecated: with nvidia-resiliency-ext installed, drop the flag" in warnings
    )


def test_the_default_target_warns_that_0_17_needs_nvidia_resiliency_ext() -> None:
    argv, warnings = _script(None)
    assert "--async-strategy" not in argv  # 0.15 and 0.16 would stop at argument parsing
    assert "nvidia-resiliency-ext" in warnings and "--async-strategy mcore" in warnings


def test_no_async_save_means_no_worker_and_no_warning() -> None:
    from tests.export._plans import golden_plan

    from runplan.export import export_plan

    plan = with_layout(golden_plan("70b-512-h100"), zero=3)  # Megatron FSDP: fsdp_dtensor, saves block
    for version in (None, "0.20"):
        result = export_plan(plan, "megatron", version)
        argv = parse_script_args(result.text)
        assert "--async-save" not in argv and "--use-persistent-ckpt-worker" not in argv
        assert "--async-strategy" not in argv
        assert not [w for w in result.warnings if "nvidia-resiliency-ext" in w]


def _needs(commit: str) -> None:
    if not has_commit(commit):
        pytest.skip(f"no Megatron-LM git directory with {commit} at {megatron_git()} (MEGATRON_LM_GIT)")


@pytest.mark.parametrize("tag", [*DEFAULT_TAGS, *NEW_TAGS])
def test_the_written_flags_exist_where_the_source_says(tag: str) -> None:
    _needs(tag)
    flags = flag_names(tag)
    assert {"--async-save", "--use-persistent-ckpt-worker", "--ckpt-format"} <= flags
    assert ("--async-strategy" in flags) == (tag not in ("000c4ac2", "core_v0.15.0", "core_v0.16.0"))
    disables = DISABLING in _git("show", f"{tag}:megatron/training/arguments.py")
    assert disables == (tag in DISABLES)


@pytest.mark.parametrize("tag", ["core_v0.17.0", *NEW_TAGS])
def test_nvrx_is_the_default_async_strategy_from_0_17(tag: str) -> None:
    _needs(tag)
    config = _git("show", f"{tag}:megatron/training/config/training_config.py")
    assert 'async_strategy: Literal["nvrx", "mcore"] = "nvrx"' in config
