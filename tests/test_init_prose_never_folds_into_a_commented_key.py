"""`runplan init` folds its help text at 80 columns; a fold that put a word with a colon at the start of a line
made a prose line read like a commented-out key (``# omitted: a shape is generated ...``, ``# node: Llama 3 ...``,
``  # vocab_parallel_cross_entropy: the bf16 logits ...``, ``  # runs: about 1 to 6e4).``): a user uncommenting
the keys of a section got nonsense. Every line that looks like ``# key: value`` is now a key of its section."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.spec import PlanSpec
from runplan.starter import COMMENT_WIDTH, _comment, _model_class

#: A commented line that starts like a YAML key: one word, a colon, then a space or the end of the line.
KEY_LIKE = re.compile(r"^(\s*)# ([A-Za-z_][A-Za-z0-9_]*):(\s|$)")
ARGS = [
    [],
    ["--gpus", "512"],
    ["--model", "70b", "--tokens", "2T", "--gpus", "64"],
    ["--flops", "2e23", "--gpus", "1024"],
]


def _key_like_lines_that_are_no_key(text: str) -> list[str]:
    sections = {key: _model_class(field.annotation) for key, field in PlanSpec.model_fields.items()}
    cls, wrong = None, []
    for line in text.splitlines():
        header = re.match(r"^(# )?([a-z_]+):", line)
        if header and header.group(2) in PlanSpec.model_fields:
            cls = sections[header.group(2)]
        match = KEY_LIKE.match(line)
        if match is None:
            continue
        indent, key = match.group(1), match.group(2)
        fields = PlanSpec.model_fields if indent == "" else (cls.model_fields if cls is not None else {})
        if key not in fields:
            wrong.append(line)
    return wrong


@pytest.mark.parametrize("args", ARGS, ids=[" ".join(a) or "bare" for a in ARGS])
def test_no_prose_line_of_the_starter_looks_like_a_commented_key(args):
    result = CliRunner().invoke(app, ["init", *args])
    assert result.exit_code == 0, result.output
    assert _key_like_lines_that_are_no_key(result.stdout) == []


def test_no_folded_help_line_starts_with_a_word_and_a_colon(monkeypatch):
    """Every line of help the starter writes (all of it goes through ``_comment``): a continuation never opens
    with ``word:``, whatever the word, so a real key's name in prose cannot pass for that key either."""
    import runplan.starter as starter

    paragraphs: list[list[str]] = []
    fold = starter._comment

    def recording(text: str, indent: str = "") -> list[str]:
        paragraphs.append(fold(text, indent))
        return paragraphs[-1]

    monkeypatch.setattr(starter, "_comment", recording)
    for args in ARGS:
        assert CliRunner().invoke(app, ["init", *args]).exit_code == 0
    assert len(paragraphs) > 100
    continuations = [line for lines in paragraphs for line in lines[1:] if KEY_LIKE.match(line)]
    assert continuations == []
    firsts = {lines[0] for lines in paragraphs if KEY_LIKE.match(lines[0])}
    assert firsts == set()  # no paragraph opens with a word and a colon either


def test_a_fold_before_a_word_with_a_colon_takes_the_word_before_it_along():
    # 70 characters of prose, then "omitted:": folded plainly, "omitted:" would open the second line
    text = "x" * 66 + " aaa omitted: a shape is generated"
    lines = _comment(text)
    assert lines == ["# " + "x" * 66, "# aaa omitted: a shape is generated"]
    # and one that starts the text itself is left where it is (only a fold can be moved)
    assert _comment("node: one two")[0] == "# node: one two"
    for width_filler in range(50, 78):  # wherever the fold falls, no continuation starts with "word:"
        lines = _comment("y" * width_filler + " the Llama 3 node: reported 419 interruptions in 54 days")
        assert all(not KEY_LIKE.match(line) for line in lines[1:]), lines
        assert all(len(line) <= COMMENT_WIDTH for line in lines), lines
        assert " ".join(line.removeprefix("# ") for line in lines).endswith(
            "node: reported 419 interruptions in 54 days"
        )


def test_a_flow_mapping_in_help_is_never_split_over_two_lines():
    """``{shape: {...}}`` folded after ``{shape:`` left ``{...}};`` to open the next line: half a mapping, which
    could not be copied; it now moves whole (as a `code span` does)."""
    lines = _comment(
        "Fix the model: a preset or size ('llama-3.1-70b', '70b') or {shape: {...}}; omitted: a shape"
    )
    assert lines == [
        "# Fix the model: a preset or size ('llama-3.1-70b', '70b') or",
        "# {shape: {...}}; omitted: a shape",
    ]
    assert _comment("a {b: {c d} e} f") == ["# a {b: {c d} e} f"]  # nested braces, then a space outside them
