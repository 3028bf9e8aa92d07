"""`runplan schema`: print the plan file's JSON Schema."""

from __future__ import annotations

from runplan.cli.common import handle_errors, print_json


@handle_errors
def schema() -> None:
    """Print the JSON Schema of plan files (for editors: yaml-language-server, VS Code, JetBrains)."""
    from runplan.spec import plan_json_schema

    print_json(plan_json_schema())


def register(app) -> None:
    app.command(name="schema")(schema)
