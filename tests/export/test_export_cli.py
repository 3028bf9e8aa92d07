"""`runplan export`: stdout/-o/--json, warnings on stderr, one-line errors with exit 2."""

from __future__ import annotations

import json
import re

import pytest
from tests.export._cli import run_export
from tests.export._plans import EXAMPLES

PLAN = str(EXAMPLES / "moe-mixtral-8x7b.yaml")


_run = run_export


def test_deepspeed_to_stdout_warnings_to_stderr_and_into_the_file() -> None:
    result = _run(PLAN, "--to", "deepspeed")
    assert result.exit_code == 0, result.output
    config = json.loads(result.stdout)
    from runplan.cli.common import plan_from_file

    dp = plan_from_file(PLAN)[2].layout.best.dp  # DeepSpeed's data-parallel size is the plan's d
    assert config["train_batch_size"] == (
        config["train_micro_batch_size_per_gpu"] * config["gradient_accumulation_steps"] * dp
    )
    assert "runplan: warning: deepspeed: LR schedule" in result.stderr
    # the same warnings inside the file, under the "runplan" key DeepSpeed ignores (issue 14)
    # (each warning folded at the terminal width: its continuation lines are indented)
    stderr_warnings = [
        " ".join(warning.split()).removeprefix("runplan: warning: deepspeed: ")
        for warning in re.split(r"\n(?! )", result.stderr.strip())
        if warning.startswith("runplan: warning: deepspeed: ")
    ]
    assert [" ".join(w.split()) for w in config["runplan"]["warnings"]] == stderr_warnings
    assert any(w.startswith("LR schedule:") for w in config["runplan"]["warnings"])


@pytest.mark.parametrize("target,suffix", [("megatron", ".megatron.sh"), ("torchtitan", ".torchtitan.toml")])
def test_output_directory_gets_the_export_file(tmp_path, target: str, suffix: str) -> None:
    result = _run(PLAN, "--to", target, "-o", str(tmp_path))
    assert result.exit_code == 0, result.stderr
    path = tmp_path / f"moe-mixtral-8x7b{suffix}"
    assert path.exists() and "WARNINGS" in path.read_text()
    assert f"wrote {path}" in result.stderr


def test_json_output() -> None:
    result = _run(PLAN, "--to", "torchtitan", "--json")
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert set(data) == {"target", "text", "filename", "warnings"} and data["target"] == "torchtitan"


@pytest.mark.parametrize(
    "args,where",
    [
        ([PLAN, "--to", "nemo"], "--to"),
        (["/nonexistent/plan.yaml", "--to", "megatron"], "PLAN_FILE"),
    ],
)
def test_bad_input_is_one_line_exit_2(args: list[str], where: str) -> None:
    result = _run(*args)
    assert result.exit_code == 2
    assert where in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_library_error_names_the_field_path_not_the_flag() -> None:
    """Library code names ``export.target``; the CLI maps it to ``--to`` (issue 11 contract)."""
    from tests.export._plans import golden_plan

    from runplan.errors import SpecError
    from runplan.export import export_plan

    with pytest.raises(SpecError) as caught:
        export_plan(golden_plan("70b-512-h100"), "nemo")
    assert caught.value.where == "export.target"


def test_an_engine_refusal_names_the_plan_key_at_its_line(tmp_path) -> None:
    # `runplan export` has no --precision flag: the refusal points into the plan file, not at a flag
    plan = tmp_path / "fp8.yaml"
    plan.write_text(
        "schema_version: 1\nbudget: {flops: 2e23}\ncluster: {gpu: h100-sxm, gpus: 512}\n"
        "stack: {precision: fp8}\n"
    )
    res = _run(str(plan), "--to", "deepspeed")
    assert res.exit_code == 2
    assert f"{plan}:4: stack.precision: DeepSpeed's config has no fp8 training key" in res.output


@pytest.mark.parametrize(
    ("pins", "code", "phrase"),
    [
        # TP 4: 2.0 B parameters per GPU, an fp32 buffer of 8.0 GB in place of 0.5 GB of sharded gradients
        ("{zero: 2, tp: 4}", 0, "full-size fp32 gradient buffer (8.0 GB per GPU here)"),
        # TP 1: 8.0 B per GPU, 32.1 GB of buffer: past the 76 GB limit
        ("{zero: 2, tp: 1}", 2, "parallel.zero: Megatron's distributed optimizer keeps a full-size fp32"),
    ],
)
def test_zero2_to_megatron_counts_its_full_gradient_buffer(tmp_path, pins, code, phrase) -> None:
    """Megatron has no sharded-gradient ZeRO-2 (its distributed optimizer reduce-scatters out of a full buffer
    of the gradient dtype): said with the buffer's size, or refused when it breaks the plan's memory limit."""
    plan = tmp_path / "z2.yaml"
    plan.write_text(
        "schema_version: 1\nname: z2\nmodel: 8b\nbudget: {flops: 1e22}\ntraining: {seq_len: 4096}\n"
        f"cluster: {{gpu: h100-sxm, gpus: 64}}\nparallel: {pins}\n"
    )
    result = _run(str(plan), "--to", "megatron")
    assert result.exit_code == code, result.output
    assert phrase in " ".join(result.stderr.split())


def test_megatron_says_what_its_unrecomputed_modules_cost_in_memory(tmp_path):
    """Megatron-core's TransformerEngine spec fuses a dense layer's norms into the next linear, so
    `--recompute-modules layernorm` recomputed nothing, and the dense MLP activation has no module: the 70B
    example, planned at 72.7 GB, needs 80.1 GB per GPU as Megatron runs it (a reviewer's pinned `parallelize`
    with recompute none gave the same), over the 76 GB limit. The script no longer sets the no-op module and the
    warning gives the memory; Mixtral (MoE: its pre-MLP norm is a module, no dense MLP) gets no memory line."""
    result = _run(str(EXAMPLES / "70b-512-h100.yaml"), "--to", "megatron", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert "--recompute-modules layernorm" not in data["text"]
    (memory,) = [w for w in data["warnings"] if w.startswith("memory: ")]
    assert memory == (
        "memory: without layernorm, mlp_act recomputed the layout needs 80.1 GB per GPU in Megatron, against the "
        "plan's 72.7 GB and the limit 76 GB: over the limit: pin parallel.recompute: full (59.3 GB); or plan with "
        "stack preset megatron-core (62.4 GB)"
    )
    selective = tmp_path / "moe-selective.yaml"  # the example's search may pick recompute none
    selective.write_text(
        (EXAMPLES / "moe-mixtral-8x7b.yaml").read_text() + "parallel:\n  recompute: selective\n"
    )
    moe = json.loads(_run(str(selective), "--to", "megatron", "--json").stdout)
    assert not [w for w in moe["warnings"] if w.startswith("memory: ")]
    assert "--recompute-modules" in moe["text"] and "layernorm" in moe["text"]
