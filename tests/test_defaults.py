"""One home per default: the plan file, the flags, the search and the generated shapes agree, and --help says so."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from runplan import defaults
from runplan.cli.app import app
from runplan.parallel.layout import ParallelRequest


def test_one_home_for_each_default():
    from runplan.architect import shape_for_params
    from runplan.scaling.budget import DEFAULT_MFU
    from runplan.spec import Budget, Cluster, Training
    from runplan.units import SECONDS_PER_DAY, SECONDS_PER_HOUR

    assert DEFAULT_MFU is defaults.DEFAULT_MFU == Budget(flops=1e22).mfu == 0.4
    assert Training().seq_len == ParallelRequest.model_fields["seq_len"].default == defaults.DEFAULT_SEQ_LEN
    assert Training().vocab_size == defaults.DEFAULT_VOCAB_SIZE == 128256
    assert shape_for_params(7e9).vocab_size == defaults.DEFAULT_VOCAB_SIZE
    assert Cluster(gpus=8).gpu == defaults.DEFAULT_GPU
    assert SECONDS_PER_DAY == 24 * SECONDS_PER_HOUR == 86400.0


@pytest.mark.parametrize("command", ["allocate", "sweep", "parallelize"])
def test_help_states_the_shared_defaults(command):
    text = " ".join(CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "200"}).stdout.split())
    assert str(defaults.DEFAULT_GPU) in text
    if command != "parallelize":
        assert f"(default {defaults.DEFAULT_MFU})" in text
    else:
        assert f"(default {defaults.DEFAULT_SEQ_LEN})" in text
