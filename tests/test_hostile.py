"""Hostile files, names and streams (issue 17): one test per mechanism, plus property tests.

Mechanisms: the bounded reader (runplan.fileio.read_bytes), the YAML composer (runplan.yamlio), the atomic
writer and its replacing rule (runplan.fileio.write_file), the standard-output mapping (runplan.cli.common),
the escaping layer (runplan.escape) and the bounds on work. Disk-full is simulated with /dev/full and a small
RLIMIT_FSIZE in a subprocess, never for real.
"""

from __future__ import annotations

import errno
import json
import os
import re
import resource
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from runplan import fileio
from runplan.cli.app import app
from runplan.errors import SpecError
from runplan.escape import MAX_RUN_NAME_CHARS, file_slug, run_name_problem, toml_string, yaml_scalar
from runplan.yamlio import MAX_DEPTH, load_yaml_text

REPO = Path(__file__).resolve().parents[1]
PLAN70 = REPO / "examples" / "70b-512-h100.yaml"
CSV = REPO / "examples" / "isoflop_synthetic.csv"
FEW = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _run(args: list[str]):
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr, result.stderr
    return result


# ---- the bounded reader -------------------------------------------------------------------------------------


def test_reader_refuses_devices_and_reads_at_most_its_cap():
    """/dev/zero reports size 0 and never ends: refused by kind, before a byte is read."""
    with pytest.raises(SpecError, match="a device"):
        fileio.read_bytes("/dev/zero", 10)
    with pytest.raises(SpecError, match="is a directory"):
        fileio.read_bytes(REPO, 10)


def test_reader_cap_counts_bytes_read_not_the_reported_size(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"x" * 101)
    assert fileio.read_bytes(path, 101) == b"x" * 101
    with pytest.raises(SpecError, match="larger than"):
        fileio.read_bytes(path, 100)


def test_reader_refuses_a_fifo_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(SpecError, match="named pipe"):
        fileio.read_bytes(fifo, 100)
    result = _run(["plan", fifo])  # would block forever before issue 17
    assert result.exit_code == 2 and "named pipe" in result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["plan", "/dev/zero"],
        ["fit", "/dev/urandom"],
        ["allocate", "--flops", "2e23", "--law", "/dev/zero"],
        ["parallelize", "--model", "70b", "--gpus", "8", "--catalog", "/dev/zero"],
        ["check", "/dev/zero"],
    ],
)
def test_every_reader_goes_through_the_bounded_reader(args):
    result = _run(args)
    assert result.exit_code == 2 and "device" in result.stderr and result.stderr.count("\n") == 1


def test_no_file_access_outside_fileio():
    """Every file read or written in src goes through runplan.fileio (package data read by importlib.resources
    and parsing of strings already read aside)."""
    pattern = re.compile(
        r"\bopen\(|\.read_text\(|\.read_bytes\(|np\.load|loadtxt|genfromtxt|write_text|write_bytes|savefig\("
    )
    offenders = []
    for path in (REPO / "src" / "runplan").rglob("*.py"):
        if path.name == "fileio.py":
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            allowed = ("resources.", "folder.joinpath", "os.open(os.devnull", "StringIO(")
            if pattern.search(line) and not any(mark in line for mark in allowed):
                offenders.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert offenders == []


# ---- the YAML composer ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("a: &a [*a]\n", "recursive alias"),
        ("a: &a {b: *a}\n", "recursive alias"),
        ("a: &a [&b [*b]]\n", "recursive alias"),
        ("a: " + "[" * 990 + "]" * 990 + "\n", "nest"),
        ("- " * 200_000 + "x\n", f"nested more than {MAX_DEPTH}"),
        ("a: *nowhere\n", "no anchor"),
        ("a: 1\n---\nb: 2\n", "more than one YAML document"),
    ],
)
def test_yaml_composer_refuses_without_recursion(text, fragment):
    with pytest.raises(SpecError, match=fragment):
        load_yaml_text(text)


def test_yaml_composer_keeps_lines_aliases_and_merge_keys():
    loaded = load_yaml_text("base: &b {x: 1}\nuse: *b\nmerged:\n  <<: *b\n  y: [1, 2]\n")
    assert loaded.data == {"base": {"x": 1}, "use": {"x": 1}, "merged": {"x": 1, "y": [1, 2]}}
    assert loaded.line_of(("merged", "y", 1)) == 5 and loaded.line_of(("use",)) == 2


@FEW
@given(
    st.recursive(st.integers() | st.text(max_size=5), lambda c: st.lists(c) | st.dictionaries(st.text(), c))
)
def test_yaml_composer_reads_what_pyyaml_writes(data):
    assert load_yaml_text(yaml.safe_dump({"k": data})).data == {"k": data}


# ---- the atomic writer and the replacing rule ----------------------------------------------------------------


@FEW
@given(
    old=st.binary(max_size=2000), new=st.text(max_size=2000), failing=st.sampled_from(["fsync", "replace"])
)
def test_a_failed_write_leaves_the_old_file_byte_identical(tmp_path_factory, old, new, failing):
    folder = tmp_path_factory.mktemp("w")
    target = folder / "out.txt"
    target.write_bytes(old)

    def boom(*_args, **_kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    saved = getattr(os, failing)
    setattr(os, failing, boom)
    try:
        with pytest.raises(SpecError, match="No space left"):
            fileio.write_file(target, new, where="--output")
    finally:
        setattr(os, failing, saved)
    assert target.read_bytes() == old
    assert sorted(p.name for p in folder.iterdir()) == ["out.txt"]  # no temporary file left behind


def test_a_file_size_limit_leaves_the_old_output_intact(tmp_path):
    """A real EFBIG: the CLI under RLIMIT_FSIZE of 2 kB writing a larger report over an existing file."""
    target = tmp_path / "report.md"
    target.write_text("old report\n")

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (2000, 2000))

    done = subprocess.run(
        [sys.executable, "-m", "runplan", "plan", str(PLAN70), "-f", "markdown", "-o", str(target)],
        capture_output=True,
        text=True,
        preexec_fn=limit,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "--output" in done.stderr and "too large" in done.stderr
    assert target.read_text() == "old report\n"
    assert [p.name for p in tmp_path.iterdir()] == ["report.md"]


def test_write_keeps_the_mode_and_follows_a_symlink(tmp_path):
    real = tmp_path / "real.txt"
    real.write_text("old")
    real.chmod(0o640)
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    fileio.write_file(link, "new")
    assert link.is_symlink() and real.read_text() == "new"
    assert real.stat().st_mode & 0o777 == 0o640


@pytest.mark.parametrize("kind", ["same", "hardlink", "symlink"])
@pytest.mark.parametrize(
    "command",
    [
        ["plan", "{plan}", "-o", "{out}"],
        ["plan", "{plan}", "-f", "yaml", "-o", "{out}"],
        ["export", "{plan}", "--to", "megatron", "-o", "{out}"],
        ["fit", "{csv}", "--bootstrap", "0", "--method", "parametric", "-o", "{out}"],
        ["sweep", "--flops", "1e21", "--law", "{law}", "-o", "{out}"],
    ],
    ids=["plan", "plan-yaml", "export", "fit", "sweep"],
)
def test_no_input_file_is_ever_written(tmp_path, command, kind):
    """-o at an input of the same run, by its name, a hard link or a symlink: refused, the input unchanged."""
    plan = tmp_path / "plan.yaml"
    plan.write_bytes(PLAN70.read_bytes())
    csv = tmp_path / "runs.csv"
    csv.write_bytes(CSV.read_bytes())
    law = tmp_path / "law.yaml"
    law.write_text("name: mine\nE: 1.8\nA: 400\nB: 400\nalpha: 0.3\nbeta: 0.3\n")
    inputs = {"plan": plan, "csv": csv, "law": law}
    victim = next(inputs[key] for key in ("plan", "csv", "law") if "{" + key + "}" in command)
    before = victim.read_bytes()
    out = tmp_path / "alias"
    if kind == "same":
        out = victim
    elif kind == "hardlink":
        os.link(victim, out)
    else:
        out.symlink_to(victim)
    args = [a.format(out=out, **inputs) for a in command]
    result = _run(args)
    assert result.exit_code == 2, result.stderr
    assert result.stderr.count("\n") == 1 and ("reads" in result.stderr or "being read" in result.stderr)
    assert victim.read_bytes() == before


def test_names_over_255_bytes_are_one_line(tmp_path):
    long = "é" * 128  # 256 bytes in UTF-8
    for args in (
        ["plan", PLAN70, "-o", tmp_path / long],
        ["plan", PLAN70, "--plots", tmp_path / long],
        ["fit", CSV, "--plot", tmp_path / (long + ".png")],
        ["export", PLAN70, "--to", "deepspeed", "-o", tmp_path / long],
    ):
        result = _run(args)
        assert result.exit_code == 2 and "255" in result.stderr and result.stderr.count("\n") == 1, args


def test_two_writers_never_mix(tmp_path):
    """Both runs write whole files and rename: the result is one run's output, byte for byte."""
    target = tmp_path / "law.yaml"
    outs = []
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "runplan", "fit", str(CSV), "--method", "parametric", "--bootstrap", "0"]
            + ["--seed", str(seed), "--starts", str(starts), "-o", str(target)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for seed, starts in ((0, 4), (1, 8))
    ]
    for proc in procs:
        outs.append(proc.communicate(timeout=120))
        assert proc.returncode == 0, outs[-1]
    assert yaml.safe_load(target.read_text())["E"] > 0  # parses: not a mix of two documents


# ---- standard output -------------------------------------------------------------------------------------------


def _cli(args: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "runplan", *args], capture_output=False, timeout=120, **kwargs
    )


def test_stdout_disk_full_is_one_line_exit_2():
    with open("/dev/full", "w") as full:
        done = _cli(["plan", str(PLAN70)], stdout=full, stderr=subprocess.PIPE, text=True)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "No space left" in done.stderr


def test_closed_stdout_is_one_line_exit_2():
    done = subprocess.run(
        ["sh", "-c", 'exec "$@" >&-', "sh", sys.executable, "-m", "runplan", "catalog", "gpus"],
        capture_output=False,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "closed" in done.stderr


@pytest.mark.parametrize(
    "args", [["plan", str(PLAN70)], ["plan", str(PLAN70), "--json"], ["catalog", "models"]]
)
def test_broken_pipe_is_quiet_exit_141(args):
    """`runplan ... | head`: the reader is gone before runplan writes; nothing on stderr, 128 + SIGPIPE."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "runplan", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdout is not None
    proc.stdout.close()
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 141 and err == b""


# ---- escaping: names round-trip through every output -------------------------------------------------------


@pytest.fixture(scope="module")
def built_plan():
    from runplan.cli.common import plan_from_file

    return plan_from_file(PLAN70)[2]


_NAMES = st.text(min_size=1, max_size=MAX_RUN_NAME_CHARS).filter(lambda s: run_name_problem(s) is None)
_HOSTILE = st.sampled_from(
    ["../x", "/etc/passwd", "$(touch pwned)", "a'b\"c\\", "exp: 70b", "`id`", "-rf", ".."]
)


def _unescape_comment(text: str) -> str:
    return re.sub(
        r"\\(\\|x[0-9a-f]{2}|u[0-9a-f]{4}|U[0-9a-f]{8})",
        lambda m: "\\" if m.group(1) == "\\" else chr(int(m.group(1)[1:], 16)),
        text,
    )


@FEW
@given(name=_NAMES | _HOSTILE)
def test_any_plan_name_round_trips_through_every_export(built_plan, name):
    from runplan.export import export_plan
    from runplan.spec import load_plan_text

    spec_text = PLAN70.read_text().replace("name: ", "name_was: ", 1).replace("name_was: ", "# ", 1)
    spec = load_plan_text(f"{spec_text}\nname: {yaml_scalar(name)}\n", "<t>")
    assert spec.name == name  # the plan-file boundary (YAML) keeps it
    plan = built_plan.model_copy(update={"inputs": {**built_plan.inputs, "name": name}})
    plain = built_plan.model_copy(update={"inputs": {**built_plan.inputs, "name": "plain"}})

    mega, mega0 = export_plan(plan, "megatron"), export_plan(plain, "megatron")
    header = mega.text.splitlines()[1]
    assert _unescape_comment(header.split("plan '", 1)[1].rsplit("', generated by", 1)[0]) == name
    code = [line for line in mega.text.splitlines() if not line.startswith("#")]
    assert code == [line for line in mega0.text.splitlines() if not line.startswith("#")]  # no line injected

    titan = tomllib.loads(export_plan(plan, "torchtitan").text)
    assert titan["job"]["description"] == f"runplan plan {name}"
    assert json.loads(export_plan(plan, "deepspeed").text)["runplan"]["plan"] == name

    for result in (mega, export_plan(plan, "torchtitan"), export_plan(plan, "deepspeed")):
        assert os.path.basename(result.filename) == result.filename
        assert re.fullmatch(r"[A-Za-z0-9+_-][A-Za-z0-9._+-]*", result.filename)
        assert len(result.filename.encode()) <= fileio.MAX_NAME_BYTES


@FEW
@given(st.text(max_size=50))
def test_toml_strings_and_slugs_are_safe_for_any_text(text):
    assert tomllib.loads(f"k = {toml_string(text)}")["k"] == text
    slug = file_slug(text)
    assert slug and "/" not in slug and not slug.startswith(".") and len(slug) <= 100


def test_export_into_a_directory_stays_inside_it(tmp_path):
    plan = tmp_path / "p.yaml"
    plan.write_text(PLAN70.read_text().replace("name: 70b-512-h100", 'name: "../../escaped"', 1))
    out = tmp_path / "out"
    out.mkdir()
    result = _run(["export", plan, "--to", "deepspeed", "-o", out])
    assert result.exit_code == 0, result.stderr
    assert [p.name for p in out.iterdir()] == ["escaped.deepspeed.json"]


@pytest.mark.parametrize("name", ["exp: 70b", "yes", "#x", "a 'quoted' \"name\"", "- dash"])
def test_init_name_is_a_yaml_scalar(name):
    result = _run(["init", "--name", name])
    assert result.exit_code == 0, result.stderr
    assert yaml.safe_load(result.stdout)["name"] == name


# ---- bounds on work ------------------------------------------------------------------------------------------


def test_grid_bound_is_checked_before_building_arrays(monkeypatch):
    from runplan.parallel import search

    monkeypatch.setattr(search, "MAX_GRID_ROWS", 100)
    result = _run(["parallelize", "--model", "70b", "--gpus", "512"])
    assert result.exit_code == 2 and "more than 100" in result.stderr


def test_start_grid_bound_matches_the_grid():
    from runplan.cli.fit import GRID_STARTS
    from runplan.scaling.fit import start_grid

    assert len(start_grid()) == GRID_STARTS == 6 * 6 * 5 * 5 * 5


# ---- messages name what the command has ----------------------------------------------------------------------


def test_a_small_plan_goes_on_without_a_sweep_and_says_why(tmp_path):
    """1e20 FLOPs on 8 GPUs: the default 1% sweep has no proxy shape; `plan` has no --fraction to offer."""
    plan = tmp_path / "small.yaml"
    plan.write_text("schema_version: 1\nbudget: {flops: 1e20}\ncluster: {gpus: 8}\n")
    result = _run(["plan", plan, "--json"])
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["sweep"] is None
    assert any(w.startswith("sweep: no proxy sweep at the default 1%") for w in data["warnings"])
    assert "--fraction" not in result.stdout + result.stderr


def test_hints_name_the_commands_flags():
    from runplan.cli.flags import flags_in_text

    assert (
        flags_in_text("raise sweep.fraction or narrow sweep.span_decades", "sweep")
        == "raise --fraction or narrow --span"
    )
    assert flags_in_text("see the model and cluster.gpus.", "plan") == "see the model and --gpus."


def test_at_least_is_rounded_up_and_told_apart_from_the_budget():
    from runplan.scaling.allocate import _rounded_up

    assert _rounded_up(4.818e16, 4.817e16) == "4.9e+16"
    assert _rounded_up(4.8001e16, 4.8e16) == "4.9e+16"
    assert float(_rounded_up(1.234e20, 1e19)) >= 1.234e20


def test_a_run_name_reads_as_written_in_the_markdown_report():
    """`<b>x</b>` and `a_b_c` in the title were a tag and emphasis: backslash-escaped (CommonMark §2.4);
    hyphens and dots are left alone (70b-512-h100 stays readable in the source)."""
    from runplan.escape import markdown_text

    assert markdown_text("<b>x</b> a_b_c `c` [l](u) |") == r"\<b\>x\</b\> a\_b\_c \`c\` \[l\](u) \|"
    assert markdown_text("70b-512-h100.v2") == "70b-512-h100.v2"
