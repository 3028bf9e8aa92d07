"""A fixed model's proxy sweep trains on its tokenizer: the proxies take the model's vocabulary unless the plan
sets training.vocab_size (they took the 128,256 default: Mixtral's 32,000-token embedding is a fraction of a small
proxy, Gemma 2's 256,000 most of it). In a plan, the narrow-proxy caution names the plan key, not sweep's flag."""

from __future__ import annotations

from tests.planned import planned_json


def _plan(tmp_path, model: str, extra: str = "") -> dict:
    return planned_json(
        tmp_path, f"model: {model}\nbudget: {{tokens: 1T}}\ncluster: {{gpu: h100-sxm, gpus: 64}}\n{extra}"
    )


def _embedding(run: dict) -> int:
    return run["total_params"] - run["non_embedding_params"]


def test_proxies_take_the_fixed_models_vocabulary(tmp_path):
    plan = _plan(tmp_path, "gemma-2-9b")
    # every proxy's embedding is 256,000 × d_model (Gemma's tied table, the generated shapes untie it: × 2)
    for run in plan["sweep"]["runs"]:
        assert _embedding(run) in (256_000 * run["d_model"], 2 * 256_000 * run["d_model"])
    narrow = [w for w in plan["warnings"] if "far narrower" in w]
    assert narrow and "the 256,000-token embedding" in narrow[0]
    assert "(training.vocab_size)" in narrow[0] and "--vocab-size" not in narrow[0]


def test_training_vocab_size_set_in_the_plan_wins(tmp_path):
    plan = _plan(tmp_path, "gemma-2-9b", "training: {vocab_size: 32000}\n")
    for run in plan["sweep"]["runs"]:
        assert _embedding(run) in (32_000 * run["d_model"], 2 * 32_000 * run["d_model"])
