"""Turn pydantic validation errors into runplan's one-line ``file:line: dotted.path: problem (hint)``."""

from __future__ import annotations

import difflib
import types
import typing
from typing import Any

from pydantic import BaseModel, ValidationError

from runplan.errors import SpecError
from runplan.yamlio import LoadedYaml, _path_text


def _model_classes(annotation: Any) -> list[type[BaseModel]]:
    """Pydantic model classes inside an annotation (unwrapping Optional, unions, lists, Annotated)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    found: list[type[BaseModel]] = []
    origin = typing.get_origin(annotation)
    if origin is not None or isinstance(annotation, types.UnionType):
        for arg in typing.get_args(annotation):
            found.extend(_model_classes(arg))
    return found


def allowed_keys(model_cls: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """Field names (and aliases) accepted at ``loc`` below ``model_cls``, for "did you mean"."""
    classes = [model_cls]
    for part in loc:
        if isinstance(part, int):
            continue
        next_classes: list[type[BaseModel]] = []
        for cls in classes:
            field = cls.model_fields.get(part)
            if field is not None:
                next_classes.extend(_model_classes(field.annotation))
        if not next_classes:
            break
        classes = next_classes
    names: list[str] = []
    for cls in classes:
        for name, field in cls.model_fields.items():
            names.append(field.alias or name)
    return names


def suggest(word: str, choices: list[str], cutoff: float = 0.6) -> str | None:
    """The closest choice to ``word``, or None."""
    match = difflib.get_close_matches(str(word), choices, n=1, cutoff=cutoff)
    return match[0] if match else None


def _clean_loc(loc: tuple[Any, ...]) -> tuple[Any, ...]:
    # pydantic adds tags like 'function-after[...]' or union member names to loc; keep data keys only
    return tuple(part for part in loc if isinstance(part, int) or ("[" not in part and "-" not in part[:1]))


def spec_error_from_validation(
    error: ValidationError,
    model_cls: type[BaseModel],
    loaded: LoadedYaml | None = None,
    *,
    prefix: tuple[Any, ...] = (),
) -> SpecError:
    """The first validation problem as a SpecError; ``(+N more)`` says how many others there are."""
    problems = error.errors(include_url=False)
    # an unknown key usually explains a missing one (a misspelling): report it first
    problems.sort(key=lambda p: p["type"] != "extra_forbidden")
    first = problems[0]
    loc = _clean_loc(tuple(first["loc"]))
    full = (*prefix, *loc)
    message = first["msg"]
    hint = None
    explained = 0
    if first["type"] == "extra_forbidden":
        key = loc[-1] if loc else "?"
        message = f"unknown key '{key}'"
        # a required key missing beside it is the likeliest intent ("gpu_count" for "gpus")
        missing = [
            _clean_loc(tuple(p["loc"]))[-1]
            for p in problems
            if p["type"] == "missing" and _clean_loc(tuple(p["loc"]))[:-1] == loc[:-1]
        ]
        guess = (
            suggest(str(key), [str(m) for m in missing], cutoff=0.0)
            if missing
            else suggest(str(key), allowed_keys(model_cls, loc[:-1]))
        )
        explained = 1 if missing and guess in missing else 0
        hint = f"did you mean '{guess}'?" if guess else "see `runplan schema` for the allowed keys"
    elif first["type"] == "missing":
        message = "required key is missing"
    elif first["type"] == "literal_error":
        expected = first.get("ctx", {}).get("expected", "")
        given = first.get("input")
        message = f"{given!r} is not one of {expected}"
        choices = [c.strip(" '") for c in str(expected).replace(" or ", ",").split(",")]
        guess = suggest(str(given), choices)
        hint = f"did you mean '{guess}'?" if guess else None
    elif message.startswith("Input should be"):
        message = "must be" + message.removeprefix("Input should be") + f", got {first.get('input')!r}"
    else:
        message = message.removeprefix("Value error, ")
    if len(problems) - explained > 1:
        message += f" (+{len(problems) - 1 - explained} more)"
    source = loaded.where(full) if loaded is not None else None
    return SpecError(message, where=_path_text(full) or None, source=source, hint=hint)
