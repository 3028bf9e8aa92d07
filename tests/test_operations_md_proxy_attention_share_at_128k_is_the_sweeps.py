"""docs/operations.md: a proxy's model FLOPs exceed its 6ND "about 5× at 128k tokens" for the 405B 128k example's
budget, `runplan sweep --flops 1.95e24 --seq-len 128k` (the example itself designs no sweep: `sweep: false`).

Hand-derived for one run, c2e+22-n4.4e+09 (28 layers × d_model 3,072, 3,611,470,848 non-embedding parameters,
untied head 128,256 × 3,072): PaLM App. B model FLOPs per token = 6 × (3,611,470,848 + 394,002,432) matmul
parameters + 12·L·h·s = 24,032,839,680 + 12 × 28 × 3,072 × 131,072 = 24,032,839,680 + 135,291,469,824 =
159,324,309,504."""

from __future__ import annotations

import json
import re
from pathlib import Path

from typer.testing import CliRunner

from runplan.cli.app import app

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_the_docs_factor_is_the_sweeps_model_over_isoflop_compute():
    text = " ".join((DOCS / "operations.md").read_text().split())
    quoted = re.search(r"about (\d+)× at 128k tokens: `runplan sweep --flops 1\.95e24 --seq-len 128k`", text)
    assert quoted, "docs/operations.md lost its 128k proxy figure"
    result = CliRunner().invoke(app, ["sweep", "--flops", "1.95e24", "--seq-len", "128k", "--json"])
    assert result.exit_code == 0, result.output
    sweep = json.loads(result.stdout)
    (run,) = [r for r in sweep["runs"] if r["run"] == "c2e+22-n4.4e+09"]
    assert (run["n_layers"], run["d_model"], run["non_embedding_params"]) == (28, 3072, 3_611_470_848)
    assert run["model_flops"] / run["tokens"] == 159_324_309_504
    factor = sum(r["model_flops"] for r in sweep["runs"]) / sweep["total_flops"]
    assert round(factor) == int(quoted.group(1)) == 5  # 4.997


def test_the_example_designs_none():
    text = (Path(__file__).resolve().parents[1] / "examples" / "405b-16k-h100-128k.yaml").read_text()
    assert "\nsweep: false\n" in text
