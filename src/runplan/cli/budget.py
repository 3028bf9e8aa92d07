"""The compute-budget flags shared by `runplan allocate` and `runplan sweep`.

``--flops``, or ``--gpus`` × ``--days`` on ``--gpu`` at ``--mfu``, plus ``--price-per-gpu-hour``, fill
:class:`runplan.scaling.budget.Budget` (through a model derived from it, which adds the hardware flags): a flag and the
plan-file key ``budget:`` are one model, checked by the same fields. Import-light: pydantic and the catalog
load inside :func:`parse_budget` only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from runplan.defaults import DEFAULT_GPU, DEFAULT_MFU
from runplan.scaling import DEFAULT_LAW

if TYPE_CHECKING:
    from runplan.cli.flag_models import FlagBudget
    from runplan.errors import SpecError
    from runplan.hardware import GpuSpec

LAW_HELP = (
    f"Scaling law: a shipped name (besiroglu2024, hoffmann2022, hoffmann2022-unrounded, krajewski2024-moe) or a law YAML "
    f"written by `runplan fit -o`. Default: {DEFAULT_LAW} (Besiroglu et al. 2024 refit of Chinchilla)."
)
GPU_HELP = f"GPU catalog name (default {DEFAULT_GPU})."
MFU_HELP = f"Model FLOPs utilisation used to turn GPU time into FLOPs (default {DEFAULT_MFU})."

#: The plan-file path of each field of the flag budget model (errors name it; the CLI prints its flag).
BUDGET_PATHS = {
    "flops": "budget.flops",
    "days": "budget.days",
    "mfu": "budget.mfu",
    "gpus": "cluster.gpus",
    "price_per_gpu_hour": "cluster.price_per_gpu_hour",
}


def fmt_amount(value: float) -> str:
    """GPU-hours or a cost: thousands separators from 10 (``140,434``), three significant digits below
    (``0.0702``: 1e17 FLOPs on H100s at MFU 0.4, which ``,.0f`` printed as ``0``)."""
    return f"{value:,.0f}" if abs(value) >= 10 else f"{value:.3g}"


#: The narrowest the reason column of `runplan allocate` and `runplan fit` gets beside its rows; below it each reason is printed on
#: a line of its own under its row (an 80-column terminal), so names and numbers are never wrapped or cut.
WHY_MIN_CHARS = 40
#: The narrowest the value column gets beside the names; narrower, each value goes under its name.
VALUE_MIN_CHARS = 20


def explained_table(rows: list[tuple[str, str, str]], width: int) -> Any:
    """``(name, value, why)`` rows: a borderless three-column table when the reasons get at least
    WHY_MIN_CHARS beside the widest name and value, else each row's reason indented on the line below it."""
    from rich.console import Group
    from rich.padding import Padding
    from rich.table import Table
    from rich.text import Text

    from runplan.report.format import cell_width

    # terminal cells: a CJK character (a catalog GPU's name in a value) takes 2
    name_width = max(cell_width(r[0]) for r in rows)
    if width - name_width - max(cell_width(r[1]) for r in rows) - 8 < WHY_MIN_CHARS:  # two gaps of 4
        lines: list[Any] = []
        for name, value, why in rows:
            if width < name_width + 4 + VALUE_MIN_CHARS:  # too narrow for a value beside the names
                lines += [Text(name), Padding(Text(value), (0, 0, 0, 4), expand=False)]
            else:
                line = Table.grid(padding=(0, 2), collapse_padding=False)  # 4 spaces, as the table's
                line.add_column(no_wrap=True, min_width=name_width)
                line.add_column(overflow="fold")  # a value with its interval may wrap, inside its column
                line.add_row(Text(name), Text(value))
                lines.append(line)
            lines.append(Padding(Text(why, style="dim"), (0, 0, 0, 4), expand=False))
        return Group(*lines)
    table = Table(show_header=False, box=None, pad_edge=False, padding=(0, 2))
    table.add_column(no_wrap=True)
    table.add_column(no_wrap=True)
    table.add_column(overflow="fold", style="dim")
    for row in rows:
        table.add_row(*(Text(cell) for cell in row))
    return table


def gpus_phrase(gpus: int) -> str:
    """``1 GPU``, ``1,024 GPUs``."""
    return f"{gpus:,} GPU" + ("" if gpus == 1 else "s")


def flag_budget_model() -> type[FlagBudget]:
    """``runplan.scaling.budget.Budget`` plus ``gpus`` and ``price_per_gpu_hour`` (imported on first use: pydantic is heavy)."""
    from runplan.cli.flag_models import FlagBudget

    return FlagBudget


@dataclass(frozen=True)
class BudgetFlags:
    """The parsed budget flags: the validated model, the budget C in FLOPs and the GPU when one is needed."""

    budget: FlagBudget
    flops: float | None
    gpu: GpuSpec | None

    @property
    def mfu(self) -> float:
        return self.budget.mfu

    @property
    def gpus(self) -> int | None:
        return self.budget.gpus

    @property
    def price(self) -> float | None:
        return self.budget.price_per_gpu_hour


def _flops_in_a_unit(text: str) -> SpecError | None:
    """``--flops '3640 PF-days'``, ``'2 zettaFLOP'``: the one-line error giving the budget in FLOPs (runplan reads
    plain numbers and SI suffixes only, so a unit is refused rather than guessed; units.flops_in_a_unit)."""
    from runplan.errors import SpecError
    from runplan.units import flops_in_a_unit

    found = flops_in_a_unit(text)
    if found is None:
        return None
    message, flops, why = found
    return SpecError(message, where="budget.flops", hint=f"give --flops {flops:.4g}: {why}")


def parse_budget(
    flops: str | None,
    gpus: str | None,
    days: str | None,
    gpu: str | None,
    mfu: str | None,
    price: str | None,
    *,
    required: bool = True,
) -> BudgetFlags:
    """C from --flops, or from --gpus × --days on --gpu at --mfu; hardware (for the reverse) when any is given."""
    from runplan.cli.common import build_from_flags
    from runplan.errors import SpecError

    if flops is not None and days is not None:
        raise SpecError(
            "give the budget once: --flops, or --gpus with --days",
            where="--days",
            hint="with --flops, --gpus alone gives the wall-clock days",
        )
    if days is not None and gpus is None:
        raise SpecError("--days needs --gpus", where="--gpus", hint="e.g. --gpus 1024 --days 30")
    if flops is not None and (error := _flops_in_a_unit(flops)) is not None:
        raise error
    budget = build_from_flags(
        flag_budget_model(),
        BUDGET_PATHS,
        "budget",
        flops=flops,
        days=days,
        mfu=mfu,
        gpus=gpus,
        price_per_gpu_hour=price,
    )
    spec = None
    if any(v is not None for v in (gpus, days, gpu, mfu, price)):
        from runplan.catalog import load_catalog

        spec = load_catalog().gpu(DEFAULT_GPU if gpu is None else gpu, where="--gpu")
    c = budget.flops
    if budget.days is not None and budget.gpus is not None and spec is not None:  # --days needs --gpus: above
        from runplan.scaling.budget import check_training_flops, flops_from_hardware

        c = check_training_flops(
            flops_from_hardware(budget.gpus, budget.days, spec, budget.mfu), where="budget.days"
        )
    if c is None and required:
        raise SpecError(
            "no compute budget", where="--flops", hint="give --flops 2e23, or --gpus 1024 --days 30"
        )
    return BudgetFlags(budget=budget, flops=c, gpu=spec)


__all__ = ["BUDGET_PATHS", "LAW_HELP", "BudgetFlags", "explained_table", "flag_budget_model", "parse_budget"]
