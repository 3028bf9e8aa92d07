"""Megatron-LM's batch ramp at the snapshot the engines check runs (d98e8a64, after #4411 "Replace rampup batch
size scheduler with custom step batch size schedules", commit 532ad926, 2026-04-21).

There ``--rampup-batch-size`` still parses, but ``init_num_microbatches_calculator`` only logs that it is
deprecated and builds the constant calculator (megatron/core/num_microbatches_calculator.py @ d98e8a64), and
``update_train_iters`` sets train_iters = train_samples // global_batch_size (training.py): the ramp is dropped
and the whole run uses the main batch. The ramp is ``--step-batch-size-schedule "THRESHOLD:BS ..."`` instead,
thresholds in tokens (global_vars passes seq_length, so each is // seq_length samples), not allowed beside
``--global-batch-size``. The export keeps the flag the pinned flag list (000c4ac2) has, and a warning gives the
exact schedule for newer checkouts; replayed here with that calculator's rule (the batch of the last threshold
at or below the consumed samples) it recovers every stage of the plan, also the unequal stages
``--rampup-batch-size`` can only approximate.
"""

import itertools

from tests.export._plans import golden_plan, parse_script_args

from runplan.export import export_plan
from runplan.plan import build_plan
from runplan.spec import load_plan


def _ramp_warning(plan) -> str:
    result = export_plan(plan, "megatron")
    (warning,) = [w for w in result.warnings if w.startswith("batch ramp:") and "#4411" in w]
    assert "\n" not in warning
    return warning


def _schedule(warning: str) -> str:
    return warning.split("--step-batch-size-schedule '")[1].split("'")[0]


def _replay(schedule: str, seq_len: int, train_samples: int) -> list[tuple[int, int]]:
    """StepBatchsizeNumMicroBatchesCalculator @ d98e8a64 over a run: (batch, steps) runs."""
    table = sorted((int(float(t)) // seq_len, int(b)) for t, b in (e.split(":") for e in schedule.split()))
    assert table[0][0] == 0 and all(a[0] < b[0] for a, b in itertools.pairwise(table))
    runs: list[list[int]] = []
    consumed = 0
    while consumed < train_samples:  # update_train_iters' loop
        batch = [b for t, b in table if consumed >= t][-1]
        if runs and runs[-1][0] == batch:
            runs[-1][1] += 1
        else:
            runs.append([batch, 1])
        consumed += batch
    return [(b, n) for b, n in runs]


def _stages(plan) -> list[tuple[int, int]]:
    return [(s.global_batch_sequences, s.steps) for s in plan.schedule.batch_stages]


def _train_samples(plan) -> int:
    args = parse_script_args(export_plan(plan, "megatron").text)
    return int(args[args.index("--train-samples") + 1])


def test_the_70b_ramp_as_a_step_schedule_replays_the_plans_stages():
    plan = golden_plan("70b-512-h100")  # checked-in plan: 2,624 sequences x 2,791 steps, then 5,312
    assert _stages(plan) == [(2624, 2791), (5312, 90542)]
    warning = _ramp_warning(plan)
    assert _schedule(warning) == "0:2624 29997400064:5312"  # 2,791 x 2,624 sequences x 4,096 tokens
    assert _replay(_schedule(warning), 4096, _train_samples(plan)) == _stages(plan)
    assert "--global-batch-size" in warning and "--eval-global-batch-size 5312" in warning


def test_the_script_no_longer_calls_its_rampup_flag_exact_for_every_checkout():
    text = export_plan(golden_plan("70b-512-h100"), "megatron").text
    line = next(line for line in text.splitlines() if line.startswith("  --rampup-batch-size"))
    assert "exact before #4411" in line


def three_stage_ramp_plan(folder):
    """An 8B plan on 64 H100 whose ramp has two unequal stages: 384, 768, then the main batch 1,536 sequences."""
    path = folder / "ramp.yaml"
    path.write_text(
        "schema_version: 1\nname: ramp\nmodel: llama-3.1-8b\nbudget: {tokens: 500B}\n"
        "training: {seq_len: 4096}\ncluster: {gpu: h100-sxm, gpus: 64}\nschedule:\n  batch_ramp:\n"
        "    - {batch_fraction: 0.25, token_fraction: 0.01}\n    - {batch_fraction: 0.5, token_fraction: 0.02}\n"
    )
    return build_plan(load_plan(path), folder)


def test_unequal_stages_are_exact_as_a_step_schedule(tmp_path):
    plan = three_stage_ramp_plan(tmp_path)
    assert len(_stages(plan)) == 3  # 384, 768, then the main batch
    assert _replay(_schedule(_ramp_warning(plan)), 4096, _train_samples(plan)) == _stages(plan)
