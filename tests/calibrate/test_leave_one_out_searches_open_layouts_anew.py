"""A run that leaves axes to the search (pins tp and pp only) has its layout chosen by the constants it is
predicted with. `runplan calibrate`'s leave-one-out used the full fit's layouts, chosen by constants the left-out
run helped set: the 70B run below went from vpp 2 to 1 in its own refit, and two runs' printed leave-one-out errors
missed a refit of the file without them by 0.14 and 0.30 points. Each printed error is now that refit exactly."""

from __future__ import annotations

import pytest
import yaml

from runplan.calibrate.fit import Prepared, calibrate, prepare, step_error
from runplan.calibrate.measured import MeasuredFile
from runplan.calibrate.run import base_efficiencies, run_calibration
from runplan.catalog import load_catalog

_MCORE = "source: mcore, model: llama-3.1-70b, gpu: h100-sxm, n_gpus: 64, seq_len: 8192, global_batch: 128"
_PINNED = "{tp: 8, pp: 4, dp: 2, cp: 1, zero: 1, micro_batch: 1, microbatches: 64, vpp: 5, recompute: none, sequence_parallel: true}"
_TITAN = "source: titan, model: llama-3.1-8b, gpu: h100-sxm, seq_len: 8192, stack: {preset: torchtitan-fsdp2"
_FSDP = "{tp: 1, pp: 1, cp: 1, zero: 3, micro_batch: 2, microbatches: 1, recompute: none"
RUNS = f"""
runs:
  - {{id: fsdp-8, {_TITAN}, fused_elementwise: true}}, n_gpus: 8, global_batch: 16,
     layout: {_FSDP}, dp: 8}}, measured: {{tokens_per_second_per_gpu: 7200}}}}
  - {{id: fsdp-8-eager, {_TITAN}, fused_elementwise: false}}, n_gpus: 8, global_batch: 16,
     layout: {_FSDP}, dp: 8}}, measured: {{tokens_per_second_per_gpu: 6300}}}}
  - {{id: fsdp-64, {_TITAN}, fused_elementwise: true}}, n_gpus: 64, global_batch: 128,
     layout: {_FSDP}, dp: 64}}, measured: {{tokens_per_second_per_gpu: 6700}}}}
  - {{id: ovl, {_MCORE}, layout: {_PINNED}, stack: {{preset: megatron-core, tp_comm_overlap: true}},
     measured: {{step_seconds: 15.9}}}}
  - {{id: noovl, {_MCORE}, layout: {_PINNED}, stack: {{preset: megatron-core, tp_comm_overlap: false}},
     measured: {{speedup: 0.93, speedup_over: ovl}}}}
  - {{id: open, source: mcore, model: llama-3.1-70b, gpu: h100-sxm, n_gpus: 32, seq_len: 4096, global_batch: 128,
     layout: {{tp: 8, pp: 4, recompute: selective, sequence_parallel: true}},
     stack: {{preset: megatron-core, tp_comm_overlap: true}}, measured: {{step_seconds: 13.1}}}}
  - {{id: tp2, source: mcore, model: llama-3.1-8b, gpu: h100-sxm, n_gpus: 16, seq_len: 8192, global_batch: 64,
     layout: {{tp: 2, pp: 1, dp: 8, cp: 1, zero: 1, micro_batch: 1, microbatches: 8, recompute: none,
     sequence_parallel: true}}, stack: {{preset: megatron-core}}, measured: {{step_seconds: 3.6}}}}
"""


def test_printed_leave_one_out_is_the_refit_without_the_run_when_a_layout_is_open():
    runs = prepare(MeasuredFile.model_validate(yaml.safe_load(RUNS)), load_catalog([]))
    report = run_calibration(runs, name="t", measured_file="t.yaml", base="priors")
    base, _ = base_efficiencies("priors")
    for j, p in enumerate(runs):
        unfitted = p.run.model_copy(update={"fit": False})
        fold = [
            q if k != j else Prepared(q.index, unfitted, q.request, q.family, q.measured_tps)
            for k, q in enumerate(runs)
        ]
        by_hand = step_error(float(calibrate(fold, base).log_errors[j]))
        assert report.runs[j].leave_one_out_error == pytest.approx(by_hand, abs=1e-9), p.id
