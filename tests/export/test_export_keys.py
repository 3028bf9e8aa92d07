"""Every exported flag/key is in the checked-in list for its engine, with a valid value, and the arithmetic the
engines check (batch identities, layer splits, ramp, LR phases) holds on the exported numbers."""

from __future__ import annotations

import argparse
import json
import math
import re
import tomllib

import pytest
from tests.export._plans import EXAMPLE_NAMES, example_plan, parse_script_args, rebalanced, with_layout

from runplan.export import export_plan
from runplan.export._common import engine_data, facts

_TYPES = {"int": int, "float": float, "str": str}


def test_lists_name_engine_version_and_source() -> None:
    for name in ("megatron_arguments", "torchtitan_keys", "deepspeed_config_keys"):
        data = engine_data(name)
        assert data["engine"] and data["version"] and data["source"], name
    assert "arguments.py" in engine_data("megatron_arguments")["source"]
    assert engine_data("torchtitan_keys")["version"].startswith("0.2.")
    assert engine_data("deepspeed_config_keys")["version"] == "0.19.8"


def megatron_parser() -> argparse.ArgumentParser:
    """An argparse parser rebuilt from the checked-in list: the flags, types, nargs and choices Megatron has."""
    parser = argparse.ArgumentParser(allow_abbrev=False, exit_on_error=False)
    for flag, spec in engine_data("megatron_arguments")["flags"].items():
        kwargs: dict = {"dest": spec["dest"]} if "dest" in spec else {}
        if "action" in spec:
            kwargs["action"] = spec["action"]
        else:
            kwargs["type"] = _TYPES[spec.get("type", "str")]
            if "nargs" in spec:
                kwargs["nargs"] = spec["nargs"]
            if "choices" in spec:
                kwargs["choices"] = spec["choices"]
            if "default" in spec:
                kwargs["default"] = spec["default"]
        parser.add_argument(flag, **kwargs)
    return parser


def expand_layout(layout: str) -> list[str]:
    """Megatron-Core's layout string expanded into its stages ('(X|)*N' and 't*N' repeats, commas ignored)."""
    text = layout.replace(",", "")
    while "(" in text:
        text = re.sub(r"\(([^()]*)\)\*(\d+)", lambda m: m.group(1) * int(m.group(2)), text)
    text = re.sub(r"([EtmL])\*(\d+)", lambda m: m.group(1) * int(m.group(2)), text)
    return text.split("|")


def test_pipeline_layout_strings() -> None:
    from runplan.export.megatron import pipeline_layout

    assert pipeline_layout([7] + [8] * 14 + [7], 8) == "E|(t|)*126L"
    assert expand_layout("E|(t|)*126L") == ["E"] + ["t"] * 126 + ["L"]
    assert pipeline_layout([3, 2, 2], 2) == "Et|t|t|t*2|t|tL"
    assert expand_layout("Et*3|(tt|)*29,m|L")[:3] == ["Ettt", "tt", "tt"]  # Megatron-Core's docs example
    assert len(expand_layout("Et*3|(tt|)*29,m|L")) == 32


def megatron_args(plan) -> argparse.Namespace:
    text = export_plan(plan, "megatron").text
    argv = [a.replace("$", "") for a in parse_script_args(text)]
    unknown = [a for a in argv if a.startswith("--") and a not in engine_data("megatron_arguments")["flags"]]
    assert not unknown, f"flags not in the checked-in Megatron list: {unknown}"
    return megatron_parser().parse_args(argv)


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_megatron_flags_parse_and_satisfy_validate_args(example: str) -> None:
    plan = example_plan(example)
    f = facts(plan)
    a = megatron_args(plan)
    # DP = world / (t*p*c) and the global batch is a multiple of b*DP
    dp = f.n_gpus // (a.tensor_model_parallel_size * a.pipeline_model_parallel_size * a.context_parallel_size)
    assert dp == f.layout.dp
    assert a.global_batch_size % (a.micro_batch_size * dp) == 0
    assert a.global_batch_size // (a.micro_batch_size * dp) == f.layout.microbatches
    # rules read from validate_args
    assert a.max_position_embeddings >= a.seq_length
    if a.context_parallel_size > 1:
        assert a.seq_length % (2 * a.context_parallel_size) == 0
    if a.rampup_batch_size is not None:
        assert a.train_iters is None and a.train_samples is not None
        start, inc, _samples = map(int, a.rampup_batch_size)
        assert start % (a.micro_batch_size * dp) == 0 and inc % (a.micro_batch_size * dp) == 0
        assert (a.global_batch_size - start) % inc == 0
    if a.recompute_granularity == "selective":
        assert a.recompute_method is None
    if a.tp_comm_overlap:
        assert a.sequence_parallel and a.tensor_model_parallel_size > 1
    t = a.tensor_model_parallel_size
    assert a.tp_comm_overlap == (1 < t <= f.gpus_per_node and a.sequence_parallel)
    p = a.pipeline_model_parallel_size
    if (
        f.layout.vpp > 1
    ):  # interleaved 1F1B runs micro-batches in groups of p, in every batch stage of the ramp
        assert all((st.batch_sequences // (f.layout.dp * f.layout.micro_batch)) % p == 0 for st in f.stages)
    first, last = a.decoder_first_pipeline_num_layers, a.decoder_last_pipeline_num_layers
    if a.pipeline_model_parallel_layout:
        assert first is None and last is None and a.num_virtual_stages_per_pipeline_rank is None
        stages = expand_layout(a.pipeline_model_parallel_layout)
        assert len(stages) == p * f.layout.vpp and stages[0].startswith("E") and stages[-1].endswith("L")
        per_rank = [
            sum(stages[chunk * p + rank].count("t") for chunk in range(f.layout.vpp)) for rank in range(p)
        ]
        assert sum(per_rank) == a.num_layers and max(per_rank) == f.layers_per_stage
    elif first is None:
        assert a.num_layers % p == 0
        if a.num_layers_per_virtual_pipeline_stage:
            assert (a.num_layers // p) % a.num_layers_per_virtual_pipeline_stage == 0
            assert (a.num_layers // p) // a.num_layers_per_virtual_pipeline_stage == f.layout.vpp
    else:
        assert a.num_layers_per_virtual_pipeline_stage is None
        middle = a.num_layers - first - last
        if p == 2:  # the first and last stages are the whole model
            assert middle == 0 and max(first, last) == f.layers_per_stage
        else:
            assert middle % (p - 2) == 0 and max(first, last, middle // (p - 2)) == f.layers_per_stage
    if a.use_megatron_fsdp:
        assert a.ckpt_format == "fsdp_dtensor" and not a.use_distributed_optimizer
    if a.async_save:
        assert a.ckpt_format == "torch_dist"
    if a.save_retain_interval:
        assert a.save_retain_interval % a.save_interval == 0
    assert a.lr_decay_style == "WSD" and a.lr == pytest.approx(f.peak_lr, rel=1e-15)


def megatron_batch(consumed: int, start: int, inc: int, ramp_samples: int, global_batch: int) -> int:
    """Megatron-Core's RampupBatchsizeNumMicroBatchesCalculator.update, re-stated."""
    if consumed > ramp_samples:
        return global_batch
    per_increment = ramp_samples / ((global_batch - start) // inc)
    return start + int(consumed / per_increment) * inc


def megatron_wsd_lr(n: int, a: argparse.Namespace) -> float:
    """Megatron's OptimizerParamScheduler.get_lr for WSD, in samples (warmup linear from lr_warmup_init)."""
    warm, decay, wsd = a.lr_warmup_samples, a.lr_decay_samples, a.lr_wsd_decay_samples
    if warm > 0 and n <= warm:
        return a.lr_warmup_init + (a.lr - a.lr_warmup_init) * n / warm
    if n > decay:
        return a.min_lr
    start = decay - wsd
    if n <= start:
        coeff = 1.0
    else:
        ratio = (n - start) / wsd
        coeff = {
            "minus_sqrt": 1 - math.sqrt(ratio),
            "linear": 1 - ratio,
            "cosine": 0.5 * (math.cos(math.pi * ratio) + 1),
        }[a.lr_wsd_decay_style]
    return a.min_lr + coeff * (a.lr - a.min_lr)


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_megatron_ramp_and_lr_replay_the_plan(example: str) -> None:
    """Replaying Megatron's own ramp and WSD formulas on the exported numbers gives the plan's schedule."""
    plan = example_plan(example)
    f = facts(plan)
    a = megatron_args(plan)
    if a.rampup_batch_size is None:  # no ramp: one batch throughout
        start, inc, ramp_samples = a.global_batch_size, 1, -1
    else:
        start, inc, ramp_samples = map(int, a.rampup_batch_size)
    consumed, step = 0, 0
    for stage in f.stages:  # the batch Megatron uses on the first and the last step of each stage
        batch_first = megatron_batch(consumed, start, inc, ramp_samples, a.global_batch_size)
        consumed_last = consumed + (stage.steps - 1) * stage.batch_sequences
        batch_last = megatron_batch(consumed_last, start, inc, ramp_samples, a.global_batch_size)
        assert batch_first == batch_last == stage.batch_sequences, stage
        consumed += stage.steps * stage.batch_sequences
        step += stage.steps
    assert step == f.total_steps
    if a.train_samples is None:  # iteration-based: Megatron's scheduler counts steps x global batch samples
        a.train_samples = consumed
        a.lr_warmup_samples = a.lr_warmup_iters * a.global_batch_size
        a.lr_decay_samples = a.lr_decay_iters * a.global_batch_size
        a.lr_wsd_decay_samples = a.lr_wsd_decay_iters * a.global_batch_size
    assert consumed == a.train_samples
    phases = {p.name: p for p in plan.schedule.lr_phases}
    for phase in phases.values():
        n = f.samples_at_step(phase.end_step)
        assert megatron_wsd_lr(n, a) == pytest.approx(phase.lr_end, rel=1e-9, abs=1e-12), phase.name
    mid = phases["cooldown"]
    n_mid = f.samples_at_step((mid.start_step + mid.end_step) // 2)
    assert a.min_lr < megatron_wsd_lr(n_mid, a) < a.lr


def test_megatron_without_ramp_is_iteration_based() -> None:
    plan = example_plan("70b-512-h100")
    stages = plan.schedule.batch_stages
    sched = plan.schedule.model_copy(
        update={
            "batch_stages": [
                stages[-1].model_copy(update={"start_step": 0, "steps": plan.schedule.total_steps})
            ]
        }
    )
    a = megatron_args(plan.model_copy(update={"schedule": sched}))
    assert a.rampup_batch_size is None and a.train_samples is None
    assert a.train_iters == plan.schedule.total_steps
    assert a.lr_wsd_decay_iters == plan.schedule.cooldown_steps
    assert a.lr_warmup_iters == plan.schedule.warmup_steps


@pytest.mark.parametrize(
    "zero,flag",
    [(0, None), (1, "use_distributed_optimizer"), (2, "use_distributed_optimizer"), (3, "use_megatron_fsdp")],
)
def test_megatron_zero_mapping(zero: int, flag: str | None) -> None:
    plan = with_layout(example_plan("70b-512-h100"), zero=zero)
    a = megatron_args(plan)
    assert bool(a.use_distributed_optimizer) == (flag == "use_distributed_optimizer")
    assert bool(a.use_megatron_fsdp) == (flag == "use_megatron_fsdp")
    warnings = export_plan(plan, "megatron").warnings
    assert any(w.startswith("ZeRO-2") for w in warnings) == (zero == 2)


def test_megatron_uneven_interleaved_uses_a_custom_layout() -> None:
    """126 layers on PP16 (first and last stages 7, others 8) with v = 2: 7 does not split into 2 chunks, which
    --decoder-first/last-pipeline-num-layers would refuse, so the exporter writes the layout string."""
    plan = with_layout(example_plan("405b-16k-h100-8k"), vpp=2)  # m = 32 stays a multiple of p = 16
    assert plan.layout.best.microbatches == 32 and plan.layout.best.layers_per_stage == 8
    a = megatron_args(plan)
    assert a.decoder_first_pipeline_num_layers is None and a.num_virtual_stages_per_pipeline_rank is None
    stages = expand_layout(a.pipeline_model_parallel_layout)
    assert len(stages) == 16 * 2 and sum(s.count("t") for s in stages) == 126


# ---- torchtitan -------------------------------------------------------------------------------------------


def _literal_ok(value, spec: dict) -> bool:
    if "choices" in spec:
        return value in spec["choices"]
    t = spec["type"]
    if t.startswith("int") or t == "int | None":
        return isinstance(value, int) and not isinstance(value, bool)
    if t.startswith("float"):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if t == "bool":
        return isinstance(value, bool)
    if t.startswith("str"):
        return isinstance(value, str)
    return True


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_torchtitan_keys_in_list_and_batch_identity(example: str) -> None:
    plan = example_plan(example)
    f = facts(plan)
    doc = tomllib.loads(export_plan(plan, "torchtitan").text)
    sections = engine_data("torchtitan_keys")["sections"]
    for section, values in doc.items():
        assert section in sections, section
        for key, value in values.items():
            assert key in sections[section], f"[{section}] {key}"
            assert _literal_ok(value, sections[section][key]), f"[{section}] {key} = {value!r}"
    tr, par = doc["training"], doc["parallelism"]
    dp = par["data_parallel_replicate_degree"] * par["data_parallel_shard_degree"]
    assert (
        dp * par["tensor_parallel_degree"] * par["pipeline_parallel_degree"] * par["context_parallel_degree"]
        == f.n_gpus
    )
    accumulation, rest = divmod(tr["global_batch_size"], tr["local_batch_size"] * dp)
    assert rest == 0
    if par["pipeline_parallel_degree"] > 1:
        assert accumulation == 1
        assert tr["local_batch_size"] // par["pipeline_parallel_microbatch_size"] == f.layout.microbatches
    else:
        assert accumulation == f.layout.microbatches
    # the TP overlap the time model assumes; torchtitan raises "Async TP requires torch.compile" unless the
    # model is compiled (parallelize.py: compile.enable and "model" in compile.components)
    assert par.get("enable_async_tensor_parallel", False) == (
        1 < par["tensor_parallel_degree"] <= f.gpus_per_node
    )
    if par.get("enable_async_tensor_parallel"):
        assert doc["compile"]["enable"] and "model" in doc["compile"]["components"]
    # WSD in torchtitan's own arithmetic: round(steps * decay_ratio) steps of decay, same tokens as the plan
    lr = doc["lr_scheduler"]
    decay_steps = round(tr["steps"] * lr["decay_ratio"])
    tokens_per_step = tr["global_batch_size"] * tr["seq_len"]
    assert abs(decay_steps * tokens_per_step - f.cooldown_tokens) <= tokens_per_step / 2
    assert abs(tr["steps"] * tokens_per_step - f.scheduled_tokens) <= tokens_per_step / 2
    assert abs(lr["warmup_steps"] * tokens_per_step - f.warmup_end_tokens) <= tokens_per_step / 2
    assert doc["checkpoint"]["interval"] == f.checkpoint_interval_steps
    assert doc["checkpoint"]["keep_latest_k"] != 1


# ---- DeepSpeed -------------------------------------------------------------------------------------------


def _paths(d: dict, prefix: str = "") -> list[str]:
    """Every key path of a ds_config; runplan's own "runplan" section (DeepSpeed ignores it) as one path."""
    out = []
    for key, value in d.items():
        path = f"{prefix}{key}"
        out.append(path)
        if isinstance(value, dict) and path != "runplan":
            out += _paths(value, path + ".")
    return out


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_deepspeed_keys_in_list_and_batch_identity(example: str) -> None:
    plan = example_plan(example)
    f = facts(plan)
    result = export_plan(plan, "deepspeed")
    config = json.loads(result.text)
    keys = engine_data("deepspeed_config_keys")["keys"]
    for path in _paths(config):
        assert path in keys, path
        if "choices" in keys[path]:
            value = config
            for part in path.split("."):
                value = value[part]
            assert value in keys[path]["choices"], path
    # train_batch_size = micro x accumulation x DP (DeepSpeedConfig._batch_assertion)
    assert config["train_batch_size"] == (
        config["train_micro_batch_size_per_gpu"] * config["gradient_accumulation_steps"] * f.layout.dp
    )
    assert config["train_batch_size"] == f.global_batch_sequences
    assert config["zero_optimization"]["stage"] == f.layout.zero
    assert any(w.startswith("LR schedule:") for w in result.warnings)
    if f.layout.pp > 1:
        assert any(w.startswith("pipeline:") and f"num_stages={f.layout.pp}" in w for w in result.warnings)


def test_tp_overlap_is_not_exported_across_nodes():
    # TE userbuffers and torchtitan's symmetric memory work inside one NVLink domain; the time model hides no
    # TP communication when t > GPUs per node, and the exports must not switch the overlap on there
    base = example_plan("70b-512-h100")
    wide = rebalanced(base, tp=16)  # p 2: d = 512 / 32 = 16, m = 5,312 / 16 = 332
    assert (wide.layout.best.dp, wide.layout.best.microbatches) == (16, 332)
    assert "--tp-comm-overlap" in export_plan(base, "megatron").text
    assert "--tp-comm-overlap" not in export_plan(wide, "megatron").text
    doc = tomllib.loads(export_plan(wide, "torchtitan").text)
    assert "enable_async_tensor_parallel" not in doc["parallelism"]
    # [compile] stays for the fused elementwise kernels the plan timed, not for async TP
    text = export_plan(wide, "torchtitan").text
    assert tomllib.loads(text)["compile"]["enable"] is True
    assert "async TP requires torch.compile" not in text and "stack fused_elementwise" in text
