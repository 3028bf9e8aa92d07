"""`runplan plan -f yaml` starts its output with the editor's schema line. It always wrote
`$schema=docs/plan.schema.json`, a path relative to the repository root, so the resolved form of an example
(whose own line is `$schema=../docs/plan.schema.json`, relative to examples/) pointed editors at a file that is
not there. The plan file's own schema line is now kept; a plan without one gets the default."""

from __future__ import annotations

from pathlib import Path

import yaml
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.resolved import SCHEMA_COMMENT, schema_line

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "moe-mixtral-8x7b.yaml"
OWN = "# yaml-language-server: $schema=../docs/plan.schema.json\n"


def run(*args: str):
    return CliRunner().invoke(app, list(args))


def test_the_examples_schema_line_is_kept(tmp_path):
    assert EXAMPLE.read_text().startswith(OWN)
    copy = tmp_path / "plan.yaml"
    copy.write_text(EXAMPLE.read_text())
    result = run("plan", str(copy), "-f", "yaml")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(OWN) and result.stdout.count("yaml-language-server") == 1
    assert "resolved" in yaml.safe_load(result.stdout)


def test_a_plan_without_one_gets_the_default(tmp_path):
    plain = tmp_path / "plan.yaml"
    plain.write_text("# our run\nschema_version: 1\nbudget: {flops: 2e23}\ncluster: {gpus: 512}\n")
    result = run("plan", str(plain), "-f", "yaml")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(SCHEMA_COMMENT)


def test_the_line_is_a_comment_of_its_own():
    assert schema_line("# note\n" + OWN + "schema_version: 1\n") == OWN
    assert schema_line("# yaml-language-server: $schema=x.json\r\nschema_version: 1\r\n") == (
        "# yaml-language-server: $schema=x.json\n"
    )
    late = "schema_version: 1\n# yaml-language-server: $schema=late.json\n"
    assert schema_line(late) == "# yaml-language-server: $schema=late.json\n"  # editors read it anywhere
    assert schema_line("schema_version: 1\n") == SCHEMA_COMMENT
    assert schema_line("name: '# yaml-language-server: $schema=x'\n") == SCHEMA_COMMENT  # not a comment


def test_written_to_another_folder_the_schema_path_still_names_the_schema(tmp_path):
    """`-o other/r.yaml` copied `$schema=../docs/plan.schema.json`, which from other/ names nothing: a relative
    schema path is rewritten from the output's folder; a URL stays."""
    repo = tmp_path / "repo"
    (repo / "examples").mkdir(parents=True)
    (repo / "docs").mkdir()
    (repo / "docs" / "plan.schema.json").write_text("{}")
    plan = repo / "examples" / "p.yaml"
    plan.write_text(EXAMPLE.read_text())
    out = repo / "runs" / "2026" / "r.yaml"
    result = run("plan", str(plan), "-f", "yaml", "-o", str(out))
    assert result.exit_code == 0, result.output
    first = out.read_text().splitlines()[0]
    assert first == "# yaml-language-server: $schema=../../docs/plan.schema.json"
    assert (out.parent / first.split("$schema=")[1]).resolve() == (
        repo / "docs" / "plan.schema.json"
    ).resolve()
    url = "# yaml-language-server: $schema=https://example.org/plan.schema.json\n"
    assert schema_line(url + "schema_version: 1\n", (repo / "examples", out.parent)) == url


def test_a_windows_schema_path_is_left_as_written(tmp_path):
    """`$schema=..\\docs\\plan.schema.json` is not a path this machine's relpath can move: it stays as written
    (it became `../../sub/..\\docs\\plan.schema.json`)."""
    line = "# yaml-language-server: $schema=..\\docs\\plan.schema.json\n"
    assert schema_line(line, (tmp_path / "sub", tmp_path / "a" / "b")) == line
