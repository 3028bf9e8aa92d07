"""`runplan catalog gpus|models [NAME]`: list the shipped (and user) catalogs, as a table or JSON.

JSON keys (stable, SI base units): GPUs carry every ``GpuSpec`` field (``family`` as plans use it: stated, else
read from the name) plus ``family_read_from_name``, ``aliases`` and ``note``; models
carry ``name``, ``family``, ``total_params``, ``embedding_params``, ``non_embedding_params``,
``active_params``, ``mtp_params`` (multi-token-prediction modules, not in the total; 0 without),
``published_params``, ``published_active_params``, ``aliases``, ``note`` and every
``ModelShape`` field. Without NAME the output is a list; with NAME it is one object.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from runplan.cli.common import handle_errors, print_json

if TYPE_CHECKING:
    from runplan.catalog import Catalog, GpuEntry, ModelEntry
    from runplan.errors import SpecError
    from runplan.hardware import GpuSpec

KINDS = ("gpus", "models")

#: Each field `catalog gpus NAME` shows: (unit, one-line meaning), the unit docs/catalog.md's "GPU fields (units)"
#: table gives it (tests/test_catalog_gpus_name_says_what_each_field_means.py checks the two agree); bandwidths
#: are one direction per GPU and rates dense, as runplan.hardware reads them
GPU_FIELD_MEANINGS: dict[str, tuple[str, str]] = {
    "name": ("", "catalog name, lower-case with dashes (a plan's cluster.gpu)"),
    "hbm_bytes": ("bytes", "device memory, decimal as marketed (80 GB = 80e9)"),
    "bf16_flops": ("FLOP/s", "dense bf16 tensor-core peak (vendors' 'with sparsity' figures halved)"),
    "fp8_flops": ("FLOP/s", "dense fp8 tensor-core peak; (none) where the GPU has none"),
    "hbm_bandwidth_bytes_per_s": ("bytes/s", "HBM bandwidth"),
    "intra_node_bandwidth_bytes_per_s": (
        "bytes/s",
        "NVLink / fabric bandwidth per GPU, one direction (H100: 900 GB/s total = 450e9)",
    ),
    "intra_node_link_bytes_per_s": (
        "bytes/s",
        "one peer-to-peer link of a node without a switch, one direction; (none): a switched node",
    ),
    "inter_node_bandwidth_bytes_per_s": (
        "bytes/s",
        "scale-out NIC bandwidth per GPU, one direction (400 Gb/s = 50e9)",
    ),
    "gpus_per_node": ("GPUs", "how many in one node / NVLink domain"),
    "tdp_watts": ("W", "board power (TDP)"),
    "family": ("", "architecture; picks the time model's calibrated efficiencies"),
    "source": ("", "datasheet(s) the numbers come from"),
    "aliases": ("", "other names that reach this entry"),
    "note": ("", "assumptions behind the numbers, e.g. an assumed NIC per GPU"),
}


#: Each field `catalog models NAME` shows: (unit, one-line meaning), the unit docs/catalog.md's "Model field units"
#: table gives it (tests/test_catalog_models_name_says_what_each_field_means.py checks the two agree and that
#: every ModelShape field has one). Counts as runplan.model counts them (its module docstring, docs/catalog.md
#: "Counting conventions"); ``dims`` are elements of one vector (a width or a rank)
MODEL_FIELD_MEANINGS: dict[str, tuple[str, str]] = {
    "name": ("", "catalog name (a plan's model:)"),
    "family": ("", "family of presets; sizes (70b) pick from llama-3.1"),
    "total_params": ("parameters", "every weight, embeddings included"),
    # token embedding V·h, an untied output head V·h more, learned position rows P·h (runplan.model
    # ModelShape.embedding_params): Mixtral 8x7B, untied, 2 × 32,000 × 4,096 = 262,144,000
    "embedding_params": ("parameters", "V·h tied, 2·V·h untied; +P·h positions"),
    "non_embedding_params": ("parameters", "total − embedding (Kaplan's N)"),
    "active_params": ("parameters", "used per token (MoE: top_k experts)"),
    "mtp_params": ("parameters", "MTP modules, not in the total"),
    "published_params": ("parameters", "total as the source publishes it"),
    "published_active_params": ("parameters", "MoE active count as published"),
    "aliases": ("", "other names that reach this entry"),
    "note": ("", "what the entry assumes; how its count was checked"),
    "n_layers": ("layers", "Transformer blocks L"),
    "d_model": ("dims", "hidden size h, each token's vector"),
    "n_heads": ("heads", "query heads a"),
    "n_kv_heads": ("heads", "key/value heads; n_heads for MHA"),
    "head_dim": ("dims", "query/key size per head (MLA: no-RoPE part)"),
    "ffn_hidden": ("dims", "dense MLP inner size F"),
    "mlp": ("", "gelu (2 matrices), swiglu or geglu (3)"),
    "vocab_size": ("tokens", "vocabulary V, padded as trained"),
    "tied_embeddings": ("", "output head shares the token embedding"),
    "norm": ("", "layernorm (weight, bias) or rmsnorm (weight)"),
    "linear_bias": ("", "every linear layer has a bias (GPT-2/3)"),
    "qkv_bias": ("", "q, k, v projections alone have biases (Qwen2)"),
    "qk_norm": ("", "RMSNorm on queries and keys (Qwen3, Gemma 3)"),
    "post_norms": ("", "norms after attention and MLP too (Gemma 2/3)"),
    "sliding_window": ("tokens", "keys a windowed query sees; 0: no window"),
    "global_every": ("layers", "with a window, every k-th is global"),
    "learned_positions": ("positions", "learned position rows; 0: RoPE"),
    "attention": ("", "gqa (MHA, MQA, GQA) or mla (DeepSeek latent)"),
    "q_lora_rank": ("dims", "MLA query rank; 0: a full-rank q"),
    "kv_lora_rank": ("dims", "MLA compressed key/value rank"),
    "qk_rope_head_dim": ("dims", "MLA RoPE query/key size per head"),
    "v_head_dim": ("dims", "value size per head; 0: head_dim"),
    "n_experts": ("experts", "routed per MoE layer E; 0: dense"),
    "top_k": ("experts", "routed experts each token uses"),
    "expert_ffn_hidden": ("dims", "inner size of one expert's MLP"),
    "n_shared_experts": ("experts", "always active, per MoE layer"),
    "n_dense_layers": ("layers", "leading dense-MLP layers before MoE"),
    "rope_theta": ("", "RoPE base θ; (none): no RoPE or unpublished"),
    "rope_scaling": ("", "RoPE scaling method and its factors"),
    "rope_local_theta": ("", "window layers' RoPE base; (none): rope_theta"),
    "norm_eps": ("", "epsilon of every norm; (none): unpublished"),
    "init_std": ("", "std of the normal weight init; (none): unpublished"),
    "router_score": ("", "MoE: softmax or sigmoid router scores"),
    "router_expert_bias": ("", "MoE: bias for top-k choice only (DeepSeek-V3)"),
    "router_groups": ("groups", "MoE group-limited routing; 0: none"),
    "router_group_topk": ("groups", "MoE groups a token may route to"),
    "router_topk_scale": ("", "MoE: factor on the routed experts' weights"),
    "router_topk_norm": ("", "MoE: top-k weights divided by their sum"),
    "router_aux_loss_coef": ("", "MoE: balance loss weight; (none): unpublished"),
    "router_aux_loss_scope": ("", "MoE: tokens the balance loss counts over"),
    "mtp_layers": ("modules", "multi-token prediction (DeepSeek-V3)"),
    "mtp_loss_weight": ("", "MTP loss weight λ; (none): the engine's default"),
    "source": ("", "config.json or paper table of the shape"),
}


def gpu_record(entry: GpuEntry, catalog: Catalog) -> dict[str, Any]:
    """JSON record of a catalog GPU: every GpuSpec field, ``family`` the one plans use (as stated, else read from
    the name and aliases: :meth:`runplan.catalog.Catalog.gpu_spec`; null where neither says it, and every planning
    command refuses the GPU), then ``family_read_from_name``, aliases and note."""
    spec = _planned(entry, catalog)[0]
    record = {}
    for key, value in spec.model_dump(mode="json").items():
        record[key] = value
        if key == "family":
            record["family_read_from_name"] = entry.spec.family is None and value is not None
    return {**record, "aliases": list(entry.aliases), "note": entry.note}


def _planned(entry: GpuEntry, catalog: Catalog) -> tuple[GpuSpec, SpecError | None]:
    """``entry``'s spec with the family plans use, and None; or its spec as written and the refusal every planning
    command gives it (a family neither stated nor read from its names: runplan.catalog.with_family)."""
    from runplan.errors import SpecError

    try:
        return catalog.gpu_spec(entry), None
    except SpecError as error:
        return entry.spec, error


def _family_warning(error: SpecError) -> str:
    """The one-line caution for a listed GPU that every planning command refuses: the refusal's words and fix."""
    return f"{error.message}; every planning command refuses it ({error.hint})"


def model_record(entry: ModelEntry) -> dict[str, Any]:
    """JSON record of a catalog model: the counts first, then every ModelShape field."""
    shape = entry.shape
    record: dict[str, Any] = {
        "name": shape.name,
        "family": entry.family,
        "total_params": shape.total_params,
        "embedding_params": shape.embedding_params,
        "non_embedding_params": shape.non_embedding_params,
        "active_params": shape.active_params,
        # multi-token-prediction modules, trained beside the model and not in total_params (model.py; DeepSeek-V3)
        "mtp_params": shape.mtp_params,
        "published_params": entry.published_params,
        "published_active_params": entry.published_active_params,
        "aliases": list(entry.aliases),
        "note": entry.note,
    }
    for key, value in shape.model_dump(mode="json").items():
        record.setdefault(key, value)
    return record


def _model_records(cat: Catalog, name: str | None) -> list[dict[str, Any]]:
    """Every catalog model, or the one NAME names: a catalog name or alias, or a local Hugging Face config.json
    (or a checkpoint folder holding one), read as `--model PATH` reads it (runplan.hf_config)."""
    from runplan.hf_config import is_config_path, load_config_shape

    if name is None:
        return [model_record(e) for e in cat.model_entries]
    if not is_config_path(name):
        return [model_record(cat.model_entry(name, where="NAME"))]
    shape = load_config_shape(name, where="NAME")
    record: dict[str, Any] = {
        "name": shape.name,
        "family": None,
        "total_params": shape.total_params,
        "embedding_params": shape.embedding_params,
        "non_embedding_params": shape.non_embedding_params,
        "active_params": shape.active_params,
        "mtp_params": shape.mtp_params,
        "published_params": None,
        "published_active_params": None,
        "aliases": [],
        "note": f"read from {name} (Hugging Face config.json), as `--model {name}` plans it",
    }
    for key, value in shape.model_dump(mode="json").items():
        record.setdefault(key, value)
    return [record]


def _kind(kind: str, catalog_files: list[Path]) -> str:
    """'gpus' or 'models' for KIND; else a SpecError at KIND. A GPU or model name given as KIND (`runplan
    catalog h100-sxm`) is answered with the command that shows it."""
    from runplan.catalog import load_catalog, normalize_name
    from runplan.errors import SpecError

    key = normalize_name(kind)
    singular = {"gpu": "gpus", "model": "models"}
    key = singular.get(key, key)
    if key in KINDS:
        return key
    import difflib

    close = difflib.get_close_matches(key, KINDS, n=1, cutoff=0.4)
    hint = f"did you mean '{close[0]}'?" if close else "use 'gpus' or 'models'"
    cat = load_catalog(catalog_files)
    for listed, lookup in (("gpus", cat.gpu_entry), ("models", cat.model_entry)):
        try:
            entry = lookup(kind)
        except SpecError:
            continue
        command = f"runplan catalog {listed} {entry.name}"
        if not entry.origin.startswith("runplan/configs/"):  # a user file's entry: shown only with that file
            import shlex

            command += "".join(f" --catalog {shlex.quote(str(path))}" for path in catalog_files)
        hint = f"'{entry.name}' is in the {listed} catalog: `{command}`"
    raise SpecError(f"unknown catalog '{kind}'", where="KIND", hint=hint)


@handle_errors
def catalog(
    kind: str = typer.Argument(..., metavar="KIND", help="'gpus' or 'models'."),
    name: str | None = typer.Argument(None, metavar="NAME", help="One entry (name or alias) in detail."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON (SI base units) instead of a table."),
    catalog_files: list[Path] = typer.Option(
        [], "--catalog", metavar="PATH", help="A user catalog file merged over the shipped one (repeatable)."
    ),
) -> None:
    """List the GPU or model catalog (or one entry with NAME); add your own entries with --catalog."""
    from runplan.catalog import load_catalog
    from runplan.cli.common import warn

    kind = _kind(kind, catalog_files)
    cat = load_catalog(catalog_files)
    for warning in cat.warnings:  # a user model whose shape misses its published count (stderr)
        warn(warning)
    if kind == "gpus":
        gpus = [cat.gpu_entry(name, where="NAME")] if name else list(cat.gpu_entries)
        from runplan.catalog import NEAREST_FAMILY_HINT

        for k, error in enumerate(filter(None, (_planned(e, cat)[1] for e in gpus))):
            text = _family_warning(error)  # the nearest-family list once, not once per GPU
            warn(text if k == 0 else text.replace(NEAREST_FAMILY_HINT, "nearest family as above"))
        records = [gpu_record(e, cat) for e in gpus]
    else:
        records = _model_records(cat, name)
    if as_json:
        print_json(records[0] if name else records)
        return
    if name:
        _render_one(records[0], GPU_FIELD_MEANINGS if kind == "gpus" else MODEL_FIELD_MEANINGS)
    elif kind == "gpus":
        _render_gpus(records)
    else:
        _render_models(records)


def _render_one(record: dict[str, Any], meanings: dict[str, tuple[str, str]]) -> None:
    """One entry, a field a row, each value with its field's unit and meaning (``meanings``) on the line below
    it, dimmed (a third column left the value 21 cells at 80 columns, folding `ampere (read from the name)`)."""
    from rich.table import Table
    from rich.text import Text

    from runplan.cli.common import console

    table = Table(title=str(record["name"]), show_header=False)
    # the field column keeps its longest name whole (rich shrinks a wrapping column with the others: at 60 columns
    # ``intra_node_bandwidth_byte…``); the value and its meaning fold instead
    table.add_column("field", style="bold", no_wrap=True)
    table.add_column("value", overflow="fold")
    for key, value in record.items():
        if key == "family_read_from_name":  # said beside the family
            continue
        if key == "family" and record.get("family_read_from_name"):
            value = f"{value} (read from the name)"
        if isinstance(value, list):
            value = ", ".join(map(str, value))
        elif isinstance(value, int | float) and not isinstance(value, bool) and key.endswith("_params"):
            # a count, as the computed ones beside it (published counts are read as floats: 6.71e+11)
            value = f"{value:,.0f}"
        elif isinstance(value, float):
            value = f"{value:.6g}"
        unit, meaning = meanings[key]
        shown = Text((_cell(value) or "(none)") + "\n")  # never the meaning where the value would be
        table.add_row(key, shown.append(f"{unit}: {meaning}" if unit else meaning, style="dim"))
    console().print(table)


def _cell(value: Any) -> str:
    """A field as the user writes it in a catalog file: a mapping as ``key: value`` pairs (unset ones left out),
    not a Python dict with ``None``."""
    if value is None:
        return ""
    if isinstance(value, bool):  # YAML's spelling, not Python's True
        return "true" if value else "false"
    if isinstance(value, dict):
        return ", ".join(f"{k}: {_cell(v)}" for k, v in value.items() if v is not None)
    return str(value)


def _render_gpus(records: list[dict[str, Any]]) -> None:
    from runplan.cli.common import console
    from runplan.report.tables import fitted_table

    headers = [
        "name",
        "HBM GB",
        "bf16 TFLOP/s",
        "fp8 TFLOP/s",
        "HBM TB/s",
        "intra GB/s",
        "inter GB/s",
        "GPUs/node",
        "TDP W",
    ]
    rows = [
        [
            r["name"],
            f"{r['hbm_bytes'] / 1e9:g}",
            f"{r['bf16_flops'] / 1e12:g}",
            "-" if r["fp8_flops"] is None else f"{r['fp8_flops'] / 1e12:g}",
            f"{r['hbm_bandwidth_bytes_per_s'] / 1e12:g}",  # the datasheet's digits (1.555, 2.039 TB/s)
            f"{r['intra_node_bandwidth_bytes_per_s'] / 1e9:g}",
            f"{r['inter_node_bandwidth_bytes_per_s'] / 1e9:g}",
            str(r["gpus_per_node"]),
            f"{r['tdp_watts']:g}",
        ]
        for r in records
    ]
    out = console()
    title = "GPUs (dense FLOP/s; bandwidth one direction per GPU)"
    out.print(fitted_table(out, headers, rows, title=title, left=("name",), box_style="HEAVY_HEAD"))


def _render_models(records: list[dict[str, Any]]) -> None:
    from runplan.cli.common import console
    from runplan.report.tables import fitted_table

    headers = [
        "name",
        "family",
        "L",
        "d_model",
        "heads",
        "kv",
        "FFN",
        "vocab",
        "experts",
        "total",
        "non-emb",
        "active",
        "published",
    ]
    out = console()
    title = "Models (parameters in billions)"
    rows = [_model_row(r) for r in records]
    out.print(fitted_table(out, headers, rows, title=title, left=("name", "family"), box_style="HEAVY_HEAD"))


def _model_row(r: dict[str, Any]) -> list[str]:
    experts = (
        f"{r['top_k']}/{r['n_experts']}" + (f"+{r['n_shared_experts']}" if r["n_shared_experts"] else "")
        if r["n_experts"]
        else "-"
    )
    ffn = str(r["ffn_hidden"])
    if r["n_experts"]:  # the expert size; the dense size too where leading dense layers exist
        ffn = str(r["expert_ffn_hidden"]) + (f" ({r['ffn_hidden']} dense)" if r["n_dense_layers"] else "")
    return [
        r["name"],
        r["family"] or "-",
        str(r["n_layers"]),
        str(r["d_model"]),
        str(r["n_heads"]),
        str(r["n_kv_heads"]),
        ffn,
        str(r["vocab_size"]),
        experts,
        f"{r['total_params'] / 1e9:.2f}",
        f"{r['non_embedding_params'] / 1e9:.2f}",
        f"{r['active_params'] / 1e9:.2f}",
        "-" if r["published_params"] is None else f"{r['published_params'] / 1e9:g}",
    ]


def register(app: typer.Typer) -> None:
    app.command(name="catalog")(catalog)
