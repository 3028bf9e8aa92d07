"""The resolved plan (``runplan plan --format yaml``) and its drift check (``runplan check``).

A resolved plan file is the user's plan file plus a ``resolved:`` section holding every derived number. Since it
is still a valid plan file, ``runplan check`` can recompute it and report every derived number that moved beyond
a relative tolerance, as a diff: a team's CI then notices when an input, a catalog entry or runplan itself
changes the plan.
"""

from __future__ import annotations

import math
from typing import Any

import yaml

from runplan.plan import RunPlan

SCHEMA_COMMENT = "# yaml-language-server: $schema=https://runplan.dev/schema/plan-v1.json\n"
#: Keys whose values are timings or prose, not derived numbers: never diffed.
VOLATILE_KEYS = frozenset({"search_seconds", "notes", "why", "inputs"})


def resolved_section(plan: RunPlan) -> dict[str, Any]:
    """Every derived number of ``plan`` (its JSON form without ``inputs``)."""
    data = plan.model_dump(mode="json")
    data.pop("inputs", None)
    return data


def resolved_document(raw_inputs: dict[str, Any], plan: RunPlan) -> str:
    """YAML text: the plan file's own keys as written, then ``resolved:``."""
    document = {k: v for k, v in raw_inputs.items() if k != "resolved"}
    document["resolved"] = resolved_section(plan)
    return SCHEMA_COMMENT + yaml.safe_dump(document, sort_keys=False, width=120, allow_unicode=True)


def _walk(path: str, old: Any, new: Any, rtol: float, out: list[str]) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        for key in old.keys() | new.keys():
            if key in VOLATILE_KEYS:
                continue
            sub = f"{path}.{key}" if path else str(key)
            if key not in new:
                out.append(f"{sub}: {_short(old[key])} → (gone)")
            elif key not in old:
                out.append(f"{sub}: (new) → {_short(new[key])}")
            else:
                _walk(sub, old[key], new[key], rtol, out)
        return
    if isinstance(old, list) and isinstance(new, list):
        if len(old) != len(new):
            out.append(f"{path}: {len(old)} items → {len(new)} items")
        for index, (a, b) in enumerate(zip(old, new, strict=False)):
            _walk(f"{path}[{index}]", a, b, rtol, out)
        return
    if _is_number(old) and _is_number(new):
        a, b = float(old), float(new)
        if not math.isclose(a, b, rel_tol=rtol, abs_tol=1e-12):
            change = f" ({(b - a) / abs(a):+.2%})" if a else ""
            out.append(f"{path}: {_short(old)} → {_short(new)}{change}")
        return
    if old != new:
        out.append(f"{path}: {_short(old)} → {_short(new)}")


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _short(value: Any) -> str:
    if _is_number(value):
        return f"{value:.6g}"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def diff_resolved(old: dict[str, Any], new: dict[str, Any], rtol: float = 1e-4) -> list[str]:
    """Lines ``path: old → new (+x%)`` for every derived value that moved beyond ``rtol``, sorted by path."""
    out: list[str] = []
    _walk("", old, new, rtol, out)
    return sorted(out)
