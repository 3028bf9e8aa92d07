"""The request rules live in ParallelRequest's validator: a request that breaks one is never built."""

import pytest
from tests.parallel.shapes import H100, LLAMA_70B

from runplan.errors import SpecError
from runplan.parallel.layout import ParallelRequest, Pins
from runplan.parallel.search import search


@pytest.mark.parametrize(
    ("fields", "where", "words"),
    [
        ({"n_gpus": 20_000_000}, "cluster.gpus", "beyond any cluster"),
        ({"n_gpus": 12}, "cluster.gpus", "do not fill whole nodes of 8"),
        ({"seq_len": 10**9}, "training.seq_len", "beyond any trained context"),
        ({"global_batch_tokens": 100.0}, "schedule.global_batch_tokens", "less than one sequence"),
        ({"training_tokens": 1e21}, "budget", "beyond any real run"),
        ({"mfu_override": 0.001}, "parallelize.mfu", "at least 0.01"),
        ({"pins": Pins(tp=1024)}, "parallel.tp", "more than the 512 GPUs"),
    ],
)
def test_a_request_breaking_a_rule_is_refused_when_built(fields, where, words):
    with pytest.raises(SpecError) as caught:
        ParallelRequest(**{"model": LLAMA_70B, "gpu": H100, "n_gpus": 512, **fields})
    assert caught.value.where == where
    assert words in caught.value.message


def test_a_request_changed_without_validation_is_still_checked_by_the_search():
    # model_copy(update=...) skips pydantic's validators (the CLI lays flags over a plan's request this way)
    request = ParallelRequest(model=LLAMA_70B, gpu=H100, n_gpus=512).model_copy(update={"n_gpus": 12})
    with pytest.raises(SpecError, match="whole nodes"):
        search(request)
