"""`runplan check` of a plan resolved before ``milestone_steps`` (77efb0d) implies the old milestones from
``milestone_every_steps`` and ``milestones``. A hand-edited ``milestones: -5`` implied ``[]`` and
``milestone_every_steps: 0`` implied ``[0, 0, ..., 0]``, both shown as a change ``[] → [...]``; no runplan wrote
either (the spacing was max(interval, ...) >= 1 step, the count ⌊steps / spacing⌋ >= 0), so the key is now new.
And a long list was cut 57 characters in, mid-number (``"8316, 924..."`` read as if the list wrapped to 924);
it is now cut after a whole element, saying how many are left out."""

from __future__ import annotations

import json

import pytest

from runplan.resolved import Change, _implied_milestone_steps, _short, diff_changes


@pytest.mark.parametrize(
    ("every", "count", "implied"),
    [
        (9_207, 2, [9_207, 18_414]),
        (9_207, 0, []),  # no milestones: an empty list, as runplan writes it
        (1, 3, [1, 2, 3]),
        (9_207, -5, None),
        (0, 3, None),
        (-9_207, 3, None),
        (True, 3, None),
        (9_207.0, 3, None),
    ],
)
def test_only_a_spacing_of_one_step_or_more_and_a_count_of_zero_or_more_imply_steps(every, count, implied):
    section = {"milestone_every_steps": every, "milestones": count}
    assert _implied_milestone_steps(section) == implied


def _list(first: int, n: int) -> list[int]:
    return [first * j for j in range(1, n + 1)]


@pytest.mark.parametrize("values", [_list(924, 20), _list(10_626, 9), _list(7, 100), list(range(1000, 1100))])
def test_a_long_list_is_cut_after_a_whole_element(values):
    text = _short(values)
    assert len(text) <= 60
    head, _, tail = text.partition(", ...")
    shown = json.loads(head + "]")
    assert shown == values[: len(shown)] and shown  # every number shown is a whole element, in order
    assert tail == f" {len(values) - len(shown)} more]"


def test_a_short_list_is_whole():
    assert _short([9_207, 18_414]) == "[9207, 18414]"


def test_a_long_mapping_is_cut_after_a_whole_item():
    value = {f"key_{i}": 1234.5678 * i for i in range(10)}
    text = _short(value)
    assert len(text) <= 60
    head, _, tail = text.partition(", ...")
    shown = json.loads(head + "}")
    assert shown == {k: value[k] for k in list(value)[: len(shown)]} and shown
    assert tail == f" {len(value) - len(shown)} more}}"


def test_a_list_whose_first_element_is_too_long_still_fits():
    text = _short([{"steps": 10**i, "global_batch_sequences": 512, "step_seconds": 1.5} for i in range(4)])
    assert len(text) <= 60 and text.endswith(", ... 3 more]")


def test_a_change_of_the_old_milestone_list_shows_whole_numbers():
    change = Change("checkpointing.milestone_steps", "changed", _list(924, 12), _list(8_316, 12))
    assert "8316, 924" not in change.text() and "924..." not in change.text()


@pytest.mark.parametrize("edit", [{"milestones": -5}, {"milestone_every_steps": 0}])
def test_a_hand_edited_spacing_or_count_makes_milestone_steps_new_not_a_change(edit):
    new = {
        "checkpointing": {"milestone_every_steps": 9_207, "milestones": 2, "milestone_steps": [9_207, 18_414]}
    }
    old = {"checkpointing": {"milestone_every_steps": 9_207, "milestones": 2, **edit}}
    found = {c.path: c.kind for c in diff_changes(old, new)}
    assert found["checkpointing.milestone_steps"] == "new"
