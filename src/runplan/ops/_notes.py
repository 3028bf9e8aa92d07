"""The one convention every operations output follows: each number carries a one-line reason.

Every output model of ``runplan.ops`` derives from :class:`Explained`. Its ``notes`` field maps a field name
to a one-line human reason or formula (``"interval_steps": "round(τ_Daly / step_seconds) = round(5,410 s /
9.8 s) = 552"``). The validator refuses an output whose numeric field has no note, so a report that prints
"every number with a one-line reason" can rely on ``notes[name]`` being present.

A stage computes each number as a :class:`Reasoned` (the value and its reason, written together next to the
formula) and builds its output with ``Output.build(field=reasoned, ...)``: the field name is written once, as
the keyword, and ``build`` files the value under the field and the reason under ``notes[field]``.
"""

from __future__ import annotations

import math
import types
import typing
from dataclasses import dataclass
from typing import Generic, Self, TypeVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from runplan.report.format import fmt_count
from runplan.report.format import fmt_mwh as fmt_mwh  # re-exported: energy in a reason as in its value column
from runplan.units import SECONDS_PER_DAY
from runplan.units import format_bytes as fmt_bytes  # noqa: F401  (re-exported: one byte formatter, in units)

OUTPUT_CONFIG = ConfigDict(extra="forbid", frozen=True)
INPUT_CONFIG = ConfigDict(extra="forbid", frozen=True)

#: Covariant: a ``Reasoned[int]`` is a ``Reasoned[float]`` (the value is read-only).
T_co = TypeVar("T_co", covariant=True)


@dataclass(frozen=True, slots=True)
class Reasoned(Generic[T_co]):
    """A derived value together with the one-line reason (formula and figures) a report prints beside it."""

    value: T_co
    why: str


def _is_numeric(annotation: object) -> bool:
    """True for ``int``, ``float`` and optional forms of them (never ``bool``)."""
    if annotation in (int, float):
        return True
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return bool(args) and all(a in (int, float) for a in args)
    if origin is typing.Annotated:
        return _is_numeric(typing.get_args(annotation)[0])
    return False


class Explained(BaseModel):
    """A frozen output whose every numeric field has a one-line reason in ``notes``."""

    model_config = OUTPUT_CONFIG

    notes: dict[str, str] = Field(
        default_factory=dict,
        description="One-line reason or formula for every number in this object, keyed by field name.",
    )

    @model_validator(mode="after")
    def _every_number_explained(self) -> Explained:
        missing = [
            name
            for name, info in type(self).model_fields.items()
            if name != "notes"
            and _is_numeric(info.annotation)
            and getattr(self, name) is not None
            and name not in self.notes
        ]
        if missing:
            raise ValueError(f"{type(self).__name__}: no note for {', '.join(missing)}")
        return self

    @classmethod
    def build(cls, **fields: object) -> Self:
        """The output from named values: a :class:`Reasoned` gives its value to the field of that name and its
        reason to ``notes[name]``; anything else (lists, nested outputs, labels) is the field's value as is.

        ``notes`` keeps the order of the keywords, so the JSON lists the reasons in the order they are given.
        """
        values: dict[str, object] = {}
        notes: dict[str, str] = {}
        for name, item in fields.items():
            if isinstance(item, Reasoned):
                values[name], notes[name] = item.value, item.why
            else:
                values[name] = item
        return cls.model_validate({**values, "notes": notes})


def fmt(value: float, digits: int = 4) -> str:
    """A count in a reason (tokens, parameters, GPU-hours, FLOPs) as the value column writes counts, so the reason
    and its value read alike: ``5,410``, ``211.4``; from a million report.format.fmt_count's ``16.78 M``,
    ``15.6 T`` and, from 1e15, ``4.076e+25`` (was ``1.678e+07`` from 1e7 beside a value of ``16.78 M``).
    Money, energy and bare seconds or hours have their own rules: :func:`fmt_money`, :func:`fmt_mwh`,
    :func:`fmt_plain`."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    if abs(value) >= 1e6:
        return fmt_count(value, extra_digits=digits - 4)
    return fmt_plain(value, digits)


def fmt_plain(value: float, digits: int = 4) -> str:
    """A bare duration (seconds, hours) in a reason: ``digits`` significant digits, whole with separators from
    1,000 (``6,155,839``, ``12,000,000``: fmt_seconds shows the days beside it), powers of ten only below 1e-3
    and from 1e15."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    magnitude = abs(value)
    if magnitude >= 1e15 or magnitude < 1e-3:
        return f"{value:.{digits - 1}e}"
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.{max(digits - 1 - math.floor(math.log10(magnitude)), 0)}f}"


def fmt_money(value: float) -> str:
    """Money in a reason, whole with separators (``56,031,818``), as report.format.fmt_value writes ``*cost`` and
    ``*_usd`` values."""
    return f"{value:,.0f}"


def fmt_seconds(value: float) -> str:
    """``5410`` → ``5,410 s (1.50 h)``: seconds, and hours or days when that reads better."""
    text = f"{fmt_plain(value)} s"
    if value >= 2 * 86400:
        text += f" ({value / 86400:.2f} d)"
    elif value >= 3600:
        text += f" ({value / 3600:.2f} h)"
    elif value >= 120:
        text += f" ({value / 60:.1f} min)"
    return text


def in_days(seconds: float, shown: str, what: str) -> Reasoned[float]:
    """``seconds`` as days, reasoned as ``<shown> / 86,400 = <days> <what>`` (``shown`` names the seconds)."""
    days = seconds / SECONDS_PER_DAY
    # two decimals, or three significant digits below 1 day (a 2-hour run is 0.0833 days, not "0.08")
    text = f"{days:.2f}" if days >= 1 else f"{days:.3g}"
    return Reasoned(days, f"{shown} / 86,400 = {text} {what}")
