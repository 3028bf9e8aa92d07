"""Safe YAML loading for plan, law and catalog files: line numbers, duplicate keys, bounded size.

PyYAML's ``safe_load`` silently keeps the last of two duplicate keys and lets anchors expand into huge
documents (the "billion laughs" pattern). We compose the node tree ourselves (C loader when available), refuse
duplicate keys, bound the file size and the alias-expanded node count, and remember the line of every dotted
path so that validation errors can point at ``file:line``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from runplan.errors import SpecError

MAX_FILE_BYTES = 1_000_000
MAX_NODES = 200_000

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _path_text(path: tuple[Any, ...]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


class LoadedYaml:
    """A parsed YAML document plus the line of each dotted path (1-based)."""

    def __init__(self, data: Any, lines: dict[tuple[Any, ...], int], source: str) -> None:
        self.data = data
        self.lines = lines
        self.source = source

    def line_of(self, path: tuple[Any, ...]) -> int | None:
        """Line of ``path`` or of its nearest ancestor that has one."""
        path = tuple(path)
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return self.lines.get((), None)

    def locate(self, error: SpecError) -> SpecError:
        """Give a SpecError raised after validation (``where="cluster.gpu"``) this file's ``file:line``."""
        if error.source or not error.where or error.where.startswith("-"):
            return error
        parts: list[Any] = []
        for token in error.where.replace("]", "").replace("[", ".").split("."):
            if token:
                parts.append(int(token) if token.isdigit() else token)
        return SpecError(error.message, where=error.where, source=self.where(tuple(parts)), hint=error.hint)

    def where(self, path: tuple[Any, ...]) -> str:
        line = self.line_of(path)
        return f"{self.source}:{line}" if line else self.source


def _walk(node: yaml.Node, path: tuple[Any, ...], lines: dict, source: str, budget: list[int]) -> None:
    budget[0] += 1
    if budget[0] > MAX_NODES:
        raise SpecError(
            f"document expands to more than {MAX_NODES:,} nodes (anchors and aliases?)",
            source=source,
            hint="write the values out instead of nesting aliases",
        )
    if isinstance(node, yaml.MappingNode):
        seen: dict[Any, int] = {}
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node.value)
            line = key_node.start_mark.line + 1
            if key == "<<":
                _walk(value_node, path, lines, source, budget)
                continue
            if key in seen:
                raise SpecError(
                    f"duplicate key '{key}' (first on line {seen[key]})",
                    source=f"{source}:{line}",
                    where=_path_text((*path, key)),
                    hint="keep one of them",
                )
            seen[key] = line
            lines.setdefault((*path, key), line)
            _walk(value_node, (*path, key), lines, source, budget)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            lines.setdefault((*path, index), item.start_mark.line + 1)
            _walk(item, (*path, index), lines, source, budget)


def load_yaml_text(text: str, source: str = "<string>") -> LoadedYaml:
    """Parse one YAML document safely; raise SpecError with ``file:line`` on any problem."""
    if len(text.encode("utf-8", errors="replace")) > MAX_FILE_BYTES:
        raise SpecError(
            f"file is larger than {MAX_FILE_BYTES // 1000} kB",
            source=source,
            hint="plan, law and catalog files are small; is this the right file?",
        )
    try:
        loader = _Loader(text)
        try:
            node = loader.get_single_node()
            lines: dict[tuple[Any, ...], int] = {}
            if node is None:
                return LoadedYaml(None, lines, source)
            lines[()] = node.start_mark.line + 1
            _walk(node, (), lines, source, [0])
            data = loader.construct_document(node)
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f"{source}:{mark.line + 1}" if mark else source
        raise SpecError(f"not valid YAML: {error.problem or error.context}", source=where) from None
    except yaml.YAMLError as error:
        raise SpecError(f"not valid YAML: {error}", source=source) from None
    return LoadedYaml(data, lines, source)


def load_yaml_file(path: str | Path) -> LoadedYaml:
    """Read and parse ``path``; a missing or unreadable file is bad input (exit 2)."""
    path = Path(path)
    try:
        size = path.stat().st_size
    except OSError as error:
        raise SpecError(f"cannot read file: {error.strerror}", source=str(path)) from None
    if size > MAX_FILE_BYTES:
        raise SpecError(
            f"file is larger than {MAX_FILE_BYTES // 1000} kB",
            source=str(path),
            hint="plan, law and catalog files are small; is this the right file?",
        )
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise SpecError(f"cannot read file: {error}", source=str(path)) from None
    return load_yaml_text(text, str(path))
