"""`runplan plan EX -f md` was refused ("'md' is not one of 'terminal', 'markdown', 'json', 'yaml'"): --format
takes a Markdown file's and a YAML file's usual extensions, md and yml, as the formats they name, in any case.
`plan` is the only command whose --format picks an output format (monitor's --format names a log's), so the set
is the same wherever one is taken."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.cli.plan import Format, _complete_format, parse_format
from runplan.errors import SpecError

EXAMPLE = str(Path(__file__).resolve().parents[1] / "examples" / "70b-512-h100.yaml")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("md", Format.markdown),
        ("MD", Format.markdown),
        ("markdown", Format.markdown),
        ("yml", Format.yaml),
        ("yaml", Format.yaml),
        (" Json ", Format.json),
        ("terminal", Format.terminal),
    ],
)
def test_each_name_reads_as_its_format(name, expected):
    assert parse_format(name) is expected


def test_an_unknown_format_names_every_accepted_value():
    with pytest.raises(SpecError) as raised:
        parse_format("html")
    assert raised.value.where == "--format"
    assert raised.value.hint == "use one of terminal, markdown (md), json or yaml (yml)"


def test_md_and_yml_write_what_markdown_and_yaml_write(tmp_path: Path):
    runner = CliRunner()
    for short, full in (("md", "markdown"), ("yml", "yaml")):
        texts = []
        for name in (short, full):
            out = tmp_path / f"plan.{name}"
            result = runner.invoke(app, ["plan", EXAMPLE, "-f", name, "-o", str(out)])
            assert result.exit_code == 0, result.output
            # the search's wall time is the one number that differs between two runs
            texts.append(re.sub(r"search_seconds: [0-9.e-]+", "", out.read_text()))
        assert texts[0] == texts[1] and texts[0].strip()
    assert texts[0].startswith("# yaml-language-server:")  # the resolved plan, not the report


def test_an_unknown_format_is_one_line_before_any_work(tmp_path: Path, one_error_line):
    result = CliRunner().invoke(app, ["plan", str(tmp_path / "absent.yaml"), "-f", "html"])
    line = one_error_line(result)
    assert line == (
        "runplan: error: --format: unknown format 'html' (use one of terminal, markdown (md), json or yaml (yml))"
    )


def test_completion_offers_the_short_names():
    assert _complete_format("m") == ["markdown", "md"]
    assert _complete_format("y") == ["yaml", "yml"]
