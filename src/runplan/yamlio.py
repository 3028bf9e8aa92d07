"""Safe YAML loading for plan, law and catalog files: line numbers, duplicate keys, bounded size.

PyYAML's ``safe_load`` silently keeps the last of two duplicate keys and lets anchors expand into huge
documents (the "billion laughs" pattern). We compose the node tree ourselves (C loader when available), refuse
duplicate keys, bound the file size and the alias-expanded node count, and remember the line of every dotted
path so that validation errors can point at ``file:line``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from runplan.errors import SpecError

MAX_FILE_BYTES = 1_000_000
MAX_NODES = 200_000
#: Deepest nesting accepted: the shipped catalogs and plan files nest at most 5 levels.
MAX_DEPTH = 64

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _path_text(path: tuple[Any, ...]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


class LoadedYaml:
    """A parsed YAML document plus the line of each dotted path (1-based), and the text it was read from
    (``runplan plan -f yaml`` keeps the file's editor schema line, runplan.resolved.schema_line)."""

    def __init__(self, data: Any, lines: dict[tuple[Any, ...], int], source: str, text: str = "") -> None:
        self.data = data
        self.lines = lines
        self.source = source
        self.text = text

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


def _compose(loader: Any, source: str) -> yaml.Node | None:
    """The node tree of the single document in ``loader``'s event stream, built without recursion.

    PyYAML's composer recurses once per nesting level (RecursionError near 1,000 levels) and lets an alias
    point at the collection that contains it (``a: &a [*a]``), a cycle every later walk loops on. Here the
    tree is built from libyaml's flat event stream with an explicit stack: nesting beyond MAX_DEPTH and an
    alias to a collection that is still open are refused, one line each.
    """
    anchors: dict[str, yaml.Node] = {}
    open_anchors: set[str] = set()
    stack: list[tuple[yaml.Node, list[Any], str | None]] = []
    root: yaml.Node | None = None
    loader.get_event()  # StreamStart
    if loader.check_event(yaml.StreamEndEvent):
        return None
    loader.get_event()  # DocumentStart
    while root is None:
        event = loader.get_event()
        node: yaml.Node | None = None
        if isinstance(event, yaml.AliasEvent):
            node = _alias(event, anchors, open_anchors, source)
        elif isinstance(event, yaml.ScalarEvent):
            tag = (
                event.tag
                if event.tag not in (None, "!")
                else loader.resolve(yaml.ScalarNode, event.value, event.implicit)
            )
            node = yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, style=event.style)
            _anchor(event.anchor, node, anchors)
        elif isinstance(event, yaml.CollectionStartEvent):
            kind = yaml.SequenceNode if isinstance(event, yaml.SequenceStartEvent) else yaml.MappingNode
            tag = event.tag if event.tag not in (None, "!") else loader.resolve(kind, None, event.implicit)
            opened = kind(tag, [], event.start_mark, None, flow_style=event.flow_style)
            if len(stack) >= MAX_DEPTH:
                raise SpecError(
                    f"nested more than {MAX_DEPTH} levels deep (line {event.start_mark.line + 1})",
                    source=source,
                    hint="plan, law and catalog files nest a few levels; is this the right file?",
                )
            _anchor(event.anchor, opened, anchors)
            if event.anchor is not None:
                open_anchors.add(event.anchor)
            stack.append((opened, [], event.anchor))
            continue
        else:  # CollectionEnd
            node, items, anchor = stack.pop()
            node.end_mark = event.end_mark
            node.value = (
                list(zip(items[::2], items[1::2], strict=True))
                if isinstance(node, yaml.MappingNode)
                else items
            )
            open_anchors.discard(anchor or "")
        if stack:
            stack[-1][1].append(node)
        else:
            root = node
    loader.get_event()  # DocumentEnd
    if not loader.check_event(yaml.StreamEndEvent):
        event = loader.get_event()
        raise SpecError(
            f"more than one YAML document (a second starts on line {event.start_mark.line + 1})",
            source=source,
            hint="keep one document: remove the '---' line and what follows",
        )
    return root


def _anchor(name: str | None, node: yaml.Node, anchors: dict[str, yaml.Node]) -> None:
    if name is not None:
        anchors[name] = node


def _alias(event: Any, anchors: dict[str, yaml.Node], open_anchors: set[str], source: str) -> yaml.Node:
    line = event.start_mark.line + 1
    if event.anchor in open_anchors:
        raise SpecError(
            f"alias '*{event.anchor}' refers to the collection that contains it (a recursive alias)",
            source=f"{source}:{line}",
            hint="write the value out instead",
        )
    if event.anchor not in anchors:
        raise SpecError(
            f"alias '*{event.anchor}' has no anchor '&{event.anchor}' before it",
            source=f"{source}:{line}",
            hint="define the anchor first",
        )
    return anchors[event.anchor]


_STR_TAG = "tag:yaml.org,2002:str"
_TAG_KINDS = {
    "tag:yaml.org,2002:int": "number",
    "tag:yaml.org,2002:float": "number",
    "tag:yaml.org,2002:bool": "boolean",
    "tag:yaml.org,2002:null": "null",
    "tag:yaml.org,2002:timestamp": "date",
}


def _walk(root: yaml.Node, lines: dict, source: str) -> None:
    """Refuse duplicate keys and record each path's line, iteratively, counting alias-expanded nodes."""
    pending: list[tuple[yaml.Node, tuple[Any, ...]]] = [(root, ())]
    visited = 0
    while pending:
        node, path = pending.pop()
        visited += 1
        if visited > MAX_NODES:
            raise SpecError(
                f"document expands to more than {MAX_NODES:,} nodes (anchors and aliases?)",
                source=source,
                hint="write the values out instead of nesting aliases",
            )
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, int] = {}
            children: list[tuple[yaml.Node, tuple[Any, ...]]] = []
            for key_node, value_node in node.value:
                key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node.value)
                line = key_node.start_mark.line + 1
                if key == "<<":
                    children.append((value_node, path))
                    continue
                if not (isinstance(key_node, yaml.ScalarNode) and key_node.tag == _STR_TAG):
                    # every key runplan reads is a name; YAML 1.1 reads `1:`, `on:`, `no:` or `~:` as a number,
                    # a boolean or null, which pydantic then reports with no line
                    raise SpecError(
                        f"key {key_node.value if isinstance(key_node, yaml.ScalarNode) else '(a collection)'!s} "
                        f"is read as a {_TAG_KINDS.get(key_node.tag, 'non-text value')}, not a name",
                        source=f"{source}:{line}",
                        where=_path_text(path) or None,
                        hint="keys are names: quote it if it is meant as text",
                    )
                if key in seen:
                    raise SpecError(
                        f"duplicate key '{key}' (first on line {seen[key]})",
                        source=f"{source}:{line}",
                        where=_path_text((*path, key)),
                        hint="keep one of them",
                    )
                seen[key] = line
                lines.setdefault((*path, key), line)
                children.append((value_node, (*path, key)))
            pending.extend(reversed(children))
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                lines.setdefault((*path, index), item.start_mark.line + 1)
            pending.extend((item, (*path, index)) for index, item in reversed(list(enumerate(node.value))))


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
            node = _compose(loader, source)
            lines: dict[tuple[Any, ...], int] = {}
            if node is None:
                return LoadedYaml(None, lines, source, text)
            lines[()] = node.start_mark.line + 1
            _walk(node, lines, source)
            data = loader.construct_document(node)
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as error:
        if (opened := _unclosed(error, text)) is not None:
            line, what, hint = opened
            key = _key_at(text, line)
            raise SpecError(
                f"not valid YAML: {what}", source=f"{source}:{line + 1}", where=key, hint=hint
            ) from None
        mark = error.problem_mark or error.context_mark
        where = f"{source}:{mark.line + 1}" if mark else source
        raise SpecError(
            f"not valid YAML: {error.problem or error.context}", source=where, hint=_yaml_hint(text, mark)
        ) from None
    except yaml.YAMLError as error:
        raise SpecError(f"not valid YAML: {error}", source=source) from None
    return LoadedYaml(data, lines, source, text)


#: What PyYAML's context says was left open (it notices a line later, or at the end of the file), and the fix.
_OPENERS = {
    "while parsing a flow sequence": (
        "the '[' on this line is not closed",
        "close it with ']' on the same line, or write the list one '- item' per line",
    ),
    "while parsing a flow mapping": (
        "the '{' on this line is not closed",
        "close it with '}' on the same line, or write the mapping one 'key: value' per line",
    ),
    # PyYAML's own words kept ("found unexpected end of stream"), said at the quote's line and key
    "while scanning a quoted scalar": ("", "a {quote} is not closed"),
}


def _unclosed(error: yaml.MarkedYAMLError, text: str) -> tuple[int, str, str] | None:
    """(0-based line, what, fix) for a bracket, brace or quote left open: reported where it was opened, not
    where PyYAML gave up (`seq_len: [4096` on line 7 was said at line 8, an open quote past the file's end)."""
    mark = error.context_mark
    if error.context not in _OPENERS or mark is None:
        return None
    what, hint = _OPENERS[error.context]
    lines = text.splitlines()
    line = lines[mark.line] if mark.line < len(lines) else ""
    quote = "single quote" if line[mark.column : mark.column + 1] == "'" else "double quote"
    return mark.line, what or str(error.problem), hint.replace("{quote}", quote)


def _key_at(text: str, index: int) -> str | None:
    """The key path of block-style line ``index`` (``training.seq_len``; ``gpus[1].family`` inside a list's second
    item, written as runplan's other errors write a path), read from the indentation of the lines above it; None
    where the line is neither ``key: ...`` nor a list item, or a tab indents it."""
    lines = text.splitlines()
    parts: list[str] = []
    indent = None  # the indentation of the outermost part found so far
    row = index
    while row >= 0:
        depth, dash, key = _block_line(lines[row])
        if depth < 0:
            return None
        if key is not None and (indent is None or depth + dash < indent):
            parts.append(key)
            indent = depth + dash
        elif key is None and not dash and indent is None:
            return None  # the line itself is no key (a continuation, a flow collection's inside)
        if dash and (indent is None or depth < indent):
            row, count = _item_index(lines, row, depth)
            parts.append(f"[{count}]")
            indent = depth + 1  # the list's key may sit flush with its items ("gpus:" then "- name: a")
            continue
        if indent == 0:
            break
        row -= 1
    if indent != 0:  # no top-level key above it
        return None
    return ".".join(reversed(parts)).replace(".[", "[")


def _block_line(raw: str) -> tuple[int, int, str | None]:
    """(indentation, width of a list item's ``- `` or 0, the line's key or None) of a block-style line;
    indentation -1 for a line a tab indents. A blank or comment line is (a large indentation, 0, None)."""
    body = raw.lstrip(" ")
    depth = len(raw) - len(body)
    if body.startswith("\t"):
        return -1, 0, None
    if not body.strip() or body.startswith("#"):
        return 1 << 30, 0, None
    dash = re.match(r"-(?:[ ]+|$)", body)
    rest = body[dash.end() :] if dash else body
    match = re.match(r"([A-Za-z_][\w.-]*)\s*:(\s|$)", rest)
    return depth, dash.end() if dash else 0, match.group(1) if match else None


def _item_index(lines: list[str], row: int, depth: int) -> tuple[int, int]:
    """(the row above the list whose item starts at ``row``, 0-based index of that item): the items ``- `` at
    ``depth`` counted up to the first line less indented, or the list's key flush with its items."""
    count = 0
    for above in range(row - 1, -1, -1):
        at, dash, _ = _block_line(lines[above])
        if at < depth or (at == depth and not dash):
            return above, count
        count += at == depth and bool(dash)
    return -1, count


def _yaml_hint(text: str, mark: Any) -> str:
    """How to fix the line PyYAML stopped at: its own words leave out the usual causes (a tab, which it says
    "cannot start any token", drops the character; an unclosed quote reads as "end of stream")."""
    line = text.splitlines()[mark.line] if mark is not None and mark.line < len(text.splitlines()) else ""
    if "\t" in line[: len(line) - len(line.lstrip())] or (
        mark is not None and line[mark.column : mark.column + 1] == "\t"
    ):
        return "indent with spaces: YAML forbids tabs there"
    if mark is not None and mark.line >= len(text.splitlines()) - 1 and text.count('"') % 2:
        return "a double quote is not closed"
    return "check the indentation and quotes on that line and the one before"


def load_yaml_file(path: str | Path) -> LoadedYaml:
    """Read (at most MAX_FILE_BYTES, regular files only: :func:`runplan.fileio.read_text`) and parse ``path``;
    a missing, unreadable or oversized file is bad input (exit 2)."""
    from runplan.fileio import read_text

    return load_yaml_text(read_text(path, MAX_FILE_BYTES), str(path))
