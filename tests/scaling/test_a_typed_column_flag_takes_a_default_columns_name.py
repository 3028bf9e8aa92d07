"""`runplan fit runs.csv --loss-col flops` on a CSV whose header is params,tokens,flops (the third column is the
loss): the optional flops column, left at its default name, gives way to the typed flag, and D comes from tokens.
Before, it was refused with "--flops-col and --loss-col both name column 'flops'", a flag the user never typed,
with no way around it. Required columns (params, loss) still may not be claimed twice."""

from __future__ import annotations

import numpy as np
import pytest

from runplan.errors import SpecError
from runplan.scaling.fit import read_runs


def _csv(tmp_path):
    rows = ["params,tokens,flops"]  # 'flops' holds the loss
    for n, d, loss in ((1e8, 2e9, 3.1), (2e8, 1e9, 3.2), (4e8, 5e8, 3.4)):
        rows.append(f"{n:g},{d:g},{loss}")
    path = tmp_path / "runs.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def test_the_typed_loss_column_wins_and_flops_come_from_six_n_d(tmp_path):
    runs = read_runs(_csv(tmp_path), loss_col="flops", named=("--loss-col",))
    assert list(runs.loss) == [3.1, 3.2, 3.4]
    np.testing.assert_allclose(runs.flops, [6 * 1e8 * 2e9, 6 * 2e8 * 1e9, 6 * 4e8 * 5e8], rtol=1e-15)


def test_two_typed_flags_on_one_column_are_still_refused(tmp_path):
    with pytest.raises(SpecError, match="--flops-col and --loss-col both name column 'flops'"):
        read_runs(_csv(tmp_path), loss_col="flops", named=("--loss-col", "--flops-col"))


def test_a_required_column_is_not_given_away(tmp_path):
    with pytest.raises(SpecError, match="--params-col and --loss-col both name column 'loss'"):
        read_runs(_csv(tmp_path), params_col="loss", named=("--params-col",))


def test_with_no_tokens_column_left_the_error_says_which_flag_took_flops(tmp_path):
    """params,flops,loss with `--loss-col flops`: flops is the loss now, so D needs a tokens column; the error
    said only "missing column 'tokens' or 'flops'" beside a header that has flops."""
    path = tmp_path / "runs.csv"
    path.write_text("params,flops,loss\n1e8,3.1,1\n2e8,3.2,2\n")
    with pytest.raises(SpecError, match="'flops' is the column --loss-col names"):
        read_runs(path, loss_col="flops", named=("--loss-col",))
