"""What the Megatron-LM export writes where the engine itself sets the limit: context parallelism needs
TransformerEngine attention, --save-retain-interval deletes checkpoints, userbuffers TP overlap needs CUDA
multicast. Each rule was read in the engine source (see the exporter's comments)."""

import pytest
from tests.export._plans import golden_plan, parse_script_args, rebalanced, with_layout

from runplan.errors import SpecError
from runplan.export import export_plan
from runplan.units import format_steps


def _with_inputs(plan, **changes):
    return plan.model_copy(update={"inputs": {**plan.inputs, **changes}})


def _with_stack(plan, **stack):
    return _with_inputs(plan, stack=stack)


def _on_gpu(plan, gpu):
    """``plan`` timed on ``gpu`` (a shipped name or an inline spec): its inputs and the GPU its layout records
    (``layout.gpu``, which the exporters read first; an inline spec is read from the inputs)."""
    from runplan.catalog import load_catalog

    moved = _with_inputs(plan, cluster={**plan.inputs["cluster"], "gpu": gpu})
    spec = load_catalog([]).gpu(gpu) if isinstance(gpu, str) else None
    return moved.model_copy(update={"layout": moved.layout.model_copy(update={"gpu": spec})})


# ---------------------------------------------------------------- context parallelism ----------------------
def test_megatron_2022_preset_has_no_context_parallelism(tmp_path):
    from runplan.parallel.stack import Stack
    from runplan.plan import build_plan
    from runplan.spec import load_plan

    assert Stack(preset="megatron-2022").context_parallel is False
    # the reported plan: 30 days on 256 A100, 4k tokens; with CP searched it ranked TP4 PP2 CP2 first
    path = tmp_path / "m22.yaml"
    path.write_text(
        "schema_version: 1\nname: m22\nbudget: {days: 30}\ntraining: {seq_len: 4096}\n"
        "cluster: {gpu: a100-80gb, gpus: 256, price_per_gpu_hour: 1.5}\nstack: megatron-2022\n",
        encoding="utf-8",
    )
    plan = build_plan(load_plan(path), tmp_path)
    assert plan.layout.best.cp == 1
    assert all(c.cp == 1 for c in plan.layout.runners_up)
    assert "--context-parallel-size" not in parse_script_args(export_plan(plan, "megatron").text)


def test_megatron_refuses_context_parallelism_without_flash_attention_in_one_line():
    plan = rebalanced(golden_plan("70b-512-h100"), cp=2)  # d = 512 / (4·2·2) = 32, m = 5,312 / 32 = 166
    assert (plan.layout.best.dp, plan.layout.best.microbatches) == (32, 166)
    # a pinned CP with the 2022 stack: Megatron-core's local attention asserts CP 1 and TransformerEngine's
    # unfused attention has no CP, so --attention-backend unfused with --context-parallel-size 2 cannot start
    with pytest.raises(SpecError, match="context parallelism") as info:
        export_plan(_with_stack(plan, preset="megatron-2022"), "megatron")
    assert info.value.where == "stack.flash_attention" and "\n" not in str(info.value)
    assert "stack.context_parallel: false" in (info.value.hint or "")
    args = parse_script_args(export_plan(plan, "megatron").text)  # TransformerEngine attention: exported
    assert args[args.index("--context-parallel-size") + 1] == "2"


# ---------------------------------------------------------------- checkpoint retention ---------------------
def _megatron_kept(saves: list[int], retain: int | None) -> set[int]:
    """Megatron-LM's rule, re-stated (training/checkpointing.py, iter_finalize_fn): with --save-retain-interval,
    each save deletes the previous one unless its iteration is a multiple of the interval; without, none."""
    kept: set[int] = set()
    for i, step in enumerate(saves):
        kept.add(step)
        prev = saves[i - 1] if i else 0
        if retain is not None and prev > 0 and prev % retain:
            kept.discard(prev)
    return kept


def _plan_kept(
    saves: list[int], gens: int, rollback_every: int, rollback_gens: int, milestones: list[int]
) -> set[int]:
    """What the plan's checkpoint section says exists after the last of ``saves``."""
    kept = set(saves[-gens:])
    if rollback_every:
        kept |= set([s for s in saves if s % rollback_every == 0][-rollback_gens:])
    return kept | (set(saves) & set(milestones))


def test_megatron_export_keeps_every_checkpoint_the_plan_keeps():
    plan = golden_plan("70b-512-h100")
    ck = plan.checkpointing  # what `runplan monitor --plan` reads its rollback checkpoints from
    assert ck.rollback_every_steps and ck.retention_generations > 1  # rolling generations and rollback points
    result = export_plan(plan, "megatron")
    args = parse_script_args(result.text)
    retain = int(args[args.index("--save-retain-interval") + 1]) if "--save-retain-interval" in args else None
    interval = int(args[args.index("--save-interval") + 1])
    assert interval == ck.interval_steps
    saves = list(range(interval, plan.schedule.total_steps + 1, interval))
    for end in (ck.milestone_every_steps + 3 * interval, len(saves) * interval):
        so_far = [s for s in saves if s <= end]
        wanted = _plan_kept(
            so_far,
            ck.retention_generations,
            ck.rollback_every_steps,
            ck.rollback_generations,
            ck.milestone_steps,
        )
        assert wanted <= _megatron_kept(so_far, retain), sorted(wanted - _megatron_kept(so_far, retain))[:5]
    (warning,) = [w for w in result.warnings if w.startswith("checkpoint retention:")]
    assert f"the {ck.retention_generations} newest" in warning
    assert (
        f"the {ck.rollback_generations} newest at multiples of {ck.rollback_every_steps:,} steps" in warning
    )
    # the ramp moves the milestones off the multiples of milestone_every_steps (ops/checkpoint.py): each is named
    assert ck.milestone_steps[0] != ck.milestone_every_steps
    steps = format_steps(
        ck.milestone_steps, "the plan's checkpointing.milestone_steps: runplan plan FILE -f json"
    )
    assert f"the {len(ck.milestone_steps)} at steps {steps} (milestones)" in warning
    assert all(step % interval == 0 for step in ck.milestone_steps)  # each is a save Megatron makes
    assert "delete by hand" in warning and "\n" not in warning


# ---------------------------------------------------------------- TP communication overlap -----------------
def test_tp_comm_overlap_is_not_written_for_ampere():
    plan = golden_plan("70b-512-h100")  # TP 8 with SP, stack tp_comm_overlap on
    assert "--tp-comm-overlap" in parse_script_args(export_plan(plan, "megatron").text)
    assert not [w for w in export_plan(plan, "megatron").warnings if w.startswith("TP overlap:")]
    a100 = export_plan(_on_gpu(plan, "a100-80gb"), "megatron")
    args = parse_script_args(a100.text)
    assert "--tp-comm-overlap" not in args and "--sequence-parallel" in args
    (warning,) = [w for w in a100.warnings if w.startswith("TP overlap:")]
    assert "CUDA multicast" in warning and "assumed the overlap" in warning
    assert "--no-tp-comm-overlap" in warning and "stack.tp_comm_overlap: false" in warning
    # an inline GPU spec says its family too
    inline = {
        "name": "my-a100",
        "hbm_bytes": 80e9,
        "bf16_flops": 312e12,
        "hbm_bandwidth_bytes_per_s": 2.039e12,
        "intra_node_bandwidth_bytes_per_s": 300e9,
        "inter_node_bandwidth_bytes_per_s": 25e9,
        "gpus_per_node": 8,
        "tdp_watts": 400.0,
        "family": "ampere",
    }
    assert "--tp-comm-overlap" not in parse_script_args(export_plan(_on_gpu(plan, inline), "megatron").text)


# ---------------------------------------------------------------- Megatron FSDP (ZeRO-3) ---------------------
def test_megatron_fsdp_warns_of_pipeline_stages_but_not_of_expert_parallelism():
    """Megatron-LM @ 000c4ac2 runs Megatron FSDP (optim_grads_params) with EP in its per-MR CI
    (tests/test_utils/recipes/moe.yaml:166, moe/gpt3_mcore_te_tp2_zp_z3_resume_torch_dist_te_8experts2parallel_
    top2router: --expert-model-parallel-size 2 --use-megatron-fsdp) and has no FSDP case with pipeline stages."""
    experts = export_plan(with_layout(golden_plan("moe-mixtral-8x7b"), zero=3, pp=1, vpp=1, ep=8), "megatron")
    args = parse_script_args(experts.text)
    assert "--use-megatron-fsdp" in args and "--expert-model-parallel-size" in args
    assert not [w for w in experts.warnings if "ZeRO-3" in w and "tested" in w], experts.warnings
    staged = export_plan(with_layout(golden_plan("70b-512-h100"), zero=3), "megatron")
    assert golden_plan("70b-512-h100").layout.best.pp > 1
    (note,) = [w for w in staged.warnings if "ZeRO-3" in w and "tested" in w]
    assert "pipeline" in note and "expert" not in note


# ---------------------------------------------------------------- MoE wording -------------------------------
def test_expert_parallel_comment_counts_the_data_and_context_ranks_and_one_shared_expert_is_singular():
    plan = with_layout(golden_plan("moe-mixtral-8x7b"), dp=128, cp=2, ep=8)
    shape = plan.model.shape.model_copy(update={"n_shared_experts": 1})
    plan = plan.model_copy(update={"model": plan.model.model_copy(update={"shape": shape})})
    text = export_plan(plan, "megatron").text
    (line,) = [line for line in text.splitlines() if "--expert-model-parallel-size" in line]
    assert "d·c = 256" in line and "d = 128" not in line
    (shared,) = [line for line in text.splitlines() if "--moe-shared-expert-intermediate-size" in line]
    assert "1 shared expert x" in shared
    toml = export_plan(plan, "torchtitan").text
    (degree,) = [line for line in toml.splitlines() if line.startswith("expert_parallel_degree")]
    assert "d*c = 256" in degree
