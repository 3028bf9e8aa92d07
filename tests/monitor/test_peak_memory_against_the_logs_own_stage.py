"""``runplan monitor --plan``: a log's peak memory is compared with the planned total of the pipeline stage the
log's peak is (``layout.best.memory_total_bytes_by_stage``), and the note says which stage; where the log does not
say and p > 1, with the most loaded stage's total and a warning; a plan written before the per-stage totals keeps
the comparison with the most loaded stage and its warning (docs/monitor.md, "With --plan").

The plan: a 4-layer Llama-style model (h 1,024, 16 heads of 64, 4 KV heads, SwiGLU 2,816, untied vocabulary 4,096)
at s = 1,024 on 2 H100, TP 1, PP 2, ZeRO-0, 4 micro-batches of 1. Hand-derived (as
tests/parallel/test_memory_total_of_each_pipeline_stage.py): 11,274,240 parameters per layer, two per stage; 18
bytes per parameter; 30,272 stored bytes per token and layer; first stage 18 × (2 × 11,274,240 + 4,096 × 1,024) +
min(4, 2) × 1,024 × 2 × 30,272 + 3e9 = 3,605,364,224 bytes, the most loaded; last stage 18 × (2 × 11,274,240 +
4,096 × 1,024 + 1,024) + 1,024 × 2 × 30,272 + 6 × 1,024 × 4,096 + 3e9 = 3,568,551,424 bytes.
"""

from __future__ import annotations

import json

import pytest
from tests.monitor.test_memory_and_mfu_vs_plan import titan_line

from runplan.monitor.readers import read_logs
from runplan.monitor.vs_plan import compare

FIRST = 3_605_364_224.0
LAST = 3_568_551_424.0
RESERVE = 3e9
GIB = 2**30

CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 1024,
    "num_hidden_layers": 4,
    "num_attention_heads": 16,
    "num_key_value_heads": 4,
    "head_dim": 64,
    "intermediate_size": 2816,
    "vocab_size": 4096,
    "tie_word_embeddings": False,
    "hidden_act": "silu",
    "max_position_embeddings": 4096,
}


def _plan(tmp_path, pp: int = 2):
    from runplan.cli.common import plan_from_file

    config = tmp_path / "config.json"
    config.write_text(json.dumps(CONFIG))
    path = tmp_path / f"tiny-pp{pp}.yaml"
    path.write_text(
        f"schema_version: 1\nname: tiny\nmodel: {config}\nbudget:\n  tokens: 1000000000\ntraining:\n"
        f"  seq_len: 1024\ncluster:\n  gpu: h100-sxm\n  gpus: {pp}\nparallel:\n  tp: 1\n  pp: {pp}\n  dp: 1\n"
        "  cp: 1\n  ep: 1\n  zero: 0\n  micro_batch: 1\n  microbatches: 4\n  vpp: 1\n  recompute: none\n"
        "schedule:\n  global_batch_tokens: 4096\n"
    )
    return plan_from_file(path)[2]


def _megatron_tensorboard(tmp_path, peak: float):
    """Megatron's TensorBoard scalars as exported (the Mixtral release file's layout): ``mem-max-allocated-bytes``
    is written by the last rank only (global_vars.py ``_set_tensorboard_writer`` @ d98e8a64)."""
    steps = range(1, 41)
    scalars = {
        "lm loss": {str(s): 8.0 - 0.01 * s for s in steps},
        "iteration-time": {str(s): 0.5 for s in steps},
        "mem-max-allocated-bytes": {str(s): peak if s >= 10 else 0.9 * peak for s in steps},
    }
    data = {
        name: {"start_step": 1, "end_step": 40, "step_interval": 1, "values": values}
        for name, values in scalars.items()
    }
    path = tmp_path / "megatron_tb.json"
    path.write_text(json.dumps(data))
    return path


def test_the_plans_stage_totals_are_the_hand_derived_ones(tmp_path):
    best = _plan(tmp_path).layout.best
    assert best.memory_stage == "first" and best.memory_bytes.total == pytest.approx(FIRST, rel=1e-12)
    assert best.memory_total_bytes_by_stage is not None
    assert best.memory_total_bytes_by_stage.first == pytest.approx(FIRST, rel=1e-12)
    assert best.memory_total_bytes_by_stage.last == pytest.approx(LAST, rel=1e-12)


def test_megatron_tensorboard_peak_is_compared_with_the_last_stages_total(tmp_path):
    """625,000,000 allocated bytes against the last stage's 3,568,551,424 less the 3e9 reserve = 568,551,424:
    +9.93% (against the first stage's 605,364,224 it would read +3.2%)."""
    out = compare(read_logs([_megatron_tensorboard(tmp_path, 625e6)]), _plan(tmp_path))
    assert out["peak_memory_bytes"] == 625e6 and out["peak_memory_kind"] == "allocated"
    assert out["planned_memory_bytes"] == pytest.approx(LAST - RESERVE, rel=1e-12)
    note = out["notes"]["peak_memory"]
    assert (
        "memory_total_bytes_by_stage.last 3.6 GB" in note
        and "(last stage of 2, the one the log's peak is from)" in note
    )
    assert note.endswith(f"{625e6 / 568_551_424 - 1:+.1%}") and note.endswith("+9.9%")
    assert not [w for w in out["warnings"] if "stage" in w]


def test_torchtitan_tensorboard_peak_is_compared_with_the_last_stages_total(tmp_path):
    """torchtitan writes its TensorBoard scalars from the first rank of the last stage under 1F1B
    (components/metrics.py ``_get_metrics_rank`` @ b5bcd76c): ``memory/max_reserved(GiB)`` 3.40 GiB =
    3,650,722,202 bytes reserved against the last stage's 3,568,551,424 (reserve included): +2.3%."""
    steps = range(1, 41)
    scalars = {
        "loss_metrics/global_avg_loss": {str(s): 8.0 - 0.01 * s for s in steps},
        "time_metrics/end_to_end(s)": {str(s): 0.5 for s in steps},
        "memory/max_reserved(GiB)": {str(s): 3.40 for s in steps},
    }
    path = tmp_path / "titan_tb.json"
    path.write_text(
        json.dumps(
            {
                k: {"start_step": 1, "end_step": 40, "step_interval": 1, "values": v}
                for k, v in scalars.items()
            }
        )
    )
    out = compare(read_logs([path]), _plan(tmp_path))
    assert out["peak_memory_kind"] == "reserved"
    assert out["planned_memory_bytes"] == pytest.approx(LAST, rel=1e-12)
    assert "memory_total_bytes_by_stage.last 3.6 GB" in out["notes"]["peak_memory"]
    assert out["notes"]["peak_memory"].endswith(f"{3.40 * GIB / LAST - 1:+.1%}")
    assert out["notes"]["peak_memory"].endswith("+2.3%")
    assert not [w for w in out["warnings"] if "stage" in w]


def test_a_log_that_names_no_stage_is_compared_with_the_most_loaded_and_warned(tmp_path):
    """torchtitan's console ``memory:`` is whichever rank the launcher kept (run_train.sh LOG_RANK): 3.40 GiB =
    3,650,722,202 bytes reserved against the first stage's 3,605,364,224 (the most loaded, reserve included):
    +1.3%, with a warning that gives the last stage's 3.6 GB too."""
    path = tmp_path / "titan.log"
    path.write_text("\n".join(titan_line(s, 800, 4.6e11, 3.40) for s in range(1, 31)) + "\n")
    out = compare(read_logs([path]), _plan(tmp_path))
    assert out["planned_memory_bytes"] == pytest.approx(FIRST, rel=1e-12)
    assert "(first stage, the most loaded of 2)" in out["notes"]["peak_memory"]
    assert out["notes"]["peak_memory"].endswith(f"{3.40 * GIB / FIRST - 1:+.1%}")
    (warning,) = [w for w in out["warnings"] if "pipeline stage" in w]
    assert "does not say which of the 2 pipeline stages" in warning
    assert "most loaded stage's (first)" in warning and "last stage's total is 3.6 GB" in warning


def test_one_pipeline_stage_needs_no_stage_and_no_warning(tmp_path):
    """p = 1: the one stage holds the embedding, head, 4 layers, 1 micro-batch and the logits: 18 × (4 ×
    11,274,240 + 2 × 4,096 × 1,024 + 1,024) + 1,024 × 4 × 30,272 + 6 × 1,024 × 4,096 + 3e9 = 4,111,918,592."""
    plan = _plan(tmp_path, pp=1)
    by_stage = plan.layout.best.memory_total_bytes_by_stage
    assert by_stage is not None and by_stage.first == by_stage.last == pytest.approx(4_111_918_592, rel=1e-12)
    out = compare(read_logs([_megatron_tensorboard(tmp_path, 1.2e9)]), plan)
    assert out["planned_memory_bytes"] == pytest.approx(4_111_918_592 - RESERVE, rel=1e-12)
    assert "(its one pipeline stage)" in out["notes"]["peak_memory"]
    assert not [w for w in out["warnings"] if "stage" in w]


def test_a_plan_written_before_the_stage_totals_keeps_the_most_loaded_stage_and_warns(tmp_path):
    """A RunPlan read back from JSON without ``memory_total_bytes_by_stage`` (runplan before it): the first
    stage's total less the reserve, 605,364,224, and the warning that the log's peak is another GPU's."""
    from runplan.plan import RunPlan

    data = json.loads(_plan(tmp_path).model_dump_json())
    for layout in [data["layout"]["best"], *data["layout"]["runners_up"]]:
        del layout["memory_total_bytes_by_stage"]
    old = RunPlan.model_validate_json(json.dumps(data))
    assert old.layout.best.memory_total_bytes_by_stage is None
    out = compare(read_logs([_megatron_tensorboard(tmp_path, 625e6)]), old)
    assert out["planned_memory_bytes"] == pytest.approx(FIRST - RESERVE, rel=1e-12)
    assert "memory_bytes.total 3.6 GB" in out["notes"]["peak_memory"]
    assert out["notes"]["peak_memory"].endswith(f"{625e6 / 605_364_224 - 1:+.1%}")
    (warning,) = [w for w in out["warnings"] if "pipeline stage" in w]
    assert "last pipeline stage's" in warning and "first stage's" in warning and "different GPUs" in warning


def test_megatron_report_memory_is_every_stages_largest_with_no_warning(tmp_path):
    """``report_memory`` prints on data-parallel rank 0 of every stage; the reader keeps the largest: the most
    loaded stage's, 600 MiB = 629,145,600 bytes against 605,364,224: +3.9%."""
    from tests.monitor.test_engine_log_lines_as_printed import mds_line

    lines = [mds_line(it, 500.0, 6.0 - 0.001 * it, 0.9) for it in range(1, 30)]
    lines.insert(1, "[Rank 1] (after 1 iterations) memory (MB) | allocated: 300.0 | max allocated: 600.00 | "
                 "reserved: 700.0 | max reserved: 700.0")  # fmt: skip
    path = tmp_path / "mds.log"
    path.write_text("\n".join(lines) + "\n")
    out = compare(read_logs([path]), _plan(tmp_path))
    assert out["planned_memory_bytes"] == pytest.approx(FIRST - RESERVE, rel=1e-12)
    assert (
        "(first stage, the most loaded of 2: the log's is the largest of every stage's)"
        in out["notes"]["peak_memory"]
    )
    assert out["notes"]["peak_memory"].endswith(f"{600 * 2**20 / 605_364_224 - 1:+.1%}")
    assert not [w for w in out["warnings"] if "stage" in w]


def _mixtral_plan(tmp_path):
    """Megatron-Core's Mixtral 8x7B release run as its model_config.yaml writes it (training_logs/megatron): TP2 PP4
    EP4, distributed optimizer (ZeRO-1), sequence parallel, no recompute, micro-batch 1, global batch 1,024 × 4,096.
    Its tokenizer is nemotron_2_256k (Nemotron-4 15B report §2: 256,000 tokens; --make-vocab-size-divisible-by 128
    × TP 2 = 256 divides it, so no padding), not Mixtral's 32,000, and its gradients are fp32 (--bf16 without
    --grad-reduce-in-bf16 turns accumulate_allreduce_grads_in_fp32 on: megatron/training/arguments.py @ d98e8a64).
    The GPU count is not in the run's files: 128 (DP 16) is the count whose ZeRO-1 shard matches the log's steady
    ``mem-allocated-bytes`` (17.70e9; hand-derived below: 17.36e9; DP 8 would give 22.1e9)."""
    from runplan.cli.common import plan_from_file

    path = tmp_path / "mixtral-release.yaml"
    path.write_text(
        "schema_version: 1\nname: mixtral-release\nmodel:\n  shape:\n    n_layers: 32\n    d_model: 4096\n"
        "    n_heads: 32\n    n_kv_heads: 8\n    head_dim: 128\n    ffn_hidden: 14336\n    mlp: swiglu\n"
        "    vocab_size: 256000\n    tied_embeddings: false\n    norm: rmsnorm\n    n_experts: 8\n    top_k: 2\n"
        "    expert_ffn_hidden: 14336\nbudget:\n  tokens: 100663296000\ntraining:\n  seq_len: 4096\n"
        "cluster:\n  gpu: h100-sxm\n  gpus: 128\nparallel:\n  tp: 2\n  pp: 4\n  ep: 4\n  cp: 1\n  micro_batch: 1\n"
        "  zero: 1\n  microbatches: 64\n  vpp: 1\n  recompute: none\n  sequence_parallel: true\n"
        "stack:\n  preset: megatron-core\n  gradient_dtype: fp32\nschedule:\n  global_batch_tokens: 4194304\n"
        "  batch_ramp:\n    - batch_fraction: 1\n      token_fraction: 0.01\n"
    )
    return plan_from_file(path)[2]


#: the last stage's weights, gradients and optimizer state per GPU, hand-derived: 8 layers of attention
#: (4,096² + 2·4,096·1,024 + 4,096² = 41,943,040), norms and router (2·4,096 + 4,096·8 = 40,960) and the untied
#: head (256,000·4,096) with the final norm, ÷ TP 2 = 692,226,048 dense; 8 layers × 8 experts × 3·4,096·14,336
#: ÷ (TP 2 · EP 4) = 1,409,286,144 expert parameters; bf16 weights 2 B, fp32 gradients 4 B, ZeRO-1 optimizer
#: 12 B over DP 16 (dense) and the expert DP 128 ÷ (2·4·4) = 4
MIXTRAL_LAST_STATE = 6 * (692_226_048 + 1_409_286_144) + 12 * 692_226_048 // 16 + 12 * 1_409_286_144 // 4


def test_mixtral_release_tensorboard_peak_against_the_last_stage(tmp_path, shared_data_dir):
    """Megatron-Core's Mixtral 8x7B release run: its TensorBoard peak, 26,495,959,040 allocated bytes at step 20, is
    the last stage's (the first stage, 4 micro-batches in flight, is the most loaded): it is compared with the last
    stage's total less the 3e9 reserve. The last stage's state is the hand-derived 17,356,101,120 bytes (the log's
    steady allocation: 17.70e9); with one micro-batch's activations and the 256,000-way logits the plan is within
    10% of the real peak, a run the time and memory model was never fitted on."""
    plan = _mixtral_plan(tmp_path)
    best = plan.layout.best
    assert best.memory_total_bytes_by_stage is not None and best.pp == 4
    last = best.memory_total_bytes_by_stage.last
    assert best.memory_stage == "first" and last < best.memory_bytes.total
    assert MIXTRAL_LAST_STATE == 17_356_101_120
    assert last - RESERVE > MIXTRAL_LAST_STATE  # activations on top of the state
    out = compare(read_logs([shared_data_dir / "training_logs" / "megatron" / MIXTRAL]), plan)
    assert out["peak_memory_bytes"] == 26_495_959_040
    assert out["planned_memory_bytes"] == pytest.approx(last - RESERVE, rel=1e-12)
    error = 26_495_959_040 / (last - RESERVE) - 1
    assert abs(error) < 0.10
    assert f"(last stage of 4, the one the log's peak is from): {error:+.1%}" in out["notes"]["peak_memory"]
    assert not [w for w in out["warnings"] if "stage" in w]


def test_mixtral_release_steady_allocation_is_the_hand_derived_state(shared_data_dir):
    """Between steps Megatron holds the weights, gradient buffer and optimizer shard only: the log's
    ``mem-allocated-bytes`` (one rank, the last stage's) is within 3% of the hand-derived state above, which is how
    the 128 GPUs of the plan were inferred."""
    values = json.loads((shared_data_dir / "training_logs" / "megatron" / MIXTRAL).read_text())[
        "mem-allocated-bytes"
    ]["values"]
    steady = max(float(v) for v in values.values() if v != "nan")
    assert steady == pytest.approx(MIXTRAL_LAST_STATE, rel=0.03)


MIXTRAL = "mixtral_8x7b_alltoall_tp2pp4ep4_release.dgx_h100.json"


def test_the_reports_memory_table_names_the_other_stages_total(tmp_path):
    # the plan's Memory per GPU table shows the most loaded stage term by term; its title gives the other stage's
    # total, the figure a log of that stage's peak is compared with (FIRST 3.61 GB, LAST 3.57 GB above)
    from runplan.report.sections import _other_stage_total

    best = _plan(tmp_path).layout.best
    assert best.memory_stage == "first" and best.pp == 2
    assert _other_stage_total(best) == "; last stage 3.57 GB"
    assert _other_stage_total(best.model_copy(update={"memory_total_bytes_by_stage": None})) == ""
