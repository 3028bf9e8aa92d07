"""A drift of a layout's per-stage memory total (``memory_total_bytes_by_stage.first``/``.last``, bytes per GPU)
reads in bytes, as ``memory_bytes.total`` does: the unit comes from the mapping's name, ``..._bytes_by_stage``,
not from the stage's name (which read 64.9e9 bytes as a count, "64.89 B", in `runplan check`)."""

from runplan.resolved import diff_changes, unit_of


def test_per_stage_totals_take_the_bytes_unit():
    assert unit_of("layout.best.memory_total_bytes_by_stage.first") is unit_of(
        "layout.best.memory_bytes.total"
    )
    assert unit_of("layout.runners_up[2].memory_total_bytes_by_stage.last") is unit_of("x.memory_bytes.total")


def test_check_drift_line_of_a_stage_total_is_in_gb():
    old = {"layout": {"best": {"memory_total_bytes_by_stage": {"first": 60e9, "last": 55e9}}}}
    new = {"layout": {"best": {"memory_total_bytes_by_stage": {"first": 64_889_368_256.0, "last": 55e9}}}}
    (change,) = diff_changes(old, new)
    assert change.readable() == "layout.best.memory_total_bytes_by_stage.first: 60 GB → 64.9 GB (+8.15%)"
