"""The policy layer: refuse unsafe Python before it runs.

RestrictedPython compiles the block: it refuses names and attributes that
start with ``_`` (so no ``__class__``, ``__globals__``, ``__import__``),
``exec`` and ``eval``, and routes attribute access, item access, iteration
and writes through guards at run time. On top of it this module refuses, at
compile time, what RestrictedPython leaves to run time: the builtins that
open doors (``open``, ``compile``, ``globals``, ``vars``...), ``getattr`` and
friends with a computed or private name, ``str.format`` (which reads
attributes through format fields), and imports outside the allowlist.

RestrictedPython does not accept ``async def``. A block may still write
``async def execute(inputs, context)`` as long as it never awaits: the
policy turns it into a plain function. Code that awaits is refused.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Sequence
from typing import Any

from flowcore.sandbox.errors import SandboxUnavailableError

__all__ = ["ALLOWED_IMPORTS", "NETWORK_IMPORTS", "check_policy", "prepare_source"]

ALLOWED_IMPORTS = frozenset(
    {
        "json",
        "math",
        "statistics",
        "collections",
        "itertools",
        "functools",
        "re",
        "datetime",
        "random",
    }
)
"""Modules every Python block may import."""

NETWORK_IMPORTS = frozenset({"httpx"})
"""Modules only blocks that declare ``network=True`` may import."""

_FORBIDDEN_NAMES = frozenset(
    {
        "exec",
        "eval",
        "compile",
        "open",
        "__import__",
        "globals",
        "locals",
        "vars",
        "breakpoint",
        "input",
        "help",
        "memoryview",
        "type",
        "super",
        "object",
        "dir",
        "exit",
        "quit",
        "print_function",
    }
)
_NAME_TAKING = frozenset({"getattr", "setattr", "delattr", "hasattr"})
_ASYNC_NODES = (ast.Await, ast.AsyncFor, ast.AsyncWith)


def _restricted() -> Any:
    try:
        import RestrictedPython
    except ImportError:
        raise SandboxUnavailableError(
            "Python blocks need RestrictedPython for the sandbox's policy layer; "
            "install it with: pip install 'flowcore[sandbox]'"
        ) from None
    return RestrictedPython


def _unasync(tree: ast.Module, problems: list[str]) -> None:
    for i, node in enumerate(tree.body):
        if not isinstance(node, ast.AsyncFunctionDef):
            continue
        awaits = [n for n in ast.walk(node) if isinstance(n, _ASYNC_NODES)]
        if awaits:
            problems.append(
                f"line {awaits[0].lineno}: 'await' is not allowed in a sandboxed block; "
                "compute synchronously (use httpx.Client, not AsyncClient)"
            )
            continue
        plain = ast.FunctionDef(
            name=node.name,
            args=node.args,
            body=node.body,
            decorator_list=node.decorator_list,
            returns=node.returns,
            type_comment=node.type_comment,
        )
        tree.body[i] = ast.copy_location(plain, node)


def _check_node(node: ast.AST, allowed: frozenset[str], problems: list[str]) -> None:
    line = getattr(node, "lineno", "?")
    if isinstance(node, ast.Name) and node.id in _FORBIDDEN_NAMES:
        problems.append(f"line {line}: {node.id!r} is not available in a sandboxed block")
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        if node.func.id in _NAME_TAKING and len(node.args) >= 2:
            name = node.args[1]
            if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
                problems.append(
                    f"line {line}: {node.func.id}() with a computed attribute name is not "
                    "allowed; write the attribute out (obj.name)"
                )
            elif name.value.startswith("_"):
                problems.append(f"line {line}: {node.func.id}() of a private name is not allowed")
    elif isinstance(node, ast.Attribute) and node.attr in ("format", "format_map"):
        problems.append(
            f"line {line}: str.{node.attr}() can read attributes through format fields; "
            "use an f-string"
        )
    elif isinstance(node, ast.Import | ast.ImportFrom):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                problems.append(f"line {line}: relative imports are not allowed")
                return
            modules = [node.module or ""]
            if any(alias.name == "*" for alias in node.names):
                problems.append(f"line {line}: 'from {node.module} import *' is not allowed")
        else:
            modules = [alias.name for alias in node.names]
        for module in modules:
            if module.split(".")[0] not in allowed:
                extra = (
                    " (httpx needs the block to declare network=True)"
                    if module.split(".")[0] in NETWORK_IMPORTS
                    else ""
                )
                problems.append(
                    f"line {line}: import of {module!r} is not allowed{extra}; allowed: "
                    f"{', '.join(sorted(allowed))}"
                )
    elif isinstance(node, ast.Global | ast.Nonlocal):
        problems.append(f"line {line}: global and nonlocal statements are not allowed")


def prepare_source(source: str, *, network: bool = False) -> tuple[ast.Module, list[str]]:
    """Parse ``source`` and apply the policy; returns the tree to compile and the problems.

    Example:
        >>> tree, problems = prepare_source("import os\\ndef execute(i, c):\\n    return {}")
        >>> problems
        ["line 1: import of 'os' is not allowed; allowed: collections, datetime, functools, \
itertools, json, math, random, re, statistics"]
    """
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return ast.Module(body=[], type_ignores=[]), [f"line {exc.lineno}: {exc.msg}"]
    problems: list[str] = []
    _unasync(tree, problems)
    allowed = ALLOWED_IMPORTS | NETWORK_IMPORTS if network else ALLOWED_IMPORTS
    for node in ast.walk(tree):
        _check_node(node, allowed, problems)
    if not any(isinstance(n, ast.FunctionDef) and n.name == "execute" for n in tree.body):
        problems.append("the block must define 'def execute(inputs, context)' at top level")
    # RestrictedPython rewrites the tree it is given; keep ours as the user wrote it.
    result = _restricted().compile_restricted_exec(copy.deepcopy(tree))
    problems.extend(_lower(e) for e in result.errors)
    return tree, _unique(problems)


def _lower(error: str) -> str:
    return error[0].lower() + error[1:] if error.startswith("Line ") else error


def _unique(problems: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(problems))


def check_policy(source: str, *, network: bool = False) -> list[str]:
    """Every reason the policy refuses ``source``; empty when it may run.

    Each problem names the line, what is not allowed, and what to do instead.

    Example:
        >>> check_policy("def execute(inputs, context):\\n    return {'n': len(inputs)}")
        []
        >>> check_policy("def execute(i, c):\\n    return ().__class__")[0]
        'line 2: "__class__" is an invalid attribute name because it starts with "_".'
    """
    return prepare_source(source, network=network)[1]
