"""The command-line flag names of a Megatron-LM commit, read from its source without importing it (no torch).

Megatron-LM's ``add_megatron_arguments`` (megatron/training/arguments.py) declares flags two ways, and both are
read here from the commit's files with ``git show``:

* ``add_argument('--flag', ...)`` calls in arguments.py: every string starting with ``-`` among a call's
  positional arguments;
* ``ArgumentGroupFactory(ConfigClass, exclude=[...])`` (megatron/training/argument_utils.py @ d98e8a64): one flag
  per dataclass field of the class and its bases, except excluded and ``init=False`` fields, named
  ``--field-name``; a bool field (or Optional bool) whose default is not ``False`` is a store_false switch named
  ``--no-field-name`` and ``--disable-field-name``; ``metadata={"argparse_meta": {"arg_names": [...]}}`` replaces
  the names.

(``action=argparse.BooleanOptionalAction`` adds ``--no-flag``.) At d98e8a64, 000c4ac2, core_v0.17.0 and
core_v0.18.0 this gives the option strings of the parser ``add_megatron_arguments`` builds when imported (torch
2.13 CPU; checked 2026-12-03), but for argparse's own ``-h``/``--help`` and, from core_v0.17.0, the two
``--kitchen-*`` flags, which Megatron adds only when its optional kitchen package imports. The repository is a git directory
(a bare mirror works): ``MEGATRON_LM_GIT``, else ``../.mirror/NVIDIA+Megatron-LM/repo`` beside this checkout.
"""

from __future__ import annotations

import ast
import os
import subprocess
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ARGUMENTS = "megatron/training/arguments.py"


def megatron_git() -> Path:
    """Where the Megatron-LM git directory is looked for."""
    return Path(os.environ.get("MEGATRON_LM_GIT", REPO.parent / ".mirror" / "NVIDIA+Megatron-LM" / "repo"))


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(megatron_git()), *args], capture_output=True, text=True, check=True
    ).stdout


def has_commit(commit: str) -> bool:
    """Whether the git directory holds ``commit``'s arguments.py."""
    try:
        _git("cat-file", "-e", f"{commit}:{ARGUMENTS}")
    except (subprocess.CalledProcessError, FileNotFoundError):
        return False
    return True


@cache
def _python_files(commit: str) -> tuple[str, ...]:
    names = _git("ls-tree", "-r", "--name-only", commit, "--", "megatron").split()
    return tuple(name for name in names if name.endswith(".py"))


@cache
def _source(commit: str, path: str) -> ast.Module:
    return ast.parse(_git("show", f"{commit}:{path}"))


@cache
def _class(commit: str, name: str) -> ast.ClassDef:
    """The class ``name`` defined at module level somewhere under megatron/ (the first file that defines it)."""
    for line in _git("grep", "-l", f"^class {name}\\b", commit, "--", "megatron").splitlines():
        path = line.split(":", 1)[1]
        for node in _source(commit, path).body:
            if isinstance(node, ast.ClassDef) and node.name == name:
                return node
    raise LookupError(f"class {name} not found at {commit}")


def _is_bool(annotation: ast.expr | None) -> bool:
    """bool, Optional[bool] or bool | None."""
    if annotation is None:
        return False
    text = ast.unparse(annotation).replace(" ", "")
    return text in ("bool", "Optional[bool]", "bool|None", "None|bool", "typing.Optional[bool]")


def _field_call(value: ast.expr | None) -> ast.Call | None:
    if isinstance(value, ast.Call) and ast.unparse(value.func).split(".")[-1] == "field":
        return value
    return None


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _field_names(node: ast.AnnAssign) -> list[str]:
    """The flags ArgumentGroupFactory makes of one dataclass field (argument_utils.py @ d98e8a64)."""
    assert isinstance(node.target, ast.Name)
    name = node.target.id
    default: ast.expr | None = node.value
    call = _field_call(node.value)
    if call is not None:
        init = _keyword(call, "init")
        if isinstance(init, ast.Constant) and init.value is False:
            return []
        metadata = _keyword(call, "metadata")
        if isinstance(metadata, ast.Dict):
            meta = dict(zip([ast.literal_eval(k) for k in metadata.keys if k], metadata.values, strict=False))
            argparse_meta = meta.get("argparse_meta")
            if isinstance(argparse_meta, ast.Dict):
                inner = {
                    ast.literal_eval(k): v
                    for k, v in zip(argparse_meta.keys, argparse_meta.values, strict=True)
                    if k
                }
                if "arg_names" in inner:
                    return list(ast.literal_eval(inner["arg_names"]))
        default = _keyword(call, "default")
    flag = name.replace("_", "-")
    if _is_bool(node.annotation) and not (isinstance(default, ast.Constant) and default.value is False):
        return [f"--no-{flag}", f"--disable-{flag}"]
    return [f"--{flag}"]


def _dataclass_flags(commit: str, name: str, exclude: set[str]) -> set[str]:
    cls = _class(commit, name)
    flags: set[str] = set()
    for base in cls.bases:
        base_name = ast.unparse(base).split(".")[-1]
        if base_name not in ("object", "ABC", "Generic"):
            flags |= _dataclass_flags(commit, base_name, exclude)
    for node in cls.body:
        if not isinstance(node, ast.AnnAssign) or not isinstance(node.target, ast.Name):
            continue
        if node.target.id in exclude or ast.unparse(node.annotation).startswith(
            ("ClassVar", "typing.ClassVar")
        ):
            continue
        flags |= set(_field_names(node))
    return flags


def _list_assignments(function: ast.AST) -> dict[str, list[str]]:
    """Names bound to a list of strings inside ``function`` (an ``exclude = [...]`` passed to a factory)."""
    found: dict[str, list[str]] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.List):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    found[target.id] = [e.value for e in node.value.elts if isinstance(e, ast.Constant)]
    return found


@cache
def flag_names(commit: str) -> frozenset[str]:
    """Every option string of ``add_megatron_arguments`` at ``commit`` (see the module docstring)."""
    flags: set[str] = set()
    for function in ast.walk(_source(commit, ARGUMENTS)):
        if not isinstance(function, ast.FunctionDef):
            continue
        lists = _list_assignments(function)
        for node in ast.walk(function):
            if not isinstance(node, ast.Call):
                continue
            callee = ast.unparse(node.func).split(".")[-1]
            if callee == "add_argument":
                names = {
                    a.value for a in node.args if isinstance(a, ast.Constant) and str(a.value).startswith("-")
                }
                flags |= names
                action = _keyword(node, "action")
                if action is not None and ast.unparse(action).endswith("BooleanOptionalAction"):
                    flags |= {f"--no-{name[2:]}" for name in names if name.startswith("--")}
            elif callee == "ArgumentGroupFactory" and node.args:
                exclude_node = _keyword(node, "exclude")
                if isinstance(exclude_node, ast.Name):
                    exclude = set(lists.get(exclude_node.id, []))
                elif exclude_node is not None:
                    exclude = set(ast.literal_eval(exclude_node))
                else:
                    exclude = set()
                flags |= _dataclass_flags(commit, ast.unparse(node.args[0]).split(".")[-1], exclude)
    return frozenset(flags)
