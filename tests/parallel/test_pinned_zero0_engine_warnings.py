"""A pinned ZeRO-0 that no engine runs is still evaluated (a pinned layout always is: exit 0), with a one-line warning
naming the fix: bf16 optimizer states need Megatron-LM's distributed optimizer (get_megatron_optimizer raises
"--use-precision-aware-optimizer only supported with distributed optimizer", core/optimizer/__init__.py @ d98e8a64),
and so do fp8 weights (validate_args: "--fp8-param-gather only supported with distributed optimizer, torch fsdp2,
megatron fsdp", training/arguments.py @ d98e8a64). The search itself leaves ZeRO-0 out for both."""

from __future__ import annotations

import json

import pytest
from tests.planned import planned_json
from typer.testing import CliRunner

from runplan.cli.app import app

ARGS = ["parallelize", "--model", "llama-2-7b", "--gpus", "8", "--gpu", "h100-sxm", "--seq-len", "4096"]
# every axis pinned: one layout
PINNED = ["--tp", "2", "--pp", "1", "--dp", "4", "--cp", "1", "--ep", "1"]
PINNED += ["--mbs", "1", "--microbatches", "16", "--vpp", "1", "--recompute", "selective"]
PINNED += ["--no-sequence-parallel"]
BF16_STATES = "no engine runs bf16 optimizer states"
FP8_WEIGHTS = "keeps fp8 weights (stack fp8_param_gather) only with"


def _parallelize(*extra: str) -> dict:
    res = CliRunner().invoke(app, [*ARGS, *PINNED, *extra, "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


def _one(warnings: list[str], text: str) -> str:
    hits = [w for w in warnings if text in w]
    assert len(hits) == 1, warnings
    assert "\n" not in hits[0]
    return hits[0]


def test_pinned_zero0_with_bf16_moments_is_evaluated_with_a_warning_naming_the_fix():
    data = _parallelize("--zero", "0", "--optimizer-state-dtype", "bf16")
    assert data["feasible"] == 1 and data["layouts"][0]["zero"] == 0
    line = _one(data["warnings"], BF16_STATES)
    assert "pin ZeRO 1 or 2 (--zero / parallel.zero)" in line
    assert "--optimizer-state-dtype" in line


@pytest.mark.parametrize(
    "extra",
    [
        ("--zero", "1", "--optimizer-state-dtype", "bf16"),  # runnable: the distributed optimizer
        ("--zero", "0"),  # fp32 moments: any engine runs ZeRO-0
    ],
)
def test_no_warning_where_the_engine_runs_it(extra):
    data = _parallelize(*extra)
    assert not [w for w in data["warnings"] if BF16_STATES in w or FP8_WEIGHTS in w]


def test_pinned_zero0_with_fp8_weights_warns_too():
    data = _parallelize("--zero", "0", "--precision", "fp8", "--fp8-recipe", "delayed", "--fp8-param-gather")
    assert data["feasible"] == 1
    assert "pin ZeRO 1 or more" in _one(data["warnings"], FP8_WEIGHTS)


def test_a_plan_file_pinning_zero0_with_bf16_moments_warns(tmp_path):
    body = (
        "model: llama-2-7b\nbudget: {tokens: 100B}\ntraining: {seq_len: 4096}\ncluster: {gpu: h100-sxm, gpus: 8}\n"
        "stack: {optimizer_state_dtype: bf16}\n"
        "parallel: {tp: 2, pp: 1, dp: 4, cp: 1, ep: 1, zero: 0, micro_batch: 1, vpp: 1, recompute: selective, "
        "sequence_parallel: false}\n"
    )
    data = planned_json(tmp_path, body)
    assert data["layout"]["best"]["zero"] == 0
    assert _one(data["warnings"], BF16_STATES).startswith("layout: the pinned ZeRO-0 is evaluated")
