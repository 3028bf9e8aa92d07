"""The plan file many command-line tests start from, written once: Llama 3.1 8B on 100 B tokens at 4k tokens per
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
