"""The one table from an error's field path to the flag a CLI user typed.

Library code raises ``SpecError(where=<field path>)``: the plan-file key where one exists (``budget.flops``,
``cluster.gpus``, ``parallel.tp``), else ``<command>.<option>`` (``sweep.fraction``, ``export.target``). A plan
file's errors get their ``file:line`` from ``LoadedYaml.locate``; an error that reaches a command without a
source came from flags, and :func:`with_flag` renames its path to the flag here, so a CLI user reads
``--flops: ...``. Import-light: it is loaded whenever an error is printed.
"""

from __future__ import annotations

import re

from runplan.errors import Infeasible, RunplanError, SpecError

#: Field path -> flag, for every command. Plan keys first (a flag and a key fill the same model field), then
#: ``<command>.<option>`` paths for options that have no plan key.
FLAG_FOR_PATH: dict[str, str] = {
    # budget: (allocate, sweep, init)
    "budget": "--flops",
    "budget.flops": "--flops",
    "budget.days": "--days",
    "budget.mfu": "--mfu",
    "budget.tokens": "--tokens",
    # cluster: (allocate, sweep, parallelize, init)
    "cluster.gpu": "--gpu",
    "cluster.gpus": "--gpus",
    "cluster.gpus_per_node": "--gpus-per-node",
    "cluster.price_per_gpu_hour": "--price-per-gpu-hour",
    # name: (init)
    "name": "--name",
    # model:, law:, training:
    "model": "--model",
    "model.name": "--model",
    "law": "--law",
    "law.name": "--law",
    "training.seq_len": "--seq-len",
    "training.vocab_size": "--vocab-size",
    # objective: (allocate)
    "objective.tokens_per_param": "--tokens-per-param",
    "objective.params": "--params",
    "objective.inference_tokens": "--inference-tokens",
    "objective.target_loss": "--target-loss",
    # parallel: pins and constraints: (parallelize)
    "parallel.tp": "--tp",
    "parallel.pp": "--pp",
    "parallel.dp": "--dp",
    "parallel.cp": "--cp",
    "parallel.ep": "--ep",
    "parallel.zero": "--zero",
    "parallel.micro_batch": "--mbs",
    "parallel.microbatches": "--microbatches",
    "parallel.vpp": "--vpp",
    "parallel.recompute": "--recompute",
    "parallel.sequence_parallel": "--sequence-parallel",
    "constraints.max_bubble_fraction": "--max-bubble",
    "constraints.memory_headroom_fraction": "--headroom",
    "constraints.reserve_bytes": "--reserve",
    "constraints.min_global_batch_tokens": "--min-batch",
    "constraints.max_global_batch_tokens": "--max-batch",
    "constraints.allow_cross_node_tp": "--allow-cross-node-tp",
    "schedule.global_batch_tokens": "--global-batch",
    "calibration": "--calibration",
    # parallelize options without a plan key
    "parallelize.global_batch_tolerance": "--batch-tolerance",
    "parallelize.training_tokens": "--training-tokens",
    "parallelize.top": "--top",
    "parallelize.mfu": "--mfu",
    "parallelize.bf16_grads": "--bf16-grads",
    # stack: (parallelize)
    "stack": "--stack",
    "stack.preset": "--stack",
    "stack.flash_attention": "--flash-attention",
    "stack.tp_comm_overlap": "--tp-comm-overlap",
    "stack.selective_recompute": "--selective-recompute",
    "stack.hidden_dropout": "--dropout",
    "stack.attention_dropout": "--dropout",
    "stack.gradient_dtype": "--bf16-grads",
    "stack.precision": "--precision",
    "stack.fp8_recipe": "--fp8-recipe",
    "stack.attention_kernel": "--attention-kernel",
    "stack.fused_elementwise": "--fused-elementwise",
    "stack.fp8_param_gather": "--fp8-param-gather",
    "stack.optimizer_state_dtype": "--optimizer-state-dtype",
    "parallelize.catalog": "--catalog",
    # sweep
    "sweep.flops": "--flops",
    "sweep.fraction": "--fraction",
    "sweep.sizes": "--sizes",
    "sweep.budgets": "--budgets",
    "sweep.span_decades": "--span",
    "sweep.cooldown_fraction": "--cooldown",
    "sweep.seq_len": "--seq-len",
    "sweep.vocab_size": "--vocab-size",
    "sweep.mfu": "--mfu",
    "sweep.gpu": "--gpu",
    "sweep.price_per_gpu_hour": "--price-per-gpu-hour",
    "sweep.law": "--law",
    "sweep.output": "-o",
    # fit
    "fit.method": "--method",
    "fit.param_count": "--param-count",
    "fit.drop_highest": "--drop-highest",
    "fit.bootstrap": "--bootstrap",
    "fit.ci": "--ci",
    "fit.starts": "--starts",
    "fit.bin_decades": "--bin-decades",
    "fit.flops": "--flops",
    "fit.seed": "--seed",
    "fit.output": "-o",
    "fit.plot": "--plot",
    # plan, check, export
    "plan.output": "--output",
    "plan.plots": "--plots",
    "check.rtol": "--rtol",
    "export.target": "--to",
    # monitor
    "monitor.log": "LOG",
    "monitor.format": "--format",
    "monitor.checkpoint_interval": "--checkpoint-interval",
    "monitor.report": "--report",
    "monitor.plot": "--plot",
    "export.output": "--output",
}


#: Where one command's flag for a path differs from the table above. `parallelize` takes the training tokens
#: (the plan's budget) as --training-tokens.
COMMAND_FLAG_FOR_PATH: dict[str, dict[str, str]] = {
    "parallelize": {"budget": "--training-tokens", "budget.tokens": "--training-tokens"},
    # whatif's --gpus is its only cluster flag: the node size stays a plan key
    "whatif": {"cluster.gpus_per_node": "cluster.gpus_per_node"},
}


def flag_for(where: str | None, command: str | None = None) -> str | None:
    """The flag for a field path (in ``command``); anything else (a flag, ``row 12``, an unknown path) unchanged."""
    if where is None:
        return None
    own = COMMAND_FLAG_FOR_PATH.get(command or "", {})
    path = re.sub(
        r"\[\d+\]", "", where
    )  # an item of a list flag names the flag (stack.selective_recompute[0])
    while path:  # a field inside a value set by one flag (cluster.gpu.hbm_bytes: an inline --gpu) names it
        flag = own.get(path) or FLAG_FOR_PATH.get(path)
        if flag:
            return flag
        path = path.rpartition(".")[0]
    if where.startswith("parallel."):  # a layout field without a flag of its own is pinned with --pin
        return "--pin"
    return where


_DOTTED_PATH = re.compile(r"\b[a-z][a-z_]*(?:\.[a-z_]+)+\b")


def flags_in_text(text: str, command: str | None = None) -> str:
    """``text`` with each dotted field path that has a flag (``sweep.fraction``) written as the flag
    (``--fraction``): a hint read by a CLI user names what they can type (issue 17)."""

    def flag(match: re.Match[str]) -> str:
        path = match.group(0)
        return (COMMAND_FLAG_FOR_PATH.get(command or "", {}).get(path) or FLAG_FOR_PATH.get(path)) or path

    return _DOTTED_PATH.sub(flag, text)


#: Commands that read a plan file and take no layout flags: their users change a plan key, not a flag.
PLAN_FILE_COMMANDS = frozenset({"plan", "check", "export", "whatif", "diff", "monitor"})
_PATH_SETTING = re.compile(r"\b([a-z][a-z_]*(?:\.[a-z_]+)+)=([^\s,;)]+)")


def paths_for_user(text: str, command: str | None = None) -> str:
    """``text`` with the settings library code writes as plan paths (``parallel.zero=3``, or a bare path) shown
    as ``command``'s user types them: the plan key (``parallel.zero: 3``) for the plan-file commands, else the
    flag (``--zero 3``)."""
    if command in PLAN_FILE_COMMANDS:
        return _PARALLELIZE_OPTION.sub(_parallelize_flag, _PATH_SETTING.sub(r"\1: \2", text))
    with_values = _PATH_SETTING.sub(lambda m: f"{m.group(1)} {m.group(2)}", text)
    return flags_in_text(with_values, command)


#: An option of `runplan parallelize` that no plan key sets (``parallelize.global_batch_tolerance``).
_PARALLELIZE_OPTION = re.compile(r"\bparallelize\.[a-z_]+\b")


def _parallelize_flag(match: re.Match[str]) -> str:
    """A `parallelize` option named to a plan-file user: no key of the file sets it, only the flag does, on the
    command line of `runplan parallelize PLAN` (a path without a flag is left as it is)."""
    flag = FLAG_FOR_PATH.get(match.group(0))
    return f"`runplan parallelize PLAN {flag}` on the command line" if flag else match.group(0)


def with_flag(error: RunplanError, command: str | None = None) -> RunplanError:
    """``error`` with its field path, and the paths its hint names, renamed to flags, when it came from flags
    (no ``file:line``); an infeasible request's reason and suggestions name what its user can change
    (:func:`paths_for_user`)."""
    if isinstance(error, Infeasible):
        command = "plan" if error.about_plan_file else command
        reason = paths_for_user(error.reason, command)
        suggestions = [paths_for_user(text, command) for text in error.suggestions]
        if reason == error.reason and suggestions == error.suggestions:
            return error
        return Infeasible(reason, suggestions=suggestions)
    if not isinstance(error, SpecError) or error.source:
        return error
    flag = flag_for(error.where, command)
    hint = flags_in_text(error.hint, command) if error.hint else error.hint
    if flag == error.where and hint == error.hint:
        return error
    return SpecError(error.message, where=flag, hint=hint)


__all__ = [
    "COMMAND_FLAG_FOR_PATH",
    "FLAG_FOR_PATH",
    "PLAN_FILE_COMMANDS",
    "flag_for",
    "flags_in_text",
    "paths_for_user",
    "with_flag",
]
