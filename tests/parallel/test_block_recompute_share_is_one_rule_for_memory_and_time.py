"""Megatron's --recompute-method block reruns min(v·n, layers) of a stage's layers (core/recompute.py @ d98e8a64):
one function says so, memory.full_recompute_share, read by the memory model (which layers keep whole activations)
and by the time model (which layers run forward twice; timing.full_recompute_share is the same function). The
memory model kept its own copy of the rule, which could drift from the time model's."""

import numpy as np
import pytest
from tests.parallel.test_block_recompute_counts_layers_per_virtual_chunk import LAYOUT, _estimate

from runplan.parallel import memory, timing
from runplan.parallel.stack import Stack

BLOCK = Stack(full_recompute_method="block", full_recompute_layers=4)


def test_time_and_memory_read_one_function():
    assert timing.full_recompute_share is memory.full_recompute_share


def test_the_memory_model_reads_the_shared_rule(monkeypatch):
    """Llama 70B on 8 stages of 10 layers, v 2, n 4: the share is min(2·4, 10)/10 = 0.8; the memory model asks the
    shared function for it (v 2, 10 layers), and reads what it answers: with the share 1 every layer is recomputed,
    as 'uniform' with n = 1 counts (the default stack)."""
    calls = []
    shared = memory.full_recompute_share

    def spy(stack, v, layers):
        calls.append((stack.full_recompute_method, float(np.max(v)), float(np.max(layers))))
        return shared(stack, v, layers)

    monkeypatch.setattr(memory, "full_recompute_share", spy)
    block = _estimate(BLOCK).memory_bytes.activations
    assert ("block", 2.0, 10.0) in calls
    assert float(shared(BLOCK, np.array(2.0), np.array(10.0))) == pytest.approx(0.8)
    monkeypatch.setattr(
        memory, "full_recompute_share", lambda stack, v, layers: np.ones_like(layers, dtype=float)
    )
    whole = _estimate(BLOCK).memory_bytes.activations
    assert whole < block
    assert whole == pytest.approx(_estimate(Stack()).memory_bytes.activations, rel=1e-12)
    assert LAYOUT.vpp == 2
