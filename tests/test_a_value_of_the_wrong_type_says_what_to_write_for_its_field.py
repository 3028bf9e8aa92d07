"""A value of the wrong type says what to write instead, with an example that fits the field's type.

`cluster.gpus: true` hinted "write e.g. 2e23, 70B or 3e-4" (a budget's examples, all wrong for a GPU count);
`cluster.gpus: [8]` said "expected a number, got list" with no hint at all; `catalog: cat.yaml` said "must be a
valid list, got 'cat.yaml'" and `calibration: [c.yaml]` "must be a valid string, got ['c.yaml']", neither with
the fix. The example now follows the field's unit type (units.py): a count, a byte size, a length in tokens, a
fraction, a price, a number."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.errors import SpecError
from runplan.units import parse_bytes, parse_count, parse_number, parse_token_length

HEAD = "schema_version: 1\nname: t\nmodel: 7b\nbudget: {tokens: 1T}\n"
CLUSTER = "cluster: {gpu: h100-sxm, gpus: 64}\n"

COUNT = "write a whole number, e.g. 8, 512 or 1.5k"
BYTES = "write e.g. 80GB or 80GiB"
TOKENS = "write e.g. 4096, 8k (8192) or 128k (131072)"
FRACTION = "write a fraction, e.g. 0.05"
PRICE = "write a price per GPU-hour, e.g. 2 or 2.5"
NUMBER = "write e.g. 2e23, 70B or 3e-4"

PLAN_CASES = [
    ("cluster: {gpu: h100-sxm, gpus: true}\n", f"cluster.gpus: expected a number, got True ({COUNT})"),
    ("cluster: {gpu: h100-sxm, gpus: [8]}\n", f"cluster.gpus: expected a number, got list ({COUNT})"),
    ("cluster: {gpu: h100-sxm, gpus: {n: 8}}\n", f"cluster.gpus: expected a number, got dict ({COUNT})"),
    ("cluster: {gpu: h100-sxm, gpus: lots}\n", f"cluster.gpus: expected a number, got 'lots' ({COUNT})"),
    (CLUSTER + "training: {seq_len: [4096]}\n", f"training.seq_len: expected a number, got list ({TOKENS})"),
    (CLUSTER + "training: {seq_len: true}\n", f"training.seq_len: expected a number, got True ({TOKENS})"),
    (
        CLUSTER + "operations: {storage_write_bandwidth_bytes_per_s: [1]}\n",
        f"operations.storage_write_bandwidth_bytes_per_s: expected a number, got list ({BYTES})",
    ),
    (
        CLUSTER + "schedule: {warmup_fraction: [0.01]}\n",
        f"schedule.warmup_fraction: expected a number, got list ({FRACTION})",
    ),
    (
        "cluster: {gpu: h100-sxm, gpus: 64, price_per_gpu_hour: two}\n",
        f"cluster.price_per_gpu_hour: expected a number, got 'two' ({PRICE})",
    ),
    (
        "cluster: {gpu: h100-sxm, gpus: 64, price_per_gpu_hour: [2]}\n",
        f"cluster.price_per_gpu_hour: expected a number, got list ({PRICE})",
    ),
    (CLUSTER + "catalog: cat.yaml\n", "catalog: must be a list, got 'cat.yaml' (write catalog: [cat.yaml])"),
    (
        CLUSTER + "calibration: [c.yaml]\n",
        "calibration: must be a string, got ['c.yaml'] (write one value, not a list: calibration: c.yaml)",
    ),
    (  # a list item has no key of its own to write
        CLUSTER + "catalog: [[c.yaml]]\n",
        "catalog[0]: must be a string, got ['c.yaml'] (write one value, not a list: c.yaml)",
    ),
    (CLUSTER + "description: 5\n", 'description: must be a string, got 5 (quote it: description: "5")'),
    (  # the word YAML read as true is gone: the hint must not turn `yes` into "true"
        CLUSTER + "description: yes\n",
        'description: must be a string, got True (quote it as written, e.g. description: "yes" — YAML reads '
        "yes/no/on/off unquoted as true/false)",
    ),
    (
        CLUSTER + "description: {a: b}\n",
        "description: must be a string, got {'a': 'b'} (write one value on the line: description: some text)",
    ),
]


@pytest.mark.parametrize(
    ("body", "expected"), PLAN_CASES, ids=[c[1].split(":")[0] + str(i) for i, c in enumerate(PLAN_CASES)]
)
def test_a_plan_key_of_the_wrong_type_names_the_fix(tmp_path, body, expected, one_error_line):
    path = tmp_path / "p.yaml"
    path.write_text(HEAD + body)
    line = one_error_line(CliRunner().invoke(app, ["plan", str(path)], env={"COLUMNS": "200"}))
    assert line.endswith(expected), line
    assert line.startswith(f"runplan: error: {path}:"), line


def test_the_budget_keeps_its_number_examples(tmp_path, one_error_line):
    path = tmp_path / "p.yaml"
    path.write_text("schema_version: 1\nname: t\nbudget: {flops: [2e23]}\n" + CLUSTER)
    line = one_error_line(CliRunner().invoke(app, ["plan", str(path)]))
    assert line.endswith(f"budget.flops: expected a number, got list ({NUMBER})"), line


@pytest.mark.parametrize(
    ("parse", "value", "hint"),
    [
        (parse_number, [1], NUMBER),
        (parse_number, None, NUMBER),
        (parse_count, True, COUNT),
        (parse_count, {"a": 1}, COUNT),
        (parse_count, "many", COUNT),
        (parse_bytes, True, BYTES),
        (parse_bytes, [80], BYTES),
        (parse_token_length, [8192], TOKENS),
        (parse_token_length, None, TOKENS),
    ],
)
def test_each_parser_hints_its_own_kind(parse, value, hint):
    with pytest.raises(SpecError) as info:
        parse(value, where="x")
    assert info.value.hint == hint


def test_a_list_of_the_wrong_shape_names_the_key_as_a_list():
    """``tuple_type`` as well as ``list_type``: pydantic's "a valid tuple" is a word no YAML file uses."""
    from runplan.validation import spec_error_from_validation

    class Model(BaseModel):
        model_config = ConfigDict(extra="forbid")
        sizes: tuple[int, ...] = ()
        names: list[str] = []

    for data, expected in (
        ({"sizes": 8}, "sizes: must be a list, got 8 (write sizes: [8])"),
        ({"names": {"a": 1}}, "names: must be a list, got {'a': 1} (write names: [first, second])"),
    ):
        with pytest.raises(ValidationError) as info:
            Model.model_validate(data)
        assert str(spec_error_from_validation(info.value, Model)) == expected
