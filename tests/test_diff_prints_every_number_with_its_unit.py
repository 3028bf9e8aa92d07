"""`runplan diff` and `runplan check` print every number with its unit, as the key names it.

Found on a user journey: `runplan diff` printed ``allocation.loss: 1.9585 → 2.0468`` (nats per token, the unit of
Hoffmann et al. 2022's L(N, D) and of every loss runplan reads, docs/scaling.md) and
``schedule.global_batch_tokens: 12.58 M → 16.78 M`` with no unit at all: only bytes, durations, days, money,
percentages and FLOPs carried one, every other number fell through to a bare count. Now a count carries what it
counts (tokens, params, steps, GPUs, ...) and the few numbers that have no unit are named here, each with why."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.resolved import Change

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
ROOT = EXAMPLES.parent

#: keys whose numbers have no unit, by their last key: parallel degrees and ZeRO stages (TP4 is a degree, not 4
#: of something a reader adds up), learning rates (the optimizer's multiplier), pure ratios and coefficients
#: (PUE, dropout probabilities, a RoPE base or scale, a norm epsilon, a router's loss coefficient, the law's
#: fitted A, B and exponents), widths of the model's vectors, and the plan file's schema version
DIMENSIONLESS = frozenset(
    {
        *("tp", "pp", "dp", "cp", "ep", "vpp", "zero", "zero_stages"),
        *("peak_lr", "final_lr", "lr_start", "lr_end"),
        *(
            "pue",
            "attention_dropout",
            "hidden_dropout",
            "norm_eps",
            "init_std",
            "rope_theta",
            "rope_local_theta",
        ),
        "mtp_loss_weight",
        *("factor", "high_freq_factor", "low_freq_factor", "grad_norm_factor"),
        *("router_aux_loss_coef", "router_topk_scale", "A", "B", "alpha", "beta"),
        *("d_model", "ffn_hidden", "expert_ffn_hidden", "head_dim", "kv_lora_rank", "q_lora_rank"),
        *("qk_rope_head_dim", "v_head_dim"),
        "schema_version",
    }
)

#: a side printed as a number alone: digits, separators, a decimal point or exponent, a count suffix (a byte
#: count prints ``6 B`` too: the whole-plan test below uses numbers under a million, where no count has a suffix)
_BARE = re.compile(r"^-?[\d,]*\.?\d+(e[+-]?\d+)?( [kMBTP])?$")


def _bare_sides(line: str) -> list[str]:
    """The sides of a ``path: old → new (...)`` line printed as a bare number."""
    _, _, values = line.partition(": ")
    values = re.sub(r" \([^()]*\)$", "", values.strip())
    return [side for side in values.split(" → ") if _BARE.match(side.strip())]


def _last_key(path: str) -> str:
    return re.sub(r"\[\d+\]", "", path).rsplit(".", 1)[-1]


def test_the_loss_is_in_nats_per_token():
    change = Change("allocation.loss", "changed", 1.9585, 2.0468, 2.0468 / 1.9585 - 1)
    assert change.readable() == "allocation.loss: 1.9585 nats/token → 2.0468 nats/token (+4.51%)"
    target = Change("objective.target_loss", "new", None, 2.0)
    assert target.readable() == "objective.target_loss: (new) → 2.0000 nats/token"


def test_the_global_batch_is_in_tokens():
    # 12,582,912 = 3,072 sequences of 4,096 tokens; 16,777,216 = 4,096 of them: +33.33%
    change = Change("schedule.global_batch_tokens", "changed", 12_582_912, 16_777_216, 1 / 3)
    assert change.readable() == "schedule.global_batch_tokens: 12.58 M tokens → 16.78 M tokens (+33.33%)"


def test_a_count_names_what_it_counts_and_one_of_it_is_singular():
    assert Change("cluster.gpus", "changed", 512, 1024, 1.0).readable() == (
        "cluster.gpus: 512 GPUs → 1,024 GPUs (+100.00%)"
    )
    assert Change("layout.best.micro_batch", "changed", 2, 1, -0.5).readable() == (
        "layout.best.micro_batch: 2 sequences → 1 sequence"  # a layout choice: no percentage
    )
    assert Change("schedule.total_steps", "changed", 93333, 96798, 0.0371).readable() == (
        "schedule.total_steps: 93,333 steps → 96,798 steps (+3.71%)"
    )
    assert Change("allocation.params", "changed", 24.9e9, 7e9, -0.7189).readable() == (
        "allocation.params: 24.9 B params → 7 B params (-71.89%)"
    )
    # the peak of a GPU is a rate (FLOP/s), a model's cost per token a count of FLOPs
    assert Change("cluster.gpu.bf16_flops", "new", None, 989e12).readable() == (
        "cluster.gpu.bf16_flops: (new) → 9.89e+14 FLOP/s"
    )
    assert Change("model.flops_per_token", "new", None, 45_432_004_608).readable() == (
        "model.flops_per_token: (new) → 45.43 B FLOPs/token"
    )
    assert Change("constraints.throughput_tolerance", "new", None, 0.01).readable() == (
        "constraints.throughput_tolerance: (new) → 1.0%"
    )


def _numeric_paths(value: object, path: str = "") -> dict[str, float]:
    """Each numeric leaf of a plan's JSON (a list's first item alone), by path."""
    if isinstance(value, dict):
        return {
            leaf: number
            for key, item in value.items()
            if key not in ("notes", "why", "source", "search_seconds")
            for leaf, number in _numeric_paths(item, f"{path}.{key}" if path else key).items()
        }
    if isinstance(value, list):
        return _numeric_paths(value[0], f"{path}[0]") if value else {}
    if isinstance(value, int | float) and not isinstance(value, bool):
        return {path: float(value)}
    return {}


def _schema_paths() -> list[str]:
    """Every numeric key a plan file may set, from docs/plan.schema.json (as `runplan diff` names inputs)."""
    schema = json.loads((ROOT / "docs" / "plan.schema.json").read_text())
    defs, found = schema.get("$defs", {}), set()

    def walk(prefix: str, node: dict, depth: int = 0) -> None:
        if depth > 8:
            return
        if "$ref" in node:
            walk(prefix, defs[node["$ref"].rsplit("/", 1)[-1]], depth + 1)
        for key in ("anyOf", "oneOf", "allOf"):
            for sub in node.get(key, []):
                walk(prefix, sub, depth + 1)
        if isinstance(node.get("items"), dict):
            walk(f"{prefix}[0]", node["items"], depth + 1)
        for key, sub in node.get("properties", {}).items():
            walk(f"{prefix}.{key}" if prefix else key, sub, depth + 1)
        if node.get("type") in ("number", "integer"):
            found.add(prefix)

    walk("", schema)
    return sorted(found)


@pytest.fixture(scope="module")
def every_numeric_path() -> set[str]:
    paths: set[str] = set()
    for example in sorted(EXAMPLES.glob("*.yaml")):
        result = CliRunner().invoke(app, ["plan", str(example), "--json"])
        assert result.exit_code == 0, result.output
        plan = json.loads(result.stdout)
        plan.pop("inputs")  # `runplan diff` names inputs by their plan-file path: the schema's, below
        paths.update(_numeric_paths(plan))
    return paths | set(_schema_paths())


def test_every_number_of_a_plan_and_its_inputs_carries_a_unit(every_numeric_path):
    assert len(every_numeric_path) > 250  # every example's numbers and every plan-file key
    bare = []
    for path in sorted(every_numeric_path):
        if _last_key(path) in DIMENSIONLESS:
            continue
        # 1,234 → 2,345: a count prints no M or B suffix there, so " B" can only be bytes
        line = Change(path, "changed", 1234.0, 2345.0, None).readable("USD", "USD")
        if _bare_sides(line):
            bare.append(line)
    assert bare == []


def test_the_dimensionless_keys_are_keys_a_plan_has(every_numeric_path):
    # a name here that no plan or plan file holds would exempt nothing: a stale entry
    keys = {_last_key(path) for path in every_numeric_path}
    assert sorted(DIMENSIONLESS - keys) == []


def test_diff_of_two_examples_prints_no_bare_number():
    first, second = EXAMPLES / "2e23-compute-optimal.yaml", EXAMPLES / "moe-mixtral-8x7b.yaml"
    result = CliRunner().invoke(app, ["diff", str(first), str(second)], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    lines = [line.strip() for line in result.stdout.splitlines() if line.startswith("  ") and " → " in line]
    assert len(lines) > 15
    assert "allocation.loss: 1.9585 nats/token → " in result.stdout
    assert [
        line for line in lines if _bare_sides(line) and _last_key(line.split(":")[0]) not in DIMENSIONLESS
    ] == []
