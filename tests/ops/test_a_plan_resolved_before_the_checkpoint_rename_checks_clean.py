"""`runplan check` of a plan resolved before 77efb0d (checkpointing's ``interval_seconds`` renamed
``main_interval_seconds``; ``milestone_steps`` added) reports only numbers that moved.

Before the fix the 70B example without a batch ramp, resolved at 3521ea3, drifted by 3 values where none moved:
``interval_seconds: 19.8 min → (gone)``, ``main_interval_seconds: (new) → 19.8 min`` and ``milestone_steps: (new) →
[9207, 18414, ...]``. The renamed key is compared under its old name, and a new ``milestone_steps`` against what
the older file's numbers meant: its milestones were the multiples of ``milestone_every_steps``, ⌊steps / every⌋ of
them (the rule before 77efb0d, as ``CheckpointPlan`` reads an old plan).

Fixtures (tests/ops/resolved_before_77efb0d/, frozen, written by ``runplan check --update`` at 3521ea3):
* without a ramp: interval 33 steps = 1,190.30 s, milestones every 9,207 steps, ⌊91,920 / 9,207⌋ = 9 of them at
  9,207 × (1..9); today the same: the check is clean.
* with the example's ramp (93,333 steps): the old rule put ⌊93,333 / 9,207⌋ = 10 milestones at 9,207 × (1..10);
  today 9 fall where the tokens cross each 2.003e11 (10,626, 19,833, ..., 84,282; docs/operations.md): a real
  change, reported as milestone_steps [9207, ...] → [10626, ...], milestones 10 → 9 and 9 × 988 GB = 8.89 TB kept
  instead of 9.88 TB, and no gone/new pair for the renamed interval.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.resolved import diff_changes

HERE = Path(__file__).resolve().parent / "resolved_before_77efb0d"
runner = CliRunner()
RENAMED = ("checkpointing.interval_seconds", "checkpointing.main_interval_seconds")


def _check(name: str, tmp_path: Path) -> tuple[int, list[dict]]:
    copy = tmp_path / name  # (check reads the file only; a copy keeps the fixture safe from a stray --update)
    copy.write_text((HERE / name).read_text(encoding="utf-8"), encoding="utf-8")
    result = runner.invoke(app, ["check", str(copy), "--json"])
    return result.exit_code, json.loads(result.stdout)["changes"]


def test_without_a_ramp_nothing_moved(tmp_path):
    """Clean at the commit that renamed the key; later commits may move other numbers of the 70B plan, so the
    test asks only what the rename is about: no gone/new pair for it, and milestone_steps not reported while
    the milestone spacing and count it is implied from stand."""
    code, changes = _check("70b-512-h100-no-ramp.yaml", tmp_path)
    paths = {c["path"] for c in changes}
    assert not paths & set(RENAMED)
    if not paths & {"checkpointing.milestone_every_steps", "checkpointing.milestones"}:
        assert "checkpointing.milestone_steps" not in paths
    assert code == (1 if changes else 0)


def test_with_a_ramp_the_milestones_that_moved_are_reported_and_the_rename_is_not(tmp_path):
    """At the commit: milestone_steps [9207, ...] → [10626, ..., 84282] (9), milestones 10 → 9, 9 × 988 GB
    kept instead of 10 × (module docstring)."""
    code, changes = _check("70b-512-h100.yaml", tmp_path)
    assert code == 1
    by_path = {c["path"]: c for c in changes}
    assert not any(path in by_path for path in RENAMED)
    steps = by_path["checkpointing.milestone_steps"]
    assert steps["kind"] == "changed"
    assert steps["old"] == [
        9_207 * j for j in range(1, 11)
    ]  # implied from the frozen file's spacing and count
    assert steps["new"][0] != 9_207  # the ramp moves the first milestone off the multiple


# ---- the same rules on sections built from the frozen one (independent of the plan's other numbers) ----


@pytest.fixture(scope="module")
def frozen() -> dict:
    """The no-ramp fixture's resolved section, as written before 77efb0d."""
    return yaml.safe_load((HERE / "70b-512-h100-no-ramp.yaml").read_text(encoding="utf-8"))["resolved"]


def _now(frozen: dict, **checkpointing) -> dict:
    """``frozen`` as a runplan since 77efb0d writes it, with ``checkpointing`` keys set over it."""
    new = json.loads(json.dumps(frozen))
    ck = new["checkpointing"]
    ck["main_interval_seconds"] = ck.pop("interval_seconds")
    ck["milestone_steps"] = [ck["milestone_every_steps"] * j for j in range(1, ck["milestones"] + 1)]
    ck.update(checkpointing)
    return new


def _old(frozen: dict, **checkpointing) -> dict:
    """A copy of ``frozen`` with ``checkpointing`` keys set over it."""
    old = json.loads(json.dumps(frozen))
    old["checkpointing"].update(checkpointing)
    return old


def _changes(old: dict, new: dict) -> list[tuple]:
    return [(c.path, c.kind, c.old, c.new) for c in diff_changes(old, new)]


def test_the_renamed_key_is_compared_under_its_old_name(frozen):
    new = _now(frozen)
    assert _changes(_old(frozen), new) == []
    assert _changes(_old(frozen, interval_seconds=1_000.0), new) == [
        ("checkpointing.main_interval_seconds", "changed", 1_000.0, 1_190.3039709699892)
    ]


def test_a_key_named_interval_seconds_elsewhere_is_not_renamed(frozen):
    old = _old(frozen)
    del old["reliability"]["interval_seconds"]
    assert [c[:2] for c in _changes(old, _now(frozen))] == [("reliability.interval_seconds", "new")]


def test_both_names_in_the_new_section_compare_each_as_itself(frozen):
    # a recomputed section holding both names renames nothing: each is compared as itself
    new = _now(frozen, interval_seconds=1.0)
    assert [c[:2] for c in _changes(_old(frozen), new)] == [
        ("checkpointing.interval_seconds", "changed"),
        ("checkpointing.main_interval_seconds", "new"),
    ]


def test_new_milestone_steps_off_the_multiples_is_one_change_from_them(frozen):
    new = _now(frozen, milestone_every_steps=9_207, milestones=2, milestone_steps=[10_626, 19_833])
    old = _old(frozen, milestone_every_steps=9_207, milestones=2)
    assert _changes(old, new) == [
        ("checkpointing.milestone_steps", "changed", [9_207, 18_414], [10_626, 19_833])
    ]


def test_no_milestones_imply_an_empty_list(frozen):
    new = _now(frozen, milestones=0, milestone_steps=[])
    assert _changes(_old(frozen, milestones=0), new) == []


def test_milestone_steps_beside_no_milestone_count_is_new(frozen):
    old = _old(frozen)
    del old["checkpointing"]["milestones"]
    found = [c[:2] for c in _changes(old, _now(frozen))]
    assert ("checkpointing.milestone_steps", "new") in found


def test_a_hand_edited_huge_milestone_count_is_not_expanded(frozen):
    old = _old(frozen, milestones=10**12)  # a list of 10^12 steps would never be built
    found = [c[:2] for c in _changes(old, _now(frozen))]
    assert ("checkpointing.milestone_steps", "new") in found
    assert ("checkpointing.milestones", "changed") in found


@pytest.mark.parametrize("name", ["70b-512-h100-no-ramp.yaml", "70b-512-h100.yaml"])
def test_the_gpu_a_newer_plan_records_is_not_drift(tmp_path, name):
    """layout.gpu (178b74f: the GPU spec the layouts were timed on) is absent from sections resolved before it:
    new beside them, not a change of the plan (resolved.ADDED_DERIVED_PATHS)."""
    _, changes = _check(name, tmp_path)
    assert not [c for c in changes if c["path"].startswith("layout.gpu")]
