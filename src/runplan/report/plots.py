"""Pictures of a plan (plot extra): memory of the top layouts, LR and batch over tokens, the predicted loss curve.

matplotlib is optional (``pip install 'runplan[plot]'``); a missing install is bad input with a one-line fix.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runplan.errors import SpecError
from runplan.parallel.layout import LayoutEstimate
from runplan.plan import RunPlan
from runplan.scaling.laws import ParametricLaw

MEMORY_PARTS = ("weights", "gradients", "optimizer", "activations", "other")


def pyplot(where: str = "plan.plots") -> Any:
    """matplotlib's pyplot on the file-only Agg backend, or the one-line error naming the option that asked for a
    plot (``where``: a field path, printed as its flag). Every plot in runplan goes through here."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise SpecError("a plot needs matplotlib", where=where, hint="pip install 'runplan[plot]'") from None
    return plt


def layout_label(layout: LayoutEstimate, *, chosen: bool = False) -> str:
    """Every axis that tells two ranked layouts apart (TP, PP, DP, CP, EP, v, ZeRO, micro-batch, recompute), on two
    lines, and which one the plan chose."""
    ep = f" EP{layout.ep}" if layout.ep > 1 else ""
    head = f"TP{layout.tp} PP{layout.pp} DP{layout.dp} CP{layout.cp}{ep} v{layout.vpp}"
    tail = f"Z{layout.zero} mbs{layout.micro_batch} {layout.recompute}"
    return f"{head}\n{tail}" + ("\n(chosen)" if chosen else "")


def quiet_minor_log_ticks(ax: Any) -> None:
    """Label only the decades of a log axis: matplotlib labels minor ticks when a range spans less than a decade
    or two, and those labels overlap (`runplan fit --plot`)."""
    from matplotlib.ticker import NullFormatter

    for axis in (ax.xaxis, ax.yaxis):
        axis.set_minor_formatter(NullFormatter())


def write_plots(plan: RunPlan, law: ParametricLaw, directory: str | Path) -> dict[str, str]:
    """Write the PNGs into ``directory``; return {title: file name}. ``law`` is the one the allocation applied
    (``plan.allocation_law``: for a MoE model the MoE law in active parameters), so the loss curve passes through
    the plan's loss."""
    import numpy as np

    from runplan.fileio import save_figure
    from runplan.ops import batch_tokens_at_step, lr_at_step, tokens_at_step

    plt = pyplot()
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    written: dict[str, str] = {}

    # 1. memory breakdown of the top layouts, against the limit
    layouts = [plan.layout.best, *plan.layout.runners_up]
    fig, ax = plt.subplots(figsize=(9, 4.5))
    positions = np.arange(len(layouts))  # one bar each: layouts that share a label never draw over each other
    bottom = np.zeros(len(layouts))
    for part in MEMORY_PARTS:
        values = np.array([getattr(x.memory_bytes, part) for x in layouts]) / 1e9
        ax.bar(positions, values, bottom=bottom, label=part)
        bottom += values
    ax.set_xticks(positions, [layout_label(x, chosen=i == 0) for i, x in enumerate(layouts)])
    limit_gb = plan.layout.best.memory_limit_bytes / 1e9
    ax.axhline(limit_gb, color="black", linestyle="--", label=f"usable limit\n{limit_gb:.1f} GB")
    ax.set_ylabel("GB per GPU (most loaded stage)")
    ax.set_title("Memory breakdown of the top layouts")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside the bars, never over one
    ax.tick_params(axis="x", labelsize=7)
    fig.tight_layout()
    written["Memory breakdown of the top layouts"] = "memory.png"
    save_figure(fig, directory / "memory.png", where="plan.plots")
    plt.close(fig)

    # 2. LR and batch schedule over tokens
    schedule = plan.schedule
    steps = np.linspace(0, schedule.total_steps - 1, 2000)
    tokens = tokens_at_step(schedule.batch_stages, steps)
    fig, (ax_lr, ax_batch) = plt.subplots(2, 1, figsize=(8, 5), sharex=True)
    lr_label = f"peak {schedule.peak_lr:.3g}, {schedule.cooldown_shape} cooldown to {schedule.final_lr:.3g}"
    ax_lr.plot(tokens / 1e9, lr_at_step(schedule, steps), label=lr_label)
    ax_lr.set_ylabel("learning rate")
    ax_lr.set_title("LR and batch schedule over tokens (WSD, batch ramp)")
    ax_lr.legend(fontsize=8)
    batch_label = (
        f"{len(schedule.batch_stages)} stage(s), main {schedule.global_batch_tokens / 1e6:.4g} M tokens"
    )
    ax_batch.step(tokens / 1e9, batch_tokens_at_step(schedule, steps) / 1e6, where="post", label=batch_label)
    ax_batch.set_ylabel("global batch (M tokens)")
    ax_batch.set_xlabel("tokens trained (B)")
    ax_batch.legend(fontsize=8)
    fig.tight_layout()
    written["LR and batch schedule over tokens"] = "schedule.png"
    save_figure(fig, directory / "schedule.png", where="plan.plots")
    plt.close(fig)

    # 3. loss predicted by the law for this N over D
    n_params = plan.allocation.params
    d_run = plan.allocation.tokens
    d = np.logspace(np.log10(d_run) - 2, np.log10(d_run) + 0.5, 200)
    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax.semilogx(d, law.loss(n_params, d), label=f"L(N = {n_params:.3g}, D)")
    ax.axvline(d_run, color="gray", linestyle=":", label=f"this run: D = {d_run:.3g}")
    ax.scatter(
        [d_run], [plan.allocation.loss], color="red", zorder=3, label=f"plan: {plan.allocation.loss:.4f}"
    )
    ax.set_xlabel("training tokens D")
    ax.set_ylabel("predicted loss (nats/token)")
    ax.set_title(f"Loss curve predicted by the law ({plan.allocation.law})")
    ax.legend()
    fig.tight_layout()
    written["Loss curve predicted by the law"] = "loss.png"
    save_figure(fig, directory / "loss.png", where="plan.plots")
    plt.close(fig)
    return written
