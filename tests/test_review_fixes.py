"""Review fixes (brief H): one home per default, shared flag helpers, output writing, bounded inputs.

The bad-input rows for every crash fixed are in tests/test_bad_input.py; these tests pin the behaviour
behind them: the defaults agree everywhere, the in-flight count is capped at m in both the vectorized
model and the reference, the OOM advice counts the right bytes, and a run that never finishes a segment
is infeasible.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from tests.parallel.shapes import H100, LLAMA_8B
from typer.testing import CliRunner

from runplan import defaults
from runplan.cli.app import app
from runplan.errors import Infeasible, SpecError
from runplan.parallel.layout import ParallelRequest, Pins
from runplan.parallel.memory import in_flight
from runplan.parallel.reference import Layout, evaluate_layout
from runplan.parallel.search import build_grid, choose_microbatches, evaluate


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


def test_in_flight_is_capped_at_the_step_micro_batches():
    # interleaved p = 4, v = 2: p + (p-1)/v = 5.5 stage-equivalents, but m = 2 micro-batches are all there is
    assert in_flight(4, 8, 2, last=False) == pytest.approx(5.5)
    assert in_flight(4, 2, 2, last=False) == pytest.approx(2.0)
    assert in_flight(4, 4, 2, last=False) == pytest.approx(4.0)  # m = p: every chunk of the step is in flight
    assert in_flight(4, 2, 1, last=False) == pytest.approx(2.0)  # 1F1B: min(m, p)
    assert in_flight(4, 1, 2, last=True) == pytest.approx(1.0)
    assert in_flight(4, 8, 2, last=True) == pytest.approx(2.5)  # ((v-1)p + 1)/v


def test_pinned_microbatches_below_p_agree_with_the_reference():
    req = ParallelRequest(model=LLAMA_8B, gpu=H100, n_gpus=16, pins=Pins(microbatches=2, pp=4, vpp=2))
    grid, _ = build_grid(req)
    grid["m"], ok, _ = choose_microbatches(req, grid, 4096, 2e7)
    assert not ok.any()  # interleaved m must be a multiple of p: such rows are never feasible
    ev = evaluate(req, grid)
    names = ("none", "selective", "full")
    for i in range(0, len(grid["t"]), max(1, len(grid["t"]) // 7)):
        lay = Layout(
            *(int(grid[k][i]) for k in ("t", "p", "d", "e", "c", "zero", "b", "m", "v")),
            names[int(grid["rc"][i])],
            bool(grid["sp"][i]),
        )
        ref = evaluate_layout(req, lay)
        assert float(ev["mem_activations"][i]) == pytest.approx(ref["activations"], rel=1e-9)


@pytest.mark.parametrize(("bf16", "per_param"), [(False, 18), (True, 16)])
def test_oom_advice_counts_2_plus_gradient_plus_12_bytes(bf16, per_param):
    argv = ["parallelize", "--model", "llama-3.1-405b", "--gpus", "8"] + (["--bf16-grads"] if bf16 else [])
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 1
    from runplan.catalog import load_catalog

    params = load_catalog().model("llama-3.1-405b").total_params
    usable = 80e9 * 0.95 - 3e9  # headroom 5 %, reserve 3 GB (Constraints defaults)
    assert f"{per_param} bytes/param" in result.stderr
    assert f"need at least {math.ceil(per_param * params / usable)} h100-sxm" in result.stderr


def test_explicit_default_seq_len_conflicts_with_a_plan_file():
    plan70 = str(__import__("pathlib").Path(__file__).resolve().parents[1] / "examples" / "70b-512-h100.yaml")
    result = CliRunner().invoke(app, ["parallelize", plan70, "--seq-len", str(defaults.DEFAULT_SEQ_LEN)])
    assert result.exit_code == 2 and "--seq-len" in result.stderr


def test_write_output_refuses_the_input_and_directories(tmp_path):
    from runplan.cli.common import write_output

    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text("x: 1\n")
    with pytest.raises(SpecError, match="overwrite"):
        write_output("text", tmp_path / "." / "plan.yaml", "-o", not_over=plan_file)
    with pytest.raises(SpecError, match="is a directory"):
        write_output("text", tmp_path, "-o")
    with pytest.raises(SpecError, match="is a file, not a directory") as info:
        write_output("text", plan_file / "out.txt", "-o")
    assert info.value.where == "-o"
    written = write_output("text", tmp_path / "new" / "out.txt", "-o")
    assert written.read_text() == "text\n" and plan_file.read_text() == "x: 1\n"


def test_plan_to_a_file_in_terminal_format_renders_the_report(tmp_path):
    plan70 = str(__import__("pathlib").Path(__file__).resolve().parents[1] / "examples" / "70b-512-h100.yaml")
    out = tmp_path / "report.txt"
    result = CliRunner().invoke(app, ["plan", plan70, "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    assert "70b-512-h100" in out.read_text() and result.stdout == ""


def test_flag_budget_is_the_plan_budget_model():
    from runplan.cli.budget import flag_budget_model, parse_budget
    from runplan.spec import Budget

    assert issubclass(flag_budget_model(), Budget)
    parsed = parse_budget(None, "1024", "30", None, None, "2")
    expected = 1024 * H100.bf16_flops * defaults.DEFAULT_MFU * 30 * 86400
    assert parsed.flops == pytest.approx(expected, rel=1e-12)
    assert (parsed.gpus, parsed.price, parsed.mfu) == (1024, 2.0, defaults.DEFAULT_MFU)
    with pytest.raises(SpecError) as info:
        parse_budget("2e23", None, None, None, "0.001", None)
    assert info.value.where == "budget.mfu"


def test_a_segment_that_never_completes_is_infeasible():
    from runplan.ops import OperationsSpec, ReliabilityRequest, _ensure_progress, assess_reliability

    spec = OperationsSpec(failures_per_1000_node_days=1000, restart_seconds=604800, save_fixed_seconds=86400)
    with np.errstate(all="raise"):  # the overflow is handled, not warned about
        reliability = assess_reliability(
            ReliabilityRequest(
                n_nodes=2048,
                useful_seconds=1e7,
                interval_seconds=86400,
                save_blocking_seconds=86400,
                spec=spec,
            )
        )
    assert not math.isfinite(reliability.expected_elapsed_seconds)
    with pytest.raises(Infeasible, match="goodput ≈ 0"):
        _ensure_progress(reliability)
