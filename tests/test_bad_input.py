"""Bad input never crashes runplan (issue 7): a table of distinct bad inputs across every command.

Each row is (id, argv, files, exit code, fragments). ``files`` are written to a temporary directory and
``{name}`` in argv is replaced by the file's path. Exit 2 is bad input, 1 infeasible, 0 "works with a
warning" (the fragments are then looked for in the warning). Every failure must be exactly one line on stderr
that names the flag, key, row or column and says how to fix it; nothing may print a traceback or
"internal error" (exit 3, a bug). The 1e6-row CSV is measured in ``test_a_million_row_csv_fits_fast``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from runplan.cli.app import app

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
CSV = str(EXAMPLES / "isoflop_synthetic.csv")
PLAN70 = str(EXAMPLES / "70b-512-h100.yaml")


def plan(body: str) -> str:
    return "schema_version: 1\n" + body


BOMB = plan(
    "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
    + "".join(
        f"{n}: &{n} [{', '.join(['*' + p] * 10)}]\n" for p, n in zip("abcdefgh", "bcdefghi", strict=True)
    )
    + "cluster: {gpus: 8}\n"
)
GOOD_LAW = "name: mine\nE: 1.8\nA: 400\nB: 400\nalpha: 0.3\nbeta: 0.3\n"
GPU_ENTRY = (
    "gpus:\n  - name: mygpu\n    hbm_bytes: 80GB\n    bf16_flops: 989e12\n    hbm_bandwidth_bytes_per_s: 3.35e12\n"
    "    intra_node_bandwidth_bytes_per_s: 450e9\n    inter_node_bandwidth_bytes_per_s: 50e9\n"
    "    gpus_per_node: {gpn}\n    tdp_watts: 700\n    source: test\n"
)

# (id, argv, files, exit code, fragments that must appear in stderr)
CASES: list[tuple[str, list[str], dict[str, str], int, list[str]]] = [
    # ---- allocate: flags -------------------------------------------------------------------------
    ("flops-text", ["allocate", "--flops", "abc"], {}, 2, ["--flops", "expected a number", "2e23"]),
    ("flops-negative", ["allocate", "--flops", "-1"], {}, 2, ["--flops", "must be positive"]),
    ("flops-nan", ["allocate", "--flops", "nan"], {}, 2, ["--flops", "expected a number"]),
    (
        "flops-1e40",
        ["allocate", "--flops", "1e40"],
        {},
        2,
        ["--flops", "beyond any trainable run", "exponent"],
    ),
    ("flops-1e10", ["allocate", "--flops", "1e10"], {}, 1, ["smallest sensible run", "raise the budget"]),
    ("tpp-zero", ["allocate", "--flops", "2e23", "--tokens-per-param", "0"], {}, 2, ["--tokens-per-param"]),
    ("params-no-suffix", ["allocate", "--flops", "2e23", "--params", "7"], {}, 2, ["--params", "e.g. 7B"]),
    (
        "params-no-tokens",
        ["allocate", "--flops", "1e12", "--params", "70b"],
        {},
        1,
        ["D = 2.38", "smaller model"],
    ),
    ("mfu-above-one", ["allocate", "--flops", "2e23", "--mfu", "1.5"], {}, 2, ["--mfu", "(0, 1]"]),
    ("gpu-typo", ["allocate", "--flops", "2e23", "--gpu", "h200x"], {}, 2, ["--gpu", "did you mean 'h200'"]),
    ("gpus-fraction", ["allocate", "--gpus", "1.5", "--days", "30"], {}, 2, ["--gpus", "whole number"]),
    ("days-without-gpus", ["allocate", "--days", "30"], {}, 2, ["--gpus", "--days needs --gpus"]),
    (
        "two-objectives",
        ["allocate", "--flops", "2e23", "--params", "7b", "--tokens-per-param", "20"],
        {},
        2,
        ["choose one objective"],
    ),
    ("law-unknown", ["allocate", "--flops", "2e23", "--law", "chinchila"], {}, 2, ["--law", "unknown law"]),
    (
        "law-missing-file",
        ["allocate", "--flops", "2e23", "--law", "/nonexistent/law.yaml"],
        {},
        2,
        ["--law", "not found"],
    ),
    (
        "law-negative-exponent",
        ["allocate", "--flops", "2e23", "--law", "{law}"],
        {"law": GOOD_LAW.replace("alpha: 0.3", "alpha: -0.3")},
        2,
        ["law.yaml:5", "alpha", "greater than 0"],
    ),
    (
        "law-missing-key",
        ["allocate", "--flops", "2e23", "--law", "{law}"],
        {"law": GOOD_LAW.replace("B: 400\n", "")},
        2,
        ["law.yaml", "B", "required key is missing"],
    ),
    (
        "target-loss-below-E",
        ["allocate", "--flops", "2e23", "--inference-tokens", "1e13", "--target-loss", "0.5"],
        {},
        1,
        ["irreducible loss", "ask for a loss above"],
    ),
    (
        "target-loss-alone",
        ["allocate", "--flops", "2e23", "--target-loss", "2"],
        {},
        2,
        ["--target-loss", "add --inference-tokens"],
    ),
    (
        "price-negative",
        ["allocate", "--flops", "2e23", "--price-per-gpu-hour", "-3"],
        {},
        2,
        ["--price-per-gpu-hour", "negative"],
    ),
    ("plan-and-flags", ["allocate", PLAN70, "--flops", "1e22"], {}, 2, ["--flops", "plan file both set"]),
    # ---- allocate: works with a warning -------------------------------------------------------------
    (
        "tpp-0.01-warns",
        ["allocate", "--flops", "2e23", "--tokens-per-param", "0.01"],
        {},
        0,
        ["0.01 tokens per parameter is outside the range of published runs"],
    ),
    (
        "tpp-1e6-warns",
        ["allocate", "--flops", "2e23", "--tokens-per-param", "1e6"],
        {},
        0,
        ["1e+06 tokens per parameter is outside the range", "extrapolates"],
    ),
    ("flops-1e15-warns", ["allocate", "--flops", "1e15"], {}, 0, ["extrapolates"]),
    # ---- plan files --------------------------------------------------------------------------------
    ("plan-missing-file", ["plan", "/nonexistent/plan.yaml"], {}, 2, ["cannot read file"]),
    (
        "plan-not-mapping",
        ["plan", "{p}"],
        {"p": "- a\n- b\n"},
        2,
        ["a plan file is a mapping", "runplan init"],
    ),
    ("plan-no-version", ["plan", "{p}"], {"p": "cluster: {gpus: 8}\n"}, 2, ["schema_version is missing"]),
    ("plan-bad-yaml", ["plan", "{p}"], {"p": plan("budget: {flops: [1\n")}, 2, ["p.yaml:", "not valid YAML"]),
    (
        "plan-misspelt-key",
        ["plan", "{p}"],
        {"p": plan("budget: {flops: 2e23}\ncluster: {gpu_count: 8}\n")},
        2,
        ["p.yaml:3", "unknown key 'gpu_count'", "did you mean 'gpus'"],
    ),
    (
        "plan-duplicate-key",
        ["plan", "{p}"],
        {"p": plan("budget: {flops: 2e23}\ncluster: {gpus: 8}\ncluster: {gpus: 16}\n")},
        2,
        ["p.yaml:4", "duplicate key 'cluster'"],
    ),
    ("plan-anchor-bomb", ["plan", "{p}"], {"p": BOMB}, 2, ["expands to more than", "aliases"]),
    (
        "plan-gpus-zero",
        ["plan", "{p}"],
        {"p": plan("budget: {flops: 1e22}\ncluster: {gpus: 0}\n")},
        2,
        ["p.yaml:3", "cluster.gpus", "greater than 0"],
    ),
    (
        "plan-gpus-not-whole-nodes",
        ["plan", "{p}"],
        {"p": plan("budget: {flops: 1e22}\ncluster: {gpus: 100}\n")},
        2,
        ["p.yaml:3", "cluster.gpus", "whole nodes of 8", "e.g. 96"],
    ),
    (
        "plan-flops-1e40",
        ["plan", "{p}"],
        {"p": plan("budget: {flops: 1e40}\ncluster: {gpus: 1024}\n")},
        2,
        ["p.yaml:2", "budget.flops", "beyond any trainable run"],
    ),
    (
        "plan-days-1e9",
        ["plan", "{p}"],
        {"p": plan("budget: {days: 1e9}\ncluster: {gpus: 1024}\n")},
        2,
        ["budget.days", "beyond any trainable run"],
    ),
    (
        "plan-flops-1e10",
        ["plan", "{p}"],
        {"p": plan("budget: {flops: 1e10}\ncluster: {gpus: 8}\n")},
        1,
        ["smallest sensible run", "raise the budget to at least"],
    ),
    (
        "plan-flops-1e17-no-shape",
        ["plan", "{p}"],
        {"p": plan("budget: {flops: 1e17}\ncluster: {gpus: 8}\n")},
        1,
        ["cannot generate a shape", "smaller vocabulary"],
    ),
    (
        "plan-model-too-big",
        ["plan", "{p}"],
        {"p": plan("model: llama-3.1-405b\nbudget: {tokens: 1T}\ncluster: {gpus: 8}\n")},
        1,
        ["memory", "need at least 89 h100-sxm GPUs"],
    ),
    (
        "plan-seq-no-layout",
        ["plan", "{p}"],
        {"p": plan("budget: {flops: 1e22}\ntraining: {seq_len: 10M}\ncluster: {gpus: 64}\n")},
        1,
        ["memory", "context parallelism"],
    ),
    (
        "plan-batch-below-sequence",
        ["plan", "{p}"],
        {"p": plan("budget: {flops: 1e22}\nschedule: {global_batch_tokens: 1}\ncluster: {gpus: 64}\n")},
        2,
        ["p.yaml:3", "schedule.global_batch_tokens", "less than one sequence"],
    ),
    (
        "plan-batch-above-tokens",
        ["plan", "{p}"],
        {"p": plan("budget: {flops: 1e22}\nschedule: {global_batch_tokens: 1e15}\ncluster: {gpus: 64}\n")},
        2,
        ["schedule.global_batch_tokens", "less than one step"],
    ),
    (
        "plan-tokens-one",
        ["plan", "{p}"],
        {"p": plan("model: 7b\nbudget: {tokens: 1}\ncluster: {gpus: 64}\n")},
        1,
        ["D = 1 tokens", "smallest sensible run"],
    ),
    (
        "plan-inline-law-negative",
        ["plan", "{p}"],
        {
            "p": plan(
                "budget: {flops: 2e23}\nlaw: {E: 1.8, A: 400, B: 400, alpha: -0.3, beta: 0.3}\ncluster: {gpus: 1024}\n"
            )
        },
        2,
        ["p.yaml:3", "law.alpha", "greater than 0"],
    ),
    (
        "plan-law-file-negative",
        ["plan", "{p}"],
        {
            "p": plan("budget: {flops: 2e23}\nlaw: {file: law.yaml}\ncluster: {gpus: 1024}\n"),
            "law": GOOD_LAW.replace("beta: 0.3", "beta: -1"),
        },
        2,
        ["law.yaml:6", "beta"],
    ),
    (
        "plan-inline-gpu-incomplete",
        ["plan", "{p}"],
        {"p": plan("budget: {flops: 1e22}\ncluster: {gpus: 8, gpu: {name: x}}\n")},
        2,
        ["cluster.gpu.hbm_bytes", "required key is missing"],
    ),
    (
        "plan-model-wrong-type",
        ["plan", "{p}"],
        {"p": plan("budget: {flops: 1e22}\ncluster: {gpus: 8}\nmodel: [1]\n")},
        2,
        ["p.yaml:4", "model: must be a string or a mapping"],
    ),
    (
        "plan-number-text",
        ["plan", "{p}"],
        {"p": plan("budget: {flops: lots}\ncluster: {gpus: 8}\n")},
        2,
        ["budget.flops", "expected a number"],
    ),
    (
        "plan-missing-catalog",
        ["plan", "{p}"],
        {"p": plan("catalog: [nocat.yaml]\nbudget: {flops: 1e22}\ncluster: {gpus: 64}\n")},
        2,
        ["nocat.yaml", "cannot read file"],
    ),
    ("check-rtol-zero", ["check", PLAN70, "--rtol", "0"], {}, 2, ["--rtol", "must be positive"]),
    # ---- parallelize ---------------------------------------------------------------------------------
    ("par-missing-gpus", ["parallelize", "--model", "70b"], {}, 2, ["--gpus", "missing"]),
    (
        "par-gpus-not-whole-nodes",
        ["parallelize", "--model", "70b", "--gpus", "100"],
        {},
        2,
        ["--gpus", "whole nodes of 8"],
    ),
    (
        "par-model-too-big",
        ["parallelize", "--model", "llama-3.1-405b", "--gpus", "8"],
        {},
        1,
        ["memory", "more GPUs"],
    ),
    (
        "par-model-10T",
        ["parallelize", "--model", "10T", "--gpus", "64"],
        {},
        2,
        ["--model", "cannot generate"],
    ),
    (
        "par-model-unknown",
        ["parallelize", "--model", "lama-3.1-70b", "--gpus", "64"],
        {},
        2,
        ["--model", "did you mean 'llama-3.1-70b'"],
    ),
    (
        "par-seq-no-layout",
        ["parallelize", "--model", "70b", "--gpus", "64", "--seq-len", "10M"],
        {},
        1,
        ["memory"],
    ),
    (
        "par-tp-3",
        ["parallelize", "--model", "70b", "--gpus", "64", "--tp", "3"],
        {},
        1,
        ["divisibility", "tp=3"],
    ),
    (
        "par-zero-fraction",
        ["parallelize", "--model", "70b", "--gpus", "64", "--zero", "1.5"],
        {},
        2,
        ["--zero", "whole number"],
    ),
    (
        "par-zero-5",
        ["parallelize", "--model", "70b", "--gpus", "64", "--zero", "5"],
        {},
        2,
        ["--zero", "0, 1, 2 or 3"],
    ),
    (
        "par-bubble-2",
        ["parallelize", "--model", "70b", "--gpus", "64", "--max-bubble", "2"],
        {},
        2,
        ["--max-bubble", "less than 1"],
    ),
    (
        "par-reserve-text",
        ["parallelize", "--model", "70b", "--gpus", "64", "--reserve", "lots"],
        {},
        2,
        ["--reserve", "byte size", "80GB"],
    ),
    (
        "par-mfu-zero",
        ["parallelize", "--model", "70b", "--gpus", "64", "--mfu", "0"],
        {},
        2,
        ["--mfu", "must be greater than 0"],
    ),
    (
        "par-batch-above-tokens",
        ["parallelize", "--model", "70b", "--gpus", "64", "--global-batch", "4M", "--training-tokens", "1M"],
        {},
        2,
        ["--global-batch", "less than one step"],
    ),
    (
        "par-min-above-max",
        ["parallelize", "--model", "70b", "--gpus", "64", "--min-batch", "8M", "--max-batch", "1M"],
        {},
        2,
        ["--min-batch", "swap them"],
    ),
    (
        "par-recompute-typo",
        ["parallelize", "--model", "70b", "--gpus", "64", "--recompute", "some"],
        {},
        2,
        ["--recompute", "none, selective or full"],
    ),
    # ---- catalog files -----------------------------------------------------------------------------
    ("catalog-kind-typo", ["catalog", "modles"], {}, 2, ["KIND", "did you mean 'models'"]),
    (
        "catalog-entry-incomplete",
        ["catalog", "gpus", "--catalog", "{cat}"],
        {"cat": "gpus:\n  - name: x\n"},
        2,
        ["cat.yaml:2", "gpus[0].hbm_bytes", "is missing"],
    ),
    (
        "catalog-not-a-list",
        ["catalog", "gpus", "--catalog", "{cat}"],
        {"cat": "models: 5\n"},
        2,
        ["cat.yaml:1", "must be a list"],
    ),
    (
        "catalog-gpus-per-node-zero",
        ["catalog", "gpus", "--catalog", "{cat}"],
        {"cat": GPU_ENTRY.format(gpn=0)},
        2,
        ["cat.yaml:8", "gpus_per_node", "greater than 0"],
    ),
    # ---- fit: CSVs and flags -------------------------------------------------------------------------
    ("csv-missing-file", ["fit", "/nonexistent/runs.csv"], {}, 2, ["cannot read file"]),
    ("csv-empty", ["fit", "{runs}"], {"runs": ""}, 2, ["empty file", "header row"]),
    ("csv-header-only", ["fit", "{runs}"], {"runs": "params,tokens,loss\n"}, 2, ["no runs after the header"]),
    (
        "csv-missing-column",
        ["fit", "{runs}"],
        {"runs": "param,tokens,loss\n1e8,2e9,3\n"},
        2,
        ["missing column 'params'", "did you mean 'param'", "--params-col"],
    ),
    (
        "csv-duplicate-column",
        ["fit", "{runs}"],
        {"runs": "params,params,loss,tokens\n1e8,2e8,3,1e9\n"},
        2,
        ["line 1", "column 'params' appears twice"],
    ),
    (
        "csv-text-cell",
        ["fit", "{runs}"],
        {"runs": "params,tokens,loss\n1e8,2e9,3\n1e9,2e9,abc\n"},
        2,
        ["row 2 (line 3), column 'loss'", "not a number: 'abc'"],
    ),
    (
        "csv-negative-cell",
        ["fit", "{runs}"],
        {"runs": "params,tokens,loss\n-1e8,2e9,3\n"},
        2,
        ["row 1 (line 2), column 'params'", "positive finite"],
    ),
    (
        "csv-empty-loss",
        ["fit", "{runs}"],
        {"runs": "params,tokens,loss\n1e8,2e9,\n"},
        2,
        ["column 'loss'", "fill in the measured final loss"],
    ),
    (
        "csv-overflowing-flops",
        ["fit", "{runs}"],
        {"runs": "params,tokens,loss\n1e300,1e300,3\n"},
        2,
        ["row 1 (line 2)", "derived flops"],
    ),
    ("csv-not-utf8", ["fit", "{runs}"], {"runs": b"\xff\xfe\x00\x01"}, 2, ["not a UTF-8 text file"]),
    (
        "csv-too-few-runs",
        ["fit", "{runs}", "--method", "parametric"],
        {"runs": "params,tokens,loss\n1e8,2e9,3\n"},
        2,
        ["at least 5 runs"],
    ),
    (
        "csv-constant-runs",
        ["fit", "{runs}", "--method", "parametric", "--bootstrap", "0"],
        {"runs": "params,tokens,loss\n" + "1e8,2e9,3\n" * 6},
        1,
        ["positive exponents", "vary both N and D"],
    ),
    ("fit-flops-negative", ["fit", CSV, "--flops", "-5", "--bootstrap", "0"], {}, 2, ["--flops", "positive"]),
    ("fit-drop-negative", ["fit", CSV, "--drop-highest", "-3"], {}, 2, ["--drop-highest", "negative"]),
    (
        "fit-drop-all",
        ["fit", CSV, "--drop-highest", "1000"],
        {},
        2,
        ["--drop-highest", "cannot drop 1000 of 36"],
    ),
    (
        "fit-method-typo",
        ["fit", CSV, "--method", "parametrc"],
        {},
        2,
        ["--method", "parametric, isoflop or both"],
    ),
    ("fit-ci-100", ["fit", CSV, "--ci", "100"], {}, 2, ["--ci", "(0, 100)"]),
    # ---- sweep ---------------------------------------------------------------------------------------
    ("sweep-no-budget", ["sweep"], {}, 2, ["--flops", "no compute budget"]),
    ("sweep-fraction-2", ["sweep", "--flops", "2e23", "--fraction", "2"], {}, 2, ["--fraction", "(0, 1)"]),
    ("sweep-sizes-1", ["sweep", "--flops", "2e23", "--sizes", "1"], {}, 2, ["--sizes", "a parabola needs 3"]),
    ("sweep-seq-len-0", ["sweep", "--flops", "2e23", "--seq-len", "0"], {}, 2, ["--seq-len", "positive"]),
    ("sweep-vocab-0", ["sweep", "--flops", "2e23", "--vocab-size", "0"], {}, 2, ["--vocab-size", "positive"]),
    ("sweep-flops-1e40", ["sweep", "--flops", "1e40"], {}, 2, ["--flops", "beyond any trainable run"]),
    ("sweep-flops-1e10", ["sweep", "--flops", "1e10"], {}, 2, ["no proxy shape", "raise --fraction"]),
    # ---- init ----------------------------------------------------------------------------------------
    ("init-gpus-zero", ["init", "--gpus", "0"], {}, 2, ["cluster.gpus", "greater than 0"]),
    ("init-tokens-without-model", ["init", "--tokens", "1T"], {}, 2, ["--tokens"]),
]


def _materialise(argv: list[str], files: dict[str, str | bytes], tmp_path: Path) -> list[str]:
    paths = {}
    for name, body in files.items():
        suffix = ".csv" if name == "runs" else ".yaml"
        path = tmp_path / f"{name}{suffix}"
        path.write_bytes(body if isinstance(body, bytes) else body.encode())
        paths[name] = str(path)
    return [arg.format(**paths) if "{" in arg else arg for arg in argv]


def test_the_table_is_big_and_distinct():
    ids = [case[0] for case in CASES]
    assert len(ids) == len(set(ids))
    assert len({(tuple(c[1]), tuple(sorted(c[2].items()))) for c in CASES}) == len(CASES)
    assert sum(1 for c in CASES if c[3] != 0) >= 40
    assert {c[1][0] for c in CASES} >= {
        "allocate",
        "plan",
        "check",
        "parallelize",
        "catalog",
        "fit",
        "sweep",
        "init",
    }


@pytest.mark.parametrize(("case_id", "argv", "files", "code", "fragments"), CASES, ids=[c[0] for c in CASES])
def test_bad_input(case_id, argv, files, code, fragments, tmp_path):
    args = _materialise(argv, files, tmp_path)
    result = CliRunner().invoke(app, args)
    stderr = result.stderr
    assert result.exit_code == code, f"{case_id}: exit {result.exit_code}\n{stderr}\n{result.stdout[:500]}"
    assert "Traceback" not in stderr + result.stdout and "internal error" not in stderr
    if result.exception is not None:
        assert isinstance(result.exception, SystemExit), repr(result.exception)
    for fragment in fragments:
        assert fragment in stderr, f"{case_id}: {fragment!r} not in {stderr!r}"
    if code:
        assert stderr.count("\n") == 1 and stderr.endswith("\n"), f"{case_id}: not one line: {stderr!r}"
        kind = "infeasible" if code == 1 else "error"
        assert stderr.startswith(f"runplan: {kind}: "), stderr
        assert result.stdout == ""
    else:
        assert all(line.startswith("note: ") for line in stderr.splitlines()), stderr


@pytest.mark.parametrize(
    ("argv", "code", "fragment"),
    [
        (["allocate", "--flops", "1e40"], 2, "--flops"),
        (["parallelize", "--model", "llama-3.1-405b", "--gpus", "8"], 1, "memory"),
    ],
)
def test_real_process_exit_codes(argv, code, fragment):
    """One subprocess per exit code: the console script's real status and stderr, no traceback."""
    env = {k: v for k, v in os.environ.items() if k != "RUNPLAN_DEBUG"}
    done = subprocess.run(
        [sys.executable, "-m", "runplan", *argv], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == code, done.stderr
    assert fragment in done.stderr and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1


def test_debug_mode_shows_the_traceback(monkeypatch):
    monkeypatch.setenv("RUNPLAN_DEBUG", "1")
    result = CliRunner().invoke(app, ["allocate", "--flops", "abc"])
    assert result.exit_code != 0 and type(result.exception).__name__ == "SpecError"


def _big_csv(path: Path, rows: int) -> None:
    rng = np.random.default_rng(7)
    n = 10 ** rng.uniform(7, 10, rows)
    d = 10 ** rng.uniform(8, 11, rows)
    loss = (1.8 + 400 / n**0.34 + 410 / d**0.28) * np.exp(rng.normal(0, 0.01, rows))
    np.savetxt(
        path,
        np.column_stack([n, d, loss]),
        fmt="%.6g",
        delimiter=",",
        header="params,tokens,loss",
        comments="",
    )


def _fit_big(tmp_path: Path, rows: int) -> float:
    path = tmp_path / "big.csv"
    _big_csv(path, rows)
    start = time.perf_counter()
    result = CliRunner().invoke(
        app, ["fit", str(path), "--method", "parametric", "--bootstrap", "0", "--json"]
    )
    seconds = time.perf_counter() - start
    assert result.exit_code == 0, result.stderr
    assert f"{rows:,} rows: fitted a random subsample of 5,000" in result.stdout  # the note is in the JSON
    assert 0.3 < __import__("json").loads(result.stdout)["parametric"]["law"]["alpha"] < 0.4
    return seconds


def test_a_large_csv_works_with_a_note(tmp_path):
    """2e5 rows (a training log, not a sweep): fits a seeded 5,000-run subsample and says so."""
    assert _fit_big(tmp_path, 200_000) < 30


@pytest.mark.slow
def test_a_million_row_csv_fits_fast(tmp_path):
    """1e6 rows (31 MB): read ~3 s (vectorized parse), fit ~3 s on a busy 2-core box; well under a minute."""
    assert _fit_big(tmp_path, 1_000_000) < 60
