"""GPU and model catalogs: typed loading, user files merged over the shipped ones, lookup with did-you-mean.

The shipped catalogs are package data (``configs/gpus.yaml`` and ``models.yaml`` at the repository top level,
packaged as ``runplan/configs``, read with
importlib.resources, parsed once per process with the C YAML loader when available). A user catalog is a
YAML file with optional ``gpus:`` and ``models:`` lists in the same entry format; an entry whose name equals a
shipped name replaces it, any other is added. Lookup is case-insensitive, treats ``_`` and spaces as ``-``,
and accepts each entry's ``aliases``. Bad entries raise ``SpecError`` naming ``file:line: models[3].d_model``.

Entry format (docs/catalog.md): every ``GpuSpec`` / ``ModelShape`` field, plus the catalog-only keys
``aliases`` and ``note`` (both kinds) and ``family``, ``published_params``, ``published_active_params``
(models). Numbers may be written ``80e9``, ``80GB`` (for ``hbm_bytes``), ``70.6B`` or ``4k``.
"""

from __future__ import annotations

import difflib
import functools
import re
import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from runplan.errors import SpecError
from runplan.hardware import GpuSpec
from runplan.model import ModelShape
from runplan.units import parse_bytes, parse_count, parse_number, parse_token_length
from runplan.yamlio import LoadedYaml, load_yaml_file, load_yaml_text

_TOP_KEYS = ("gpus", "models")


class GpuEntry(BaseModel):
    """A catalog GPU: the spec every estimate uses, plus catalog-only metadata."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    spec: GpuSpec = Field(description="The accelerator specification (runplan.hardware.GpuSpec).")
    aliases: tuple[str, ...] = Field((), description="Other names this entry answers to, e.g. 'h100'.")
    note: str = Field("", description="Assumptions behind the numbers (e.g. an assumed NIC per GPU).")
    origin: str = Field(description="File the entry was read from (the shipped catalog or a user file).")

    @property
    def name(self) -> str:
        return self.spec.name


class ModelEntry(BaseModel):
    """A catalog model: its exact shape, plus the published sizes it is checked against."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    shape: ModelShape = Field(description="The transformer shape (runplan.model.ModelShape).")
    family: str | None = Field(None, description="Model family used by size shorthands, e.g. 'llama-3.1'.")
    aliases: tuple[str, ...] = Field((), description="Other names this entry answers to.")
    published_params: float | None = Field(None, gt=0, description="Total parameters as published.")
    published_active_params: float | None = Field(
        None, gt=0, description="Active parameters per token as published (MoE)."
    )
    note: str = Field("", description="What the shape cannot express, or how the published count differs.")
    origin: str = Field(description="File the entry was read from (the shipped catalog or a user file).")

    @property
    def name(self) -> str:
        return self.shape.name or ""


# Catalog-only keys per kind (everything else goes to GpuSpec / ModelShape).
_GPU_META = ("aliases", "note")
_MODEL_META = ("family", "aliases", "published_params", "published_active_params", "note")


def normalize_name(name: str) -> str:
    """Lookup key: lower-case, ``_`` and spaces as ``-``, surrounding blanks removed."""
    return "-".join(name.strip().lower().replace("_", "-").split())


class Catalog:
    """GPUs and models by name; built by ``load_catalog``. Entries keep the order of their files."""

    def __init__(
        self,
        gpu_entries: Iterable[GpuEntry],
        model_entries: Iterable[ModelEntry],
        files: Sequence[str] = (),
        count_warnings: Mapping[str, str] | None = None,
    ) -> None:
        self._gpus = {normalize_name(e.name): e for e in gpu_entries}
        self._models = {normalize_name(e.name): e for e in model_entries}
        self.files = tuple(files)
        # a user model's published count its shape misses (published_count_warning), by normalised entry name
        self._count_warnings = dict(count_warnings or {})
        self._gpu_index = _index(self._gpus)
        self._model_index = _index(self._models)

    # ---- collections ------------------------------------------------------------------------
    @property
    def gpus(self) -> tuple[GpuSpec, ...]:
        return tuple(e.spec for e in self._gpus.values())

    @property
    def models(self) -> tuple[ModelShape, ...]:
        return tuple(e.shape for e in self._models.values())

    @property
    def gpu_entries(self) -> tuple[GpuEntry, ...]:
        return tuple(self._gpus.values())

    @property
    def model_entries(self) -> tuple[ModelEntry, ...]:
        return tuple(self._models.values())

    # ---- lookup -----------------------------------------------------------------------------
    def gpu_entry(self, name: str, *, where: str | None = None) -> GpuEntry:
        return self._gpus[_lookup(name, self._gpu_index, "GPU", "gpus", where)]

    def model_entry(self, name: str, *, where: str | None = None) -> ModelEntry:
        key = normalize_name(str(name))
        family = [e.name for e in self._models.values() if e.family and normalize_name(e.family) == key]
        if key not in self._model_index and family:  # 'gemma-2': the closest name is another family's model
            raise SpecError(
                f"'{name}' is a model family, not one model",
                where=where,
                hint=f"name one of its models: {', '.join(family)}",
            )
        return self._models[_lookup(name, self._model_index, "model", "models", where)]

    def gpu(self, name: str, *, where: str | None = None) -> GpuSpec:
        """The GPU named ``name`` (or one of its aliases), its ``family`` known (:meth:`gpu_spec`); a miss raises
        SpecError with a did-you-mean."""
        return self.gpu_spec(self.gpu_entry(name, where=where), where=where)

    def gpu_spec(self, entry: GpuEntry, *, where: str | None = None) -> GpuSpec:
        """``entry``'s spec with its family: as stated (every shipped entry does), else as its name and aliases
        read it (:func:`with_family`), else a SpecError at ``where`` naming the file that holds the entry."""
        names = (entry.name, *entry.aliases)
        return with_family(entry.spec, names, self, where=where, entry_file=entry.origin)

    @property
    def warnings(self) -> tuple[str, ...]:
        """Cautions about the user files' entries, one line each: a model whose shape misses its published count."""
        return tuple(self._count_warnings.values())

    def warnings_for(self, model_name: str | None) -> list[str]:
        """The cautions about the model entry ``model_name`` names (empty for a shipped, unknown or no name: a
        shape sized from a parameter count has none)."""
        if not model_name:
            return []
        key = self._model_index.get(normalize_name(model_name))
        return [self._count_warnings[key]] if key in self._count_warnings else []

    def model(self, name: str, *, where: str | None = None) -> ModelShape:
        """The model preset named ``name`` (or an alias); a miss raises SpecError with a did-you-mean."""
        return self.model_entry(name, where=where).shape

    def family_of(self, name: str) -> str | None:
        key = self._model_index.get(normalize_name(name))
        return self._models[key].family if key else None


# ---- a GPU's family --------------------------------------------------------------------------
# The one place a GPU's architecture is decided when an entry (a user catalog's, a plan's inline cluster.gpu, a
# calibrate file's gpus:) omits it: it lives here, beside the entries it reads, since chip names come from the
# catalog's own entries; hardware.py only declares the field (and cannot import the catalog).

#: A chip's model number as catalogs write it in a GPU's name: letters, three digits, an optional letter (h100,
#: a100, b200, mi300x); not a memory size (80gb) or a form factor (sxm5).
_CHIP = re.compile(r"^[a-z]+\d{3}[a-z]?$")


def _tokens(name: str) -> list[str]:
    return re.split(r"[-_\s]+", name.lower())


def chip_families(catalog: Catalog) -> dict[str, dict[str, list[str]]]:
    """Chip name → family → the entries that state that family and carry the chip in their name or aliases: the
    shipped catalog's (h100 → hopper, a100 → ampere, b200 → blackwell, mi300x → cdna3), always, and ``catalog``'s
    (the entries named so that a refusal can say which one made a chip read as two families). The shipped ones
    stay read when a user entry replaces them: an override of ``b200`` without ``family:`` (the 800 Gb/s B200 of
    docs/catalog.md) is still a B200, read by the one rule that reads ``b200-800g`` (rather than its entry
    inheriting the replaced one's family, which would hold for the exact name only)."""
    out: dict[str, dict[str, list[str]]] = {}
    for entry in (*_shipped()[0], *catalog.gpu_entries):
        for name in (entry.name, *entry.aliases) if entry.spec.family else ():
            for token in _tokens(name):
                if _CHIP.match(token):
                    carriers = out.setdefault(token, {}).setdefault(str(entry.spec.family), [])
                    if entry.name not in carriers:
                        carriers.append(entry.name)
    return out


def _chips_named(names: tuple[str, ...], catalog: Catalog) -> dict[str, dict[str, list[str]]]:
    """The chips ``names`` carry (:func:`chip_families`), each with its families and their entries, in order."""
    chips = chip_families(catalog)
    return {token: chips[token] for name in names for token in _tokens(name) if token in chips}


def family_from_names(names: tuple[str, ...], catalog: Catalog) -> str | None:
    """The family ``names`` read as unambiguously: every chip name in them (:func:`chip_families`) belongs to
    one and the same family (h100-grandteton-500w → hopper); None when none is named, or two families are."""
    found = {family for families in _chips_named(names, catalog).values() for family in families}
    return found.pop() if len(found) == 1 else None


def gpu_families() -> tuple[str, ...]:
    """The values ``GpuSpec.family`` accepts, in declaration order (ampere, hopper, blackwell, cdna3)."""
    return typing.get_args(typing.get_args(GpuSpec.model_fields["family"].annotation)[0])


#: The family value for parts the time model has no constants of, from what each value changes: ``ampere`` picks
#: the Ampere-fitted constants (runplan.calibrate.calibration.gpu_family; every other value Hopper's) and
#: FlashAttention-2's rate; ``cdna3`` Hopper's constants at FlashAttention-2's rate; ``hopper`` and ``blackwell``
#: Hopper's with cuDNN attention 1.58× faster (parallel/timing.attention_kernel_speedup); only ``blackwell`` runs
#: mxfp8 (timing.check_precision). An Ada card (sm_89: Ampere-style mma tensor cores plus fp8, none of the Hopper
#: wgmma/TMA behind the cuDNN speedup measured on H100; FlashAttention-2 runs on "Ampere, Ada, or Hopper GPUs",
#: Dao-AILab/flash-attention README) is nearest ampere; an AMD part of another CDNA generation cdna3
#: (FlashAttention-2, no cuDNN; docs/catalog.md: a part without constants takes the nearest family); a TPU none
#: (the time model's collectives are NCCL rings over NVLink/NIC bandwidths, docs/parallel.md).
NEAREST_FAMILY_HINT = (
    "nearest: ampere for an A100, an Ada card (L40S, RTX 4090) or any other NVIDIA card with FlashAttention-2 "
    "but not Hopper's cuDNN attention; hopper for H100, H200, GH200; blackwell for B200, GB200, GB300; cdna3 "
    "for any AMD Instinct (MI250X's CDNA2, MI355X's CDNA 4); no value fits a TPU"
)


def with_family(
    gpu: GpuSpec,
    names: tuple[str, ...],
    catalog: Catalog,
    *,
    where: str | None,
    entry_file: str | None = None,
) -> GpuSpec:
    """``gpu`` with its ``family``: as stated, else as its names read it (:func:`family_from_names`). A GPU the
    user defined without one, whose names do not say it, is a SpecError at ``where``: its family picks the time
    model's constants (Ampere's or Hopper's, parallel/timing.py), its attention kernel (FlashAttention-2 on ampere
    and cdna3) and the fp8 recipes it runs, for a plan and for calibrate's fit alike, and taking it for Hopper
    silently would time an A100-class card with the H100 constants. Refused rather than warned: the fix is one
    key, and a plan file that states it is reproduced by `runplan check` wherever it runs. The hint gives the
    value for the nearest parts (:data:`NEAREST_FAMILY_HINT`); names carrying chips of two families are told
    which."""
    if gpu.family is not None:
        return gpu
    family = family_from_names(names, catalog)
    if family is not None:
        return gpu.model_copy(update={"family": family})
    accepted = gpu_families()
    add = f"add family: {', '.join(accepted[:-1])} or {accepted[-1]}"
    add += f" to its entry in {entry_file}" if entry_file else ""
    chips = _chips_named(names, catalog)
    if chips:  # chips of two families (a100-h100-mix): which is it
        carried = "; ".join(
            f"{chip}: " + ", ".join(f"{fam} ({', '.join(fams[fam][:3])})" for fam in sorted(fams))
            for chip, fams in chips.items()
        )
        count = len({family for families in chips.values() for family in families})
        raise SpecError(
            f"GPU {gpu.name!r} has no family, and the chips its names carry are of {_FAMILY_COUNT[count]} "
            f"families ({carried}): its family picks the time model's constants",
            where=where,
            hint=f"{add}: the family of the one chip it is",
        )
    raise SpecError(
        f"GPU {gpu.name!r} has no family, and its name does not say which: its family picks the time model's "
        "constants",
        where=where,
        hint=f"{add}; {NEAREST_FAMILY_HINT}",
    )


_FAMILY_COUNT = {2: "two", 3: "three", 4: "four"}


def _index(entries: dict[str, GpuEntry] | dict[str, ModelEntry]) -> dict[str, str]:
    """Lookup key → canonical key: every name first, then aliases that no name already claims."""
    index = {key: key for key in entries}
    for key, entry in entries.items():
        for alias in entry.aliases:
            index.setdefault(normalize_name(alias), key)
    return index


def _lookup(name: str, index: dict[str, str], what: str, kind: str, where: str | None) -> str:
    key = normalize_name(str(name))
    if key in index:
        return index[key]
    close = difflib.get_close_matches(key, list(index), n=1, cutoff=0.5)
    if close:
        hint = f"did you mean '{index[close[0]]}'?"
    else:
        names = sorted(set(index.values()))
        hint = f"known: {', '.join(names)}; see `runplan catalog {kind}`"
    raise SpecError(f"unknown {what} '{name}'", where=where, hint=hint)


# ---- loading ------------------------------------------------------------------------------------
def _field_kind(annotation: Any) -> str | None:
    """'int', 'float' or None for a pydantic field annotation (``float | None`` counts as float)."""
    is_union = isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union
    options = typing.get_args(annotation) if is_union else (annotation,)
    if int in options and bool not in options:
        return "int"
    if float in options:
        return "float"
    return None


_NUMERIC: dict[str, dict[str, str]] = {}


def _numeric_fields(model: type[BaseModel]) -> dict[str, str]:
    key = model.__name__
    if key not in _NUMERIC:
        _NUMERIC[key] = {
            name: kind
            for name, f in model.model_fields.items()
            if (kind := _field_kind(f.annotation)) is not None
        }
    return _NUMERIC[key]


#: Shape fields that are lengths in tokens (model.py reads them with units.parse_token_length: k = 1024).
_TOKEN_LENGTH_FIELDS = frozenset({"sliding_window"})


def _convert_numbers(
    raw: dict[str, Any], fields: dict[str, str], loaded: LoadedYaml, path: tuple[Any, ...]
) -> dict[str, Any]:
    """Parse ``80e9``, ``80GB``, ``70.6B``, ``4k`` in numeric fields; refuse booleans and NaN."""
    out = dict(raw)
    for key, kind in fields.items():
        value = out.get(key)
        if value is None:
            continue
        dotted = _dotted((*path, key))
        try:
            if key in _TOKEN_LENGTH_FIELDS:  # a length in tokens, as the shape reads it: 4k = 4096
                out[key] = parse_token_length(value, where=dotted)
            elif kind == "int":
                out[key] = parse_count(value, where=dotted)
            elif key.endswith(("_bytes", "_bytes_per_s")):  # a bandwidth per second: "3350GB" as bytes
                out[key] = parse_bytes(value, where=dotted)
            else:
                out[key] = parse_number(value, where=dotted)
        except SpecError as error:
            raise SpecError(
                error.message, where=dotted, source=loaded.where((*path, key)), hint=error.hint
            ) from None
    return out


def _dotted(path: tuple[Any, ...]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _data_loc(loc: Sequence[Any]) -> tuple[Any, ...]:
    """A pydantic error location as the entry's own keys (the entry's ``spec``/``shape`` wrapper dropped)."""
    return tuple(part for part in loc if part not in ("spec", "shape"))


def _closest(key: str, missing: Sequence[str], allowed: Sequence[str]) -> str | None:
    """The key ``key`` most likely meant: a close missing required key, else a close allowed key, else the one
    missing beside it (``tdp: 700`` for ``tdp_watts``)."""
    for choices, cutoff in ((missing, 0.6), (allowed, 0.6), (missing[:1] if len(missing) == 1 else (), 0.0)):
        close = difflib.get_close_matches(key, list(choices), n=1, cutoff=cutoff)
        if close:
            return close[0]
    return None


def _raise_validation(
    error: ValidationError, loaded: LoadedYaml, path: tuple[Any, ...], allowed: Sequence[str]
) -> None:
    # pydantic lists a missing field before an unknown key, but a misspelt key (tdp_wats) is what leaves the
    # field it meant (tdp_watts) missing: the unknown key is reported first, as a plan file's is (validation.py)
    problems = sorted(error.errors(), key=lambda p: p["type"] != "extra_forbidden")
    first = problems[0]
    loc = _data_loc(first["loc"])
    full = (*path, *loc)
    hint = None
    message = first["msg"]
    if first["type"] == "extra_forbidden" and loc:
        missing = [
            str(_data_loc(p["loc"])[-1])
            for p in problems
            if p["type"] == "missing" and _data_loc(p["loc"])[:-1] == loc[:-1]
        ]
        close = _closest(str(loc[-1]), missing, allowed)
        message = f"unknown key '{loc[-1]}'"
        hint = f"did you mean '{close}'?" if close else f"allowed: {', '.join(allowed)}"
    elif first["type"] == "missing":
        message = "required field is missing"
    elif message.startswith("Value error, "):
        message = message.removeprefix("Value error, ")
    elif message.startswith("Input should be"):  # pydantic's words, said as a plan file's error says them
        message = "must be" + message.removeprefix("Input should be") + f", got {first.get('input')!r}"
    raise SpecError(message, where=_dotted(full), source=loaded.where(full), hint=hint) from None


def _gpu_entry(raw: Any, loaded: LoadedYaml, path: tuple[Any, ...]) -> GpuEntry:
    allowed = (*GpuSpec.model_fields, *_GPU_META)
    if not isinstance(raw, dict):
        raise SpecError(
            "a GPU entry must be a mapping of fields", where=_dotted(path), source=loaded.where(path)
        )
    spec = {k: v for k, v in raw.items() if k not in _GPU_META}
    meta = {k: raw[k] for k in _GPU_META if k in raw and raw[k] is not None}
    spec = _convert_numbers(spec, _numeric_fields(GpuSpec), loaded, path)
    if "name" in spec and isinstance(spec["name"], str) and not spec["name"].strip():
        raise SpecError(
            "a GPU entry's name is empty",
            where=_dotted((*path, "name")),
            source=loaded.where((*path, "name")),
            hint="give it a name, lower-case with dashes, e.g. h100-sxm-800g",
        )
    try:
        return GpuEntry(spec=GpuSpec(**spec), origin=loaded.source, **_meta(meta, loaded, path))
    except ValidationError as error:
        _raise_validation(error, loaded, path, allowed)
        raise  # unreachable


def _model_entry(raw: Any, loaded: LoadedYaml, path: tuple[Any, ...]) -> ModelEntry:
    allowed = (*ModelShape.model_fields, *_MODEL_META)
    if not isinstance(raw, dict):
        raise SpecError(
            "a model entry must be a mapping of fields", where=_dotted(path), source=loaded.where(path)
        )
    shape = {k: v for k, v in raw.items() if k not in _MODEL_META}
    meta = {k: raw[k] for k in _MODEL_META if k in raw and raw[k] is not None}
    shape = _convert_numbers(shape, _numeric_fields(ModelShape), loaded, path)
    meta = _convert_numbers(
        meta, {"published_params": "float", "published_active_params": "float"}, loaded, path
    )
    if "name" not in shape or not isinstance(shape.get("name"), str) or not shape["name"].strip():
        raise SpecError(
            "every model entry needs a name", where=_dotted((*path, "name")), source=loaded.where(path)
        )
    try:
        return ModelEntry(shape=ModelShape(**shape), origin=loaded.source, **_meta(meta, loaded, path))
    except ValidationError as error:
        _raise_validation(error, loaded, path, allowed)
        raise  # unreachable


def _meta(meta: dict[str, Any], loaded: LoadedYaml, path: tuple[Any, ...]) -> dict[str, Any]:
    out = dict(meta)
    if "aliases" in out:
        aliases = out["aliases"]
        if not isinstance(aliases, list):  # pydantic would say "a valid tuple", a word no YAML file uses
            raise SpecError(
                f"must be a list of names, got {aliases!r}",
                where=_dotted((*path, "aliases")),
                source=loaded.where((*path, "aliases")),
                hint=f"write aliases: [{aliases}]" if isinstance(aliases, str) else "e.g. aliases: [h100]",
            )
        out["aliases"] = tuple(aliases)
    return out


def _hf_config_hint(data: dict[Any, Any], loaded: LoadedYaml) -> str | None:
    """Where a Hugging Face config.json given as a catalog file belongs (its keys read as a catalog's typos):
    a model, shown by `runplan catalog models PATH` and planned by `--model PATH` or `model: PATH`."""
    if not {"model_type", "architectures", "hidden_size"} & set(data):
        return None
    path = loaded.source
    return (
        f"a Hugging Face config.json, not a catalog: `runplan catalog models {path}` shows it; "
        f"--model {path} or the plan key model: {path} plans it"
    )


def _entries(loaded: LoadedYaml, required: bool) -> tuple[list[GpuEntry], list[ModelEntry]]:
    data = loaded.data
    if data is None and not required:
        return [], []
    if not isinstance(data, dict):
        raise SpecError(
            "a catalog file must be a mapping with 'gpus:' and/or 'models:' lists", source=loaded.where(())
        )
    for key in data:
        if key not in _TOP_KEYS:
            close = difflib.get_close_matches(str(key), _TOP_KEYS, n=1, cutoff=0.5)
            raise SpecError(
                f"unknown key '{key}'",
                where=str(key),
                source=loaded.where((key,)),
                hint=_hf_config_hint(data, loaded)
                or (f"did you mean '{close[0]}'?" if close else "use 'gpus:' and 'models:'"),
            )
    gpus: list[GpuEntry] = []
    models: list[ModelEntry] = []
    for kind, build, out in (("gpus", _gpu_entry, gpus), ("models", _model_entry, models)):
        items = data.get(kind)
        if items is None:
            continue
        if not isinstance(items, list):
            raise SpecError(f"'{kind}' must be a list of entries", where=kind, source=loaded.where((kind,)))
        seen: dict[str, int] = {}
        for i, raw in enumerate(items):
            entry = build(raw, loaded, (kind, i))
            key = normalize_name(entry.name)
            if key in seen:
                raise SpecError(
                    f"duplicate name '{entry.name}' (also {kind}[{seen[key]}])",
                    where=f"{kind}[{i}].name",
                    source=loaded.where((kind, i, "name")),
                    hint="give each entry its own name",
                )
            seen[key] = i
            out.append(entry)  # type: ignore[arg-type]
    return gpus, models


@functools.lru_cache(maxsize=1)
def _shipped() -> tuple[tuple[GpuEntry, ...], tuple[ModelEntry, ...]]:
    """The shipped catalogs, parsed once per process."""
    folder = resources.files("runplan").joinpath("configs")
    gpus, _ = _entries(
        load_yaml_text(folder.joinpath("gpus.yaml").read_text("utf-8"), "runplan/configs/gpus.yaml"),
        required=True,
    )
    _, models = _entries(
        load_yaml_text(folder.joinpath("models.yaml").read_text("utf-8"), "runplan/configs/models.yaml"),
        required=True,
    )
    return tuple(gpus), tuple(models)


def load_catalog(extra_files: Sequence[Path | str] = (), where: str | None = None) -> Catalog:
    """The shipped catalogs with each user file in ``extra_files`` merged over them, in order.

    A user entry whose (normalised) name equals an existing one replaces it in place (keeping the old
    entry's aliases unless it lists its own, so ``h100`` still reaches a replaced ``h100-sxm``); others
    are appended. ``where`` is the plan key that lists the files (``catalog``): an error reading or merging a
    file then names that key (``catalog``, or ``catalog[1]`` among several) before the file's own message, as
    ``calibration:`` and ``schedule.hyperparams:`` do.
    """
    shipped_gpus, shipped_models = _shipped()
    gpus = {normalize_name(e.name): e for e in shipped_gpus}
    models = {normalize_name(e.name): e for e in shipped_models}
    files = ["runplan/configs/gpus.yaml", "runplan/configs/models.yaml"]
    count_warnings: dict[str, str] = {}
    for index, path in enumerate(extra_files):
        try:
            _merge_file(path, gpus, models, count_warnings)
        except SpecError as error:
            if where is None:
                raise
            key = where if len(extra_files) == 1 else f"{where}[{index}]"
            raise SpecError(error.one_line(), where=key) from None
        files.append(str(path))
    return Catalog(gpus.values(), models.values(), files, count_warnings)


def _merge_file(path: Path | str, gpus: dict, models: dict, count_warnings: dict[str, str]) -> None:
    """Read one user catalog file and merge its entries over ``gpus`` and ``models`` (in place)."""
    loaded = load_yaml_file(path)
    user_gpus, user_models = _entries(loaded, required=False)
    for i, model in enumerate(user_models):  # shipped entries: tests/test_model.py, with named reasons
        # a later file's entry replaces an earlier one's, and with it any caution about the earlier shape
        count_warnings.pop(normalize_name(model.name), None)
        if (warning := published_count_warning(model)) is not None:
            where = f"{loaded.where(('models', i))}: models[{i}] '{model.name}'"
            count_warnings[normalize_name(model.name)] = f"{where}: {warning}"
    for table, entries in ((gpus, user_gpus), (models, user_models)):
        for entry in entries:
            key = normalize_name(entry.name)
            old = table.get(key)
            if old is not None and not entry.aliases:
                entry = entry.model_copy(update={"aliases": old.aliases})
            table[key] = entry
    _check_aliases("gpus", gpus, user_gpus, loaded)
    _check_aliases("models", models, user_models, loaded)


# Megatron-LM pads the vocabulary to a multiple of --make-vocab-size-divisible-by (default 128;
# megatron/training/arguments.py, applied in tokenizer.py `_vocab_size_with_padding`), and a checkpoint holds the
# padded rows: a config's unpadded vocab_size is short of the count by (padded - V)·h per matrix.
_VOCAB_MULTIPLE = 128


def _rounding_allowance(published: float) -> tuple[float, int]:
    """One unit in the last significant digit written (``8.03B``: 3 digits, 1e7; ``8B``: 1e9; an exact count: 0)
    and the digit count. A published size is the exact count rounded to the digits it shows (within half a
    unit) or cut to them (up to a unit above): Qwen2.5-7B's card says 7.61B for 7,615,616,512 (:func:`_within`).
    """
    from decimal import Decimal

    # 15 significant digits: "8.03B" parses to 8.03 × 1e9 = 8030000000.000001, whose repr is no digit a user wrote
    written = Decimal(f"{published:.15g}").normalize().as_tuple()
    exponent = int(written.exponent)
    return (10.0**exponent if exponent > 0 else 0.0), len(written.digits)


def _within(count: int, published: float, unit: float) -> bool:
    """``count`` could be published as ``published``: rounded (±unit/2) or cut (up to a unit above). Every shipped
    shape is within half a unit of its figure, but Chinchilla's and Gopher's, short by 7-8% (tests)."""
    return -unit / 2 <= count - published < unit if unit else count == published


def _mlp_switch(shape: ModelShape) -> tuple[dict[str, Any], str]:
    """The MLP kind with the other matrix count: an ungated 'gelu' as GeGLU, a gated one as 'gelu'."""
    other = "gelu" if shape.gated else "geglu"
    return {"mlp": other}, f"mlp: {other}"


def _count_explanations(shape: ModelShape, published: float, unit: float) -> list[str]:
    """The single switches of ``shape`` (tied head, biases, vocab padding) whose count ``published`` could be
    (:func:`_within`), and a published figure that is the shape's non-embedding or active count instead."""
    padded = -(-shape.vocab_size // _VOCAB_MULTIPLE) * _VOCAB_MULTIPLE
    tied = not shape.tied_embeddings
    switches: list[tuple[dict[str, Any], str]] = [
        ({"tied_embeddings": tied}, f"tied_embeddings: {str(tied).lower()}"),
        ({"qkv_bias": not shape.qkv_bias}, f"qkv_bias: {str(not shape.qkv_bias).lower()}"),
        ({"linear_bias": not shape.linear_bias}, f"linear_bias: {str(not shape.linear_bias).lower()}"),
        ({"vocab_size": padded}, f"vocab_size: {padded} (padded to a multiple of {_VOCAB_MULTIPLE})"),
        # Gemma-like mistakes: post-norms or q/k norms left out (Gemma 2/3, model.py), and "Gemma uses GeLU"
        # written as the ungated mlp: gelu (2 matrices) for GeGLU's 3 (or the reverse)
        ({"post_norms": not shape.post_norms}, f"post_norms: {str(not shape.post_norms).lower()}"),
        ({"qk_norm": not shape.qk_norm}, f"qk_norm: {str(not shape.qk_norm).lower()}"),
        _mlp_switch(shape),
    ]
    found = []
    for update, label in switches:
        count = shape.model_copy(update=update).total_params
        if count != shape.total_params and _within(count, published, unit):
            found.append(f"{label} would count {count:,}")
    for what, count in (("non-embedding", shape.non_embedding_params), ("active", shape.active_params)):
        if count != shape.total_params and _within(count, published, unit):
            found.append(f"published_params looks like the {what} count ({count:,}); write the total")
    return found


def published_count_warning(entry: ModelEntry) -> str | None:
    """One line when ``entry``'s shape does not count its ``published_params`` as the digits written allow
    (rounded or cut, :func:`_within`): both counts, the gap, and the switch that would close it, else what to
    compare with the model's config. None when it matches or nothing is published."""
    published = entry.published_params
    if published is None:
        return _active_count_warning(entry)
    counted = entry.shape.total_params
    unit, _ = _rounding_allowance(published)
    if _within(counted, published, unit):
        return _active_count_warning(entry)
    allows = _allowance_text(published)
    causes = _count_explanations(entry.shape, published, unit)
    cause = (
        "likely cause: " + " or ".join(causes)
        if causes
        else "no single switch (tied_embeddings, qkv_bias, linear_bias, vocab padding) explains it, nor post_norms, "
        "qk_norm or the MLP kind: compare n_layers, d_model, ffn_hidden, n_kv_heads, head_dim and vocab_size with "
        "the model's config.json, and check that published_params is the total, embeddings included"
    )
    if entry.shape.mtp_layers and published > counted:  # model.py: MTP modules are counted apart (mtp_params)
        cause += (
            f"; the shape's {entry.shape.mtp_layers} MTP module(s) (mtp_params {entry.shape.mtp_params:,}) are not "
            "in its total: a figure that includes them (DeepSeek-V3's 685B checkpoint, 671B + MTP) is not it"
        )
    return (
        f"the shape counts {counted:,} parameters, published_params {published:,.0f} "
        f"({counted - published:+,.0f}, {100 * (counted - published) / published:+.2g}%; {allows}); {cause}"
    )


def _allowance_text(published: float) -> str:
    """What the digits of a published figure allow (:func:`_rounding_allowance`), in words."""
    unit, digits = _rounding_allowance(published)
    if not unit:
        return "written to the parameter"
    return (
        f"{digits} digit{'s' if digits > 1 else ''}, rounded or cut, allow "
        f"{-50 * unit / published:.2g}% to +{100 * unit / published:.2g}%"
    )


def _active_count_warning(entry: ModelEntry) -> str | None:
    """One line when a MoE entry's ``published_active_params`` is not its shape's active count (model.py: top-k of
    the routed experts), as :func:`published_count_warning` does for the total; the top_k or shared-expert count
    one off that would close the gap is named."""
    shape, published = entry.shape, entry.published_active_params
    if published is None or not shape.is_moe:
        return None
    counted = shape.active_params
    unit, _ = _rounding_allowance(published)
    if _within(counted, published, unit):
        return None
    tries = [("top_k", k) for k in (shape.top_k - 1, shape.top_k + 1) if 1 <= k <= shape.n_experts]
    tries += [
        ("n_shared_experts", n) for n in (shape.n_shared_experts - 1, shape.n_shared_experts + 1) if n >= 0
    ]
    causes = []
    for key, value in tries:
        count = shape.model_copy(update={key: value}).active_params
        if _within(count, published, unit):
            causes.append(f"{key}: {value} would count {count:,}")
    cause = (
        "likely cause: " + " or ".join(causes)
        if causes
        else "compare top_k, n_shared_experts, expert_ffn_hidden and n_dense_layers with the model's config.json"
    )
    return (
        f"the shape's active count is {counted:,}, published_active_params {published:,.0f} "
        f"({counted - published:+,.0f}, {100 * (counted - published) / published:+.2g}%; "
        f"{_allowance_text(published)}); {cause}"
    )


def _check_aliases(
    kind: str,
    table: Mapping[str, GpuEntry | ModelEntry],
    entries: Sequence[GpuEntry | ModelEntry],
    loaded: LoadedYaml,
) -> None:
    """A SpecError at ``kind[i].aliases`` when an alias a user entry lists already reaches another entry (its
    name, or one of its aliases): lookup would quietly answer with the other entry, never with this one."""
    for i, entry in enumerate(entries):
        own = normalize_name(entry.name)
        # two aliases alike are reported at the later entry; an alias that is a name, at the alias
        later = {normalize_name(e.name) for e in entries[i + 1 :]}
        for alias in entry.aliases:
            key = normalize_name(alias)
            if key == own:
                continue
            other = table.get(key)
            if other is not None:
                taken = f"is the name of another entry, '{other.name}'"
            else:
                other = next(
                    (
                        e
                        for k, e in table.items()
                        if k != own and k not in later and key in map(normalize_name, e.aliases)
                    ),
                    None,
                )
                if other is None:
                    continue
                taken = f"already reaches '{other.name}' (one of its aliases)"
            raise SpecError(
                f"alias '{alias}' {taken}",
                where=f"{kind}[{i}].aliases",
                source=loaded.where((kind, i, "aliases")),
                hint="drop it, or name an alias no other entry uses",
            )


@functools.lru_cache(maxsize=1)
def shipped_catalog() -> Catalog:
    """The shipped catalogs alone (cached)."""
    return load_catalog(())


__all__ = [
    "NEAREST_FAMILY_HINT",
    "Catalog",
    "GpuEntry",
    "ModelEntry",
    "chip_families",
    "family_from_names",
    "gpu_families",
    "load_catalog",
    "normalize_name",
    "published_count_warning",
    "shipped_catalog",
    "with_family",
]
