"""A fixed model's ``budget.tokens`` is the D the plan trains on, exactly: the budget is turned into C = 6·N·D and
the fixed-params allocation back into D = C/(6N), which floating point can leave one unit in the last place off
(Gemma 2 9B on 8T gave 7,999,999,999,999.999 in the allocation, the schedule and whatif)."""

from tests.planned import planned_json


def test_gemma_2_9b_on_8t_tokens_trains_on_8t(tmp_path):
    body = "model: gemma-2-9b\nbudget: {tokens: 8T}\ncluster: {gpu: h100-sxm, gpus: 64}\n"
    plan = planned_json(tmp_path, body)
    assert plan["allocation"]["tokens"] == 8e12
    assert plan["schedule"]["training_tokens"] == 8e12
