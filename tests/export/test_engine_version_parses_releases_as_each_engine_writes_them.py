"""``--engine-version`` reads a release the way its engine writes it (export/_versions.py): ``core_v``/``core_r``
is Megatron-LM's tag prefix only, the digits are ASCII (``int()`` reads full-width ``１８`` as 18, so ``\\d``
would take it), and a PEP 440 local version (``+local``, PEP 440 "Local version identifiers") is accepted: a
Megatron-LM main checkout from 2f5c62c312 (#4212, 2026-04-09) reports ``0.18.0+<short sha>``
(megatron/core/package_info.py), and wheels carry build tags such as ``+cu12``.

A main-branch checkout names its release before the release has it: main reports 0.18.0rc0 from f09f5c98e6
(2026-03-31) and 0.18.0+<sha> from 2f5c62c312, but --step-batch-size-schedule came with #4411 (532ad926,
2026-04-21), so the --engine-version help and docs/export.md say how to check (``git merge-base --is-ancestor
532ad926 HEAD``); the source checks skip without a Megatron-LM git directory."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.export._megatron_flag_names import _git, flag_names, has_commit, megatron_git

from runplan.errors import SpecError
from runplan.export._versions import MEGATRON_0_17, MEGATRON_0_20, engine_release

DOC = Path(__file__).resolve().parents[2] / "docs" / "export.md"


@pytest.mark.parametrize(
    ("version", "release"),
    [
        ("0.18", MEGATRON_0_20),
        ("core_v0.18.0", MEGATRON_0_20),
        ("0.18.2+abc1234", MEGATRON_0_20),  # a patch release: core_r0.18.0 only, forked after 532ad926
        ("0.20.0+git.d98e8a64", MEGATRON_0_20),
        ("core_v0.17.0", MEGATRON_0_17),
        ("0.16.1+local-build_2", MEGATRON_0_17),
    ],
)
def test_megatron_takes_tags_and_local_versions(version: str, release) -> None:
    assert engine_release("megatron", version) is release


@pytest.mark.parametrize(
    ("target", "version"),
    [
        ("torchtitan", "core_v0.2.0"),
        ("deepspeed", "core_r0.19.0"),
        ("megatron", "０.１８"),
        ("megatron", "0.１８.0"),
        ("deepspeed", "0.١٩"),  # Arabic-Indic digits
        ("megatron", "0.18.0+"),
        ("megatron", "0.18.0+cu12+x"),
        ("megatron", "0.18.0+.cu12"),
    ],
)
def test_what_is_not_a_release_of_the_engine_is_refused(target: str, version: str) -> None:
    with pytest.raises(SpecError, match="no checked"):
        engine_release(target, version)


@pytest.mark.parametrize("version", ["0.18.0rc0", "0.18.0rc0+cu12", "0.18.0+532ad926", "0.18.0.dev1"])
def test_a_0_18_pre_release_or_local_build_is_asked_which_side_of_4411_it_is(version: str) -> None:
    """main reported 0.18.0rc0 (from f09f5c98e6) and 0.18.0+<sha> (from 2f5c62c312) before #4411 (532ad926)
    added --step-batch-size-schedule: such a version cannot pick the target, the merge-base check can."""
    with pytest.raises(SpecError, match="before #4411") as raised:
        engine_release("megatron", version)
    assert "git merge-base --is-ancestor 532ad926 HEAD" in str(raised.value.hint)


def test_torchtitan_and_deepspeed_still_take_v_and_local_versions() -> None:
    assert engine_release("torchtitan", "v0.2.2+cu126").name == "0.2"
    assert engine_release("deepspeed", "0.19.8+unknown").name == "0.19"


def test_help_and_docs_say_a_main_checkout_needs_532ad926() -> None:
    from runplan.cli.export import ENGINE_VERSION_HELP

    doc = " ".join(DOC.read_text(encoding="utf-8").split())
    for text in (ENGINE_VERSION_HELP, doc):
        assert "git merge-base --is-ancestor 532ad926 HEAD" in text
        assert "0.18.0rc0" in text


def test_main_reports_0_18_before_it_has_the_step_schedule() -> None:
    for commit in ("f09f5c98e6", "532ad926"):
        if not has_commit(commit):
            pytest.skip(f"no Megatron-LM git directory with {commit} at {megatron_git()} (MEGATRON_LM_GIT)")
    info = _git("show", "f09f5c98e6:megatron/core/package_info.py")
    assert "MINOR = 18" in info and "PRE_RELEASE = 'rc0'" in info
    assert "MINOR = 18" in _git("show", "532ad926^:megatron/core/package_info.py")
    assert "--step-batch-size-schedule" not in flag_names("532ad926^")
    assert "--step-batch-size-schedule" in flag_names("532ad926")
    between = int(_git("rev-list", "--count", "f09f5c98e6..532ad926^").strip())
    assert 150 < between < 170  # the checkouts that report 0.18 without #4411
