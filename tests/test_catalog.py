"""GPU and model catalogs: shipped values, lookup, user catalogs and their errors, `runplan catalog`."""

from __future__ import annotations

import json
import time
from importlib import resources
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from runplan.catalog import load_catalog, normalize_name, shipped_catalog
from runplan.cli.app import app
from runplan.errors import SpecError
from runplan.hardware import GpuSpec

CATALOG = shipped_catalog()


# ---- shipped GPUs ---------------------------------------------------------------------------------
def test_required_gpus_are_shipped():
    assert {"a100-40gb", "a100-80gb", "h100-sxm", "h100-pcie", "h200", "b200", "mi300x"} <= {
        g.name for g in CATALOG.gpus
    }


@pytest.mark.parametrize(
    ("name", "hbm", "bf16", "hbm_bw", "intra"),
    [
        ("a100-40gb", 40e9, 312e12, 1555e9, 300e9),
        ("a100-80gb", 80e9, 312e12, 2039e9, 300e9),
        ("h100-sxm", 80e9, 989e12, 3.35e12, 450e9),  # NVLink 900 GB/s both ways → 450e9 one way
        ("h100-pcie", 80e9, 756e12, 2.0e12, 64e9),
        ("h200", 141e9, 989e12, 4.8e12, 450e9),
        ("b200", 180e9, 2250e12, 8.0e12, 900e9),
        ("mi300x", 192e9, 1307.4e12, 5.3e12, 448e9),
    ],
)
def test_datasheet_values(name, hbm, bf16, hbm_bw, intra):
    gpu = CATALOG.gpu(name)
    assert (
        gpu.hbm_bytes,
        gpu.bf16_flops,
        gpu.hbm_bandwidth_bytes_per_s,
        gpu.intra_node_bandwidth_bytes_per_s,
    ) == (hbm, bf16, hbm_bw, intra)


@pytest.mark.parametrize(
    ("name", "fp8", "inter", "per_node", "tdp"),
    [
        # dense fp8 = the datasheet's "with sparsity" figure halved; scale-out = the reference system's NIC per GPU
        ("a100-40gb", None, 25e9, 8, 400.0),  # no fp8; DGX A100 8× HDR 200 Gb/s; SXM4 400 W
        ("a100-80gb", None, 25e9, 8, 400.0),
        ("h100-sxm", 1979e12, 50e9, 8, 700.0),  # 3,958 sparse; DGX H100 8× NDR 400 Gb/s; up to 700 W
        ("h100-pcie", 1513e12, 50e9, 8, 350.0),  # 3,026 sparse; 400 Gb/s assumed; 300-350 W
        ("h200", 1979e12, 50e9, 8, 700.0),  # 3,958 sparse; DGX H200 8× ConnectX-7 400 Gb/s; up to 700 W
        ("b200", 4500e12, 50e9, 8, 1000.0),  # HGX B200 72 PFLOP/s sparse / 8 / 2; DGX B200 8× CX-7 400 Gb/s
        ("mi300x", 2614.9e12, 50e9, 8, 750.0),  # 5,229.8 sparse; 400 Gb/s assumed; 750 W
    ],
)
def test_datasheet_fp8_network_node_and_power(name, fp8, inter, per_node, tdp):
    gpu = CATALOG.gpu(name)
    assert (
        gpu.fp8_flops,
        gpu.inter_node_bandwidth_bytes_per_s,
        gpu.gpus_per_node,
        gpu.tdp_watts,
    ) == (fp8, inter, per_node, tdp)


@pytest.mark.parametrize("gpu", CATALOG.gpus, ids=lambda g: g.name)
def test_gpu_entries_are_sane(gpu: GpuSpec):
    assert 16e9 <= gpu.hbm_bytes <= 300e9
    assert 100e12 <= gpu.bf16_flops <= 5e15
    if gpu.fp8_flops is not None:
        assert gpu.fp8_flops == pytest.approx(2 * gpu.bf16_flops, rel=0.01)  # fp8 doubles the dense rate
    assert gpu.inter_node_bandwidth_bytes_per_s < gpu.intra_node_bandwidth_bytes_per_s
    assert gpu.inter_node_bandwidth_bytes_per_s in (25e9, 50e9, 100e9)  # 200/400/800 Gb/s per GPU
    # machine balance (FLOP per HBM byte) of current GPUs lies between about 100 and 400
    assert 100 < gpu.bf16_flops / gpu.hbm_bandwidth_bytes_per_s < 400
    assert gpu.gpus_per_node == 8
    assert 300 <= gpu.tdp_watts <= 1200
    assert gpu.source and "datasheet" in gpu.source.lower()
    assert gpu.name == normalize_name(gpu.name)


def test_ampere_has_no_fp8():
    assert CATALOG.gpu("a100-80gb").fp8_flops is None
    assert CATALOG.gpu("h100-sxm").fp8_flops == 1979e12


def test_every_gpu_field_is_written_out():
    text = resources.files("runplan").joinpath("configs", "gpus.yaml").read_text("utf-8")
    for raw in yaml.safe_load(text)["gpus"]:
        assert set(GpuSpec.model_fields) <= set(raw), raw["name"]
        assert {"aliases", "note"} <= set(raw)


# ---- lookup -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("h100", "h100-sxm"),
        ("H100-SXM", "h100-sxm"),
        ("H100_SXM", "h100-sxm"),
        (" a100 ", "a100-80gb"),
        ("MI300X", "mi300x"),
        ("h200-sxm", "h200"),
    ],
)
def test_gpu_lookup_by_name_or_alias(text, name):
    assert CATALOG.gpu(text).name == name


def test_model_lookup_case_insensitive_and_alias():
    assert CATALOG.model("Llama-3.1-70B").name == "llama-3.1-70b"
    assert CATALOG.model("mixtral").name == "mixtral-8x7b"
    assert CATALOG.family_of("LLAMA-3.1-8B") == "llama-3.1"


def test_gpu_miss_suggests():
    with pytest.raises(SpecError) as info:
        CATALOG.gpu("h10", where="cluster.gpu")
    assert str(info.value) == "cluster.gpu: unknown GPU 'h10' (did you mean 'h100-sxm'?)"
    assert info.value.hint == "did you mean 'h100-sxm'?"


def test_model_miss_suggests_or_lists():
    with pytest.raises(SpecError, match=r"did you mean 'llama-3-70b'\?"):
        CATALOG.model("lama-3-70b")
    with pytest.raises(SpecError, match=r"known: .*deepseek-v3.*runplan catalog models"):
        CATALOG.model("qqqqqqqqqq")


def test_shipped_catalog_loads_fast_and_is_cached():
    start = time.perf_counter()
    for _ in range(20):
        load_catalog()
    assert (time.perf_counter() - start) / 20 < 0.02  # merges only; the YAML is parsed once
    assert shipped_catalog() is shipped_catalog()


# ---- user catalogs --------------------------------------------------------------------------------
def _write(tmp_path: Path, text: str, name: str = "mine.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


USER = """\
gpus:
  - name: h100-sxm            # replaces the shipped entry in place
    hbm_bytes: 80GB
    bf16_flops: 989e12
    fp8_flops: null
    hbm_bandwidth_bytes_per_s: 3.35e12
    intra_node_bandwidth_bytes_per_s: 450e9
    inter_node_bandwidth_bytes_per_s: 100e9
    gpus_per_node: 8
    tdp_watts: 700
    source: our cluster
  - name: tiny-gpu
    aliases: [tg]
    hbm_bytes: 24GiB
    bf16_flops: 150T
    hbm_bandwidth_bytes_per_s: 1e12
    intra_node_bandwidth_bytes_per_s: 32e9
    inter_node_bandwidth_bytes_per_s: 12.5e9
    gpus_per_node: 4
    tdp_watts: 300
    family: hopper            # a name that says no chip states its family (or planning refuses it)
models:
  - name: my-1b
    family: mine
    n_layers: 16
    d_model: 2048
    n_heads: 32
    n_kv_heads: 8
    head_dim: 64
    ffn_hidden: 8192
    mlp: swiglu
    vocab_size: 128256
    tied_embeddings: true
    norm: rmsnorm
    published_params: 1.24B
"""


def test_user_catalog_merges_over_shipped(tmp_path):
    catalog = load_catalog([_write(tmp_path, USER)])
    names = [g.name for g in catalog.gpus]
    assert names.index("h100-sxm") == [g.name for g in CATALOG.gpus].index("h100-sxm")  # replaced in place
    assert catalog.gpu("h100").inter_node_bandwidth_bytes_per_s == 100e9  # shipped alias still reaches it
    assert catalog.gpu("h100").fp8_flops is None
    assert catalog.gpu("TG").hbm_bytes == 24 * 2**30
    assert catalog.gpu("tiny-gpu").bf16_flops == 150e12
    assert catalog.model("my-1b").total_params == pytest.approx(1.2358e9, rel=1e-3)  # Llama 3.2 1B shape
    assert catalog.model_entry("my-1b").published_params == 1.24e9
    assert catalog.model_entry("my-1b").origin.endswith("mine.yaml")
    assert len(catalog.models) == len(CATALOG.models) + 1
    assert CATALOG.gpu("h100").inter_node_bandwidth_bytes_per_s == 50e9  # the shipped catalog is untouched


def test_later_user_files_win(tmp_path):
    first = _write(tmp_path, USER, "a.yaml")
    second = _write(tmp_path, USER.split("models:")[0].replace("tdp_watts: 300", "tdp_watts: 250"), "b.yaml")
    assert load_catalog([first, second]).gpu("tiny-gpu").tdp_watts == 250


def test_empty_user_file_is_fine(tmp_path):
    assert len(load_catalog([_write(tmp_path, "")]).gpus) == len(CATALOG.gpus)


BAD_MODEL = """\
models:
  - name: ok
    n_layers: 2
    d_model: 128
    n_heads: 2
    n_kv_heads: 2
    head_dim: 64
    ffn_hidden: 512
    mlp: gelu
    vocab_size: 1000
    tied_embeddings: true
    norm: layernorm
  - name: bad
    n_layers: 2
    d_model: {d_model}
    n_heads: 2
    n_kv_heads: 2
    head_dim: 64
    ffn_hidden: 512
    mlp: gelu
    vocab_size: 1000
    tied_embeddings: true
    norm: layernorm
"""


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("-128", "d_model: must be greater than 0, got -128"),  # not pydantic's "Input should be"
        ("wide", "expected a number, got 'wide'"),
        ("true", "expected a number, got True"),
        ("12.5", "expected a whole number"),
    ],
)
def test_bad_model_field_names_file_line_and_path(tmp_path, value, message):
    path = _write(tmp_path, BAD_MODEL.format(d_model=value))
    with pytest.raises(SpecError) as info:
        load_catalog([path])
    text = str(info.value)
    assert text.startswith(f"{path}:15: models[1].d_model: "), text
    assert message in text


def test_unknown_key_suggests(tmp_path):
    path = _write(
        tmp_path, BAD_MODEL.format(d_model=128).replace("  - name: bad\n", "  - name: bad\n    n_layer: 3\n")
    )
    with pytest.raises(SpecError) as info:
        load_catalog([path])
    assert (
        str(info.value) == f"{path}:14: models[1].n_layer: unknown key 'n_layer' (did you mean 'n_layers'?)"
    )


def test_model_consistency_error_is_located(tmp_path):
    path = _write(tmp_path, BAD_MODEL.format(d_model=128).replace("n_kv_heads: 2", "n_kv_heads: 3", 1))
    with pytest.raises(SpecError) as info:
        load_catalog([path])
    assert str(info.value) == f"{path}:2: models[0]: n_heads (2) must be a multiple of n_kv_heads (3)"


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        ("gpu:\n  - name: x\n", r":1: gpu: unknown key 'gpu' \(did you mean 'gpus'\?\)"),
        ("gpus: {name: x}\n", r"gpus: 'gpus' must be a list"),
        ("- 1\n- 2\n", r"must be a mapping with 'gpus:' and/or 'models:'"),
        (
            "gpus:\n  - name: x\n    hbm_bytes: 80GB\n",
            r":2: gpus\[0\]\.bf16_flops: required field is missing",
        ),
        ("gpus:\n  - name: x\n    hbm_bytes: lots\n", r":3: gpus\[0\]\.hbm_bytes: expected a byte size"),
        ("models:\n  - n_layers: 2\n", r"models\[0\]\.name: every model entry needs a name"),
        (
            "models:\n  - name: m\n    published_params: -5\n    n_layers: 1\n",
            r"models\[0\]\.(published_params|d_model)",
        ),
    ],
)
def test_bad_user_files(tmp_path, text, pattern):
    with pytest.raises(SpecError, match=pattern):
        load_catalog([_write(tmp_path, text)])


def test_duplicate_names_in_one_file(tmp_path):
    text = USER.split("models:")[0] + USER.split("models:")[0].split("gpus:\n")[1]
    with pytest.raises(SpecError, match=r"gpus\[2\]\.name: duplicate name 'h100-sxm' \(also gpus\[0\]\)"):
        load_catalog([_write(tmp_path, text)])


def test_missing_user_file(tmp_path):
    with pytest.raises(SpecError, match="cannot read file"):
        load_catalog([tmp_path / "nope.yaml"])


# ---- CLI ------------------------------------------------------------------------------------------
runner = CliRunner()


def test_cli_models_json_lists_every_preset_with_counts():
    result = runner.invoke(app, ["catalog", "models", "--json"])
    assert result.exit_code == 0, result.output
    records = json.loads(result.stdout)
    assert [r["name"] for r in records] == [m.name for m in CATALOG.models]
    for record in records:
        for key in (
            "name",
            "family",
            "total_params",
            "embedding_params",
            "non_embedding_params",
            "active_params",
            "published_params",
            "n_layers",
            "d_model",
            "n_heads",
            "n_kv_heads",
            "head_dim",
            "ffn_hidden",
            "vocab_size",
            "n_experts",
            "top_k",
            "source",
        ):
            assert key in record, (record["name"], key)
        assert record["total_params"] == record["embedding_params"] + record["non_embedding_params"]
    llama = next(r for r in records if r["name"] == "llama-3-70b")
    assert llama["total_params"] == 70_553_706_496


def test_cli_gpus_json_has_every_field():
    result = runner.invoke(app, ["catalog", "gpus", "--json"])
    assert result.exit_code == 0
    records = json.loads(result.stdout)
    assert all(set(GpuSpec.model_fields) <= set(r) for r in records)
    assert next(r for r in records if r["name"] == "h100-sxm")["bf16_flops"] == 989e12


def test_cli_one_entry_json_and_table():
    result = runner.invoke(app, ["catalog", "gpus", "H100", "--json"])
    assert result.exit_code == 0
    assert json.loads(result.stdout)["name"] == "h100-sxm"
    result = runner.invoke(app, ["catalog", "models", "deepseek-v3"])
    assert result.exit_code == 0 and "671,026,419,200" in result.stdout


def test_cli_tables():
    for kind, needle in (("gpus", "mi300x"), ("models", "qwen3-30b-a3b"), ("model", "gopher-280b")):
        result = runner.invoke(app, ["catalog", kind], env={"COLUMNS": "200"})
        assert result.exit_code == 0, result.output
        assert needle in result.stdout


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["catalog", "gpuz"], "runplan: error: KIND: unknown catalog 'gpuz' (did you mean 'gpus'?)"),
        (["catalog", "gpus", "h10"], "runplan: error: NAME: unknown GPU 'h10' (did you mean 'h100-sxm'?)"),
        (
            ["catalog", "models", "llama-3-7b"],
            "runplan: error: NAME: unknown model 'llama-3-7b' (did you mean ",
        ),
    ],
)
def test_cli_unknown_kind_or_name_exits_2_with_one_line(args, line):
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(line), result.stderr
    assert result.stdout == ""


def test_cli_user_catalog(tmp_path):
    path = _write(tmp_path, USER)
    result = runner.invoke(app, ["catalog", "gpus", "tg", "--json", "--catalog", str(path)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["gpus_per_node"] == 4
    bad = _write(tmp_path, BAD_MODEL.format(d_model="-1"), "bad.yaml")
    result = runner.invoke(app, ["catalog", "models", "--catalog", str(bad)])
    assert result.exit_code == 2
    assert "models[1].d_model" in result.stderr


def test_gpu_family_is_a_catalog_field_and_picks_the_efficiencies():
    from runplan.calibrate.calibration import shipped_calibration
    from runplan.parallel.timing import default_efficiency

    fitted = {
        name: family.efficiency.gemm_peak_fraction for name, family in shipped_calibration().families.items()
    }
    assert fitted["ampere"] != fitted["hopper"]

    families = {entry.spec.name: entry.spec.family for entry in shipped_catalog().gpu_entries}
    assert families == {
        "a100-40gb": "ampere",
        "a100-80gb": "ampere",
        "h100-sxm": "hopper",
        "h100-pcie": "hopper",
        "h200": "hopper",
        "b200": "blackwell",
        "mi300x": "cdna3",
    }
    a100 = shipped_catalog().gpu("a100")
    assert default_efficiency(a100).gemm_peak_fraction == fitted["ampere"]
    # the name no longer decides: an A100-named spec without a family gets Hopper's values, as docs/catalog.md says
    unnamed = a100.model_copy(update={"family": None})
    assert default_efficiency(unnamed).gemm_peak_fraction == fitted["hopper"]
    renamed = shipped_catalog().gpu("h100").model_copy(update={"name": "a100-lookalike"})
    assert default_efficiency(renamed).gemm_peak_fraction == fitted["hopper"]


def test_bandwidths_take_the_byte_units_the_catalog_header_promises(tmp_path):
    # configs/gpus.yaml: "the loader also accepts 80e9 or 80GB" -- for bandwidths (bytes per second) too
    text = USER.replace("hbm_bandwidth_bytes_per_s: 1e12", "hbm_bandwidth_bytes_per_s: 1TB").replace(
        "intra_node_bandwidth_bytes_per_s: 32e9", "intra_node_bandwidth_bytes_per_s: 32GB"
    )
    gpu = load_catalog([_write(tmp_path, text)]).gpu("tiny-gpu")
    assert gpu.hbm_bandwidth_bytes_per_s == 1e12 and gpu.intra_node_bandwidth_bytes_per_s == 32e9


def test_a_mapping_field_prints_as_the_catalog_file_writes_it():
    """Llama 3.1's rope_scaling (config.json: llama3, factor 8, original 8,192 positions) as key: value pairs,
    its unset fields left out, not a Python dict with None."""
    from typer.testing import CliRunner

    from runplan.cli.app import app

    out = CliRunner().invoke(app, ["catalog", "models", "llama-3.1-8b"], env={"COLUMNS": "200"}).stdout
    line = next(x for x in out.splitlines() if "rope_scaling" in x)
    assert "type: llama3, factor: 8.0, original_max_position_embeddings: 8192" in line
    assert "None" not in line and "{" not in line


def test_gpu_table_prints_the_datasheet_hbm_bandwidth_unrounded():
    # A100 40GB datasheet: 1,555 GB/s; A100 80GB SXM: 2,039 GB/s
    result = CliRunner().invoke(app, ["catalog", "gpus"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert "1.555" in result.output and "2.039" in result.output
