"""Issue 11's code-shape rule, kept by a test: no function in src/ is longer than 80 lines.

A function that long does several jobs (the issue found 270-line ops stages); split it into helpers that each
return one value. Data tables are module-level constants, not functions, so they are not counted.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "runplan"
MAX_FUNCTION_LINES = 80


def function_lengths(path: Path) -> dict[str, int]:
    """Each function (nested ones too) of ``path`` by ``line name``, with its length in lines."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        f"{node.lineno} {node.name}": node.end_lineno - node.lineno + 1
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno is not None
    }


def test_the_count_includes_signature_body_and_nested_functions(tmp_path):
    source = tmp_path / "long.py"
    source.write_text("def outer(\n    a,\n):\n    def inner():\n        return 1\n" + "    a += 1\n" * 80)
    assert function_lengths(source) == {"1 outer": 85, "4 inner": 2}


def test_no_function_in_src_is_longer_than_80_lines():
    too_long = [
        f"{path.relative_to(SRC)}:{where} ({lines} lines)"
        for path in sorted(SRC.rglob("*.py"))
        for where, lines in function_lengths(path).items()
        if lines > MAX_FUNCTION_LINES
    ]
    assert not too_long, too_long
