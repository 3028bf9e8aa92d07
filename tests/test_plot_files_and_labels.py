"""Plots: `runplan fit --plot` says where it wrote, and a missing matplotlib is one line before the fit; the plan's
plots name their units and the memory limit's value."""

from __future__ import annotations

import sys
from pathlib import Path

from typer.testing import CliRunner

from runplan.cli.app import app

runner = CliRunner()
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
CSV = str(EXAMPLES / "isoflop_synthetic.csv")
PLAN70 = EXAMPLES / "70b-512-h100.yaml"


def test_fit_plot_says_where_it_wrote(tmp_path):
    target = tmp_path / "sub" / "fits.png"
    result = runner.invoke(app, ["fit", CSV, "--bootstrap", "0", "--plot", str(target)])
    assert result.exit_code == 0, result.output
    assert target.is_file() and target.read_bytes()[:4] == b"\x89PNG"
    assert f"wrote plot {target}" in result.stdout  # it wrote the file and said nothing


def test_fit_plot_without_matplotlib_fails_before_the_fit(tmp_path, monkeypatch):
    import runplan.cli.fit as fit_cli

    def no_fit(*args, **kwargs):
        raise AssertionError("the fit ran before the missing matplotlib was reported")

    monkeypatch.setattr(fit_cli, "_fit_runs", no_fit)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` raises ImportError
    monkeypatch.delitem(sys.modules, "matplotlib.pyplot", raising=False)
    result = runner.invoke(app, ["fit", CSV, "--bootstrap", "0", "--plot", str(tmp_path / "f.png")])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert lines == ["runplan: error: --plot: a plot needs matplotlib (pip install 'runplan[plot]')"]
    assert not (tmp_path / "f.png").exists()


def test_plan_plots_label_units_and_the_memory_limit(tmp_path, monkeypatch):
    import runplan.fileio

    labels: dict[str, list[str]] = {}

    def capture(fig, path, **kwargs):
        texts = []
        for ax in fig.axes:
            texts += [ax.get_xlabel(), ax.get_ylabel()]
            legend = ax.get_legend()
            if legend is not None:
                texts += [t.get_text() for t in legend.get_texts()]
        labels[Path(path).name] = texts

    monkeypatch.setattr(runplan.fileio, "save_figure", capture)
    result = runner.invoke(app, ["plan", str(PLAN70), "--plots", str(tmp_path / "plots"), "--json"])
    assert result.exit_code == 0, result.output
    assert "predicted loss (nats/token)" in labels["loss.png"]
    assert "GB per GPU (most loaded stage)" in labels["memory.png"]
    assert any(t.startswith("usable limit\n") and t.endswith(" GB") for t in labels["memory.png"])
    assert "global batch (M tokens)" in labels["schedule.png"]
