"""Regenerate src/runplan/export/data/torchtitan_keys.json from a torchtitan release's job_config.py.

    pip download --no-deps torchtitan==0.2.2 -d /tmp/tt && unzip -q /tmp/tt/torchtitan-0.2.2-*.whl -d /tmp/tt/x
    python tests/export/make_torchtitan_keys.py /tmp/tt/x/torchtitan/config/job_config.py 0.2.2

Reads the dataclasses with ``ast`` (no torch import): every ``JobConfig`` section, each of its fields with the
annotation as written and, for ``Literal[...]`` annotations, the allowed values.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[2] / "src" / "runplan" / "export" / "data" / "torchtitan_keys.json"


def _literal(annotation: ast.expr) -> ast.Subscript | None:
    """The ``Literal[...]`` of an annotation, bare or in a union (``Literal[...] | None``)."""
    if isinstance(annotation, ast.Subscript) and ast.unparse(annotation.value) == "Literal":
        return annotation
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return _literal(annotation.left) or _literal(annotation.right)
    return None


def _fields(node: ast.ClassDef) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for item in node.body:
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            ann = ast.unparse(item.annotation)
            entry: dict = {"type": ann}
            literal = _literal(item.annotation)
            if literal is not None:
                elts = literal.slice.elts if isinstance(literal.slice, ast.Tuple) else [literal.slice]
                entry["choices"] = [ast.literal_eval(e) for e in elts]
            out[item.target.id] = entry
    return out


def _add_section(sections: dict[str, dict], classes: dict[str, ast.ClassDef], name: str, cls: str) -> None:
    """Section ``name`` from dataclass ``cls``; nested dataclasses (e.g. [training.dataloader],
    [quantize.linear.float8]) become dotted sections, at any depth."""
    fields = _fields(classes[cls])
    for key, sub in list(fields.items()):
        if sub["type"] in classes:
            _add_section(sections, classes, f"{name}.{key}", sub["type"])
            del fields[key]
    sections[name] = fields


def main(path: str, version: str) -> None:
    tree = ast.parse(Path(path).read_text())
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    sections: dict[str, dict] = {}
    for name, spec in _fields(classes["JobConfig"]).items():
        cls = spec["type"]
        if cls in classes:
            _add_section(sections, classes, name, cls)
    data = {
        "engine": "torchtitan",
        "version": version,
        "source": f"torchtitan {version} wheel from PyPI, torchtitan/config/job_config.py (JobConfig dataclasses)",
        "generated_by": "tests/export/make_torchtitan_keys.py",
        "sections": sections,
    }
    OUT.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n")
    print(f"wrote {OUT}: {len(sections)} sections, {sum(len(v) for v in sections.values())} keys")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
