"""A fraction flag written wrong is hinted with a fraction (`--dropout x`: "write a fraction, e.g. 0.05"), as the
plan-file keys of the same fields are (units.FRACTION_HINT); it was hinted "2e23, 70B, 15T ..." like a budget."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app


@pytest.mark.parametrize(
    "argv",
    [
        ["parallelize", "--model", "8b", "--gpus", "64", "--dropout", "x"],
        ["sweep", "--flops", "2e23", "--fraction", "x"],
    ],
)
def test_the_hint_is_a_fraction(argv, one_error_line):
    line = one_error_line(CliRunner().invoke(app, argv))
    flag = argv[-2]
    assert line == f"runplan: error: {flag}: expected a number, got 'x' (write a fraction, e.g. 0.05)"
