"""Planning defaults used when a plan file or a flag leaves a value out, and the input bounds shared by
several stages: one definition each.

Dependency-free on purpose: CLI modules show these numbers in ``--help`` and must stay import-light (no
pydantic, numpy). Library code imports them from here (``runplan.scaling.budget`` re-exports
``DEFAULT_MFU``), so a flag, a plan-file key and a library default can never disagree.
"""

from __future__ import annotations

#: Model FLOPs utilisation (PaLM's definition, Chowdhery et al. 2022 §4.1) assumed when none is given. A
#: planning assumption, used only to turn GPU time (``--gpus --days``, ``budget.gpu_hours``/``days``) into
#: training FLOPs, and FLOPs back into GPU-hours, before a parallel layout is known; once a layout is chosen
#: the plan uses that layout's predicted step time instead. 0.4 sits in the 38-43% bf16 MFU that Llama 3 405B
#: reports on 8,192 to 16,384 H100s (Grattafiori et al. 2024, §3.3.2, Table 4).
DEFAULT_MFU = 0.4

#: Training sequence length assumed when none is given: 4,096 tokens, the pre-training context of Llama 2
#: (Touvron et al. 2023, Table 1) and the length Llama 3 405B starts pre-training at (Grattafiori et al.
#: 2024, §3.4.1).
DEFAULT_SEQ_LEN = 4096

#: Vocabulary of generated shapes when none is given: 128,256 entries, the Llama 3 tokenizer (Grattafiori
#: et al. 2024, §3.2: 100K tiktoken tokens plus 28K for non-English languages, plus special tokens).
DEFAULT_VOCAB_SIZE = 128256

#: GPU type assumed when a command needs hardware and none is named (`runplan catalog gpus`).
DEFAULT_GPU = "h100-sxm"

# ---- bounds: far beyond any real run, so only typos are refused, and low enough that integer grids (int64)
# and float formulas stay finite -------------------------------------------------------------------------
#: 1e7 GPUs in one job: the largest single training clusters reported by 2025 hold a few hundred thousand.
MAX_GPUS = 10_000_000
#: 1,024 GPUs per node (NVLink domain): HGX nodes have 8, GB200 NVL72 racks 72, NVL576 is announced.
MAX_GPUS_PER_NODE = 1024
#: 1e8 tokens per sequence: 10× the longest context advertised by 2025 (Llama 4 Scout, 10M tokens).
MAX_SEQ_LEN = 100_000_000
#: 1e7 vocabulary entries: about 40× the largest vocabularies in use (Gemma 3: 262k).
MAX_VOCAB_SIZE = 10_000_000

__all__ = [
    "DEFAULT_GPU",
    "DEFAULT_MFU",
    "DEFAULT_SEQ_LEN",
    "DEFAULT_VOCAB_SIZE",
    "MAX_GPUS",
    "MAX_GPUS_PER_NODE",
    "MAX_SEQ_LEN",
    "MAX_VOCAB_SIZE",
]
