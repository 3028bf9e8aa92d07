"""What the torchtitan and DeepSpeed exports write where the engine itself sets the limit: torchtitan's
keep_latest_k deletes every checkpoint but the newest k, its start-up asserts (mxfp8 with TP under compile, the
sequence-length divisor), DeepSpeed deletes no checkpoint and builds a pipeline's data-parallel size from the
PipelineModule's topology. Each rule was read in the engine source (see the exporters' comments)."""

import json
import tomllib

import pytest
from tests.export._plans import golden_plan, rebalanced, with_layout

from runplan.errors import SpecError
from runplan.export import export_plan


def _with_stack(plan, **stack):
    return plan.model_copy(update={"inputs": {**plan.inputs, "stack": stack}})


# ---------------------------------------------------------------- checkpoint retention ---------------------
def _torchtitan_kept(saves: list[int], keep_latest_k: int) -> set[int]:
    """torchtitan 0.2.2's rule, re-stated (components/checkpoint.py, _purge_stale_checkpoints after each save):
    every step-N folder but the keep_latest_k newest is deleted; 0 deletes nothing."""
    kept: set[int] = set()
    for step in saves:
        kept.add(step)
        if keep_latest_k > 0:
            kept = set(sorted(kept)[-keep_latest_k:])
    return kept


def _plan_kept(saves: list[int], ck) -> set[int]:
    """What the plan's checkpoint section says exists after the last of ``saves``."""
    kept = set(saves[-ck.retention_generations :])
    if ck.rollback_every_steps:
        points = [s for s in saves if s % ck.rollback_every_steps == 0]
        kept |= set(points[-ck.rollback_generations :])
    # torchtitan and DeepSpeed drop the batch ramp: every step at the main batch, milestones at the multiples
    return kept | {s for s in saves if ck.milestone_every_steps and s % ck.milestone_every_steps == 0}


def _kept_phrases(ck) -> list[str]:
    return [
        f"the {ck.retention_generations} newest checkpoints",
        f"the {ck.rollback_generations} newest at multiples of {ck.rollback_every_steps:,} steps (rollback points)",
        f"every one at a multiple of {ck.milestone_every_steps:,} steps (milestones",
        "delete by hand",
    ]


def test_torchtitan_keeps_every_checkpoint_the_plan_keeps():
    plan = golden_plan("70b-512-h100")
    ck = plan.checkpointing
    assert ck.rollback_every_steps and ck.milestone_every_steps  # rollback points and milestones
    result = export_plan(plan, "torchtitan")
    doc = tomllib.loads(result.text)["checkpoint"]
    interval = doc["interval"]
    saves = list(range(interval, plan.schedule.total_steps + 1, interval))
    for end in (ck.milestone_every_steps + 3 * interval, len(saves) * interval):
        so_far = [s for s in saves if s <= end]
        lost = _plan_kept(so_far, ck) - _torchtitan_kept(so_far, doc["keep_latest_k"])
        assert not lost, sorted(lost)[:5]
    (warning,) = [w for w in result.warnings if w.startswith("checkpoint retention:")]
    assert all(phrase in warning for phrase in _kept_phrases(ck)) and "\n" not in warning
    assert "step-N folder" in warning


def test_torchtitan_without_checkpoints_to_hold_keeps_the_rolling_generations():
    plan = golden_plan("70b-512-h100")
    ck = plan.checkpointing.model_copy(update={"rollback_every_steps": 0, "milestone_every_steps": 0})
    plan = plan.model_copy(update={"checkpointing": ck})
    result = export_plan(plan, "torchtitan")
    assert tomllib.loads(result.text)["checkpoint"]["keep_latest_k"] == ck.retention_generations
    assert not [w for w in result.warnings if w.startswith("checkpoint retention:")]


def test_deepspeed_checkpoint_warning_names_every_checkpoint_the_plan_keeps():
    plan = golden_plan("70b-512-h100")
    (warning,) = [w for w in export_plan(plan, "deepspeed").warnings if w.startswith("checkpoints:")]
    assert all(phrase in warning for phrase in _kept_phrases(plan.checkpointing))


# ---------------------------------------------------------------- torchtitan start-up asserts ---------------
def test_torchtitan_refuses_mxfp8_with_tensor_parallelism():
    # components/quantization/mx.py: "TP not yet supported with torch.compile for mxfp8"; fp8 exports compile
    plan = golden_plan("70b-512-h100")  # t = 4
    with pytest.raises(SpecError, match="mxfp8") as info:
        export_plan(_with_stack(plan, precision="fp8", fp8_recipe="mxfp8"), "torchtitan")
    assert info.value.where == "stack.fp8_recipe" and "\n" not in str(info.value)
    one = rebalanced(plan, tp=1, pp=8)  # t 1, p 8: d = 512 / 8 = 64, m = 83 as planned
    assert (one.layout.best.dp, one.layout.best.microbatches) == (64, 83)
    doc = tomllib.loads(export_plan(_with_stack(one, precision="fp8", fp8_recipe="mxfp8"), "torchtitan").text)
    assert doc["model"]["converters"] == ["quantize.linear.mx"]


def test_torchtitan_refuses_a_sequence_length_its_divisor_does_not_divide():
    # ParallelDims.seq_len_divisor = tp * (cp * 2), asserted in parallelize_llama
    plan = rebalanced(golden_plan("70b-512-h100"), tp=8, cp=1)  # 4096 % 16 == 0: exported
    assert (plan.layout.best.dp, plan.layout.best.microbatches) == (32, 166)  # 512 / (8·2); 5,312 / 32
    export_plan(plan, "torchtitan")
    sched = plan.schedule
    odd = plan.model_copy(
        update={
            "schedule": sched.model_copy(update={"global_batch_tokens": sched.global_batch_sequences * 4100})
        }
    )
    with pytest.raises(SpecError, match="t\\*2\\*c = 8\\*2\\*1 = 16") as info:
        export_plan(odd, "torchtitan")
    assert info.value.where == "training.seq_len"


# ---------------------------------------------------------------- DeepSpeed pipeline topology --------------
def test_deepspeed_pipeline_takes_its_data_parallel_size_from_the_topology():
    plan = golden_plan("70b-512-h100")  # t = 4, p = 2, c = 1
    assert plan.layout.best.cp == 1
    best = plan.layout.best
    result = export_plan(plan, "deepspeed")
    (warning,) = [w for w in result.warnings if w.startswith("pipeline:")]
    # deepspeed.initialize asserts "mpu must be None with pipeline parallelism"
    assert f"PipeModelDataParallelTopology(num_pp={best.pp}, num_mp={best.tp}, num_dp={best.dp})" in warning
    assert not [w for w in result.warnings if w.startswith("batch identity:")]
    config = json.loads(result.text)
    assert config["train_batch_size"] == (
        config["train_micro_batch_size_per_gpu"] * config["gradient_accumulation_steps"] * best.dp
    )
    cp = rebalanced(plan, cp=2)  # d = 512 / (4·2·2) = 32, m = 5,312 / 32 = 166
    assert (cp.layout.best.dp, cp.layout.best.microbatches) == (32, 166)
    (warning,) = [w for w in export_plan(cp, "deepspeed").warnings if w.startswith("pipeline:")]
    assert "no sequence-parallel axis" in warning and "c = 2 cannot run" in warning
    flat = rebalanced(plan, pp=1, tp=8)  # no pipeline, t > 1: d = 512 / 8 = 64, m = 83
    (warning,) = [w for w in export_plan(flat, "deepspeed").warnings if w.startswith("batch identity:")]
    assert "d = 64 (world 512 = t*p*d*c = 8*1*64*1)" in warning


# ---------------------------------------------------------------- DeepSpeed gradient dtype -----------------
def _with_gradients(plan, dtype: str):
    return _with_stack(plan, **{**plan.inputs["stack"], "gradient_dtype": dtype})


def test_deepspeed_reduces_and_accumulates_gradients_in_the_plans_dtype():
    # DeepSpeed 0.19.8 reduces in communication_data_type and accumulates in data_types.grad_accum_dtype, each
    # the model's bf16 when unset (runtime/engine.py communication_data_type, get_data_types); the plan's
    # default counts fp32 gradients (stack gradient_dtype), so both must be written
    plan = golden_plan("70b-512-h100")  # ZeRO-1, fp32 gradients, t = 4, p = 2
    result = export_plan(plan, "deepspeed")
    config = json.loads(result.text)
    assert config["communication_data_type"] == "fp32"
    assert config["data_types"] == {"grad_accum_dtype": "fp32"}
    # ZeRO-1 with fp32 accumulation is BF16_Optimizer, which all-reduces the whole fp32 gradient
    (warning,) = [w for w in result.warnings if w.startswith("gradients:")]
    assert "BF16_Optimizer" in warning and "all-reduces" in warning and "\n" not in warning
    bf16 = json.loads(export_plan(_with_gradients(plan, "bf16"), "deepspeed").text)
    assert bf16["communication_data_type"] == "bf16" and bf16["data_types"] == {"grad_accum_dtype": "bf16"}
    assert not [w for w in bf16["runplan"]["warnings"] if w.startswith("gradients:")]
    # ZeRO-2/3 accumulate their partition in fp32 and reduce-scatter in the communication dtype: no warning
    for zero in (2, 3):
        flat = rebalanced(plan, pp=1, tp=8, zero=zero)  # DeepSpeed's pipeline engine refuses ZeRO >= 2
        config = json.loads(export_plan(flat, "deepspeed").text)
        assert (config["communication_data_type"], config["data_types"]["grad_accum_dtype"]) == (
            "fp32",
            "fp32",
        )
        assert not [w for w in config["runplan"]["warnings"] if w.startswith("gradients:")]


def test_deepspeed_without_zero_reduces_fp32_but_cannot_accumulate_in_it():
    # _do_optimizer_sanity_check: bf16 weights with grad_accum_dtype fp32 and no ZeRO raise
    # NotImplementedError("unsupported mix ..."), so the export must not write it
    plan = with_layout(golden_plan("70b-512-h100"), zero=0)
    result = export_plan(plan, "deepspeed")
    config = json.loads(result.text)
    assert config["communication_data_type"] == "fp32" and "data_types" not in config
    (warning,) = [w for w in result.warnings if w.startswith("gradients:")]
    assert "NotImplementedError" in warning and "parallel.zero: 1" in warning and "\n" not in warning
    bf16 = json.loads(export_plan(_with_gradients(plan, "bf16"), "deepspeed").text)
    assert bf16["data_types"] == {"grad_accum_dtype": "bf16"}


def test_deepspeed_ulysses_reduces_gradients_in_the_plans_dtype_too():
    # with a sequence-parallel size > 1 the engine replaces communication_data_type with
    # seq_parallel_communication_data_type, fp32 by default (runtime/engine.py, runtime/constants.py)
    # t 1, p 1, c 8 on 512 GPUs: d = 64 and m = 83 as planned (64 heads and 8 KV heads split 8 ways)
    plan = rebalanced(golden_plan("70b-512-h100"), pp=1, tp=1, cp=8)
    assert (plan.layout.best.dp, plan.layout.best.microbatches) == (64, 83)
    config = json.loads(export_plan(_with_gradients(plan, "bf16"), "deepspeed").text)
    assert config["seq_parallel_communication_data_type"] == config["communication_data_type"] == "bf16"
    flat = rebalanced(plan, cp=1, tp=8)  # no sequence-parallel axis: d = 64
    assert "seq_parallel_communication_data_type" not in json.loads(export_plan(flat, "deepspeed").text)


# ---------------------------------------------------------------- DeepSpeed AutoTP --------------------------
def test_deepspeed_writes_autotp_only_without_pipeline_and_context_parallelism():
    # AutoTP makes the engine's mpu DeepSpeed's own (world/t) x t data x tensor mesh (runtime/engine.py
    # _configure_tensor_parallel_states, utils/groups.py _init_tp_mesh_device): under a PipelineModule
    # PipelineEngine then asserts dp_world_size == grid.data_parallel_size (runtime/pipe/engine.py), and the
    # Ulysses groups are lost; there the plan's TP has to be built in the model code
    plan = golden_plan("70b-512-h100")  # t = 4, p = 2, c = 1
    result = export_plan(plan, "deepspeed")
    assert "tensor_parallel" not in json.loads(result.text)
    (warning,) = [w for w in result.warnings if w.startswith("tensor parallel:")]
    assert "not exported as AutoTP" in warning and "dp_world_size == grid.data_parallel_size" in warning
    assert "get_slice_parallel_group" in warning and "\n" not in warning
    flat = golden_plan("2e23-compute-optimal")  # a planned layout without pipeline or context ranks: t = 4
    assert (flat.layout.best.tp, flat.layout.best.pp, flat.layout.best.cp) == (4, 1, 1)
    assert json.loads(export_plan(flat, "deepspeed").text)["tensor_parallel"] == {"autotp_size": 4}
    ulysses = rebalanced(flat, cp=2)  # 1,024 GPUs: d = 1024 / (4·2) = 128, m = 3,072 / (128·2) = 12
    assert (ulysses.layout.best.dp, ulysses.layout.best.microbatches) == (128, 12)
    result = export_plan(ulysses, "deepspeed")
    assert "tensor_parallel" not in json.loads(result.text)
    (warning,) = [w for w in result.warnings if w.startswith("tensor parallel:")]
    assert "Ulysses" in warning and "not exported as AutoTP" in warning


def test_deepspeed_autotp_overlap_warning_follows_the_stack():
    # the "AutoTP does not overlap" caution is only true when the plan's step time hid TP communication
    # (stack.tp_comm_overlap, with SP, t within a node: parallel/timing.py tp_overlap_applies); the deepspeed
    # preset sets tp_comm_overlap false, so its plans counted the TP collectives exposed already
    # t = 4 with SP, p = 1, default stack: tp_comm_overlap on (the layout runplan planned for it)
    flat = golden_plan("2e23-compute-optimal")
    assert (flat.layout.best.tp, flat.layout.best.pp, flat.layout.best.sequence_parallel) == (4, 1, True)

    def tp_warning(p):
        (warning,) = [w for w in export_plan(p, "deepspeed").warnings if w.startswith("tensor parallel:")]
        return warning

    assert "does not overlap its collectives" in tp_warning(flat)
    assert "does not overlap" not in tp_warning(_with_stack(flat, preset="deepspeed"))
    assert "does not overlap" not in tp_warning(_with_stack(flat, tp_comm_overlap=False))


def test_deepspeed_autotp_says_the_plan_s_sequence_parallelism_is_lost():
    # AutoTP's LinearLayer / LinearAllreduce have no sequence parallelism: a plan that split the norm and
    # dropout activations t ways (SP) needs more memory under AutoTP; one planned without SP does not
    flat = golden_plan("2e23-compute-optimal")  # t = 4 with SP, p = 1, c = 1 (as planned)
    assert (flat.layout.best.tp, flat.layout.best.pp, flat.layout.best.cp) == (4, 1, 1)
    assert flat.layout.best.sequence_parallel

    def tp_warning(p):
        (warning,) = [w for w in export_plan(p, "deepspeed").warnings if w.startswith("tensor parallel:")]
        return warning

    warning = tp_warning(flat)
    assert "AutoTP has no sequence parallelism" in warning and "split 4 ways" in warning
    assert "parallel.sequence_parallel: false" in warning
    without = tp_warning(with_layout(flat, sequence_parallel=False))
    assert "AutoTP has no sequence parallelism" not in without and "no ds_config key" in without


# ---------------------------------------------------------------- DeepSpeed DP gradient overlap -------------
def _overlap_warnings(plan) -> list[str]:
    result = export_plan(plan, "deepspeed")
    zero = json.loads(result.text)["zero_optimization"]
    from runplan.parallel.stack import Stack

    stack = Stack.model_validate(plan.inputs.get("stack") or {})
    bf16_optimizer = (
        zero["stage"] == 1 and stack.gradient_dtype == "fp32"
    )  # reduces after the backward anyway
    writes = (
        stack.overlap_grad_reduce
        and zero["stage"] in (1, 2)
        and plan.layout.best.pp == 1
        and not bf16_optimizer
    )
    # ZeRO-1/2 overlap only with overlap_comm (default false below stage 3): written where the plan hides it
    assert zero.get("overlap_comm") is (True if writes else None)
    return [w for w in result.warnings if w.startswith("gradient reduction:")]


@pytest.mark.parametrize(
    ("zero", "pp", "grad_dtype", "says"),
    [
        (0, 1, "fp32", "without ZeRO all-reduces the gradients after the backward pass"),
        (1, 1, "fp32", "BF16_Optimizer (fp32 gradient accumulation) all-reduces"),
        (1, 1, "bf16", None),  # overlap_comm written
        (2, 1, "fp32", None),
        (1, 2, "fp32", "PipelineEngine reduces the data-parallel gradients after the last micro-batch"),
        (3, 1, "fp32", None),  # overlap_comm defaults to true at stage 3 (zero/config.py overlap_comm_valid)
    ],
)
def test_deepspeed_warns_where_it_does_not_overlap_the_gradient_reduction(zero, pp, grad_dtype, says):
    # DeepSpeed 0.19.8: ZeRO-1/2 reduce on the compute stream unless overlap_comm (default false below stage
    # 3); ZeRO-0 and BF16_Optimizer all-reduce after backward (engine.allreduce_gradients); PipelineEngine
    # reduces after the last micro-batch (TrainSchedule ReduceGrads). The plan's default stack (and the
    # deepspeed preset) hides the reduction under the backward pass.
    plan = golden_plan("2e23-7b-overtrained")
    # t 1, p 1, d 512, b 1, m 6 as planned; p = 2 halves d to 256 and doubles m to 12 (3,072 sequences)
    layout = rebalanced(plan, zero=zero, pp=pp, tp=1, cp=1, vpp=1)
    assert (layout.layout.best.dp, layout.layout.best.microbatches) == (512 // pp, 6 * pp)
    for stack in ({"gradient_dtype": grad_dtype}, {"preset": "deepspeed", "gradient_dtype": grad_dtype}):
        warnings = _overlap_warnings(_with_stack(layout, **stack))
        if says is None:
            assert warnings == []
        else:
            (warning,) = warnings
            assert says in warning and "overlap_grad_reduce: false" in warning and "\n" not in warning
    # a plan that already counted the reduction exposed gets no caution
    assert _overlap_warnings(_with_stack(layout, overlap_grad_reduce=False, gradient_dtype=grad_dtype)) == []
