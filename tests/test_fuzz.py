"""Fuzz the plan-file loader, build_plan and the CSV reader with near-valid documents: never a traceback.

The only allowed outcomes are success or a RunplanError (SpecError, exit 2; Infeasible, exit 1) whose
message is one line; any other exception is a bug. Default run: 40 loader documents, 15 full plans, 40 CSVs
(about 10 s on a busy 2-core machine); ``-m slow`` runs 10× as many.
"""

from __future__ import annotations

import copy
import math

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runplan.errors import RunplanError
from runplan.plan import build_plan
from runplan.scaling.fit import read_runs
from runplan.spec import load_plan_text

VALID = {
    "schema_version": 1,
    "name": "fuzz",
    "budget": {"flops": "1e21"},
    "objective": {"kind": "compute_optimal"},
    "training": {"seq_len": 2048, "vocab_size": 32000},
    "cluster": {"gpu": "h100-sxm", "gpus": 16, "price_per_gpu_hour": 2.0},
    "constraints": {"max_bubble_fraction": 0.2},
    "schedule": {},
}
WEIRD = [
    None,
    -1,
    0,
    0.5,
    1,
    3,
    64,
    1e308,
    -1e308,
    "70B",
    "3e-4",
    "2e23",
    "abc",
    "",
    "NO",
    True,
    [],
    {},
    [1, 2],
    {"a": {"b": {"c": {"d": 1}}}},
    "1.5k",
    "-0",
    "1e400",
    float("nan"),
    float("inf"),
    "80GB",
    "h100-sxm",
]
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SLOW = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _paths(doc, prefix=()):
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield (*prefix, key)
            yield from _paths(value, (*prefix, key))


@st.composite
def near_valid(draw) -> dict:
    """A valid plan with 1-3 mutations: drop, misspell, replace by a weird value, or nest deeply."""
    doc = copy.deepcopy(VALID)
    for _ in range(draw(st.integers(1, 3))):
        paths = list(_paths(doc))
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        key = path[-1]
        action = draw(st.sampled_from(["drop", "misspell", "replace", "replace", "nest"]))
        if action == "drop":
            del parent[key]
        elif action == "misspell":
            value = parent.pop(key)
            parent[
                draw(st.sampled_from([key + "s", key[:-1], key.upper(), key.replace("_", "-"), "x" + key]))
            ] = value
        elif action == "replace":
            parent[key] = copy.deepcopy(draw(st.sampled_from(WEIRD)))  # a later "drop" must not edit WEIRD
        else:
            parent[key] = {"deep": [{"deeper": parent[key]}]}
    return doc


def _text(doc: dict) -> str:
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)


@st.composite
def near_valid_text(draw) -> str:
    """YAML text of a near-valid plan, sometimes with a duplicated line, an anchor or a cut-off end."""
    text = _text(draw(near_valid()))
    lines = text.splitlines()
    trick = draw(st.sampled_from(["none", "duplicate", "anchor", "truncate", "tab"]))
    if trick == "duplicate" and lines:
        i = draw(st.integers(0, len(lines) - 1))
        lines.insert(i, lines[i])
    elif trick == "anchor":
        lines = ["x-base: &base {gpus: 16}", *lines, "extra: *base"]
    elif trick == "truncate" and lines:
        lines = lines[: draw(st.integers(0, len(lines) - 1))]
    elif trick == "tab" and lines:
        lines[0] = "\t" + lines[0]
    return "\n".join(lines) + "\n"


def _allowed(error: RunplanError) -> None:
    line = error.one_line()
    assert line and "\n" not in line and "Traceback" not in line


def _load_and_maybe_build(text: str, build: bool) -> None:
    try:
        spec = load_plan_text(text, "fuzz.yaml")
        if build:
            build_plan(spec)
    except RunplanError as error:
        _allowed(error)


@SETTINGS
@given(near_valid_text())
def test_loader_never_crashes(text):
    _load_and_maybe_build(text, build=False)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(near_valid())
def test_build_plan_never_crashes(doc):
    _load_and_maybe_build(_text(doc), build=True)


CELLS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["", " ", "abc", "1e8", "2e9", "3.1", "-1", "0", "1e400", "nan", "1_000", '"1,2"', "７"]),
    st.text(max_size=6),
)


@st.composite
def near_valid_csv(draw) -> str:
    header = draw(
        st.sampled_from(
            [
                "params,tokens,loss",
                "params,flops,loss",
                "params,tokens,flops,loss",
                "params,loss",
                "param,tokens,loss",
                "params,params,loss,tokens",
                "",
            ]
        )
    )
    rows = [
        "1e8,2e9,3.0",
        "3e8,2e9,2.8",
        "1e9,2e9,2.7",
        "3e8,6e9,2.6",
        "1e9,6e9,2.5",
        "3e9,6e9,2.45",
        "1e10,2e10,2.3",
    ]
    for _ in range(draw(st.integers(0, 3))):
        i = draw(st.integers(0, len(rows) - 1))
        cells = rows[i].split(",")
        j = draw(st.integers(0, len(cells) - 1))
        cells[j] = draw(CELLS).replace("\n", " ").replace("\r", " ")
        if draw(st.booleans()):
            cells = cells[: draw(st.integers(0, len(cells)))]
        rows[i] = ",".join(cells)
    return "\n".join([header, *rows[: draw(st.integers(0, len(rows)))]]) + "\n"


def _read(text: str, tmp_path_factory) -> None:
    path = tmp_path_factory.mktemp("csv") / "runs.csv"
    path.write_text(text, encoding="utf-8")
    try:
        runs = read_runs(path)
    except RunplanError as error:
        _allowed(error)
        return
    for column in (runs.params, runs.tokens, runs.flops, runs.loss):
        assert all(math.isfinite(x) and x > 0 for x in column.tolist())


@SETTINGS
@given(near_valid_csv())
def test_csv_reader_never_crashes(tmp_path_factory, text):
    _read(text, tmp_path_factory)


@pytest.mark.slow
@SLOW
@given(near_valid_text())
def test_loader_never_crashes_long(text):
    _load_and_maybe_build(text, build=False)


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(near_valid())
def test_build_plan_never_crashes_long(doc):
    _load_and_maybe_build(_text(doc), build=True)


@pytest.mark.slow
@SLOW
@given(near_valid_csv())
def test_csv_reader_never_crashes_long(tmp_path_factory, text):
    _read(text, tmp_path_factory)


# ---- the CLI flags (issue 17): every command's flags with hostile values, through the real entry point -------

_REPO = __import__("pathlib").Path(__file__).resolve().parents[1]
_CSV = str(_REPO / "examples" / "isoflop_synthetic.csv")
_PLAN = str(_REPO / "examples" / "70b-512-h100.yaml")
#: A valid invocation of each command and the flags the fuzzer sets on it.
FLAG_TARGETS: dict[str, tuple[list[str], list[str]]] = {
    "allocate": (
        ["allocate", "--flops", "2e23"],
        ["--flops", "--params", "--tokens-per-param", "--inference-tokens", "--mfu", "--law"],
    ),
    "parallelize": (
        ["parallelize", "--model", "70b", "--gpus", "512"],
        ["--gpus", "--tp", "--pp", "--top", "--mbs", "--seq-len", "--global-batch", "--mfu", "--catalog"],
    ),
    "sweep": (
        ["sweep", "--flops", "1e21"],
        ["--flops", "--fraction", "--span", "--sizes", "--budgets", "-o"],
    ),
    "fit": (
        ["fit", _CSV, "--method", "parametric", "--bootstrap", "0", "--starts", "4"],
        ["--starts", "--ci", "--drop-highest", "--flops", "--seed", "--bin-decades", "--plot"],
    ),
    "init": (["init"], ["--name", "--gpus", "--flops", "--seq-len", "--gpu"]),
    "check": (["check", _PLAN], ["--rtol"]),
    "export": (["export", _PLAN, "--to", "deepspeed"], ["--to", "-o"]),
}
HOSTILE_FLAG_VALUES = [
    "0",
    "-1",
    "1",
    "8",
    "1e9",
    "1e300",
    "inf",
    "nan",
    "-0",
    "abc",
    "",
    "1e-300",
    "3.5",
    "70B",
    "x" * 300,
    "a\nb",
    "../x",
    "1,000",
    "0x10",
    " 8 ",
    "/dev/zero",
    "/dev/full",
    "/",
    "a\x1b[31mb",
    "é" * 130,
    "-",
]


def _run_main(argv: list[str], capsys) -> tuple[int, str]:
    from runplan.cli.app import main

    try:
        main(argv)
        code = 0
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else 0
    return code, capsys.readouterr().err


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    st.sampled_from(sorted(FLAG_TARGETS)),
    st.data(),
)
def test_cli_flags_never_crash(capsys, monkeypatch, tmp_path_factory, command, data):
    """Any flag of any command set to a hostile value: exit 0, 1 or 2, the failure one last line, no traceback;
    the bounds keep every accepted value fast (each example here runs in well under the 10 s budget)."""
    monkeypatch.chdir(tmp_path_factory.mktemp("fuzz"))  # -o, --plot and the like write here
    base, flags = FLAG_TARGETS[command]
    argv = list(base)
    for flag in data.draw(st.lists(st.sampled_from(flags), min_size=1, max_size=2, unique=True)):
        argv += [flag, data.draw(st.sampled_from(HOSTILE_FLAG_VALUES))]
    code, err = _run_main(argv, capsys)
    assert code in (0, 1, 2), (argv, code, err)
    assert "Traceback" not in err and "internal error" not in err, (argv, err)
    if code:
        # one answer at the end: its head line, then (infeasible answers only) indented lines of what would help
        lines = err.splitlines()
        tail = len(lines)
        while tail and lines[tail - 1].startswith("  "):
            tail -= 1
        head = lines[tail - 1] if tail else ""
        assert head.startswith(("runplan: error: ", "runplan: infeasible: ")), (argv, err)
        assert tail == len(lines) or head.startswith("runplan: infeasible: "), (argv, err)
