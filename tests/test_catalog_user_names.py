"""A user catalog's names and aliases: a blank GPU name, an alias that another entry already answers to, and
aliases not written as a list are one line at the entry's key (exit 2); `runplan catalog NAME` prints a
published count as the computed counts beside it."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from runplan.cli.app import app

runner = CliRunner()

GPU = (
    "hbm_bytes: 85GB, bf16_flops: 1e15, fp8_flops: null, hbm_bandwidth_bytes_per_s: 3e12, "
    "intra_node_bandwidth_bytes_per_s: 450e9, inter_node_bandwidth_bytes_per_s: 100e9, gpus_per_node: 8, "
    "tdp_watts: 700"
)


def _catalog(tmp_path: Path, *entries: str, name: str = "mine.yaml") -> Path:
    path = tmp_path / name
    path.write_text("gpus:\n" + "".join(f"  - {{{entry}, {GPU}}}\n" for entry in entries))
    return path


def test_a_blank_gpu_name_is_refused_at_its_line(tmp_path, one_error_line):
    # it was accepted: an entry named '' listed as "known: , a100-40gb, ..." and reachable by no name
    path = _catalog(tmp_path, "name: '  '")
    line = one_error_line(runner.invoke(app, ["catalog", "gpus", "--catalog", str(path)]))
    assert "mine.yaml:2: gpus[0].name: a GPU entry's name is empty" in line


def test_an_alias_that_is_a_shipped_name_is_refused(tmp_path, one_error_line):
    # it was ignored: `h200` kept reaching the shipped H200, never this entry
    path = _catalog(tmp_path, "name: ours, aliases: [h200]")
    line = one_error_line(runner.invoke(app, ["catalog", "gpus", "h200", "--catalog", str(path)]))
    assert "mine.yaml:2: gpus[0].aliases: alias 'h200' is the name of another entry, 'h200'" in line


def test_an_alias_that_is_a_shipped_alias_is_refused(tmp_path, one_error_line):
    path = _catalog(tmp_path, "name: ours, aliases: [H100]")
    line = one_error_line(runner.invoke(app, ["catalog", "gpus", "--catalog", str(path)]))
    assert "gpus[0].aliases: alias 'H100' already reaches 'h100-sxm' (one of its aliases)" in line


def test_two_user_entries_with_one_alias_are_refused_at_the_second(tmp_path, one_error_line):
    # the first entry quietly won the alias
    path = _catalog(tmp_path, "name: a, aliases: [ours]", "name: b, aliases: [ours]")
    line = one_error_line(runner.invoke(app, ["catalog", "gpus", "ours", "--catalog", str(path)]))
    assert "mine.yaml:3: gpus[1].aliases: alias 'ours' already reaches 'a'" in line


def test_an_alias_in_one_file_clashing_with_a_later_file_is_refused(tmp_path, one_error_line):
    first = _catalog(tmp_path, "name: a, aliases: [ours]", name="a.yaml")
    second = _catalog(tmp_path, "name: b, aliases: [ours]", name="b.yaml")
    args = ["catalog", "gpus", "--catalog", str(first), "--catalog", str(second)]
    line = one_error_line(runner.invoke(app, args))
    assert "b.yaml:2: gpus[0].aliases: alias 'ours' already reaches 'a'" in line


def test_an_alias_naming_a_later_entry_is_refused(tmp_path, one_error_line):
    path = _catalog(tmp_path, "name: a, aliases: [b]", "name: b")
    line = one_error_line(runner.invoke(app, ["catalog", "gpus", "--catalog", str(path)]))
    assert "gpus[0].aliases: alias 'b' is the name of another entry, 'b'" in line


def test_a_replaced_entry_may_keep_or_restate_its_shipped_aliases(tmp_path):
    for entry in ("name: h100-sxm", "name: h100-sxm, aliases: [h100, h100-80gb]", "name: x, aliases: [x, X]"):
        path = _catalog(tmp_path, entry)
        result = runner.invoke(app, ["catalog", "gpus", "--catalog", str(path), "--json"])
        assert result.exit_code == 0, (entry, result.output)


def test_aliases_written_as_one_string_say_to_write_a_list(tmp_path, one_error_line):
    # pydantic's "must be a valid tuple" named a type no YAML file has
    path = _catalog(tmp_path, "name: ours, aliases: ours-1")
    line = one_error_line(runner.invoke(app, ["catalog", "gpus", "--catalog", str(path)]))
    assert "gpus[0].aliases: must be a list of names, got 'ours-1' (write aliases: [ours-1])" in line


def test_one_model_prints_published_counts_as_its_computed_counts():
    result = runner.invoke(app, ["catalog", "models", "deepseek-v3"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert "671,026,419,200" in result.stdout  # computed total
    assert "671,000,000,000" in result.stdout and "37,000,000,000" in result.stdout  # was 6.71e+11, 3.7e+10
    assert "e+11" not in result.stdout


MODEL = "    n_layers: 2\n    n_heads: 4\n    n_kv_heads: 4\n    ffn_hidden: 1024\n    vocab_size: 32000\n"


def test_a_misspelt_required_gpu_key_is_an_unknown_key_with_its_fix(tmp_path, one_error_line):
    # it said "mine.yaml:2: gpus[0].tdp_watts: required field is missing", at the entry's line
    path = _catalog(tmp_path, "name: ours")
    path.write_text(path.read_text().replace("tdp_watts: 700", "tdp_wats: 700"))
    for args in (
        ["catalog", "gpus"],
        ["parallelize", "--model", "llama-3.1-8b", "--gpus", "8", "--gpu", "ours"],
    ):
        line = one_error_line(runner.invoke(app, [*args, "--catalog", str(path)]))
        assert line == (
            f"runplan: error: {path}:2: gpus[0].tdp_wats: unknown key 'tdp_wats' (did you mean 'tdp_watts'?)"
        )


def test_a_misspelt_required_model_key_is_an_unknown_key_at_its_line(tmp_path, one_error_line):
    path = tmp_path / "models.yaml"
    path.write_text("models:\n  - name: tiny\n    d_modl: 256\n" + MODEL)
    for args in (["catalog", "models"], ["parallelize", "--model", "tiny", "--gpus", "8"]):
        line = one_error_line(runner.invoke(app, [*args, "--catalog", str(path)]))
        assert line == (
            f"runplan: error: {path}:3: models[0].d_modl: unknown key 'd_modl' (did you mean 'd_model'?)"
        )


def test_an_unknown_key_is_matched_to_the_one_required_key_missing_beside_it(tmp_path, one_error_line):
    # "tdp" is too short for a close match, but tdp_watts is the one required key it leaves missing
    path = _catalog(tmp_path, "name: ours")
    path.write_text(path.read_text().replace("tdp_watts: 700", "tdp: 700"))
    line = one_error_line(runner.invoke(app, ["catalog", "gpus", "--catalog", str(path)]))
    assert line == f"runplan: error: {path}:2: gpus[0].tdp: unknown key 'tdp' (did you mean 'tdp_watts'?)"
