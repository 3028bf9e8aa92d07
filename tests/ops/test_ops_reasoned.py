"""Reasoned values and Explained.build: the field name is written once, the reason lands in notes."""

from __future__ import annotations

import dataclasses

import pytest
from pydantic import ValidationError

from runplan.ops._notes import Explained, Reasoned, in_days


class _Example(Explained):
    label: str
    steps: int
    seconds: float
    tokens: float | None


def test_build_files_values_under_fields_and_reasons_under_notes_in_keyword_order():
    out = _Example.build(
        seconds=Reasoned(90.0, "9 steps × 10 s"),
        label="main",
        steps=Reasoned(9, "round(90 s / 10 s)"),
        tokens=None,
    )
    assert (out.label, out.steps, out.seconds, out.tokens) == ("main", 9, 90.0, None)
    # notes follow the keywords (the JSON prints them in this order), plain values get none
    assert list(out.notes.items()) == [("seconds", "9 steps × 10 s"), ("steps", "round(90 s / 10 s)")]


def test_build_refuses_a_number_given_without_its_reason():
    with pytest.raises(ValidationError, match="no note for steps"):
        _Example.build(label="main", steps=9, seconds=Reasoned(90.0, "9 × 10 s"), tokens=None)


def test_build_refuses_a_field_the_output_does_not_have():
    with pytest.raises(ValidationError, match="stepz"):
        _Example.build(
            label="x", stepz=Reasoned(9, "typo"), steps=Reasoned(9, "r"), seconds=Reasoned(1.0, "r")
        )


def test_reasoned_is_frozen():
    value = Reasoned(3, "three")
    with pytest.raises(dataclasses.FrozenInstanceError):
        value.value = 4  # type: ignore[misc]


def test_in_days_by_hand():
    # 1.5 days = 129,600 s
    days = in_days(129_600.0, "W", "days without failures")
    assert days == Reasoned(1.5, "W / 86,400 = 1.50 days without failures")
