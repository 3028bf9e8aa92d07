"""configs/laws.yaml's note on Hoffmann's unrounded Approach 3 fit says it gives more tokens per parameter at large
budgets than the refit; the program's own numbers (by Eq. 4, the same `compute_optimal`) must lean that way, at
Chinchilla's budget (5.76e23 FLOPs, Hoffmann et al. 2022 Table 3) and at 1e26."""

from __future__ import annotations

import pytest

from runplan.scaling.laws import shipped_laws

LAWS = shipped_laws()


@pytest.mark.parametrize("flops", [5.76e23, 1e26])
def test_unrounded_hoffmann_gives_more_tokens_per_parameter_than_the_refit(flops):
    n_h, d_h = LAWS["hoffmann2022-unrounded"].compute_optimal(flops)
    n_b, d_b = LAWS["besiroglu2024"].compute_optimal(flops)
    assert d_h / n_h > 2 * (d_b / n_b)


def test_the_note_quotes_the_ratios_the_program_gives():
    note = LAWS["hoffmann2022-unrounded"].note
    assert "more tokens per parameter" in note
    n_h, d_h = LAWS["hoffmann2022-unrounded"].compute_optimal(5.76e23)
    n_b, d_b = LAWS["besiroglu2024"].compute_optimal(5.76e23)
    assert f"{d_h / n_h:.1f} at 5.76e23" in note
    assert f"{d_b / n_b:.1f}" in note
