"""The vectorized model and the pure-Python reference agree where the cluster's topology decides the link: a TP
group straddling nodes (TP 6 on 8-GPU nodes), and MI300X's switchless node (docs/parallel.md, intra-node tier)."""

from __future__ import annotations

import pytest
from tests.parallel.reference import evaluate_layout as reference
from tests.parallel.reference import layout
from tests.parallel.shapes import GPT_SMALL, H100, LLAMA_8B, MIXTRAL

from runplan.catalog import load_catalog
from runplan.parallel.layout import Constraints, ParallelRequest
from runplan.parallel.search import evaluate_layout

MI300X = load_catalog([]).gpu("mi300x")


@pytest.mark.parametrize(
    ("gpu", "model", "gpus", "axes"),
    [
        # tp, pp, dp, ep, cp, zero, micro_batch, microbatches, vpp, recompute, sequence_parallel
        (H100, GPT_SMALL, 96, (6, 1, 16, 1, 1, 1, 1, 8, 1, "none", True)),  # TP 6: straddles 8-GPU nodes
        (H100, LLAMA_8B, 96, (4, 1, 12, 1, 2, 1, 1, 8, 1, "selective", True)),  # CP span 8: inside
        (MI300X, LLAMA_8B, 64, (2, 2, 8, 1, 2, 1, 1, 8, 1, "selective", True)),  # TP 2: one IF link
        (MI300X, MIXTRAL, 64, (1, 2, 32, 8, 1, 1, 1, 8, 1, "selective", False)),  # EP 8: seven links
        (MI300X, LLAMA_8B, 8, (1, 1, 8, 1, 1, 1, 1, 4, 1, "none", False)),  # DP 8 on one node
    ],
)
def test_vectorized_model_equals_the_reference(gpu, model, gpus, axes):
    request = ParallelRequest(
        model=model, gpu=gpu, n_gpus=gpus, seq_len=4096, constraints=Constraints(allow_cross_node_tp=True)
    )
    got = evaluate_layout(request, layout(*axes))
    want = reference(request, layout(*axes))
    assert got.step_seconds == pytest.approx(want["step_seconds"], rel=1e-9)
