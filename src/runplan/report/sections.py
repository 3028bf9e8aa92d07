"""A RunPlan as titled sections of explained numbers and tables, shared by the terminal and Markdown views.

Every row is (what, value, why): the "why" is the one-line formula or reason that the stage recorded beside
the number (``notes``), so both renderers print every number with its reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from runplan.parallel.layout import LayoutEstimate
from runplan.plan import RunPlan, token_fill_note
from runplan.report.format import (
    fmt_bytes,
    fmt_count,
    fmt_days,
    fmt_duration,
    fmt_mwh,
    fmt_percent,
    fmt_ratio,
    fmt_value,
    label,
)
from runplan.report.trade import margin_trade
from runplan.scaling.sweep import PLAN_BUDGETS, Sweep, dense_proxies_note, flag_notes, wsd_hours_note


@dataclass
class Table:
    title: str
    headers: list[str]
    rows: list[list[str]]


@dataclass
class Section:
    title: str
    rows: list[tuple[str, str, str]] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    bullets: list[str] = field(default_factory=list)


def _explained(obj: Any, names: list[str], notes: dict[str, str] | None = None) -> list[tuple[str, str, str]]:
    data = obj if isinstance(obj, dict) else obj.model_dump()
    notes = notes if notes is not None else data.get("notes", {})
    rows = []
    for name in names:
        value = data.get(name)
        if value is None:
            continue
        rows.append((label(name), fmt_value(name, value), notes.get(name, "")))
    return rows


def _tokens_per_param_why(plan: RunPlan) -> str:
    """D / N, and D over the parameters of the model trained where that reads differently: the summary divides by
    those (a generated shape misses the law's N by up to 7.5%: 2e23 FLOPs into 7B trained a 7.158 B shape, 665 per
    parameter in the summary beside this row's 680.3)."""
    a, m = plan.allocation, plan.model
    why = (
        "D / N (≈ 20 is Chinchilla's rule of thumb, Hoffmann et al. 2022 Approaches 1-2, Table 3; the "
        "law's own optimum can differ)"
    )
    trained = a.tokens / m.law_params
    if fmt_ratio(trained) == fmt_ratio(a.tokens_per_param):
        return why
    return f"{why}; {fmt_ratio(trained)} per parameter of the model trained ({fmt_count(m.law_params)}, as the summary counts)"


def _allocation(plan: RunPlan) -> Section:
    a = plan.allocation
    section = Section("Allocation")
    count = (
        "total (embeddings included, as Chinchilla counted)" if a.param_count == "total" else "non-embedding"
    )
    section.rows = [
        (
            "objective",
            a.objective,
            "the plan fixes the model (model:), so N is given"
            if a.objective == "fixed_params"
            else "plan file objective.kind",
        ),
        ("law", a.law, a.law_source or ""),
        ("compute C", f"{a.flops:.3g} FLOPs", "C = 6·N·D (Kaplan et al. 2020, Hoffmann et al. 2022)"),
        ("parameters N", fmt_count(a.params), _params_why(a, count)),
        ("tokens D", fmt_count(a.tokens), "C / (6·N)"),
        ("tokens per parameter", fmt_ratio(a.tokens_per_param), _tokens_per_param_why(plan)),
        ("predicted loss", f"{a.loss:.4f}", _loss_why(a)),
    ]
    if a.days is not None and a.mfu is not None:  # a GPU-time budget, sized to fill (plan.build_plan)
        section.rows.append(("budget", f"{a.days:.4g} days", _budget_why(plan)))
    if (note := token_fill_note(a)) is not None and a.law_tokens is not None:
        section.rows.append(("law's D for N", fmt_count(a.law_tokens), note))
    if a.intervals is not None:
        section.rows += _interval_rows(a.intervals)
    if a.loss_penalty is not None:
        section.rows.append(
            (
                "loss penalty",
                f"{a.loss_penalty:+.4f}",
                f"against the compute-optimal model at the same C (loss {a.compute_optimal_loss:.4f}; "
                "Hoffmann et al. 2022, Eq. 4)",
            )
        )
    if a.compute_overhead is not None:
        section.rows.append(
            (
                "compute overhead",
                f"{a.compute_overhead:.1%}",
                "extra compute against the compute-optimal model reaching the same loss",
            )
        )
    if a.inference_tokens is not None:
        section.rows += [
            ("inference tokens", fmt_count(a.inference_tokens), "lifetime tokens served (plan file)"),
            ("training FLOPs", f"{a.training_flops:.3g}", "6·N·D_tr"),
            ("inference FLOPs", f"{a.inference_flops:.3g}", "2·N·D_inf (Sardana et al. 2024 §2)"),
            ("total FLOPs", f"{a.total_flops:.3g}", "training + inference"),
            (
                "saving",
                f"{a.total_flops_saving:.1%}",
                "against the compute-optimal model serving the same tokens",
            ),
        ]
    return section


def _budget_why(plan: RunPlan) -> str:
    """The fill's rate, the training FLOPs 6·N·D / (GPUs × peak × days) (plan.budget_mfu), beside the layout's MFU,
    and why they differ: a rate above the MFU is an overrun, or (within the days) C = 6·N·D counting the law's N
    where the model trained is smaller. An inference-optimal plan trains more than the C the fill sized (its D
    follows C's loss, Sardana et al. 2024): the row says by how much, since the rate is on the FLOPs trained."""
    a, mfu = plan.allocation, plan.layout.best.mfu
    rate = a.mfu or 0.0
    if rate <= mfu:
        why = "C = 6·N·D leaves out the attention FLOPs MFU counts, and failures, saves and the batch ramp take time"
    elif a.days is not None and plan.cost.main.wall_clock_days > a.days:
        why = "the plan overruns its days (the budget warning says why)"
    elif a.params > plan.model.law_params:
        why = (
            f"C = 6·N·D counts the law's N {fmt_count(a.params)}, {a.params / plan.model.law_params - 1:.1%} above "
            "the model trained (the generated rung below it)"
        )
    else:
        why = "C = 6·N·D counts FLOPs otherwise than the layout's MFU (model.flops_per_token)"
    relation = "below" if rate <= mfu else "above"
    sized = "C sized so the predicted wall clock fills it (a fixed point)"
    gpu_hours, gpus = plan.inputs.get("budget", {}).get("gpu_hours"), plan.cost.main.gpus
    if gpu_hours and a.days is not None:  # the days of a GPU-hours budget (plan.budget_days)
        hours = f"{gpu_hours:,.0f}" if gpu_hours >= 100 else f"{gpu_hours:.3g}"
        sized = f"{hours} GPU-hours / ({gpus:,} GPUs × 24 h) = {a.days:.4g} days; {sized}"
    if a.training_flops is not None and a.budget_flops:  # inference_optimal: D from the target loss, not C
        share = a.flops / a.budget_flops
        sized += f"; the inference objective trains {share:.2f}× that C ({a.budget_flops:.3g})"
    return (
        f"{sized}: training FLOPs 6·N·D = GPUs × peak × {rate:.1%} × days, "
        f"{relation} the layout's MFU {mfu:.1%}: {why}"
    )


def _loss_why(a: Any) -> str:
    """The predicted loss's formula: Chinchilla's form (Hoffmann et al. 2022, Eq. 2); a MoE law's rewritten in
    active parameters (``ParametricLaw.for_moe``: A' = (A + g/G^γ)·(total/active)^(−α), Krajewski et al. 2024,
    Eq. 5), so that a reader does not take the MoE loss for a dense Chinchilla fit."""
    if a.moe_total_params is not None and "(MoE" in a.law:
        return (
            "L(N, D) = E + A'/N^α + B/D^β in active parameters, A' = (A + g/G^γ)·(total/active)^(−α) "
            "(Krajewski et al. 2024, Eq. 5; loss on their C4 data)"
        )
    return "L(N, D) = E + A/N^α + B/D^β (Hoffmann et al. 2022, Eq. 2)"


def _params_why(a: Any, count: str) -> str:
    if a.moe_total_params is None:
        return f"{count} parameter count of the law"
    return (
        f"active {count} parameters: a MoE model is allocated on the compute it spends, C = 6·N_active·D "
        f"({fmt_count(a.moe_total_params)} counting every expert)"
    )


def _interval_rows(intervals: Any) -> list[tuple[str, str, str]]:
    """N, D and loss percentiles over the fitted law's bootstrap resamples (Hoffmann et al. 2022 App. D.2)."""
    lo, hi = intervals.percentiles
    why = f"{lo:g}th-{hi:g}th percentile of the allocation under {intervals.resamples} bootstrap refits of the law"
    rows = []
    for name, value, fmt in (
        ("parameters N interval", intervals.params, fmt_count),
        ("tokens D interval", intervals.tokens, fmt_count),
        ("predicted loss interval", intervals.loss, lambda x: f"{x:.4f}"),
    ):
        if value.low is not None and value.high is not None:
            rows.append((name, f"{fmt(value.low)} .. {fmt(value.high)}", why))
    return rows


def _architecture(plan: RunPlan) -> Section:
    m = plan.model
    s = m.shape
    section = Section("Architecture", bullets=[m.resolution])
    section.rows = [
        ("layers × d_model", f"{s.n_layers} × {s.d_model:,}", "L and h"),
        _attention_row(s),
        ("FFN", f"{s.ffn_hidden:,} ({s.mlp})", "dense MLP inner size F"),
        ("vocabulary", f"{s.vocab_size:,}", "tied embeddings" if s.tied_embeddings else "untied output head"),
    ]
    if s.is_moe:
        section.rows.append(
            (
                "experts",
                f"{s.n_experts} routed (top-{s.top_k}) × {s.expert_ffn_hidden:,}"
                f" + {s.n_shared_experts} shared, {s.n_dense_layers} dense layers first",
                "MoE layout",
            )
        )
    section.rows += [
        (label(n), fmt_count(getattr(m, n)), m.notes.get(n, ""))
        for n in ("total_params", "non_embedding_params", "embedding_params", "active_params", "law_params")
    ]
    section.rows.append(("FLOPs per token", f"{m.flops_per_token:.4g}", m.notes["flops_per_token"]))
    return section


def _attention_row(s: Any) -> tuple[str, str, str]:
    """Heads and head dims; multi-head latent attention with its ranks and its q/k width d_qk = head_dim +
    rope dim and value width, not a plain head dim (DeepSeek-V2 §2.1)."""
    if s.attention == "mla":
        q = f"q rank {s.q_lora_rank:,}, " if s.q_lora_rank else ""
        return (
            "heads × q/k, v head dim",
            f"{s.n_heads} × {s.qk_dim} ({s.head_dim} + {s.qk_rope_head_dim} rope), {s.value_dim}",
            f"multi-head latent attention: {q}KV rank {s.kv_lora_rank:,} (DeepSeek-V2 §2.1)",
        )
    return (
        "heads / KV heads × head dim",
        f"{s.n_heads} / {s.n_kv_heads} × {s.head_dim}",
        "GQA groups" if s.n_kv_heads < s.n_heads else "multi-head attention",
    )


def _layout_row(layout) -> list[str]:
    return [
        f"{layout.tp}",
        f"{layout.pp}",
        f"{layout.dp}",
        f"{layout.ep}",
        f"{layout.cp}",
        f"{layout.zero}",
        f"{layout.micro_batch}",
        f"{layout.microbatches}",
        f"{layout.vpp}",
        layout.recompute,
        fmt_count(layout.global_batch_tokens),
        f"{layout.bubble_fraction:.1%}",
        fmt_bytes(layout.memory_bytes.total),
        fmt_duration(layout.step_seconds),
        f"{layout.mfu:.1%}",
    ]


LAYOUT_HEADERS = [
    "TP",
    "PP",
    "DP",
    "EP",
    "CP",
    "ZeRO",
    "mbs",
    "m",
    "v",
    "recompute",
    "batch tok",
    "bubble",
    "memory",
    "step",
    "MFU",
]


def _mfu_reason(plan: RunPlan) -> str:
    """MFU's reason, with what it would read under the other common FLOP counts (papers differ: a hand check
    with 6N, or causal attention, gives a lower number for the same step time)."""
    per_token = plan.model.flops_per_token
    matmul = plan.model.shape.matmul_params_per_token()
    dense = 6.0 * matmul
    causal = dense + (per_token - dense) / 2
    mfu, active = plan.layout.best.mfu, plan.model.active_params
    # N here is the weights a token multiplies (the input embedding is a lookup), not the parameter count the
    # summary prints: name it, and what 6N reads with that count, which a hand check would take
    return (
        "model FLOPs per second / bf16 peak (fp8 stacks too); model FLOPs = 6N + attention counted in full (PaLM "
        "§4.1, App. B); with "
        f"causal attention {mfu * causal / per_token:.1%}, with 6N alone {mfu * dense / per_token:.1%} (N = "
        f"{fmt_count(matmul)} matmul parameters per token; {mfu * 6.0 * active / per_token:.1%} with the "
        f"{fmt_count(active)} active parameters)"
    )


def _layout(plan: RunPlan) -> Section:
    choice = plan.layout
    best = choice.best
    section = Section("Parallel layout", bullets=list(best.why))
    tolerance = plan.inputs.get("constraints", {}).get("throughput_tolerance", 0.01)
    trade = margin_trade(best, list(choice.runners_up), float(tolerance))
    if trade:
        section.bullets.append(trade)
    section.rows = [
        ("candidates evaluated", f"{choice.candidates:,}", choice.notes["candidates"]),
        ("feasible", f"{choice.feasible:,}", choice.notes["feasible"]),
        (
            "step time",
            fmt_duration(best.step_seconds),
            "compute + exposed communication + bubble (docs/parallel.md)",
        ),
        ("tokens/s", fmt_count(best.tokens_per_second), "global batch tokens / step time"),
        ("tokens/s per GPU", fmt_count(best.tokens_per_second_per_gpu), "tokens/s / GPUs"),
        ("MFU", f"{best.mfu:.1%}", _mfu_reason(plan)),
        ("HFU", f"{best.hfu:.1%}", "hardware FLOPs utilisation: MFU's FLOPs plus recomputation (PaLM §4.1)"),
        ("bubble", f"{best.bubble_fraction:.1%}", "(p − 1)/(v·m) (Narayanan et al. 2021 §2.2)"),
        (
            "calibration",
            choice.calibration,
            "time-model constants behind every time (`runplan calibrate`) and what measured runs say they are "
            "worth: held-out step error; peak-memory error where runs logged a peak",
        ),
    ]
    section.tables.append(
        Table(
            "Best layout and runners-up", LAYOUT_HEADERS, [_layout_row(x) for x in (best, *choice.runners_up)]
        )
    )
    memory = best.memory_bytes.model_dump()
    section.tables.append(
        Table(
            f"Memory per GPU, {best.memory_stage} stage (limit {fmt_bytes(best.memory_limit_bytes)}"
            f"{_other_stage_total(best)})",
            ["part", "bytes", "what it counts"],
            [[k, fmt_bytes(v), _meaning(best.memory_bytes, k)] for k, v in memory.items()],
        )
    )
    times = best.time_seconds.model_dump()
    section.tables.append(
        Table(
            "Step time, exposed parts",
            ["part", "time", "what it counts"],
            [
                [k.replace("_", " "), fmt_duration(v), _meaning(best.time_seconds, k)]
                for k, v in times.items()
                if v > 0
            ],
        )
    )
    return section


def _meaning(terms: BaseModel, name: str) -> str:
    """A memory or time term's one line: its field's description (docs/parallel.md gives the formulas)."""
    return (type(terms).model_fields[name].description or "").removesuffix(".")


def _schedule(plan: RunPlan) -> Section:
    s = plan.schedule
    section = Section("Batch and schedule", bullets=[s.batch_law, f"peak LR: {s.peak_lr_source}"])
    section.rows = _explained(
        s,
        [
            "law_batch_tokens",
            "global_batch_tokens",
            "global_batch_sequences",
            "batch_divisor_sequences",
            "microbatches_per_replica",
            "peak_lr",
            "warmup_steps",
            "cooldown_steps",
            "total_steps",
            "scheduled_tokens",
        ],
    )
    section.tables.append(
        Table(
            "Batch stages",
            [
                "stage",
                "steps",
                "start step",
                "tokens",
                "batch (seq)",
                "batch (tokens)",
                "micro-batches/replica",
            ],
            [
                [
                    b.name,
                    f"{b.steps:,}",
                    f"{b.start_step:,}",
                    fmt_count(b.tokens),
                    f"{b.global_batch_sequences:,}",
                    fmt_count(b.global_batch_tokens),
                    f"{b.microbatches_per_replica:,}",
                ]
                for b in s.batch_stages
            ],
        )
    )
    section.tables.append(
        Table(
            "LR phases (WSD)",
            ["phase", "shape", "steps", "start step", "tokens", "LR start", "LR end"],
            [
                [
                    p.name,
                    p.shape,
                    f"{p.steps:,}",
                    f"{p.start_step:,}",
                    fmt_count(p.tokens),
                    f"{p.lr_start:.3g}",
                    f"{p.lr_end:.3g}",
                ]
                for p in s.lr_phases
            ],
        )
    )
    return section


def _checkpointing(plan: RunPlan) -> Section:
    c = plan.checkpointing
    section = Section("Checkpointing", bullets=list(c.retention_procedure))
    section.rows = _explained(
        c,
        [
            "total_bytes",
            "bytes_per_param",
            "written_bytes_per_rank",
            "sync_seconds",
            "async_blocking_seconds",
            "save_blocking_seconds",
            "job_mtbf_seconds",
            "young_interval_seconds",
            "daly_interval_seconds",
            "interval_steps",
            "main_interval_seconds",
            "interval_tokens",
            "checkpoints_per_run",
            "retention_generations",
            "milestone_every_steps",
            "milestones",
            "storage_bytes",
        ],
    )
    section.tables.append(
        Table(
            "What a resumable checkpoint holds",
            ["part", "bytes", "shards", "per shard"],
            [[p.name, fmt_bytes(p.bytes), f"{p.shards:,}", fmt_bytes(p.bytes_per_shard)] for p in c.parts],
        )
    )
    return section


def _reliability(plan: RunPlan) -> Section:
    r = plan.reliability
    section = Section("Failures and goodput")
    section.rows = _explained(
        r,
        [
            "failures_per_1000_node_days",
            "n_nodes",
            "job_mtbf_seconds",
            "restart_seconds",
            "interval_seconds",
            "expected_interruptions",
            "expected_failure_loss_seconds",
            "save_overhead_seconds",
            "goodput",
            "first_order_goodput",
            "useful_days",
            "effective_days",
        ],
    )
    return section


def _monitoring(plan: RunPlan) -> Section:
    m = plan.monitoring
    section = Section(
        "Monitoring",
        bullets=[
            *(f"alert: {a}" for a in _strings(m.alerts)),
            *(f"rollback: {s}" for s in _strings(m.rollback_procedure)),
        ],
    )
    section.rows = _explained(
        m,
        [
            "canary_examples",
            "canary_every_steps",
            "canary_overhead_fraction",
            "grad_norm_factor",
            "grad_norm_window_steps",
            "canary_sigma",
            "canary_window_steps",
            "spike_recovery_steps",
            "spike_recovery_tokens",
            "rollback_margin_steps",
            "rollback_max_redo_steps",
            "skip_batches_min",
            "skip_batches_max",
            "skip_tokens_min",
            "skip_tokens_max",
        ],
    )
    section.tables.append(
        Table("Logged every step", ["metric", "why"], [[x.name, x.why] for x in m.per_step_metrics])
    )
    return section


def _strings(items: Any) -> list[str]:
    out = []
    for item in items or []:
        if isinstance(item, str):
            out.append(item)
        elif hasattr(item, "model_dump"):
            data = item.model_dump(exclude={"notes"})
            out.append("; ".join(f"{k}: {v}" for k, v in data.items()))
        else:
            out.append(str(item))
    return out


def _distinct_models(sweep: Sweep) -> str:
    """``; 4 + 3 distinct models (...)`` when neighbouring sizes fell on one generated shape, which a budget lists
    once (runplan.scaling.sweep._distinct_models); empty when every size is its own model."""
    counts = sweep.models_per_budget
    if all(k == sweep.sizes_per_budget for k in counts):
        return ""
    return f"; {' + '.join(str(k) for k in counts)} distinct models (sizes sharing a shape listed once)"


def _sweep(plan: RunPlan) -> Section:
    s = plan.sweep
    section = Section("Proxy sweep")
    if s is None:
        section.bullets.append("no proxy sweep for this plan")
        return section
    section.rows = [
        (
            "budgets",
            ", ".join(f"{b:.3g}" for b in s.budgets),
            f"{s.fraction:.1%} of the main budget, largest first",
        ),
        (
            "runs",
            f"{len(s.runs)}",
            f"{s.sizes_per_budget} sizes per budget, log-spaced around the law's optimum{_distinct_models(s)}",
        ),
        ("proxy FLOPs", f"{s.total_flops:.3g}", f"{s.total_fraction:.1%} of the main run's 6ND compute"),
    ]
    if s.gpu_hours is not None:
        section.rows.append(
            (
                "GPU-hours",
                fmt_count(round(s.gpu_hours)),
                f"model FLOPs (6N plus attention at sequence {s.seq_len:,}) / (MFU {s.mfu:.0%} × {s.gpu} peak)",
            )
        )
    # the suggestions the plan keeps out of its warnings, named by the plan key that acts on them
    section.bullets += flag_notes(s.wsd, len(s.budgets), PLAN_BUDGETS)
    shape = plan.model.shape
    if shape.is_moe:
        section.bullets.append(dense_proxies_note(shape.n_experts, shape.top_k))
    hours = "added GPU-hours" if s.wsd else "GPU-hours"
    if s.wsd and s.gpu_hours is not None:
        section.bullets.append(wsd_hours_note(s.cooldown_fraction, hours))
    section.tables.append(
        Table(
            "Runs",
            ["run", "params", "layers × d_model", "tokens", "FLOPs", hours],
            [
                [
                    r.run,
                    fmt_count(r.total_params),
                    f"{r.n_layers} × {r.d_model:,}",
                    fmt_count(r.tokens),
                    f"{r.flops:.3g}",
                    "—" if r.gpu_hours is None else f"{r.gpu_hours:,.0f}",
                ]
                for r in s.runs
            ],
        )
    )
    return section


#: The time-and-cost rows whose value is money (their labels).
_COSTS = (label("cost"), label("total_cost"))


def _cost(plan: RunPlan) -> Section:
    c = plan.cost
    section = Section("Time and cost", bullets=[c.energy_leaves_out])
    lines = [c.main] + ([c.sweep] if c.sweep is not None else [])
    section.tables.append(
        Table(
            "Time, cost and energy",
            [
                "",
                "GPUs",
                "GPU-hours",
                "days (no failures)",
                "days (with goodput)",
                f"cost ({c.currency})",
                "energy",
            ],
            [
                [
                    x.name,
                    f"{x.gpus:,}",
                    fmt_count(round(x.billed_gpu_hours)),
                    fmt_days(x.useful_days),
                    fmt_days(x.wall_clock_days),
                    f"{x.cost:,.0f}",
                    f"{fmt_mwh(x.energy_mwh)} MWh",
                ]
                for x in lines
            ],
        )
    )
    rows = _explained(c.main, ["billed_gpu_hours", "wall_clock_days", "cost", "energy_mwh"])
    rows += _explained(c, ["total_cost", "total_energy_mwh", "sweep_cost_fraction", "pue"])
    # a cost row carries its currency, as an energy row its MWh: "948,229 USD", not a bare "948,229"
    section.rows = [
        (what, f"{value} {c.currency}" if what in _COSTS else value, why) for what, value, why in rows
    ]
    return section


def _checkpoint_phrase(plan: RunPlan) -> str:
    """How often the run saves; a Young/Daly interval longer than the run means one save, at its end."""
    interval, steps = plan.checkpointing.interval_steps, plan.schedule.total_steps
    if interval >= steps:
        return f"checkpoint at the end only (the optimal interval, {interval:,} steps, outlasts the run)"
    return f"checkpoint every {interval:,} steps"


def _per_param(tokens: float, m: Any) -> str:
    """Tokens per parameter of the model trained, over the count its law takes (a generated shape misses the
    law's N by up to 7.5%, architect); that count is named when it is neither of the two printed beside it (a
    MoE law's active non-embedding parameters: 2T / 12.62 B = 159, not 2T / 12.88 B active = 155)."""
    per = tokens / m.law_params
    ratio = f"{per:.0f}/param" if per >= 1 else f"{fmt_ratio(per)}/param"  # not "0/param"
    if fmt_count(m.law_params) in (fmt_count(m.total_params), fmt_count(m.active_params)):
        return ratio
    return f"{ratio} of the law's N {fmt_count(m.law_params)}"


def _other_stage_total(best: LayoutEstimate) -> str:
    """``; last stage 27.7 GB`` where pipeline stages differ: the stage the table does not show, whose total a log
    of that stage's peak is compared with (memory_total_bytes_by_stage; ``runplan monitor --plan``)."""
    stages = best.memory_total_bytes_by_stage
    if best.pp < 2 or stages is None:
        return ""
    other = "first" if best.memory_stage == "last" else "last"
    return f"; {other} stage {fmt_bytes(getattr(stages, other))}"


def _wall_clock(days: float) -> str:
    """Days as the cost table prints them (``38.6 days``, ``4.83 days``: the summary said ``4.8`` over a table of
    ``4.83``); under a day in hours or minutes (``19 min``, not ``0.0 days``)."""
    return f"{fmt_days(days)} days" if days >= 1 else fmt_duration(days * 86400)


def _steps_phrase(plan: RunPlan) -> str:
    """Steps and batch; with a batch ramp its steps are named apart, so that steps × batch reads as D."""
    s = plan.schedule
    batch = f"{fmt_count(s.global_batch_tokens)} tokens"
    ramp = sum(stage.steps for stage in s.batch_stages[:-1])
    if not ramp:
        return f"{s.total_steps:,} steps at {batch}"
    return f"{s.total_steps:,} steps: {ramp:,} in the batch ramp, then {s.total_steps - ramp:,} at {batch}"


def summary_lines(plan: RunPlan) -> list[str]:
    """The short summary printed first."""
    a, m, best, c = plan.allocation, plan.model, plan.layout.best, plan.cost
    name = m.shape.name or ("explicit shape" if m.resolution.startswith("explicit") else "generated shape")
    return [
        f"{name}: {fmt_count(m.total_params)} parameters ({fmt_count(m.active_params)} active), "
        f"{fmt_count(a.tokens)} tokens ({_per_param(a.tokens, m)}), predicted loss {a.loss:.3f} ({a.law})",
        f"layout TP{best.tp} PP{best.pp} DP{best.dp}"  # CP before EP, as whatif and parallelize print them
        + (f" CP{best.cp}" if best.cp > 1 else "")
        + (f" EP{best.ep}" if best.ep > 1 else "")
        + f" ZeRO-{best.zero} mbs {best.micro_batch} v{best.vpp} "
        f"recompute {best.recompute}: {fmt_bytes(best.memory_bytes.total)}/GPU, step {fmt_duration(best.step_seconds)},"
        f" MFU {best.mfu:.1%}",
        _steps_phrase(plan) + f", peak LR {plan.schedule.peak_lr:.3g}, " + _checkpoint_phrase(plan),
        f"{_wall_clock(c.main.wall_clock_days)} on {c.main.gpus:,} GPU{'s' if c.main.gpus != 1 else ''} "
        f"(goodput {fmt_percent(c.main.goodput)}), {c.main.cost:,.0f} {c.currency}, {fmt_mwh(c.main.energy_mwh)} MWh; proxy sweep "
        + (f"{c.sweep.cost:,.0f} {c.currency}" if c.sweep else "none"),
        f"predictions from {plan.layout.calibration}",
        f"{len(plan.warnings)} warning(s)",
    ]


def plan_sections(plan: RunPlan) -> list[Section]:
    sections = [
        _allocation(plan),
        _architecture(plan),
        _layout(plan),
        _schedule(plan),
        _checkpointing(plan),
        _reliability(plan),
        _monitoring(plan),
        _sweep(plan),
        _cost(plan),
    ]
    sections.append(Section("Warnings", bullets=list(plan.warnings) or ["none"]))
    return sections
