import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runplan.errors import SpecError
from runplan.units import format_bytes, format_si, parse_bytes, parse_count, parse_number


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2e23", 2e23),
        ("3e-4", 3e-4),
        ("70B", 70e9),
        ("70b", 70e9),
        ("15T", 15e12),
        ("4M", 4e6),
        ("1.5k", 1500.0),
        ("1,024", 1024.0),
        ("1_000", 1000.0),
        (" 7 ", 7.0),
        (12, 12.0),
        (0.5, 0.5),
        ("2.5e3k", 2.5e6),
        ("-3", -3.0),
    ],
)
def test_parse_number_accepts_human_forms(text, expected):
    assert parse_number(text) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("bad", ["nan", "inf", "-inf", "abc", "", "7 billion", True, None, [1], "1e400"])
def test_parse_number_rejects_non_numbers(bad):
    with pytest.raises(SpecError) as info:
        parse_number(bad, where="budget.flops")
    assert "budget.flops" in str(info.value)


def test_parse_number_rejects_float_nan_and_inf():
    for value in (math.nan, math.inf):
        with pytest.raises(SpecError):
            parse_number(value)


def test_parse_count():
    assert parse_count("1.5k") == 1500
    assert parse_count("4M") == 4_000_000
    with pytest.raises(SpecError, match="whole number"):
        parse_count("2.5")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("80GB", 80e9),
        ("80 GiB", 80 * 2**30),
        ("1.5TB", 1.5e12),
        ("512MiB", 512 * 2**20),
        (1e9, 1e9),
        ("141G", 141e9),
    ],
)
def test_parse_bytes(text, expected):
    assert parse_bytes(text) == pytest.approx(expected)


@given(st.floats(min_value=1e-30, max_value=1e30))
def test_parse_number_round_trips_repr(value):
    assert parse_number(repr(value)) == value
    assert parse_number(f"{value:e}") == pytest.approx(value, rel=1e-6)


def test_format_si():
    assert format_si(4.08e10) == "40.8 B"
    assert format_si(8.16e11, "tokens") == "816 B tokens"
    assert format_si(1.2e-3, "s") == "0.0012 s"
    assert format_si(0.5) == "0.5"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.13e12, "1.13 TB"),
        (980e9, "980 GB"),
        (2.5e3, "2.5 kB"),
        (10_072, "10.1 kB"),
        (512, "512 B"),
        (3e15, "3 PB"),
    ],
)
def test_format_bytes_uses_decimal_units(value, text):
    assert format_bytes(value) == text


# ---- token lengths: k = 1024 (issue 15) -------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("8k", 8192),  # Llama 3 pre-trains at 8K = 8,192 tokens (Dubey et al. 2024 §3.4.1)
        ("128k", 131072),  # Llama 3.1 config.json max_position_embeddings = 131072 ("128K context")
        ("128K", 131072),
        ("4k", 4096),
        ("1M", 1048576),
        ("1.5k", 1536),
        ("8000", 8000),  # a plain number is taken as written
        ("4,096", 4096),
        (2048, 2048),
    ],
)
def test_token_lengths_use_binary_k(text, tokens):
    from runplan.units import parse_token_length

    assert parse_token_length(text) == tokens


@pytest.mark.parametrize("text", ["8B", "1e3k", "2e4.5", "0.0001k", "-8k", "k", "8 kb", True])
def test_token_lengths_refuse_other_notation(text):
    from runplan.units import parse_token_length

    with pytest.raises(SpecError):
        parse_token_length(text, where="training.seq_len")


def test_other_numbers_keep_si_suffixes():
    # 4M tokens per step is 4e6, 70B parameters 7e10: only lengths are binary
    assert parse_number("4M") == 4e6 and parse_count("1.5k") == 1500


def test_seq_len_8k_is_8192_in_plans_flags_and_exports(tmp_path):
    from typer.testing import CliRunner

    from runplan.cli.app import app
    from runplan.spec import Training

    assert Training.model_validate({"seq_len": "8k"}).seq_len == 8192
    assert Training.model_validate({"seq_len": 8000}).seq_len == 8000
    root = __import__("pathlib").Path(__file__).resolve().parents[1]
    text = (root / "examples" / "70b-512-h100.yaml").read_text()
    assert "seq_len: 4096" in text
    plan = tmp_path / "p.yaml"
    plan.write_text(text.replace("seq_len: 4096", "seq_len: 8k"))
    exported = CliRunner().invoke(app, ["export", str(plan), "--to", "megatron"])
    assert exported.exit_code == 0, exported.output
    assert "--seq-length 8192" in exported.stdout
    flags = CliRunner().invoke(
        app, ["parallelize", "--model", "8b", "--gpus", "64", "--seq-len", "128k", "--json"]
    )
    assert __import__("json").loads(flags.stdout)["seq_len"] == 131072


def test_a_fractional_token_length_says_how_to_write_one():
    # seq_len: 1.5 or sliding_window: 1.5 in YAML is a float: refused with the token-length hint, as '1.5x' is
    from runplan.units import parse_token_length

    with pytest.raises(SpecError) as raised:
        parse_token_length(1.5, where="training.seq_len")
    assert "whole number of tokens" in str(raised.value)
    assert raised.value.hint == "write e.g. 4096, 8k (8192) or 128k (131072)"
    assert parse_token_length(8192.0) == 8192
