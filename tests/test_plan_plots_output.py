"""`runplan plan --plots` says what it wrote (aside from machine output), links the plots relative to the Markdown
report, and leaves no directory behind when it fails; `runplan fit --plot` says which budget each parabola is."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from typer.testing import CliRunner

from runplan.cli.app import app

runner = CliRunner()
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
PLAN70 = str(EXAMPLES / "70b-512-h100.yaml")
CSV = str(EXAMPLES / "isoflop_synthetic.csv")
PLOT_FILES = ("memory.png", "schedule.png", "loss.png")


def no_figures(monkeypatch) -> list[str]:
    """Skip drawing PNG files (slow on a shared machine): record the names instead, and create empty files."""
    import runplan.fileio

    saved: list[str] = []

    def save(fig, path, **kwargs):
        saved.append(Path(path).name)
        Path(path).write_bytes(b"")

    monkeypatch.setattr(runplan.fileio, "save_figure", save)
    return saved


def test_terminal_report_names_the_plots_on_stderr(tmp_path, monkeypatch):
    no_figures(monkeypatch)
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["plan", PLAN70, "--plots", "p1"])
    assert result.exit_code == 0, result.output
    assert sorted(os.listdir("p1")) == sorted(PLOT_FILES)
    lines = [line for line in result.stderr.splitlines() if line.startswith("wrote")]
    assert lines == ["wrote plots " + ", ".join(str(Path("p1") / name) for name in PLOT_FILES)]
    assert "wrote plots" not in result.stdout  # stdout is the report


def test_report_in_a_file_names_the_plots_on_stdout(tmp_path, monkeypatch):
    no_figures(monkeypatch)
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["plan", PLAN70, "--plots", "p2", "-f", "json", "-o", "r.json"])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("wrote plots " + str(Path("p2") / "memory.png"))
    assert result.stdout.count("\n") == 1


def test_machine_output_on_stdout_stays_clean(tmp_path, monkeypatch):
    no_figures(monkeypatch)
    monkeypatch.chdir(tmp_path)
    for fmt in ("json", "yaml"):
        result = runner.invoke(app, ["plan", PLAN70, "--plots", f"p-{fmt}", "-f", fmt])
        assert result.exit_code == 0, result.output
        assert "wrote" not in result.stdout and "wrote" not in result.stderr
        assert sorted(os.listdir(f"p-{fmt}")) == sorted(PLOT_FILES)


def test_markdown_links_plots_outside_the_report_directory_relatively(tmp_path, monkeypatch):
    no_figures(monkeypatch)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    result = runner.invoke(app, ["plan", PLAN70, "--plots", "p5", "-f", "markdown", "-o", "sub/r.md"])
    assert result.exit_code == 0, result.output
    links = re.findall(r"!\[[^]]*\]\(([^)]*)\)", (tmp_path / "sub" / "r.md").read_text())
    assert sorted(links) == sorted(f"../p5/{name}" for name in PLOT_FILES)
    for link in links:  # each resolves from the report's directory
        assert (tmp_path / "sub" / link).is_file()


def test_markdown_on_stdout_links_relative_to_the_working_directory(tmp_path, monkeypatch):
    no_figures(monkeypatch)
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    result = runner.invoke(app, ["plan", PLAN70, "--plots", str(tmp_path / "pics"), "-f", "markdown"])
    assert result.exit_code == 0, result.output
    links = re.findall(r"!\[[^]]*\]\(([^)]*)\)", result.stdout)
    assert sorted(links) == sorted(f"../pics/{name}" for name in PLOT_FILES)
    assert "wrote plots" in result.stderr


def test_missing_matplotlib_leaves_no_directory(tmp_path, monkeypatch):
    import runplan.cli.plan as plan_cli

    def no_plan(*args, **kwargs):
        raise AssertionError("the plan ran before the missing matplotlib was reported")

    monkeypatch.setattr(plan_cli, "plan_from_file", no_plan)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` raises ImportError
    monkeypatch.delitem(sys.modules, "matplotlib.pyplot", raising=False)
    target = tmp_path / "p3" / "nested"
    result = runner.invoke(app, ["plan", PLAN70, "--plots", str(target)])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert lines == ["runplan: error: --plots: a plot needs matplotlib (pip install 'runplan[plot]')"]
    assert not (tmp_path / "p3").exists()


def test_a_plan_that_fails_removes_the_directories_it_created(tmp_path, monkeypatch):
    import runplan.cli.plan as plan_cli
    from runplan.errors import Infeasible

    def infeasible(*args, **kwargs):
        raise Infeasible("no layout fits", suggestions=["add GPUs"])

    monkeypatch.setattr(plan_cli, "plan_from_file", infeasible)
    (tmp_path / "kept").mkdir()
    for plots, gone in ((tmp_path / "new" / "deeper", tmp_path / "new"), (tmp_path / "kept" / "p4", None)):
        result = runner.invoke(app, ["plan", PLAN70, "--plots", str(plots)])
        assert result.exit_code == 1, result.output
        assert not plots.exists()
        if gone is not None:
            assert not gone.exists()
    assert (tmp_path / "kept").is_dir()  # it was there before: not the command's to remove


def test_fit_plot_names_each_budget_and_the_units(tmp_path, monkeypatch):
    import runplan.fileio

    seen: dict[str, list[str]] = {}

    def capture(fig, path, **kwargs):
        left = fig.axes[0]
        seen["legend"] = [t.get_text() for t in left.get_legend().get_texts()]
        seen["labels"] = [text for ax in fig.axes for text in (ax.get_xlabel(), ax.get_ylabel())]

    monkeypatch.setattr(runplan.fileio, "save_figure", capture)
    result = runner.invoke(app, ["fit", CSV, "--bootstrap", "0", "--plot", str(tmp_path / "f.png")])
    assert result.exit_code == 0, result.output
    assert seen["legend"] == ["1e18 FLOPs", "1e19 FLOPs", "1e20 FLOPs", "1e21 FLOPs"]
    assert "final loss (nats/token)" in seen["labels"]
    assert "parameters N (count)" in seen["labels"]
    assert "training compute C (FLOPs)" in seen["labels"]
    assert any("(FLOPs)" in label and "log10" in label for label in seen["labels"])  # the colour bar
