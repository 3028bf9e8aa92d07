"""Megatron's ``--recompute-method block`` with interleaving: each virtual chunk is its own TransformerBlock, and
``recompute.py`` (@ d98e8a64) checkpoints the first ``recompute_num_layers`` of ``num_layers_per_pipeline_rank =
len(self.layers)``, the chunk's layers. So a stage of v chunks recomputes min(v·n, layers) layers, not n."""

import numpy as np
import pytest
from tests.parallel.shapes import H100, LLAMA_70B

from runplan.parallel.layout import Constraints, Layout, ParallelRequest
from runplan.parallel.search import evaluate_layout
from runplan.parallel.stack import Stack

# Llama 2/3 70B: 80 layers on 8 stages = 10 per stage, two virtual chunks of 5
LAYOUT = Layout(
    tp=8,
    pp=8,
    dp=8,
    ep=1,
    cp=1,
    zero=1,
    micro_batch=1,
    microbatches=16,
    vpp=2,
    recompute="full",
    sequence_parallel=True,
)


def _estimate(stack: Stack, layout: Layout = LAYOUT):
    request = ParallelRequest(
        model=LLAMA_70B,
        gpu=H100,
        n_gpus=512,
        seq_len=4096,
        stack=stack,
        constraints=Constraints(max_bubble_fraction=0.99),
    )
    return evaluate_layout(request, layout)


def test_block_of_a_whole_chunk_recomputes_the_whole_stage_as_uniform_does():
    uniform = _estimate(Stack())
    block = _estimate(Stack(full_recompute_method="block", full_recompute_layers=5))
    assert block.memory_bytes.activations == pytest.approx(uniform.memory_bytes.activations, rel=1e-12)
    assert block.step_seconds == pytest.approx(uniform.step_seconds, rel=1e-12)


def test_block_of_n_per_chunk_repeats_the_forward_of_v_times_n_layers():
    # the same 8 recomputed layers of 10: n 4 in each of 2 chunks, or n 8 in the one chunk without interleaving
    interleaved = _estimate(Stack(full_recompute_method="block", full_recompute_layers=4))
    eight = _estimate(
        Stack(full_recompute_method="block", full_recompute_layers=8), LAYOUT.model_copy(update={"vpp": 1})
    )
    four = _estimate(
        Stack(full_recompute_method="block", full_recompute_layers=4), LAYOUT.model_copy(update={"vpp": 1})
    )
    assert interleaved.time_seconds.compute == pytest.approx(eight.time_seconds.compute, rel=1e-12)
    assert interleaved.time_seconds.compute > four.time_seconds.compute
    assert interleaved.memory_bytes.activations > _estimate(Stack()).memory_bytes.activations


def test_uniform_groups_fall_inside_each_chunk():
    # Megatron's uniform method groups n layers inside each chunk (core/recompute.py @ d98e8a64): 10 layers in
    # 2 chunks of 5 keep 2·⌈5/8⌉ = 2 inputs with n 8, as with n 5, and recompute at most a chunk (5 layers)
    # at a time; without interleaving, n 4 keeps ⌈10/4⌉ = 3 inputs, as n 4 of 3·4 = 12 would, not 10/4
    eight = _estimate(Stack(full_recompute_layers=8))
    five = _estimate(Stack(full_recompute_layers=5))
    assert eight.memory_bytes.activations == pytest.approx(five.memory_bytes.activations, rel=1e-12)
    # without interleaving the bytes are a + b·(stored inputs) + c·(layers live): n 1 keeps 10 inputs and 1
    # layer live, n 2: 5 and 2, n 4: ⌈10/4⌉ = 3 and 4 (not 10/4 = 2.5), n 5: 2 and 5; fit a, b, c on three and
    # predict the fourth
    plain = LAYOUT.model_copy(update={"vpp": 1})
    kept = {
        n: _estimate(Stack(full_recompute_layers=n), plain).memory_bytes.activations for n in (1, 2, 4, 5)
    }
    counts = {1: (10, 1), 2: (5, 2), 4: (3, 4), 5: (2, 5)}
    a, b, c = np.linalg.solve([[1, *counts[n]] for n in (1, 2, 5)], [kept[n] for n in (1, 2, 5)])
    assert kept[4] == pytest.approx(a + b * 3 + c * 4, rel=1e-9)
