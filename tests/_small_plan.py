"""The plan files several command-line tests start from, written once: Llama 3.1 8B on 100 B tokens at 4k tokens per
sequence on 64 H100 SXM (a plan that builds in about a second)."""


def small_8b_plan(name: str, sections: str = "") -> str:
    """A plan file's text named ``name``, followed by ``sections``: further top-level YAML sections as written
    (``parallel:`` pins, ``stack:``, ``schedule:``); the ``parallel:`` key, if any, is line 11."""
    return (
        "schema_version: 1\n"
        f"name: {name}\n"
        "model: llama-3.1-8b\n"
        "budget:\n"
        "  tokens: 100B\n"
        "training:\n"
        "  seq_len: 4096\n"
        "cluster:\n"
        "  gpu: h100-sxm\n"
        "  gpus: 64\n"
    ) + sections


#: Llama 3.1 8B on 64 GPUs with every axis pinned: PP 8 with 4 micro-batches, bubble (8 - 1)/(1·4) = 1.75, over the
#: default cap 0.15 (a layout that plans, with a warning)
PINNED_BUBBLE_PLAN = small_8b_plan(
    "bubble",
    """parallel:
  tp: 1
  pp: 8
  dp: 8
  cp: 1
  ep: 1
  vpp: 1
  zero: 1
  recompute: none
  sequence_parallel: false
  microbatches: 4
  micro_batch: 1
""",
)
#: The warning that layout gets (parallel/search.py)
PINNED_BUBBLE_WARNING = "layout: the pinned layout breaks a constraint: bubble 1.750 > 0.15"

#: Mixtral 8x7B on 0.05 days of 1,024 H100s: a fixed model whose budget no D fills within 1% (the layout switches
#: between D = 1.530e10 and 1.535e10)
MIXTRAL_005_DAYS = {
    "schema_version": 1,
    "name": "mixtral-0.05-days",
    "model": "mixtral-8x7b",
    "budget": {"days": 0.05},
    "training": {"seq_len": 4096},
    "cluster": {"gpu": "h100-sxm", "gpus": 1024},
}
