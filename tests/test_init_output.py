"""`runplan init`: which placeholder budget it writes, and a starter file that reads at 80 columns."""

from __future__ import annotations

import re

import pytest
import yaml
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.scaling.budget import Budget
from runplan.spec import load_plan_text

runner = CliRunner()


def _init(*args: str) -> str:
    result = runner.invoke(app, ["init", *args])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_init_without_flags_writes_a_2e23_flop_placeholder_and_says_which():
    """No budget flag and no --gpus: a FLOP budget (the README's `init --flops 2e23`), and the comment says so
    and what --gpus alone would give (the --gpus help's 30-day placeholder)."""
    text = _init()
    budget = load_plan_text(text).budget
    assert (budget.flops, budget.days) == (2e23, None)
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("# budget below"))
    end = lines.index("", start)
    comment = " ".join(line.removeprefix("#").strip() for line in lines[start:end])
    assert comment == (
        "budget below is a placeholder, 2e23 FLOPs (no --flops, --days, --tokens or --gpus; --gpus alone "
        "gives 30 days): replace it with yours"
    )


def test_init_with_gpus_alone_writes_a_30_day_placeholder_and_says_which():
    text = _init("--gpus", "64")
    budget = load_plan_text(text).budget
    assert (budget.flops, budget.days) == (None, 30)
    assert "# budget below is a placeholder, 30 days on cluster.gpus (--gpus without\n# --flops" in text


def test_init_with_a_budget_has_no_placeholder():
    assert "placeholder" not in _init("--flops", "1e22", "--gpus", "64")


@pytest.mark.parametrize(
    "args",
    [[], ["--gpus", "64"], ["--model", "llama-3.1-8b", "--tokens", "1T", "--gpus", "64", "--seq-len", "8k"]],
    ids=["bare", "gpus", "model"],
)
def test_init_fits_80_columns_and_runplan_plan_accepts_it(args, tmp_path):
    text = _init(*args)
    # 69 of 262 lines ran past 80 columns (one description was a 700-character comment)
    assert max(len(line) for line in text.splitlines()) <= 80
    path = tmp_path / "plan.yaml"
    path.write_text(text)
    planned = runner.invoke(app, ["plan", str(path)])
    assert planned.exit_code == 0, planned.output


def test_folded_comments_continue_at_their_indent_and_keep_every_word():
    text = _init()
    lines = text.splitlines()
    # a section key's help folds into '  # ' lines: every comment line in a section keeps the two spaces
    in_section = False
    for line in lines:
        if re.match(r"^#? ?[a-z_]+:$", line):
            in_section = True
        elif not line:
            in_section = False
        elif in_section:
            assert line.startswith("  # ") or re.match(r"^  [a-z_]+:", line), line
    # folding only breaks lines: the mfu help (once one ~200-character line) reads back word for word
    description = " ".join((Budget.model_fields["mfu"].description or "").split())
    assert len(description) > 150
    comments = " ".join(line.strip().removeprefix("# ") for line in lines if line.startswith("  # "))
    assert description in comments
    # a `code span` is never split across lines (it could not be copied)
    assert "# `runplan schema > plan.schema.json` writes a copy)" in text
    assert all(line.count("`") % 2 == 0 for line in lines)


def test_init_takes_the_gpus_per_node_its_error_names(tmp_path):
    """500 GPUs do not fill 8-GPU nodes: the error names --gpus-per-node, which init takes (it did not)."""
    refused = CliRunner().invoke(app, ["init", "--gpus", "500", "--flops", "2e23"])
    assert refused.exit_code == 2 and "or set --gpus-per-node" in refused.stderr
    out = CliRunner().invoke(app, ["init", "--gpus", "500", "--gpus-per-node", "4", "--flops", "2e23"])
    assert out.exit_code == 0, out.output
    path = tmp_path / "plan.yaml"
    path.write_text(out.stdout)
    assert yaml.safe_load(out.stdout)["cluster"]["gpus_per_node"] == 4
    assert CliRunner().invoke(app, ["plan", str(path), "-f", "json"]).exit_code == 0


def test_init_says_ep_divides_the_data_and_context_parallel_ranks():
    """init and the schema said "divides experts and d", but EP borrows the d·c ranks (search.structural_axes):
    DeepSeek-V3 with CP 8 runs EP 64 on DP 32."""
    result = CliRunner().invoke(app, ["init", "--model", "deepseek-v3"])
    assert result.exit_code == 0, result.output
    text = " ".join(line.lstrip("# ").strip() for line in result.stdout.splitlines())
    assert (
        "Expert-parallel degree e (MoE; divides experts and d·c: borrows the data- and context-parallel"
        in text
    )
