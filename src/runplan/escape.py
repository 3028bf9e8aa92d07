"""One escaping layer per generated format, and the check a run name passes at the plan-file boundary.

A plan's ``name:`` (and a user catalog's model names, warnings that quote them) reach generated files: a bash
launch script, a TOML job config, a YAML starter plan, a file name. Each format gets its text through exactly one
function here, so a newline, quote, ``$``, NUL, ESC or ``../`` in a name is data in every output, never syntax:

- :func:`shell_word`: a single bash word (POSIX single quotes, ``shlex.quote``);
- :func:`comment_text`: the text of a ``#`` comment line in bash, TOML or YAML: one line, printable;
- :func:`toml_string`: a TOML basic string (TOML 1.0 §String: ``\\``, ``"``, and control characters escaped);
- :func:`yaml_scalar`: a YAML flow scalar that reads back as the same string (PyYAML's own emitter);
- :func:`file_slug`: one file-name component, no separators, no leading dot, bounded.
"""

from __future__ import annotations

import re
import shlex

#: Longest run name accepted: long enough for "llama-3.1-405b-16k-h100-ablation-warmup-2k", short enough to
#: stay one line in a report title and, with the longest export suffix, well under a file name's 255 bytes.
MAX_RUN_NAME_CHARS = 100
#: Longest file-name stem :func:`file_slug` returns (the export suffix ".torchtitan.toml" adds 16 bytes).
MAX_SLUG_CHARS = 100

_SLUG_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]+")


def run_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a run name (one line), or None: it must be printable, one line, and bounded."""
    if not name.strip():
        return "is empty"
    if len(name) > MAX_RUN_NAME_CHARS:
        return f"is {len(name)} characters; at most {MAX_RUN_NAME_CHARS} are allowed (it titles reports and files)"
    bad = next((c for c in name if not c.isprintable()), None)
    if bad is not None:
        return f"contains the unprintable character {bad!a}; a run name is one line of printable text"
    return None


def text_problem(text: str) -> str | None:
    """Why free text (a description) cannot be shown, or None: line breaks and tabs are fine, other control
    characters (NUL, ESC: terminal escape sequences) are not."""
    bad = next((c for c in text if not c.isprintable() and c not in "\n\t"), None)
    return None if bad is None else f"contains the control character {bad!a}"


#: Characters that would turn a run name into Markdown or HTML (code spans, emphasis, links, tags, table cells)
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>|])")


def markdown_text(text: str) -> str:
    """``text`` shown literally in Markdown: each special character backslash-escaped (CommonMark §2.4), so a
    run name like ``<b>x`` or ``a_b_c`` reads as written, not as a tag or emphasis."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


def _escape_char(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else (f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")


def comment_text(text: str) -> str:
    """``text`` as the body of one comment line: a backslash doubled, each unprintable character (newline,
    NUL, ESC) written as a Python-style ``\\xNN`` escape, so the comment cannot end early and reads back."""
    return "".join("\\\\" if c == "\\" else (c if c.isprintable() else _escape_char(c)) for c in text)


def shell_word(text: str) -> str:
    """``text`` as one bash word: single-quoted unless it is plain (``shlex.quote``, POSIX 2.2.2)."""
    return shlex.quote(text)


_TOML_ESCAPES = {"\\": "\\\\", '"': '\\"', "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def toml_string(text: str) -> str:
    """``text`` as a TOML basic string: TOML 1.0 requires ``\\``, ``"`` and the control characters U+0000-U+001F
    and U+007F escaped; the short forms where TOML has one, else ``\\uXXXX``."""
    out = []
    for char in text:
        if char in _TOML_ESCAPES:
            out.append(_TOML_ESCAPES[char])
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def yaml_scalar(text: str) -> str:
    """``text`` as a YAML scalar on one line that reads back as the same string (quoted when it must be)."""
    import yaml

    if all(c.isprintable() for c in text):
        dumped = yaml.safe_dump(text, default_flow_style=True, allow_unicode=True, width=1 << 30)
    else:  # double quotes: the only YAML style with escapes, so a line break stays on this line
        dumped = yaml.safe_dump(text, default_style='"', allow_unicode=False, width=1 << 30)
    return dumped.removesuffix("\n...\n").removesuffix("\n")


def file_slug(name: str, fallback: str = "runplan") -> str:
    """``name`` as one file-name component: runs of characters outside ``A-Za-z0-9._+-`` become ``-``, no
    leading dot or dash (no hidden file, no option), at most MAX_SLUG_CHARS; ``fallback`` when nothing is left."""
    slug = _SLUG_UNSAFE.sub("-", name).lstrip(".-")[:MAX_SLUG_CHARS].rstrip(".-")
    return slug or fallback


__all__ = [
    "MAX_RUN_NAME_CHARS",
    "comment_text",
    "file_slug",
    "run_name_problem",
    "shell_word",
    "text_problem",
    "toml_string",
    "yaml_scalar",
]
