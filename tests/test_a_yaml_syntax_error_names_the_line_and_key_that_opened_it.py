"""A bracket or quote left open is reported where it was opened, with the key it belongs to: PyYAML notices it
a line later (or at the end of the file), and runplan said `syntax.yaml:8: not valid YAML: did not find expected
',' or ']'` for `seq_len: [4096` on line 7, and `quote.yaml:8` for a quote opened on line 6 of a 7-line file."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app

HEAD = "schema_version: 1\nname: x\nmodel: llama-3.1-70b\nbudget:\n  tokens: 2T\n"


def _error(tmp_path, text: str) -> str:
    path = tmp_path / "p.yaml"
    path.write_text(text)
    result = CliRunner().invoke(app, ["plan", str(path)])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    return lines[0].removeprefix("runplan: error: ").replace(str(path), "p.yaml")


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            "training:\n  seq_len: [4096\ncluster:\n  gpu: h100-sxm\n  gpus: 512\n",
            "p.yaml:7: training.seq_len: not valid YAML: the '[' on this line is not closed "
            "(close it with ']' on the same line, or write the list one '- item' per line)",
        ),
        (
            "stack:\n  selective_recompute: {a: 1\ncluster:\n  gpu: h100-sxm\n",
            "p.yaml:7: stack.selective_recompute: not valid YAML: the '{' on this line is not closed "
            "(close it with '}' on the same line, or write the mapping one 'key: value' per line)",
        ),
        (
            'cluster:\n  gpu: "h100-sxm\n  gpus: 512\n',
            "p.yaml:7: cluster.gpu: not valid YAML: found unexpected end of stream (a double quote is not closed)",
        ),
    ],
    ids=["bracket", "brace", "quote"],
)
def test_an_unclosed_opener_is_named_at_its_line_and_key(tmp_path, body, expected):
    assert _error(tmp_path, HEAD + body) == expected


def test_a_single_quote_is_named_as_one(tmp_path):
    error = _error(tmp_path, HEAD + "description: 'half\ncluster:\n  gpu: h100-sxm\n")
    assert (
        error
        == "p.yaml:6: description: not valid YAML: found unexpected end of stream (a single quote is not closed)"
    )


def test_a_tab_still_says_to_indent_with_spaces(tmp_path):
    error = _error(tmp_path, "schema_version: 1\nname: x\nbudget:\n\ttokens: 2T\n")
    assert error.startswith("p.yaml:4: not valid YAML: ") and error.endswith(
        "(indent with spaces: YAML forbids tabs there)"
    )
