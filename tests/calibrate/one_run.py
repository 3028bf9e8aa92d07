"""A measured-runs file of one run (Llama 3.1 8B on 8 H100s, DP 8), its ``measured:`` value left to fill:
``ONE_RUN.replace("MEASURED", "{step_seconds: 2.0}")``."""

ONE_RUN = """\
runs:
  - id: r0
    model: llama-3.1-8b
    gpu: h100-sxm
    n_gpus: 8
    seq_len: 8192
    global_batch: 16
    layout: {tp: 1, pp: 1, dp: 8, cp: 1, ep: 1, zero: 1, micro_batch: 1, microbatches: 2, vpp: 1,
             recompute: none, sequence_parallel: false}
    measured: MEASURED
"""
