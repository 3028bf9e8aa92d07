"""Parsing of human-friendly numbers: ``2e23``, ``3e-4``, ``70B``, ``15T``, ``4M``, ``1.5k``, ``80GB``.

PyYAML reads ``3e-4`` and ``15e12`` as strings (YAML 1.1 wants a dot in floats) and ``NO`` as false, so
plan files and flags go through these parsers on purpose. NaN, infinity and booleans are refused.
Suffixes are decimal and case-insensitive: k = 1e3, M = 1e6, B or G = 1e9, T = 1e12, P = 1e15 -- except for
token lengths (a sequence length, a context window), where k = 1024 and M = 1024², as every model card means
them: Llama 3.1's "128K context" is max_position_embeddings 131072 (meta-llama/Llama-3.1-8B config.json) and an
"8k" sequence is 8192 (Llama 3 paper, Dubey et al. 2024 §3.4.1). See :func:`parse_token_length`.
"""

from __future__ import annotations

import math
import re

from runplan.errors import SpecError

#: Seconds in an hour and in a day: the one definition every time conversion in runplan uses.
SECONDS_PER_HOUR = 3600.0
SECONDS_PER_DAY = 86400.0

_SUFFIX = {"": 1.0, "k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12, "p": 1e15}
_NUMBER_RE = re.compile(
    r"^\s*([+-]?(?:\d[\d_,]*\.?\d*|\.\d+)(?:e[+-]?\d+)?)\s*([kmbgtp]?)\s*$", re.IGNORECASE
)
_BYTES_RE = re.compile(r"^\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?)\s*([kmgtp]?)(i?)b?\s*$", re.IGNORECASE)


#: What to write instead of a value that is not a number, by the kind of number a field holds: the examples of a
#: budget (2e23, 70B) are wrong for a GPU count or a fraction, so each parser and unit type names its own.
NUMBER_HINT = "write e.g. 2e23, 70B or 3e-4"
_NUMBER_TEXT_HINT = "write e.g. 2e23, 70B, 15T, 4M, 1.5k or 3e-4"
COUNT_HINT = "write a whole number, e.g. 8, 512 or 1.5k"
BYTES_HINT = "write e.g. 80GB or 80GiB"
FRACTION_HINT = "write a fraction, e.g. 0.05"
PRICE_HINT = "write a price per GPU-hour, e.g. 2 or 2.5"


def parse_number(value: object, *, where: str | None = None, hint: str | None = None) -> float:
    """Return ``value`` as a finite float; accept numbers and strings like ``2e23`` or ``70B``. ``hint`` is the
    example a value of the wrong type gets (the field's kind: :data:`COUNT_HINT`, ...); None: a number's."""
    if isinstance(value, bool) or value is None:
        raise SpecError(f"expected a number, got {value!r}", where=where, hint=hint or NUMBER_HINT)
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        match = _NUMBER_RE.match(value)
        if not match:
            raise SpecError(f"expected a number, got {value!r}", where=where, hint=hint or _NUMBER_TEXT_HINT)
        mantissa, suffix = match.groups()
        number = float(mantissa.replace("_", "").replace(",", "")) * _SUFFIX[suffix.lower()]
    else:  # a list or mapping (YAML `gpus: [8]`)
        raise SpecError(
            f"expected a number, got {type(value).__name__}", where=where, hint=hint or NUMBER_HINT
        )
    if not math.isfinite(number):
        raise SpecError(f"expected a finite number, got {value!r}", where=where)
    return number


#: Compute units papers quote budgets in, as FLOPs: one PF-day is 1e15 FLOP/s for a day, 8.64e19 FLOPs (Kaplan et
#: al. 2020, §1.3; Brown et al. 2020, Table D.1: GPT-3's 3.64e3 PF-days = 3.14e23 FLOPs); zetta 1e21, exa 1e18 (SI).
COMPUTE_UNITS = (
    (
        r"pf-?s?-?days?",
        8.64e19,
        "one PF-day is 1e15 FLOP/s for a day, 8.64e19 FLOPs (Kaplan et al. 2020, §1.3)",
    ),
    (r"zetta-?flops?|zflops?", 1e21, "zetta is 1e21"),
    (r"exa-?flops?|eflops?", 1e18, "exa is 1e18"),
)


def flops_in_a_unit(text: object) -> tuple[str, float, str] | None:
    """For a budget written in a unit of compute (``'3640 PF-days'``, ``'2 zettaFLOP'``): what it is, its FLOPs and
    why, for the error that gives the number to write (runplan reads plain numbers and SI suffixes only: a unit is
    refused rather than guessed, as ``PF`` alone would be read as the suffix P); None for anything else."""
    if not isinstance(text, str):
        return None
    for unit, flops_per_unit, why in COMPUTE_UNITS:
        match = re.fullmatch(rf"\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*({unit})\s*", text, re.IGNORECASE)
        if match:
            message = f"{text.strip()!r} is a budget in {match.group(2)}, not in FLOPs"
            return message, float(match.group(1)) * flops_per_unit, why
    return None


def parse_count(value: object, *, where: str | None = None, hint: str | None = None) -> int:
    """Return ``value`` as an int; ``1.5k`` is 1500, ``2.5`` is refused."""
    number = parse_number(value, where=where, hint=hint or COUNT_HINT)
    if number != round(number):
        near = math.floor(number) or math.ceil(number)  # the whole number below (1 for 0.5: no count is 0.5)
        raise SpecError(
            f"expected a whole number, got {value!r}",
            where=where,
            hint=f"write a whole number such as {near}",
        )
    return round(number)


def parse_bytes(value: object, *, where: str | None = None) -> float:
    """Return bytes from ``80GB`` (1e9), ``80GiB`` (2**30), ``1.5TB`` or a plain number of bytes."""
    if isinstance(value, str):
        match = _BYTES_RE.match(value)
        if not match:
            raise SpecError(f"expected a byte size, got {value!r}", where=where, hint=BYTES_HINT)
        mantissa, prefix, binary = match.groups()
        power = "kmgtp".find(prefix.lower()) + 1 if prefix else 0
        base = 1024.0 if binary else 1000.0
        number = float(mantissa) * base**power
        if not math.isfinite(number):
            raise SpecError(f"expected a finite byte size, got {value!r}", where=where)
        return number
    return parse_number(value, where=where, hint=BYTES_HINT)


_TOKEN_LENGTH_SUFFIX = {"": 1, "k": 1024, "m": 1024**2}
_TOKEN_LENGTH_HINT = "write e.g. 4096, 8k (8192) or 128k (131072)"
_TOKEN_LENGTH_RE = re.compile(r"^\s*(\d[\d_,]*\.?\d*|\.\d+)\s*([km]?)\s*$", re.IGNORECASE)


def parse_token_length(value: object, *, where: str | None = None) -> int:
    """A length in tokens as model cards write it: ``8k`` = 8192, ``128k`` = 131072, ``1M`` = 1048576.

    Plain numbers are taken as written (``8000`` stays 8000, ``1e5`` is 100000); the suffix must give a whole
    number of tokens.
    """
    if isinstance(value, str):
        match = _TOKEN_LENGTH_RE.match(value)
        if not match and re.match(r"^\s*[\d_,.]+e[+-]?\d+\s*$", value, re.IGNORECASE):
            return parse_count(
                value, where=where, hint=_TOKEN_LENGTH_HINT
            )  # 1e5: exponent, no suffix to read
        if not match:
            raise SpecError(
                f"expected a length in tokens, got {value!r}",
                where=where,
                hint=_TOKEN_LENGTH_HINT,
            )
        mantissa, suffix = match.groups()
        number = float(mantissa.replace("_", "").replace(",", "")) * _TOKEN_LENGTH_SUFFIX[suffix.lower()]
    else:
        number = parse_number(value, where=where, hint=_TOKEN_LENGTH_HINT)
    if number != round(number):
        raise SpecError(
            f"expected a whole number of tokens, got {value!r}", where=where, hint=_TOKEN_LENGTH_HINT
        )
    return round(number)


def format_si(value: float, unit: str = "", digits: int = 3) -> str:
    """``4.08e10`` → ``40.8 B`` (``816 B tokens`` with a unit) style short form used in terminal output (B = 1e9 for counts)."""
    # the suffix of the value as printed: 999.6e9 at three digits is "1 T", not "1e+03 B"
    shown = abs(float(f"{value:.{digits}g}")) if math.isfinite(value) else math.inf
    if value == 0 or not math.isfinite(value) or shown >= 1e18:  # past P: scientific, not "1.01e+03 P"
        text = f"{value:.{digits}g}"
        return f"{text} {unit}" if unit else text
    for threshold, suffix in ((1e15, "P"), (1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if shown >= threshold:
            text = f"{value / threshold:.{digits}g} {suffix}"
            return f"{text} {unit}" if unit else text
    text = f"{value:.{digits}g}"
    return f"{text} {unit}" if unit else text


def format_bytes(value: float, *, scale_of: float | None = None, extra_digits: int = 0) -> str:
    """``1.13e12`` → ``1.13 TB`` (decimal units, as storage vendors quote them); the one byte formatter.

    ``scale_of`` picks the unit instead of ``value`` (two sides of a change in one unit: ``0.95 GB → 1.21 GB``);
    ``extra_digits`` adds significant digits (two values that would print alike)."""
    ref = abs(value if scale_of is None else scale_of)
    shown = float(f"{ref:.{3 + extra_digits}g}")  # the unit of the rounded value: 999.6e9 is "1 TB"
    for threshold, unit in ((1e15, "PB"), (1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB")):
        if shown >= threshold:
            return f"{value / threshold:.{3 + extra_digits}g} {unit}"
    return f"{value:.{3 + extra_digits}g} B"


#: Most items ``format_steps`` writes (steps and evenly spaced runs) before it names where the full list is
#: instead (a ramp of many milestones rounds each to the save interval, so its gaps can alternate).
MAX_LISTED_STEPS = 24


def format_steps(steps: list[int] | tuple[int, ...], listed_in: str) -> str:
    """Step numbers in words, every one recoverable: all of them up to 12; past that, each run of 4 or more
    evenly spaced steps as 'A, then every D through Z' ("3,729, then every 2,310 through 91,509") and the others
    listed. An operator who deletes checkpoints by hand needs each step, not "5 more"; where that would still
    write more than MAX_LISTED_STEPS items, the first, the last and ``listed_in`` (where the full list is; the
    caller says how many)."""
    from itertools import pairwise

    if any(b <= a for a, b in pairwise(steps)):  # "every 0 through 5" would say nothing
        raise ValueError(f"steps must increase strictly, got {list(steps)[:8]}")
    shown = [f"{step:,}" for step in steps]
    if len(steps) <= 12:
        return ", ".join(shown)
    items, i = [], 0
    while i < len(steps):
        j = i + 1  # the run steps[i..j] of one gap
        while j + 1 < len(steps) and steps[j + 1] - steps[j] == steps[i + 1] - steps[i]:
            j += 1
        if j < len(steps) and j - i >= 3:  # 4 or more steps evenly spaced: one item
            items.append(f"{shown[i]}, then every {steps[i + 1] - steps[i]:,} through {shown[j]}")
            i = j + 1
        else:
            items.append(shown[i])
            i += 1
    if len(items) > MAX_LISTED_STEPS:
        return f"{shown[0]} to {shown[-1]} (each listed in {listed_in})"
    return ", ".join(items)


# ---- pydantic field types: plan files and flags share them ----------------------------------------
from typing import Annotated, Any  # noqa: E402

from pydantic import BeforeValidator, Field, WithJsonSchema  # noqa: E402


def _number(value: object, hint: str | None = None) -> float:
    try:
        return parse_number(value, hint=hint)
    except SpecError as error:  # pydantic turns ValueError into a located validation error
        raise ValueError(error.message + (f" ({error.hint})" if error.hint else "")) from None


def _fraction(value: object) -> float:
    return _number(value, FRACTION_HINT)


def _price(value: object) -> float:
    return _number(value, PRICE_HINT)


def _flops(value: object) -> float:
    """A budget in FLOPs; one written in PF-days or zettaFLOPs is told the number to write (flops_in_a_unit)."""
    found = flops_in_a_unit(value)
    if found is not None:
        message, flops, why = found
        raise ValueError(f"{message} (write {flops:.4g}: {why})")
    return _number(value)


def _count(value: object) -> int:
    try:
        return parse_count(value)
    except SpecError as error:
        raise ValueError(error.message + (f" ({error.hint})" if error.hint else "")) from None


def _token_length(value: object) -> int:
    try:
        return parse_token_length(value)
    except SpecError as error:
        raise ValueError(error.message + (f" ({error.hint})" if error.hint else "")) from None


def _bytes(value: object) -> float:
    try:
        return parse_bytes(value)
    except SpecError as error:
        raise ValueError(error.message + (f" ({error.hint})" if error.hint else "")) from None


def _json_schema(kind: str, bounds: dict[str, float], pattern: str) -> WithJsonSchema:
    """Editors see a number with its bounds, or a string in our human notation ("2e23", "70B")."""
    return WithJsonSchema({"anyOf": [{"type": kind, **bounds}, {"type": "string", "pattern": pattern}]})


_NUMBER_PATTERN = r"^\s*[+]?(\d[\d_,]*\.?\d*|\.\d+)([eE][+-]?\d+)?\s*[kKmMbBgGtTpP]?\s*$"
_TOKEN_LENGTH_PATTERN = r"^\s*(\d[\d_,]*\.?\d*|\.\d+)(\s*[kKmM]|[eE][+-]?\d+)?\s*$"
_BYTES_PATTERN = r"^\s*(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*([kKmMgGtTpP]i?)?[bB]?\s*$"

#: A finite number; accepts "2e23", "70B", "3e-4".
Number = Annotated[float, BeforeValidator(_number), _json_schema("number", {}, _NUMBER_PATTERN)]
#: A finite number > 0.
PositiveNumber = Annotated[
    float,
    BeforeValidator(_number),
    Field(gt=0),
    _json_schema("number", {"exclusiveMinimum": 0}, _NUMBER_PATTERN),
]
#: Compute in FLOPs, > 0: a number as :data:`PositiveNumber`; "3640 PF-days" is told its FLOPs (flops_in_a_unit).
Flops = Annotated[
    float,
    BeforeValidator(_flops),
    Field(gt=0),
    _json_schema("number", {"exclusiveMinimum": 0}, _NUMBER_PATTERN),
]
#: A finite number >= 0.
NonNegativeNumber = Annotated[
    float, BeforeValidator(_number), Field(ge=0), _json_schema("number", {"minimum": 0}, _NUMBER_PATTERN)
]
#: A fraction in [0, 1).
Fraction = Annotated[
    float,
    BeforeValidator(_fraction),
    Field(ge=0, lt=1),
    _json_schema("number", {"minimum": 0, "exclusiveMaximum": 1}, _NUMBER_PATTERN),
]
#: A whole number > 0; accepts "1.5k", "4M".
PositiveCount = Annotated[
    int, BeforeValidator(_count), Field(gt=0), _json_schema("integer", {"minimum": 1}, _NUMBER_PATTERN)
]
#: A length in tokens without bounds (a model that checks its own range): "8k" is 8192 (parse_token_length).
AnyTokenLength = Annotated[
    int, BeforeValidator(_token_length), _json_schema("integer", {}, _TOKEN_LENGTH_PATTERN)
]
#: A length in tokens > 0 (a sequence length); "8k" is 8192 and "128k" 131072 (parse_token_length).
TokenLength = Annotated[
    int,
    BeforeValidator(_token_length),
    Field(gt=0),
    _json_schema("integer", {"minimum": 1}, _TOKEN_LENGTH_PATTERN),
]
#: A whole number >= 0.
NonNegativeCount = Annotated[
    int, BeforeValidator(_count), Field(ge=0), _json_schema("integer", {"minimum": 0}, _NUMBER_PATTERN)
]
#: Bytes > 0; accepts "80GB", "80GiB".
PositiveBytes = Annotated[
    float,
    BeforeValidator(_bytes),
    Field(gt=0),
    _json_schema("number", {"exclusiveMinimum": 0}, _BYTES_PATTERN),
]
#: Bytes >= 0; accepts "3GB", "512MiB", 0.
NonNegativeBytes = Annotated[
    float, BeforeValidator(_bytes), Field(ge=0), _json_schema("number", {"minimum": 0}, _BYTES_PATTERN)
]


def at_most(limit: float) -> dict[str, Any]:
    """``Field`` keywords for an upper bound: enforced by the validator (``le``) and shown in the JSON Schema
    (``maximum``; the unit types write their own schema, which would hide a plain ``le``). One statement of it."""
    return {"le": limit, "json_schema_extra": {"maximum": limit}}


def at_least(limit: float) -> dict[str, Any]:
    """``Field`` keywords for a lower bound, enforced (``ge``) and shown in the JSON Schema (``minimum``)."""
    return {"ge": limit, "json_schema_extra": {"minimum": limit}}


#: Largest price of one GPU-hour accepted, in the plan's currency: 1e5 is far above any GPU-hour in any
#: currency (a common H100 planning figure is 2 USD/h, docs/operations.md §5, i.e. about 300 JPY); above it a cost is
#: a typo, and the products with GPU-hours would overflow.
MAX_PRICE_PER_GPU_HOUR = 1e5
#: A price per GPU-hour: >= 0 and at most MAX_PRICE_PER_GPU_HOUR (plan files and flags share it).
PricePerGpuHour = Annotated[
    float,
    BeforeValidator(_price),
    Field(ge=0, le=MAX_PRICE_PER_GPU_HOUR),
    _json_schema("number", {"minimum": 0}, _NUMBER_PATTERN),
]
