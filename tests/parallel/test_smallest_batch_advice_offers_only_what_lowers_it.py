"""Llama 3.1 405B on 16,384 H100s at 128k context (Meta's long-context stage, Table 4 of arXiv 2407.21783) with
TP 8, PP 16, v 8, CP 128 and micro-batch 1 pinned: d = 16,384 / (8·16·128) = 1 and the interleaved schedule needs
m >= p = 16, so the smallest batch is d·b·m·s = 1·1·16·131,072 = 2,097,152 tokens. The advice for a 1M batch read
"fewer GPUs (--gpus); a smaller --mbs", neither of which lowers it: fewer GPUs shrink only d, already 1, and b is
already 1. It now offers only what lowers d·b·m·s."""

from __future__ import annotations

from typer.testing import CliRunner

from runplan.cli.app import app

BASE = ["parallelize", "--model", "405b", "--seq-len", "128k", "--tp", "8", "--pp", "16"]


def _run(*argv: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, [*BASE, *argv])
    return result.exit_code, " ".join(result.output.split())


def test_at_d_1_and_b_1_only_the_batch_is_offered():
    code, text = _run("--gpus", "16384", "--vpp", "8", "--cp", "128", "--mbs", "1", "--global-batch", "1M")
    assert code == 1
    assert (
        "the smallest global batch any layout can run is 2,097,152 tokens (d·b·m·s) against a ceiling of "
        "1,100,000: a batch of at least that (--global-batch 2097152)"
    ) in text
    assert "fewer GPUs" not in text and "a smaller --mbs" not in text
    assert (
        _run("--gpus", "16384", "--vpp", "8", "--cp", "128", "--mbs", "1", "--global-batch", "2097152")[0]
        == 0
    )


def test_within_memory_and_the_bubble_cap_fewer_gpus_are_not_offered_at_d_1():
    # v left to the search: m = 8 sequences of 131,072 meet the 1M range, but no v brings 15/(v·8) within 90%
    # under the interleaved rule (p divides m); within the cap the least batch is 1·1·16·131,072 = 2,097,152 at
    # d = 1, which fewer GPUs cannot lower: only the larger batch is offered
    code, text = _run(
        "--gpus", "16384", "--cp", "128", "--mbs", "1", "--global-batch", "1M", "--max-bubble", "0.9"
    )
    assert code == 1
    assert "1,100,000: a larger batch (--global-batch 2097152)" in text
    assert "fewer GPUs" not in text


def test_where_d_and_b_can_fall_both_are_offered():
    # CP 16: d = 16,384 / (8·16·16) = 8, b = 2: 8·2·16·131,072 = 33,554,432 tokens; on 2,048 GPUs d = 1
    # (4,194,304), and b = 1 halves it again
    code, text = _run("--gpus", "16384", "--vpp", "8", "--cp", "16", "--mbs", "2", "--global-batch", "1M")
    assert code == 1
    assert (
        "33,554,432 tokens (d·b·m·s) against a ceiling of 1,100,000: fewer GPUs (--gpus); a smaller --mbs; or a "
        "batch of at least that (--global-batch 33554432)"
    ) in text
    # both together reach the least batch the pins allow: 1·1·16·131,072 on 8·16·16 GPUs
    assert (
        _run("--gpus", "2048", "--vpp", "8", "--cp", "16", "--mbs", "1", "--global-batch", "2097152")[0] == 0
    )


def test_a_pinned_m_at_p_under_interleaving_is_not_offered_smaller():
    # m pinned at 16 = p with v 8: a smaller m breaks Megatron-LM's rule that p divides m, so it is not offered
    code, text = _run(
        *("--gpus", "16384", "--vpp", "8", "--cp", "128", "--mbs", "1", "--microbatches", "16"),
        *("--global-batch", "1M"),
    )
    assert code == 1 and "2,097,152 tokens (d·b·m·s)" in text
    assert "a smaller --microbatches" not in text and "fewer GPUs" not in text
