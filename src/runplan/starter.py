"""`runplan init`: a commented starter plan generated from the plan-file models themselves.

Every key appears with its help text (the field's description) and its default; keys the user set by flag are
active, the rest are commented out, so the file documents itself like a well-kept config file and can never
drift from the schema (it is generated from it).
"""

from __future__ import annotations

import itertools
import json
import re
import textwrap
import types
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from runplan.errors import SpecError
from runplan.spec import SCHEMA_VERSION, PlanSpec
from runplan.units import parse_count, parse_number, parse_token_length

_SKIP = {"resolved"}
#: The plan schema's path in the runplan repository (`runplan schema > FILE` writes it anywhere else).
SCHEMA_PATH = "docs/plan.schema.json"
#: Placeholder budgets when init is given none: 30 days on the cluster when --gpus is given, else 2e23 FLOPs.
DEFAULT_INIT_DAYS = 30
DEFAULT_INIT_FLOPS = "2e23"
DEFAULT_INIT_GPUS = "1024"
#: The starter is a file people read and diff in an editor or terminal, so its comments fold at 80 columns.
COMMENT_WIDTH = 80
#: What a commented top-level key that is neither a section nor a list shows as its value.
_EXAMPLES = {"calibration": "calibration.yaml"}
#: The preset a commented-out `model:` shows (any `runplan catalog models` name or a size like 70b).
_EXAMPLE_MODEL = "llama-3.1-70b"


#: A word and a colon opening a line: it reads as a commented-out key (``# node: Llama 3 ...``).
_KEY_LIKE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*:$")


def _comment(text: str, indent: str = "") -> list[str]:
    """``text`` as comment lines folded at COMMENT_WIDTH, each continuation a '#' line at the same indent
    (a description is one paragraph: its own line breaks and runs of spaces are not kept). A `code span`
    and a word longer than the line (a path, a URL) stay whole: split, they could not be copied. A fold never
    opens a line with a word and a colon (``omitted:``, ``node:``): the word before it goes along, so that no
    line of help looks like a key to uncomment."""
    prefix = f"{indent}# "
    words = " ".join(text.split())
    # spaces inside backticks and {mappings} become NUL so textwrap does not break there; NUL is not in any
    # description
    spans = words.split("`")
    words = "`".join(span.replace(" ", "\0") if i % 2 else span for i, span in enumerate(spans))
    tokens = _unbroken_mappings(words).split(" ")
    while True:
        folded = textwrap.wrap(
            " ".join(tokens),
            width=COMMENT_WIDTH,
            initial_indent=prefix,
            subsequent_indent=prefix,
            break_long_words=False,
            break_on_hyphens=False,  # 1e-6, 2024-07 and flag names stay whole
        )
        # textwrap breaks only at the spaces between tokens: line k opens with token sum(words on lines < k)
        starts = list(itertools.accumulate(len(line[len(prefix) :].split(" ")) for line in folded))[:-1]
        bad = next((start for start in starts if _KEY_LIKE.match(tokens[start].split("\0")[0])), None)
        if bad is None:
            return [line.replace("\0", " ") for line in folded] or [prefix.rstrip()]
        tokens[bad - 1 : bad + 1] = [f"{tokens[bad - 1]}\0{tokens[bad]}"]  # one fewer token: this ends


def _unbroken_mappings(text: str) -> str:
    """``text`` with the spaces inside ``{...}`` made NUL: a flow mapping (``{shape: {...}}``) folded over two
    comment lines could not be copied, and its half on the next line opened it with ``word:``."""
    depth, out = 0, []
    for char in text:
        depth += (char == "{") - (char == "}" and depth > 0)
        out.append("\0" if char == " " and depth > 0 else char)
    return "".join(out)


def _model_class(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        for arg in typing.get_args(annotation):
            found = _model_class(arg)
            if found is not None:
                return found
    return None


def _scalar(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):  # short (3e+09), unless that rounds the default (3.788700810185185)
        short = f"{value:g}"
        return short if float(short) == value else repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, BaseModel):
        return json.dumps(value.model_dump(mode="json", exclude_none=True))
    if isinstance(value, list | tuple | dict):  # (a list of models, e.g. batch_ramp, as their mappings)
        return json.dumps(value, default=lambda item: item.model_dump(mode="json", exclude_none=True))
    return str(value)


def _default(field) -> Any:
    if field.default_factory is not None:
        try:
            return field.default_factory()
        except Exception:  # a factory that needs arguments: show nothing
            return None
    return None if field.is_required() else field.default


def _section(name: str, cls: type[BaseModel], values: dict[str, Any], description: str) -> list[str]:
    lines = ["", *_comment(description)]
    active = {k: v for k, v in values.items() if v is not None}
    lines.append(f"{name}:" if active else f"# {name}:")
    for key, field in cls.model_fields.items():
        lines += _comment(field.description or key, "  ") + _item_help(field.annotation)
        if key in active:
            lines.append(f"  {key}: {_scalar(active[key])}")
            continue
        default = _default(field)
        if isinstance(default, BaseModel) or (_model_class(field.annotation) is not None and default is None):
            lines.append(f"  # {key}: {{...}}  (see `runplan schema`)")
        else:
            lines.append(f"  # {key}: {_scalar(default)}".rstrip())
    return lines


def _item_help(annotation: Any) -> list[str]:
    """For a list of mappings (``schedule.batch_ramp``), each item's keys with their help, so that the
    starter documents the keys inside the list too; else nothing."""
    if typing.get_origin(annotation) is not list:
        return []
    item = _model_class(typing.get_args(annotation)[0])
    if item is None:
        return []
    keys = "; ".join(
        f"`{key}`: {(field.description or key).rstrip('.')}" for key, field in item.model_fields.items()
    )
    return _comment(f"Each item: {keys}.", "  ")


def _checked_budget(
    flops: str | None, model: str | None, tokens: str | None, gpus: str | None, days: str | None
) -> tuple[str | None, str | None, bool]:
    """(flops, days, placeholder): the budget flags checked, and a visible placeholder when none was given
    (``days: 30`` when a GPU count was given, a cluster's budget being time; else ``flops: 2e23``)."""
    if flops is not None:
        parse_number(flops, where="budget.flops")
    if days is not None:
        parse_number(days, where="budget.days")
    if tokens is not None:
        parse_number(tokens, where="budget.tokens")
        if model is None:
            raise SpecError(
                "--tokens needs --model", where="budget.tokens", hint="or give --flops for a new model"
            )
    if sum(x is not None for x in (flops, tokens, days)) > 1:
        raise SpecError(
            "give one of --flops, --days or --tokens", where="budget.days" if days else "budget.tokens"
        )
    placeholder = flops is None and tokens is None and days is None
    if placeholder and gpus is not None:
        days = str(DEFAULT_INIT_DAYS)
    elif placeholder:
        flops = DEFAULT_INIT_FLOPS
    return flops, days, placeholder


def _check_names(gpus: str, gpu: str, model: str | None, seq_len: str, name: str) -> None:
    """The cluster, model, sequence and run name checked now (unknown names fail here with a did-you-mean, not
    later in `check`)."""
    parse_count(gpus, where="cluster.gpus")
    parse_token_length(seq_len, where="training.seq_len")
    from runplan.escape import run_name_problem

    problem = run_name_problem(name)
    if problem:
        raise SpecError(f"the run name {problem}", where="name", hint="e.g. llama-70b-ablation")
    from runplan.architect import resolve_model
    from runplan.catalog import load_catalog

    catalog = load_catalog()
    catalog.gpu(gpu, where="cluster.gpu")
    if model is not None:
        resolve_model(model, catalog, where="model")


def _config_path_for_plan(model: str | None) -> str | None:
    """``model``, or where it is a local config.json (or a checkpoint folder) its absolute path: --model is
    checked from the working folder and a plan reads its model path relative to the plan file, which init,
    writing to stdout, cannot know (`init --model hf/config.json > plans/p.yaml` named plans/hf/config.json).
    A folder is written as its config.json, the form `model:` reads as a config."""
    from runplan.hf_config import is_config_path

    if model is None or not is_config_path(model):
        return model
    path = Path(model.strip()).resolve()
    return str(path / "config.json" if path.is_dir() else path)


def starter_plan(
    *,
    flops: str | None,
    model: str | None,
    tokens: str | None,
    gpus: str | None,
    gpu: str,
    seq_len: str,
    name: str,
    days: str | None = None,
    gpus_per_node: str | None = None,
    price_per_gpu_hour: str | None = None,
) -> str:
    """The starter plan text for the flags given (validated the same way a plan file is).

    Without a budget the file gets a visible placeholder: ``days: 30`` on the cluster when a GPU count was
    given (a cluster's budget is time), else ``flops: 2e23``; either is marked as one to replace.
    """
    flops, days, placeholder = _checked_budget(flops, model, tokens, gpus, days)
    gpus = DEFAULT_INIT_GPUS if gpus is None else gpus
    _check_names(gpus, gpu, model, seq_len, name)
    given_model, model = model, _config_path_for_plan(model)
    if price_per_gpu_hour is not None:  # a number here; its range is the plan file's (_validated)
        parse_number(price_per_gpu_hour, where="cluster.price_per_gpu_hour")
    from runplan.escape import yaml_scalar

    chosen: dict[str, dict[str, Any]] = {
        "budget": {"flops": flops, "days": days, "tokens": tokens},
        "cluster": {
            "gpu": gpu,
            "gpus": gpus,
            "gpus_per_node": gpus_per_node,
            "price_per_gpu_hour": price_per_gpu_hour,
        },
        "training": {"seq_len": seq_len},
    }
    lines = [
        f"# yaml-language-server: $schema={SCHEMA_PATH}",  # one line: editors read it as a whole
        *_comment(
            "(the schema's path in the runplan repository; `runplan schema > plan.schema.json` writes a copy)"
        ),
        *_comment(
            "A runplan plan file. Plan it with `runplan plan THIS.yaml`; check it in CI with `runplan check`."
        ),
        *_comment(
            "Commented keys show their defaults; numbers may be written 2e23, 3e-4, 70B, 15T, 4M or 1.5k."
        ),
        f"schema_version: {SCHEMA_VERSION}",
        f"name: {yaml_scalar(name)}",
        "# description: what the run is for",
    ]
    if placeholder:  # which placeholder, and why that one, so the reader knows what to replace it with
        what = (
            f"{days} days on cluster.gpus (--gpus without --flops, --days or --tokens)"
            if days is not None
            else f"{flops} FLOPs (no --flops, --days, --tokens or --gpus; --gpus alone gives "
            f"{DEFAULT_INIT_DAYS} days)"
        )
        lines += _comment(f"budget below is a placeholder, {what}: replace it with yours")
    # the model key is documented whether or not --model set it (commented out, it shows the form to write)
    model_help = PlanSpec.model_fields["model"].description or "model"
    lines += [
        "",
        *_comment(f"{model_help} `runplan catalog models` lists the presets."),
        f"model: {yaml_scalar(model)}" if model is not None else f"# model: {_EXAMPLE_MODEL}",
    ]
    if model is not None and model != given_model:  # a config path made absolute (_config_path_for_plan)
        lines.insert(-1, "# (absolute, as init cannot know where the file goes: make it relative to this")
        lines.insert(-1, "# plan file's folder before you check the file in)")
    for key, field in PlanSpec.model_fields.items():
        if key in _SKIP or key in ("schema_version", "name", "description", "model"):
            continue
        cls = _model_class(field.annotation)
        if cls is None:
            example = "[]" if typing.get_origin(field.annotation) is list else _EXAMPLES.get(key, "")
            lines += ["", *_comment(field.description or key), f"# {key}: {example}".rstrip()]
            continue
        lines += _section(key, cls, chosen.get(key, {}), field.description or key)
    return _validated("\n".join(lines) + "\n")


def _validated(text: str) -> str:
    """``text`` when it loads as a plan, its cluster is whole nodes and its budget is one runplan plans; else the
    SpecError of the flag at fault. A budget beyond MAX_TRAINING_FLOPS (``--flops 1e40``, ``--days 1e9``) was
    written and then refused by `runplan plan`."""
    from runplan.errors import Infeasible
    from runplan.plan import allocation_stage, resolve_inputs
    from runplan.spec import load_plan_text

    try:  # the starter must itself be a valid plan; what it refuses came from a flag, which the CLI names
        spec = load_plan_text(text, "<runplan init>")
        # as `runplan plan` will: catalog, GPU, whole nodes, law, then the budget's FLOPs and N, D
        allocation_stage(spec, resolve_inputs(spec))
    except SpecError as error:
        raise SpecError(error.message, where=error.where, hint=error.hint) from None
    except Infeasible:  # a valid file no model or layout fits: `runplan plan` says why and what would help
        pass
    return text
