"""`runplan plan -f markdown` renders as the text it means on GitHub: a layout check such as ``d*b*m*s`` is not
turned into emphasis, a tag or a strikethrough; every table row keeps its cells; a plot directory with a space or
a parenthesis still links; days past 1,000 read as days, not ``1.77e+03``."""

from __future__ import annotations

import html
import re
from pathlib import Path
from urllib.parse import unquote

import pytest
from markdown_it import MarkdownIt
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.report.format import fmt_days, fmt_duration, fmt_value, label
from runplan.report.markdown import _bullets, _escape, _image

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
PLAN70 = EXAMPLES / "70b-512-h100.yaml"
runner = CliRunner()


def _rendered(markdown: str) -> str:
    """HTML as GitHub's CommonMark + GFM tables would render it (markdown-it-py, a rich dependency)."""
    return MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(markdown)


def _text(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", fragment)).strip()


@pytest.fixture(scope="module")
def report_70b(tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("md") / "plan.md"
    result = runner.invoke(app, ["plan", str(PLAN70), "-f", "markdown", "-o", str(out)])
    assert result.exit_code == 0, result.output
    return out.read_text()


def test_layout_checks_render_without_emphasis(report_70b):
    # Was: "- global batch d*b*m*s = 64*1*83*4096 = ..." rendered as d<em>b</em>m<em>s = 64</em>1...
    page = _rendered(report_70b)
    assert "<em>" not in page and "<del>" not in page
    items = [_text(li) for li in re.findall(r"<li>(.*?)</li>", page, re.DOTALL)]
    assert "global batch d*b*m*s = 64*1*83*4096 = 21,757,952 tokens in [17,898,117, 21,875,476] (target " in (
        "\n".join(items)
    )
    assert "bubble (p-1)/(v*m) = 1/(1*83) = 0.012 <= 0.15" in items
    assert "t*p*d*c = 4*2*64*1 = 512 GPUs" in items


def test_every_table_row_has_its_header_s_cells(report_70b):
    page = _rendered(report_70b)
    for table in re.findall(r"<table>(.*?)</table>", page, re.DOTALL):
        heads = len(re.findall(r"<th[ >]", table))
        for row in re.findall(r"<tbody>(.*?)</tbody>", table, re.DOTALL)[0].split("</tr>")[:-1]:
            assert len(re.findall(r"<td[ >]", row)) == heads, row


@pytest.mark.parametrize(
    "text",
    [
        "d*b*m*s = 64*1*83*4096",
        "a <b>tag</b> and ~strike~ and $x$ and [l](u) and _edge_ and weights_bf16",
        r"a backslash \* before a star, a pipe | in a cell",
        "keep `runplan calibrate` as code, `a|b` too",
    ],
)
def test_cells_and_bullets_read_back_as_written(text):
    cell = _rendered(f"| h |\n|---|\n| {_escape(text)} |\n")
    bullet = _rendered("\n".join(_bullets([text])))
    code = re.findall(r"`([^`]*)`", text)
    plain = re.sub(r"`([^`]*)`", r"\1", text)
    assert _text(re.findall(r"<td>(.*?)</td>", cell, re.DOTALL)[0]) == plain
    assert _text(re.findall(r"<li>(.*?)</li>", bullet, re.DOTALL)[0]) == plain
    assert all(f"<code>{html.escape(c, quote=False)}</code>" in bullet for c in code)


def test_a_plot_directory_with_spaces_still_links():
    # Was: ![t](my plots (v2)/loss.png), which CommonMark does not read as an image at all
    page = _rendered(_image("Loss curve predicted by the law", "my plots (v2)/loss.png"))
    sources = re.findall(r'<img src="([^"]*)"', page)
    assert [unquote(s) for s in sources] == ["my plots (v2)/loss.png"]


def test_days_past_a_thousand_are_whole_days():
    # Was: "useful days | 1.76e+03 days" beside the summary's "1,774.1 days" (a 405B plan on 512 GPUs)
    assert fmt_days(1774.05) == "1,774"
    assert fmt_days(38.58) == "38.6" and fmt_days(999.4) == "999"
    assert fmt_value("effective_days", 1774.05) == "1,774 days"
    assert fmt_value("wall_clock_days", 4.05) == "4.05 days"
    assert fmt_duration(1774.05 * 86400) == "1,774 days"
    assert fmt_duration(4.12 * 86400) == "4.12 days"
    assert label("energy_mwh") == "energy"  # the value says MWh; the label does not repeat it


def test_a_description_with_a_fence_stays_inside_the_inputs_block(tmp_path):
    # Was: the description, printed raw, opened a code block that swallowed the rest of the report, and its ```
    # line, in the inputs' YAML, closed the ```yaml block early
    plan = tmp_path / "p.yaml"
    plan.write_text(
        'schema_version: 1\nname: fence\ndescription: "quote\\n```\\nhere"\nbudget: {flops: 2e21}\n'
        "cluster: {gpu: h100-sxm, gpus: 64}\n"
    )
    out = tmp_path / "p.md"
    result = runner.invoke(app, ["plan", str(plan), "-f", "markdown", "-o", str(out)])
    assert result.exit_code == 0, result.output
    page = _rendered(out.read_text())
    (block,) = re.findall(r'<pre><code class="language-yaml">(.*?)</code></pre>', page, re.DOTALL)
    assert "\n  ```\n" in html.unescape(block) and "cluster:" in block
    assert "<h2>Summary</h2>" in page and "<h2>Warnings</h2>" in page
