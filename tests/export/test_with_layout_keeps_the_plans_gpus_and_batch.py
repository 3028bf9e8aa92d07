"""The export tests' ``with_layout`` only builds layouts runplan could plan: t·p·d·c is the plan's GPU count and
d·b·m its main batch in sequences (the numbers the exporters read, src/runplan/export/_common.py ``facts``), and
v and e follow the search's divisibility rules (src/runplan/parallel/search.py), unless a test says
``consistent=False``. Before, about 25 export tests built layouts such as TP 8 on the 70B plan's 512 GPUs with
d = 64 (1,024 GPUs) or d = 128 with m = 83 (10,624 sequences, twice the plan's batch)."""

from __future__ import annotations

import pytest
from tests.export._plans import golden_plan, rebalanced, with_layout


def test_a_tp_change_that_breaks_the_gpu_count_is_refused() -> None:
    # 70B plan: t 4, p 2, d 64, c 1 = 512 GPUs; t 8 with d 64 is 8·2·64·1 = 1,024
    with pytest.raises(AssertionError, match=r"t·p·d·c = 8·2·64·1 = 1024.*512 GPUs"):
        with_layout(golden_plan("70b-512-h100"), tp=8)


def test_a_dp_change_that_breaks_the_batch_is_refused() -> None:
    # t 4, p 1, d 128 keeps 512 GPUs, but d·b·m = 128·1·83 = 10,624 is not the plan's 5,312 sequences
    with pytest.raises(AssertionError, match=r"d·b·m = 128·1·83 = 10624.*5312 sequences"):
        with_layout(golden_plan("70b-512-h100"), pp=1, dp=128)


def test_a_microbatch_change_that_breaks_the_batch_is_refused() -> None:
    # d·b·m = 64·1·82 = 5,248 (the old interleaving test's pin)
    with pytest.raises(AssertionError, match=r"64·1·82 = 5248.*5312"):
        with_layout(golden_plan("70b-512-h100"), vpp=4, microbatches=82)


def test_the_opt_out_builds_the_inconsistent_layout() -> None:
    plan = with_layout(golden_plan("70b-512-h100"), consistent=False, tp=8)
    assert (plan.layout.best.tp, plan.layout.best.dp) == (8, 64)


def test_a_layout_only_change_is_accepted() -> None:
    plan = with_layout(golden_plan("70b-512-h100"), zero=3, recompute="full")
    assert (plan.layout.best.zero, plan.layout.best.recompute) == (3, "full")


def test_rebalanced_derives_dp_and_microbatches() -> None:
    # t 8, p 2, c 1 on 512 GPUs: d = 512 / 16 = 32; m = 5,312 / (32·1) = 166
    best = rebalanced(golden_plan("70b-512-h100"), tp=8).layout.best
    assert (best.tp, best.pp, best.dp, best.cp, best.micro_batch, best.microbatches) == (8, 2, 32, 1, 1, 166)
    # Mixtral (256 GPUs, 3,072 sequences): c 1 leaves d = 256 / 1 = 256 and m = 3,072 / 256 = 12
    best = rebalanced(golden_plan("moe-mixtral-8x7b"), cp=1).layout.best
    assert (best.dp, best.microbatches) == (256, 12)


def test_rebalanced_refuses_a_batch_the_replicas_do_not_divide() -> None:
    # t 1, p 2, c 1: d = 256 on the 70B plan, and 5,312 = 2^6·83 is no multiple of 256
    with pytest.raises(AssertionError, match=r"5312 sequences.*d·b = 256·1"):
        rebalanced(golden_plan("70b-512-h100"), tp=1)


def test_pp_changes_the_layers_per_stage() -> None:
    # Llama 3.1 70B has 80 layers: p 1 holds 80 on its one stage, p 4 holds ⌈80/4⌉ = 20, p 3 ⌈80/3⌉ = 27 (uneven)
    plan = golden_plan("70b-512-h100")
    assert plan.layout.best.layers_per_stage == 40  # p 2
    flat = rebalanced(plan, pp=1, tp=8).layout.best  # d = 512 / 8 = 64, m = 83
    assert (flat.layers_per_stage, flat.uneven_stages, flat.dp, flat.microbatches) == (80, False, 64, 83)
    assert rebalanced(plan, pp=4).layout.best.layers_per_stage == 20
    uneven = with_layout(plan, consistent=False, pp=3).layout.best
    assert (uneven.layers_per_stage, uneven.uneven_stages) == (27, True)


def test_interleaving_rules_of_the_search_are_kept() -> None:
    # search.py structural_axes / choose_microbatches: v > 1 needs p >= 2, v | ⌈L/p⌉, p | m
    plan = golden_plan("70b-512-h100")  # p 2, 40 layers a stage, m 83
    with pytest.raises(AssertionError, match=r"m = 83 is not of p = 2"):
        with_layout(plan, vpp=2)
    with pytest.raises(AssertionError, match=r"v = 3 does not divide the 40 layers"):
        rebalanced(plan, tp=8, vpp=3)  # m = 166 is even, but 40 / 3 is no whole chunk
    with pytest.raises(AssertionError, match=r"p = 1 has none"):
        with_layout(golden_plan("2e23-compute-optimal"), vpp=2)
    assert rebalanced(plan, tp=8, vpp=4).layout.best.vpp == 4  # 40 / 4 = 10 layers a chunk, 166 / 2 = 83


def test_expert_parallelism_divides_the_experts_and_the_data_context_ranks() -> None:
    with pytest.raises(AssertionError, match=r"e = 8 must divide the 0 experts"):
        with_layout(golden_plan("70b-512-h100"), ep=8)
    with pytest.raises(AssertionError, match=r"e = 16 must divide the 8 experts"):
        with_layout(golden_plan("moe-mixtral-8x7b"), ep=16)
    # Mixtral with t 8 (c 2 as planned): d = 256 / 16 = 16, and d·c = 32 is still a multiple of e = 8
    assert rebalanced(golden_plan("moe-mixtral-8x7b"), tp=8).layout.best.dp == 16
