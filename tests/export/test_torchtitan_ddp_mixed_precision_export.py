"""torchtitan 0.2.2's mixed precision under the plan's ZeRO-0 (DDP: ``data_parallel_shard_degree`` 1).

``maybe_enable_amp`` (torchtitan/distributed/utils.py @ 73a0e697, the 0.2.2 wheel alike) decides it: with FSDP
(``ParallelDims.fsdp_enabled``: dp_shard > 1 or cp > 1) fully_shard's MixedPrecisionPolicy casts to bf16; without
it, TP or PP turn mixed precision off ("Mixed precision training is disabled": fp32 weights and matmuls), and
otherwise the forward runs under ``torch.autocast`` over the fp32 parameters. So a ZeRO-0 plan with t > 1 or
p > 1 (and c = 1) would train in fp32, not the plan's bf16: refused (exit 2). With t = p = c = 1 torchtitan runs
exactly the stack ``autocast_fp32_weights: true``, which is then exported; a plan timed with bf16 weights beside
an fp32 master gets a warning (each micro-batch recasts every weight).
"""

import pytest
from tests.export._plans import golden_plan, rebalanced, with_layout
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.errors import SpecError
from runplan.export import export_plan


def _with_stack(plan, **stack):
    return plan.model_copy(update={"inputs": {**plan.inputs, "stack": stack}})


def _flat_ddp(**stack):
    """The Mixtral example (t = p = c = 1, d = 256) as ZeRO-0 without expert parallelism (DDP replicas only)."""
    plan = with_layout(
        golden_plan("moe-mixtral-8x7b"), zero=0, ep=1, cp=1, dp=256, microbatches=12
    )  # pinned: the plan's own has c = 2
    return _with_stack(plan, **stack) if stack else plan


@pytest.mark.parametrize("layout", [{"tp": 4, "pp": 2}, {"tp": 8, "pp": 1}, {"tp": 1, "pp": 8}])
def test_ddp_with_tp_or_pp_is_refused_because_torchtitan_trains_it_in_fp32(layout):
    plan = rebalanced(golden_plan("70b-512-h100"), zero=0, **layout)  # c = 1
    assert (plan.layout.best.dp, plan.layout.best.microbatches) == (64, 83)  # t·p = 8 in each: d = 512 / 8
    with pytest.raises(SpecError, match="without mixed precision") as info:
        export_plan(plan, "torchtitan")
    assert info.value.where == "parallel.zero" and "\n" not in str(info.value)
    assert "fp32" in str(info.value) and "parallel.zero: 3" in (info.value.hint or "")


def test_ddp_with_context_parallelism_is_fsdp_over_the_cp_ranks_and_exports():
    # fsdp_enabled is dp_shard > 1 or cp > 1: fully_shard casts to bf16 (test_moe_expert_parallel_export has
    # the same layout's experts)
    plan = rebalanced(golden_plan("moe-mixtral-8x7b"), zero=0, cp=8)  # d = 256 / 8 = 32, m = 3,072 / 32 = 96
    assert (plan.layout.best.dp, plan.layout.best.microbatches) == (32, 96)
    result = export_plan(plan, "torchtitan")
    assert "data_parallel_replicate_degree = 32" in result.text
    assert not [w for w in result.warnings if w.startswith("precision:")]
    (warning,) = [w for w in result.warnings if w.startswith("ZeRO-0:")]
    assert "sharded 8 ways" in warning and "\n" not in warning


def test_plain_ddp_is_torch_autocast_and_the_bf16_weight_plan_is_warned():
    result = export_plan(_flat_ddp(), "torchtitan")
    assert "data_parallel_replicate_degree = 256" in result.text
    (warning,) = [w for w in result.warnings if w.startswith("precision:")]
    assert "torch.autocast" in warning and "autocast_fp32_weights: true" in warning and "\n" not in warning


def test_plain_ddp_exports_a_plan_timed_as_autocast_over_fp32_weights():
    # before: refused as "torchtitan trains with FSDP2 mixed precision", which its DDP path does not
    result = export_plan(_flat_ddp(autocast_fp32_weights=True), "torchtitan")
    assert "data_parallel_replicate_degree = 256" in result.text
    assert not [w for w in result.warnings if w.startswith("precision:")]


@pytest.mark.parametrize("layout", [{"zero": 1}, {"zero": 0, "tp": 2}])
def test_autocast_is_still_refused_where_torchtitan_runs_fsdp_or_no_mixed_precision(layout):
    # d = 256 / t, m = 3,072 / d: t 1 is d 256, m 12; t 2 is d 128, m 24
    plan = _with_stack(
        rebalanced(golden_plan("moe-mixtral-8x7b"), **{"ep": 1, "cp": 1, **layout}),
        autocast_fp32_weights=True,
    )
    with pytest.raises(SpecError) as info:
        export_plan(plan, "torchtitan")
    assert info.value.where in ("stack.autocast_fp32_weights", "parallel.zero")


def test_cli_refuses_a_ddp_tp_plan_in_one_line_with_exit_2(tmp_path):
    plan = tmp_path / "ddp.yaml"
    plan.write_text(
        "schema_version: 1\nname: ddp-tp\nmodel: llama-3.1-8b\nbudget: {tokens: 500B}\n"
        "training: {seq_len: 4096}\ncluster: {gpu: h100-sxm, gpus: 64}\nparallel: {zero: 0, tp: 2}\n"
    )
    result = CliRunner().invoke(app, ["export", str(plan), "--to", "torchtitan"])
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("runplan: error:")]
    assert len(errors) == 1 and "parallel.zero" in errors[0] and "fp32" in errors[0]
    assert "Traceback" not in result.output


def test_one_data_parallel_rank_is_no_fsdp_either():
    # data_parallel_shard_degree 1 (d = 1 under ZeRO-1) is no FSDP: with TP and PP the same fp32 run
    # one data-parallel rank on 512 GPUs without CP (c > 1 would be FSDP over the CP ranks): t 8, p 64
    # (t·p = 512; ⌈80/64⌉ = 2 layers on the busiest stage), m = 5,312; ZeRO-1
    plan = rebalanced(golden_plan("70b-512-h100"), tp=8, pp=64)
    assert (plan.layout.best.dp, plan.layout.best.microbatches, plan.layout.best.layers_per_stage) == (
        1,
        5312,
        2,
    )
    with pytest.raises(SpecError, match="d = 1") as info:
        export_plan(plan, "torchtitan")
    assert info.value.where == "parallel.dp" and "d > 1" in (info.value.hint or "")
