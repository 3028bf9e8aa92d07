"""ZeRO-3 pinned where every layout has pipeline stages, on a stack without FSDP mixed precision, said "ZeRO-3
under pipeline stages is PyTorch FSDP's (torchtitan), not this stack's: pin --pp as well to evaluate it anyway".
Pinning --pp does evaluate it (build_grid keeps ZeRO-3 with stages when both are pinned), and the layout is one
Megatron-LM runs but does not test: at d98e8a6 --use-torch-fsdp2 asserts pipeline_model_parallel_size == 1
(megatron/training/arguments.py) and Megatron FSDP v2 raises on PP > 1 (mcore_fsdp_adapter.py), while Megatron
FSDP v1, --use-megatron-fsdp, the flag the export writes for ZeRO-3, is not refused, yet every functional test
of it runs PP 1. The advice now says that, and the export of the pinned layout warns of the same."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app

ARGV = ["parallelize", "--model", "llama-3.1-8b", "--gpus", "8", "--zero", "3", "--vpp", "2"]


def _run(*argv: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(argv))
    return result.exit_code, " ".join(result.output.split())


@pytest.mark.parametrize("stack", ["default", "megatron-core", "megatron-2022"])
def test_the_advice_names_what_megatron_refuses_and_what_it_does_not_test(stack: str):
    code, text = _run(*ARGV, "--stack", stack)
    assert code == 1
    assert (
        "every layout the pins leave has pipeline stages, and this stack searches ZeRO-3 under them only with "
        "--pp pinned (FSDP2 under PyTorch pipelining is torchtitan's; Megatron-LM refuses --use-torch-fsdp2 with "
        "stages and tests Megatron FSDP with none): pin --pp as well to evaluate it (on Megatron, an untested "
        "layout), or a lower --zero"
    ) in text
    assert "not this stack's" not in text


def test_pinning_pp_as_advised_evaluates_the_layout():
    code, text = _run(*ARGV, "--stack", "megatron-core", "--pp", "2")
    assert code == 0, text
    assert "ZeRO 3" in text and "PP 2" in text


def test_the_megatron_export_of_that_layout_is_megatron_fsdp_with_the_same_caution(tmp_path: Path):
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        "schema_version: 1\nmodel: llama-3.1-8b\nbudget: {tokens: 10B}\ncluster: {gpu: h100-sxm, gpus: 8}\n"
        "training: {seq_len: 4096}\nstack: megatron-core\nparallel: {zero: 3, pp: 2, vpp: 2}\n"
    )
    result = CliRunner().invoke(app, ["export", str(plan), "--to", "megatron"])
    assert result.exit_code == 0, result.output
    assert "--use-megatron-fsdp" in result.stdout and "--pipeline-model-parallel-size 2" in result.stdout
    assert "Megatron FSDP with pipeline parallelism is not the tested path" in " ".join(result.stderr.split())
