"""Time and cost: GPU-hours, wall-clock days (raw and with goodput), money, and energy from TDP and PUE.

* GPU-hours = GPUs × hours. You pay for the elapsed wall clock (failures, restarts and saves included), so the
  billed figure uses the reliability stage's expected elapsed time; the useful figure uses steps × step time.
* Energy (MWh) = TDP × GPUs × elapsed hours × PUE / 10⁶. PUE (power usage effectiveness) = facility
  power / IT power. Default 1.2: BLOOM's Jean Zay cluster as reported by Luccioni et al. 2023 (JMLR 24:253,
  "Estimating the Carbon Footprint of BLOOM"), whose comparison table lists 1.08-1.1 for the Gopher, GPT-3
  and OPT data centres; 1.2 is the conservative end of those. TDP is an upper bound on GPU board power during
  training (GPUs often draw 70-90% of it), but the figure **leaves out** the rest of the IT load: CPUs, host
  memory, NICs and switches, storage servers. A DGX H100 node is rated about 10.2 kW for 8 × 700 W = 5.6 kW
  of GPU TDP, so whole-node power can be ~1.8× the GPU-only figure.
* Price per GPU-hour is an input (docs/operations.md §5: public H100 prices vary widely; 2 USD/h is a common planning
  figure).
"""

from __future__ import annotations

from pydantic import BaseModel, Field, field_validator, model_validator

from runplan.ops._notes import INPUT_CONFIG, Explained, Reasoned, fmt, fmt_money, fmt_mwh, fmt_plain, in_days
from runplan.units import (
    SECONDS_PER_HOUR,
    Fraction,
    PositiveCount,
    PositiveNumber,
    PricePerGpuHour,
)

#: Longest currency label: room for "kUSD", "USD/1000" or an ISO 4217 code with a prefix.
MAX_CURRENCY_CHARS = 16


class CostSpec(BaseModel):
    """Plan-file section `cost:`: currency and facility overhead (the price is the cluster's)."""

    model_config = INPUT_CONFIG

    currency: str = Field("USD", description="Currency of the price, printed beside every cost.")

    @field_validator("currency")
    @classmethod
    def _printable_currency(cls, value: str) -> str:
        """Printed after every cost in every format, so one short printable word (an empty or multi-line
        currency broke the summary line: "5,332 , 2.2 MWh")."""
        if not 1 <= len(value) <= MAX_CURRENCY_CHARS or not all(
            c.isprintable() and not c.isspace() for c in value
        ):
            raise ValueError(
                f"currency must be 1 to {MAX_CURRENCY_CHARS} printable characters without spaces, got {value!a} "
                "(e.g. USD or EUR)"
            )
        return value

    pue: PositiveNumber = Field(
        1.2,
        ge=1.0,
        le=3.0,
        description="Power usage effectiveness of the data centre (facility / IT power). Default 1.2: Jean "
        "Zay "
        "for BLOOM (Luccioni et al. 2023, JMLR 24:253); hyperscale sites report 1.08-1.1.",
    )


class CostRequest(BaseModel):
    """What the cost stage needs: the cluster, the run's time, and optionally the proxy sweep."""

    model_config = INPUT_CONFIG

    n_gpus: PositiveCount = Field(description="GPUs of the main run.")
    tdp_watts: PositiveNumber = Field(description="Board power (TDP) of one GPU, watts (GpuSpec.tdp_watts).")
    useful_seconds: PositiveNumber = Field(description="Failure-free training time of the main run, seconds.")
    elapsed_seconds: PositiveNumber | None = Field(
        None,
        description="Expected wall-clock time with saves, failures and restarts (reliability stage); "
        "unset = useful_seconds (goodput 1).",
    )
    sweep_gpu_hours: PositiveNumber | None = Field(
        None, description="GPU-hours of the proxy sweep (from `runplan sweep`); or give sweep_flops."
    )
    sweep_flops: PositiveNumber | None = Field(None, description="Training FLOPs of the whole proxy sweep.")
    sweep_mfu: Fraction | None = Field(None, description="MFU assumed for the sweep runs (with sweep_flops).")
    gpu_peak_flops: PositiveNumber | None = Field(
        None, description="Peak dense FLOP/s of one GPU (with sweep_flops), e.g. GpuSpec.bf16_flops."
    )
    sweep_gpus: PositiveCount | None = Field(
        None, description="GPUs the sweep runs on at once; unset = the main run's GPUs."
    )
    price_per_gpu_hour: PricePerGpuHour = Field(
        2.0, description="Price of one GPU-hour in `currency` (plan file cluster.price_per_gpu_hour)."
    )
    price_is_default: bool = Field(
        False,
        description="The plan file set no price: the cost line says the price is the default, an H100 figure.",
    )
    spec: CostSpec = Field(default_factory=CostSpec, description="The plan file's cost section.")

    @model_validator(mode="after")
    def _sweep_inputs(self) -> CostRequest:
        if self.sweep_flops is not None and (self.sweep_mfu is None or self.gpu_peak_flops is None):
            raise ValueError("sweep_flops needs sweep_mfu and gpu_peak_flops to turn FLOPs into GPU-hours")
        if self.sweep_flops is not None and self.sweep_gpu_hours is not None:
            raise ValueError("give sweep_gpu_hours or sweep_flops, not both")
        return self


class CostLine(Explained):
    """Time, money and energy of one job (the main run or the proxy sweep)."""

    name: str
    gpus: int
    useful_gpu_hours: float
    billed_gpu_hours: float
    useful_days: float
    wall_clock_days: float
    goodput: float
    cost: float
    energy_mwh: float
    gpu_only_energy_mwh: float


#: Said beside a cost priced at the default: 2 USD/h is an H100 planning figure (docs/operations.md §5), not a
#: quote for the plan's GPU type or provider.
DEFAULT_PRICE_NOTE = " (the default price, a common H100 planning figure: set cluster.price_per_gpu_hour)"


class Cost(Explained):
    """The time-and-cost section of a run plan."""

    currency: str
    price_per_gpu_hour: float
    pue: float
    tdp_watts: float
    main: CostLine
    sweep: CostLine | None
    total_cost: float
    total_energy_mwh: float
    sweep_cost_fraction: float | None
    energy_leaves_out: str


def _line(
    name: str,
    gpus: int,
    seconds: tuple[float, float],
    request: CostRequest,
    useful_reason: str,
    goodput_reason: str = "",
) -> CostLine:
    """One job's GPU-hours (useful and billed), days, goodput, money and energy from its useful and elapsed
    seconds."""
    useful_s, elapsed_s = seconds
    spec, tdp, price = request.spec, request.tdp_watts, request.price_per_gpu_hour
    useful_h = gpus * useful_s / SECONDS_PER_HOUR
    billed_h = gpus * elapsed_s / SECONDS_PER_HOUR
    goodput = useful_s / elapsed_s
    cost = billed_h * price
    gpu_mwh = tdp * billed_h / 1e6
    mwh = gpu_mwh * spec.pue
    return CostLine.build(
        name=name,
        gpus=Reasoned(gpus, f"{gpus:,} GPUs"),
        useful_gpu_hours=Reasoned(useful_h, f"{useful_reason} = {fmt(useful_h)} GPU-hours"),
        billed_gpu_hours=Reasoned(
            billed_h,
            f"{gpus:,} GPUs × {fmt_plain(elapsed_s / SECONDS_PER_HOUR)} h elapsed = {fmt(billed_h)} GPU-hours",
        ),
        useful_days=in_days(useful_s, f"{fmt_plain(useful_s)} s", "days without failures"),
        wall_clock_days=in_days(elapsed_s, f"{fmt_plain(elapsed_s)} s", "days with goodput"),
        goodput=Reasoned(goodput, f"useful / elapsed = {goodput:.4f}{goodput_reason}"),
        cost=Reasoned(
            cost,
            f"{fmt(billed_h)} GPU-h × {price:g} {spec.currency}/h = {fmt_money(cost)} {spec.currency}"
            + (DEFAULT_PRICE_NOTE if request.price_is_default else ""),
        ),
        energy_mwh=Reasoned(
            mwh,
            f"{tdp:g} W × {fmt(billed_h)} GPU-h × PUE {spec.pue:g} / 1e6 = {fmt_mwh(mwh)} MWh (GPU TDP only: CPUs, "
            "network, storage left out)",
        ),
        gpu_only_energy_mwh=Reasoned(
            gpu_mwh, f"{tdp:g} W × {fmt(billed_h)} GPU-h / 1e6 = {fmt_mwh(gpu_mwh)} MWh at the GPUs"
        ),
    )


def _sweep(request: CostRequest) -> CostLine | None:
    """The proxy sweep as a job: its GPU-hours from its FLOPs at the assumed MFU, or as given; no failures."""
    flops, mfu, peak = request.sweep_flops, request.sweep_mfu, request.gpu_peak_flops
    if flops is not None and mfu is not None and peak is not None:
        gpu_hours = flops / (mfu * peak) / SECONDS_PER_HOUR
        reason = f"{fmt(flops)} FLOPs / ({mfu:g} MFU × {fmt(peak)} FLOP/s) / 3,600"
    elif request.sweep_gpu_hours is not None:
        gpu_hours, reason = request.sweep_gpu_hours, "GPU-hours of the sweep design"
    else:
        return None
    gpus = request.sweep_gpus or request.n_gpus
    seconds = gpu_hours * SECONDS_PER_HOUR / gpus
    return _line(
        "proxy sweep",
        gpus,
        (seconds, seconds),
        request,
        useful_reason=reason,
        goodput_reason=" (assumed: a failure stops one short proxy job on a few nodes, not the sweep, so "
        "little work is lost)",
    )


def estimate_cost(request: CostRequest) -> Cost:
    """GPU-hours, days, money and energy for the main run and the proxy sweep (see the module docstring)."""
    spec, tdp, currency = request.spec, request.tdp_watts, request.spec.currency
    hours = request.useful_seconds / SECONDS_PER_HOUR
    elapsed = request.elapsed_seconds or request.useful_seconds
    main = _line(
        "main run",
        request.n_gpus,
        (request.useful_seconds, elapsed),
        request,
        useful_reason=f"{request.n_gpus:,} GPUs × {fmt_plain(hours)} h",
    )
    sweep = _sweep(request)
    total_cost = main.cost + (sweep.cost if sweep else 0.0)
    total_mwh = main.energy_mwh + (sweep.energy_mwh if sweep else 0.0)
    fraction = None
    if sweep is not None and main.cost > 0:
        fraction = Reasoned(
            sweep.cost / main.cost,
            f"sweep / main = {fmt_money(sweep.cost)} / {fmt_money(main.cost)} = {sweep.cost / main.cost:.2%}",
        )
    return Cost.build(
        currency=currency,
        price_per_gpu_hour=Reasoned(
            request.price_per_gpu_hour,
            f"{request.price_per_gpu_hour:g} {currency} per GPU-hour "
            + (DEFAULT_PRICE_NOTE.strip() if request.price_is_default else "(cluster.price_per_gpu_hour)"),
        ),
        pue=Reasoned(spec.pue, f"PUE {spec.pue:g} (default 1.2: Jean Zay for BLOOM, Luccioni et al. 2023)"),
        tdp_watts=Reasoned(tdp, f"{tdp:g} W per GPU (catalog TDP)"),
        main=main,
        sweep=sweep,
        total_cost=Reasoned(
            total_cost,
            f"main {fmt_money(main.cost)}"
            + (f" + sweep {fmt_money(sweep.cost)}" if sweep else "")
            + f" = {fmt_money(total_cost)} {currency}",
        ),
        total_energy_mwh=Reasoned(
            total_mwh,
            f"main {fmt_mwh(main.energy_mwh)}"
            + (f" + sweep {fmt_mwh(sweep.energy_mwh)}" if sweep else "")
            + f" = {fmt_mwh(total_mwh)} MWh",
        ),
        sweep_cost_fraction=fraction,
        energy_leaves_out=(
            "GPU TDP only: CPUs, host memory, NICs, switches and storage are left out (a DGX H100 is rated "
            "~10.2 kW for 5.6 kW of GPU TDP); TDP overstates GPU draw, which is often 70-90% of it"
        ),
    )
