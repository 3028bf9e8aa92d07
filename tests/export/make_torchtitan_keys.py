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


def _fields(node: ast.ClassDef) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for item in node.body:
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            ann = ast.unparse(item.annotation)
            entry: dict = {"type": ann}
            if isinstance(item.annotation, ast.Subscript) and ast.unparse(item.annotation.value) == "Literal":
                elts = (
                    item.annotation.slice.elts
                    if isinstance(item.annotation.slice, ast.Tuple)
                    else [item.annotation.slice]
                )
                entry["choices"] = [ast.literal_eval(e) for e in elts]
            out[item.target.id] = entry
    return out


def main(path: str, version: str) -> None:
    tree = ast.parse(Path(path).read_text())
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    sections: dict[str, dict] = {}
    for name, spec in _fields(classes["JobConfig"]).items():
        cls = spec["type"]
        if cls in classes:
            fields = _fields(classes[cls])
            # nested dataclasses (e.g. [training.dataloader]) become dotted sections
            for key, sub in list(fields.items()):
                if sub["type"] in classes:
                    sections[f"{name}.{key}"] = _fields(classes[sub["type"]])
                    del fields[key]
            sections[name] = fields
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
