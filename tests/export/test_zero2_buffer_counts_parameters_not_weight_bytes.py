"""Megatron's ZeRO-2 (its distributed optimizer) reduce-scatters out of a full-size gradient buffer, one gradient per
parameter the GPU holds (tests/export/test_export_cli.py): the parameters, not the weights term halved. Under
precision fp8 the weights term also holds the 1-byte copy of the linear layers' weights (memory.fp8_weight_copy_bytes)
or, with fp8 weights, 1 byte instead of 2 for them: halving it counted the copy as parameters (Llama 3 8B at TP 4:
11.5 GB of buffer, not 8.0) or missed the fp8 weights' half.

Hand derivation (that test): Llama 3 8B, 8,030,261,248 parameters, TP 4 (no PP): 2.0e9 per GPU, an fp32 buffer of
4 B each: 8.0 GB, whatever the precision of the weights."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app


@pytest.mark.parametrize(
    "stack",
    ["{}", "{precision: fp8}", "{precision: fp8, fp8_recipe: delayed, fp8_param_gather: true}"],
)
def test_zero2_buffer_is_the_same_for_bf16_and_fp8_weights(tmp_path, stack):
    plan = tmp_path / "z2.yaml"
    plan.write_text(
        "schema_version: 1\nname: z2\nmodel: 8b\nbudget: {flops: 1e22}\ntraining: {seq_len: 4096}\n"
        f"cluster: {{gpu: h100-sxm, gpus: 64}}\nparallel: {{zero: 2, tp: 4}}\nstack: {stack}\n"
    )
    result = CliRunner().invoke(app, ["export", str(plan), "--to", "megatron", "--json"])
    assert result.exit_code == 0, result.output
    (zero2,) = [w for w in json.loads(result.stdout)["warnings"] if w.startswith("ZeRO-2")]
    assert "full-size fp32 gradient buffer (8.0 GB per GPU here)" in zero2
