"""Turn pydantic validation errors into runplan's one-line ``file:line: dotted.path: problem (hint)``."""

from __future__ import annotations

import difflib
import math
import types
import typing
from collections.abc import Mapping
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


def _descend(classes: list[type[BaseModel]], key: Any) -> tuple[list[Any], list[type[BaseModel]]]:
    """The fields named ``key`` in ``classes``, and the model classes their annotations hold (one step of a
    data path down a model)."""
    fields = [cls.model_fields[key] for cls in classes if key in cls.model_fields]
    return fields, [found for field in fields for found in _model_classes(field.annotation)]


def allowed_keys(model_cls: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """Field names (and aliases) accepted at ``loc`` below ``model_cls``, for "did you mean"."""
    classes = [model_cls]
    for part in loc:
        if isinstance(part, int):
            continue
        _, next_classes = _descend(classes, part)
        if not next_classes:
            break
        classes = next_classes
    names: list[str] = []
    for cls in classes:
        for name, field in cls.model_fields.items():
            names.append(field.alias or name)
    return names


def key_paths(model_cls: type[BaseModel], key: str) -> list[str]:
    """The dotted paths below ``model_cls`` where a field named ``key`` lives ("price_per_gpu_hour" ->
    "cluster.price_per_gpu_hour"), for a key written in the wrong section."""
    found: list[str] = []
    seen: set[type[BaseModel]] = set()
    todo: list[tuple[type[BaseModel], str]] = [(model_cls, "")]
    while todo:
        cls, prefix = todo.pop(0)
        if cls in seen:
            continue
        seen.add(cls)
        for name, field in cls.model_fields.items():
            path = f"{prefix}{field.alias or name}"
            if (field.alias or name) == key:
                found.append(path)
            todo.extend((inner, f"{path}.") for inner in _model_classes(field.annotation))
    return found


_BOUND_TEXT = {"ge": ">=", "gt": ">", "le": "<=", "lt": "<"}


def _constraints(annotation: Any) -> list[Any]:
    """The annotated_types bounds (Ge, Lt, ...) inside an annotation: Optional and Annotated unwrapped, the
    FieldInfo that a unit type (units.Fraction) carries included."""
    from pydantic.fields import FieldInfo

    found: list[Any] = []
    for arg in typing.get_args(annotation):
        if isinstance(arg, FieldInfo):
            found.extend(arg.metadata)
        elif isinstance(arg, type | str | int | float):
            continue
        elif any(getattr(arg, name, None) is not None for name in _BOUND_TEXT):
            # a bound written into the Annotated itself (Pins: Annotated[int, Ge(0), Le(3)])
            found.append(arg)
        else:
            found.extend(_constraints(arg))
    return found


#: At most this many whole values are listed ("allowed: 0, 1, 2 or 3", the ZeRO stages); more read as a range.
_FEW_VALUES = 8


def _holds_int(annotation: Any) -> bool:
    """True when ``annotation`` (Optional and Annotated unwrapped) is ``int``: a count, not a float."""
    args = typing.get_args(annotation)
    return annotation is int or (bool(args) and any(_holds_int(a) for a in args if a is not type(None)))


def _whole_values(lower: tuple[float, bool], upper: tuple[float, bool]) -> list[int] | None:
    """The whole numbers between two bounds (value, strict), when there are at most :data:`_FEW_VALUES`."""
    low = math.floor(lower[0]) + 1 if lower[1] else math.ceil(lower[0])
    high = math.ceil(upper[0]) - 1 if upper[1] else math.floor(upper[0])
    return list(range(low, high + 1)) if 0 < high - low + 1 <= _FEW_VALUES else None


#: How to write a required top-level key of a plan file that is missing (the fix its error names)
_MISSING_EXAMPLES = {
    "cluster": "cluster: {gpu: h100-sxm, gpus: 512}",
    "schema_version": "schema_version: 1",
    "name": "name: my-run",
}


def range_hint(model_cls: type[BaseModel], loc: tuple[Any, ...]) -> str | None:
    """The hint "allowed: >= 0 and < 1" for a field bounded on both sides (a message naming one violated bound
    does not say the other), "allowed: 0, 1, 2 or 3" for a whole number with a few values, else None."""
    classes, field = [model_cls], None
    for part in (p for p in loc if not isinstance(p, int)):
        fields, classes = _descend(classes, part)
        if not fields:
            return None
        field = fields[0]
    if field is None:
        return None
    bounds: list[tuple[str, float]] = []  # every bound of the field and of the types it narrows
    for item in [*field.metadata, *_constraints(field.annotation)]:
        bounds += [
            (name, getattr(item, name)) for name in _BOUND_TEXT if getattr(item, name, None) is not None
        ]
    # the tightest bound on each side (MFU: a Fraction's >= 0 narrowed to > 0), a strict one winning a tie
    lower = max(((v, k == "gt", k) for k, v in bounds if k in ("ge", "gt")), default=None)
    upper = min(
        ((v, k == "lt", k) for k, v in bounds if k in ("le", "lt")),
        default=None,
        key=lambda b: (b[0], not b[1]),
    )
    if lower is None or upper is None:
        return None
    few = _whole_values(lower[:2], upper[:2]) if _holds_int(field.annotation) else None
    if few:  # a small integer enum: say its values (parallel.zero: "0, 1, 2 or 3"), not "<= 3"
        listed = [str(v) for v in few]
        return "allowed: " + (f"{', '.join(listed[:-1])} or {listed[-1]}" if len(listed) > 1 else listed[0])
    return f"allowed: {_BOUND_TEXT[lower[2]]} {lower[0]:g} and {_BOUND_TEXT[upper[2]]} {upper[0]:g}"


def suggest(word: str, choices: list[str], cutoff: float = 0.6) -> str | None:
    """The closest choice to ``word``, or None; a choice that ``word`` extends (``gpu_type`` → ``gpu``) counts."""
    match = difflib.get_close_matches(str(word), choices, n=1, cutoff=cutoff)
    if not match:
        stems = [c for c in choices if str(word).startswith(c + "_") or str(word).startswith(c + "-")]
        match = sorted(stems, key=len, reverse=True)[:1]
    return match[0] if match else None


def _is_tag(part: Any) -> bool:
    """True for the tags pydantic puts into ``loc`` (union members, validators), not data keys.

    Tags look like ``str``, ``int``, ``GpuSpec``, ``function-after[_one(), ModelChoice]``, ``list[...]``;
    data keys in runplan files are snake_case (or one capital letter: the law's E, A, B).
    """
    if isinstance(part, int):
        return False
    text = str(part)
    return (
        "[" in text
        or "-" in text[:1]
        or text in _TYPE_TAGS
        or (len(text) > 1 and text[:1].isupper() and not text.isupper() and "_" not in text)
    )


_TYPE_TAGS = {
    "str",
    "int",
    "float",
    "bool",
    "none",
    "list",
    "dict",
    "tuple",
    "set",
    "bytes",
    "constrained-str",
}
_KINDS = {
    "string_type": "a string",
    "model_type": "a mapping of keys",
    "dict_type": "a mapping of keys",
    "model_attributes_type": "a mapping of keys",
    "int_type": "a whole number",
    "int_parsing": "a whole number",
    "float_type": "a number",
    "float_parsing": "a number",
    "list_type": "a list",
    "tuple_type": "a list",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
}


def _as_list(key: str, given: Any) -> str:
    """How to write a list key given one value (``catalog: cat.yaml``) or a mapping (``key`` "": a list item)."""
    if isinstance(given, str | int | float) and not isinstance(given, bool) and len(repr(given)) <= 40:
        return f"write {key}[{given}]"
    return f"write {key}[first, second]"


def _as_string(key: str, given: Any) -> str:
    """How to write a text key given a list (``calibration: [c.yaml]``), a number or a mapping."""
    if isinstance(given, list) and given and isinstance(given[0], str) and len(given[0]) <= 40:
        return f"write one value, not a list: {key}{given[0]}"
    if isinstance(given, bool):  # yes/no/on/off/true/false: the word written is gone, so do not guess it
        return f'quote it as written, e.g. {key}"{"yes" if given else "no"}" — YAML reads yes/no/on/off unquoted as true/false'
    if isinstance(given, int | float):  # YAML read it as a number
        return f'quote it: {key}"{given}"'
    return f"write one value on the line: {key}some text"


#: The fix for a value of the wrong shape, by pydantic error type: (key, value given) → hint.
_WRITE_AS = {"list_type": _as_list, "tuple_type": _as_list, "string_type": _as_string}


def _compact(value: Any) -> str:
    """The offending value, short: ``1e+300`` rather than 301 digits, long strings cut."""
    if isinstance(value, int | float) and not isinstance(value, bool) and abs(value) >= 1e7:
        return f"{value:.3g}"
    import datetime

    if isinstance(value, datetime.date):  # YAML reads 2024-01-01 as a date: show it as written, with why
        return f"{value.isoformat()} (read as a date: quote it)"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _clean_loc(loc: tuple[Any, ...]) -> tuple[Any, ...]:
    # pydantic adds tags like 'function-after[...]' or union member names to loc; keep data keys only
    return tuple(part for part in loc if not _is_tag(part))


def _union_mismatch(problem: Mapping[str, Any]) -> bool:
    """A union member that did not even match the input's type ('str' branch given a mapping)."""
    loc = tuple(problem["loc"])
    return bool(loc) and _is_tag(loc[-1]) and problem["type"] in _KINDS


def spec_error_from_validation(
    error: ValidationError,
    model_cls: type[BaseModel],
    loaded: LoadedYaml | None = None,
    *,
    prefix: tuple[Any, ...] = (),
) -> SpecError:
    """The first validation problem as a SpecError; ``(+N more)`` says how many others there are."""
    problems = error.errors(include_url=False)
    # an unknown key usually explains a missing one (a misspelling): report it first; a union member
    # that did not match the input's type at all ('str' given a mapping) explains least
    problems.sort(key=lambda p: (p["type"] != "extra_forbidden", _union_mismatch(p)))
    first = problems[0]
    if _union_mismatch(first):  # every member rejected the type: say which kinds are accepted
        loc = _clean_loc(tuple(first["loc"]))
        kinds = []
        for p in problems:
            if _union_mismatch(p) and _clean_loc(tuple(p["loc"])) == loc and _KINDS[p["type"]] not in kinds:
                kinds.append(_KINDS[p["type"]])
        first = {
            **first,
            "type": "union_type",
            "msg": f"must be {' or '.join(kinds)}, got {_compact(first.get('input'))}",
        }
    else:
        problems = [p for p in problems if not _union_mismatch(p)]
    loc = _clean_loc(tuple(first["loc"]))
    full = (*prefix, *loc)
    same = (first["msg"], repr(first.get("input")))
    message, hint, explained = _message_and_hint(first, problems, loc, model_cls)
    # the same mistake again at another key (one --dropout sets both dropouts) is not another problem
    others = [p for p in problems if p is not first and (p["msg"], repr(p.get("input"))) != same]
    if first["type"] != "union_type" and len(others) > explained:
        message += f" (+{len(others) - explained} more)"
    source = loaded.where(full) if loaded is not None else None
    return SpecError(message, where=_path_text(full) or None, source=source, hint=hint)


#: Megatron-LM and torchtitan names of the layout axes (--expert-model-parallel-size, expert_parallel_degree),
#: answered with runplan's key: a string match would offer 'sequence_parallel' for 'expert_parallel'.
_ENGINE_KEYS = {
    f"{axis}{suffix}": key
    for axis, key in (
        ("tensor", "tp"),
        ("tensor_model", "tp"),
        ("pipeline", "pp"),
        ("pipeline_model", "pp"),
        ("data", "dp"),
        ("context", "cp"),
        ("expert", "ep"),
        ("expert_model", "ep"),
        ("virtual_pipeline_model", "vpp"),
    )
    for suffix in ("_parallel", "_parallel_size", "_parallel_degree")
} | {"micro_batch_size": "micro_batch", "local_batch_size": "micro_batch"}
#: A model shape's keys as HuggingFace config.json (hf_config.py reads these), Megatron-LM's flags and the GPT
#: papers name them: closest spelling is no guide there (d_ff was answered with head_dim, not ffn_hidden).
_ENGINE_KEYS |= {
    **dict.fromkeys(
        ("d_ff", "ffn_dim", "ffn_hidden_size", "intermediate_size", "dim_feedforward"), "ffn_hidden"
    ),
    **dict.fromkeys(("hidden_size", "n_embd", "dim", "d_hidden", "hidden_dim"), "d_model"),
    **dict.fromkeys(("num_layers", "num_hidden_layers", "n_layer"), "n_layers"),
    **dict.fromkeys(("num_attention_heads", "n_head"), "n_heads"),
    **dict.fromkeys(("num_key_value_heads", "num_query_groups", "n_kv_head"), "n_kv_heads"),
    **dict.fromkeys(("kv_channels",), "head_dim"),
    **dict.fromkeys(("moe_intermediate_size", "moe_ffn_hidden_size"), "expert_ffn_hidden"),
    **dict.fromkeys(("num_experts", "num_local_experts", "n_routed_experts"), "n_experts"),
    **dict.fromkeys(("num_experts_per_tok", "moe_router_topk"), "top_k"),
    **dict.fromkeys(("tie_word_embeddings",), "tied_embeddings"),
    **dict.fromkeys(("padded_vocab_size",), "vocab_size"),
}

#: Budget keys a user writes for money, which runplan takes as GPU-hours at the cluster's price.
_MONEY_KEYS = {"usd", "cost", "cost_usd", "dollars", "money", "price", "budget_usd", "eur"}


#: How alike (difflib ratio) an allowed key must be to an unknown one to be suggested over a missing required key.
NEAR_EXACT_SPELLING = 0.8


def _unknown_key(
    problems: list[Any], loc: tuple[Any, ...], model_cls: type[BaseModel]
) -> tuple[str, str | None, int]:
    """Message, hint and problems explained for an unknown key at ``loc``: an engine's name for a key, else the
    closest allowed key or a required key missing beside it ("gpu_count" for "gpus"), whichever is nearer, else
    the section the key belongs in, else the schema."""
    key = str(loc[-1]) if loc else "?"
    missing = [
        str(_clean_loc(tuple(p["loc"]))[-1])
        for p in problems
        if p["type"] == "missing" and _clean_loc(tuple(p["loc"]))[:-1] == loc[:-1]
    ]
    allowed = allowed_keys(model_cls, loc[:-1])
    synonym = _ENGINE_KEYS.get(key.lower())
    guess = synonym if synonym in allowed else suggest(key, allowed)
    closest_missing = suggest(key, missing, cutoff=0.0) if missing else None
    if synonym not in allowed and closest_missing is not None:

        def similarity(choice: str | None) -> float:
            return difflib.SequenceMatcher(None, key, choice or "").ratio()

        # the missing key, unless an allowed key is a near-exact spelling ("gpus_per_nod" is gpus_per_node,
        # not the missing gpus; "gpu_count" is the missing gpus, not gpu, which is likely given already)
        if similarity(guess) < max(NEAR_EXACT_SPELLING, similarity(closest_missing)):
            guess = closest_missing
    explained = 1 if guess in missing else 0
    elsewhere = key_paths(model_cls, key)
    hint = (
        f"did you mean '{guess}'?"
        if guess
        else f"'{key}' belongs at {' or '.join(elsewhere)}"
        if elsewhere
        else "see `runplan schema` for the allowed keys"
    )
    if loc[:-1] == ("budget",) and key.lower() in _MONEY_KEYS:
        hint = (
            "write a money budget as GPU-hours: gpu_hours = amount / cluster.price_per_gpu_hour, "
            "e.g. 10M USD at 2 USD/h is gpu_hours: 5M"
        )
    return f"unknown key '{key}'", hint, explained


def _message_and_hint(
    first: Any, problems: list[Any], loc: tuple[Any, ...], model_cls: type[BaseModel]
) -> tuple[str, str | None, int]:
    """The message and fix of the problem ``first`` at ``loc``, and how many other problems it explains
    (a missing key beside an unknown one is the same misspelling)."""
    message = first["msg"]
    hint = None
    explained = 0
    if first["type"] == "extra_forbidden":
        message, hint, explained = _unknown_key(problems, loc, model_cls)
    elif first["type"] == "missing":
        message = "required key is missing"
        # the other keys missing beside it, said at once rather than one run of the command per key
        siblings = [
            str(_clean_loc(tuple(p["loc"]))[-1])
            for p in problems
            if p is not first and p["type"] == "missing" and _clean_loc(tuple(p["loc"]))[:-1] == loc[:-1]
        ]
        if siblings:
            message += f" (also missing: {', '.join(dict.fromkeys(siblings))})"
            explained = len(siblings)
        key = str(loc[-1]) if loc else ""
        example = _MISSING_EXAMPLES.get(key) if len(loc) == 1 else None
        # `runplan init` writes plan files only: a law file or a measured-runs file is told just to add the key
        init = " (`runplan init` writes every key, commented)" if model_cls.__name__ == "PlanSpec" else ""
        hint = f"add e.g. '{example}'" if example else f"add it{init}"
        if "shape" in loc[:-1]:  # runplan init writes no shape: a catalog preset shows one whole
            hint = (
                "add it; `runplan catalog models mixtral-8x7b` shows every key of a shape (docs/catalog.md)"
            )
    elif first["type"] == "literal_error":
        expected = first.get("ctx", {}).get("expected", "")
        given = first.get("input")
        message = f"{given!r} is not one of {expected}"
        choices = [c.strip(" '") for c in str(expected).replace(" or ", ",").split(",")]
        guess = suggest(str(given), choices)
        hint = f"did you mean '{guess}'?" if guess else None
    elif first["type"] in ("model_type", "dict_type", "model_attributes_type"):
        # pydantic names the class ("a valid dictionary or instance of RampStage"): the user wrote YAML
        message = f"must be {_KINDS[first['type']]} (key: value), got {_compact(first.get('input'))}"
    elif first["type"] == "too_short":  # pydantic: "List should have at least 1 item after validation, not 0"
        least = first.get("ctx", {}).get("min_length", 1)
        message = f"must list at least {least}, got {first.get('ctx', {}).get('actual_length', 0)}"
    elif first["type"] in ("bool_parsing", "bool_type"):  # pydantic: "unable to interpret input"
        message = f"must be {_KINDS[first['type']]}, got {_compact(first.get('input'))}"
    elif first["type"] in _WRITE_AS:  # "a valid tuple" is a word no YAML file uses; say how to write it
        message = f"must be {_KINDS[first['type']]}, got {_compact(first.get('input'))}"
        key = f"{loc[-1]}: " if loc and isinstance(loc[-1], str) else ""  # a list item has no key to write
        hint = _WRITE_AS[first["type"]](key, first.get("input"))
    elif first["type"] == "int_from_float":
        # pydantic: "a valid integer, got a number with a fractional part"; said as units.parse_count says it
        given = float(first.get("input", 0))
        message = f"expected a whole number, got {_compact(first.get('input'))}"
        hint = (
            range_hint(model_cls, loc)
            or f"write a whole number such as {math.floor(given) or math.ceil(given)}"
        )
    elif message.startswith("Input should be"):
        message = (
            "must be" + message.removeprefix("Input should be") + f", got {_compact(first.get('input'))}"
        )
    else:
        message = message.removeprefix("Value error, ")
    if first["type"] in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        hint = range_hint(model_cls, loc)
    return message, hint, explained
