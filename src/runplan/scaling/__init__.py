"""Scaling laws: parametric laws (laws), allocation objectives (allocate), fits to proxy runs (fit), proxy
sweep design (sweep), budgets from hardware (budget). Kept import-light: numpy loads with the submodules."""

#: The law used when none is named (stated in `runplan allocate --help`): Besiroglu et al. 2024's refit.
DEFAULT_LAW = "besiroglu2024"
DEFAULT_MOE_LAW = "krajewski2024-moe"
