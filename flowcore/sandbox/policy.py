"""The policy layer: refuse unsafe Python before it runs.

A block is compiled with RestrictedPython through
:func:`flowcore.sandbox.guards.compile_block`, the same call the worker in
the jail makes. It refuses names and attributes that start with ``_`` (no
``__class__``, ``__globals__``, ``__import__``), the introspection
attributes of frames, code, generators and tracebacks (``gi_frame``,
``f_globals``...), ``exec`` and ``eval``, and routes attribute access, item
access, iteration and writes through the run-time guards of
:mod:`flowcore.sandbox.guards`. ``async def``, ``await``, ``async for`` and
``async with`` are accepted under the same guards (async comprehensions are
not).

On top of it this module refuses at compile time what would otherwise only
fail at run time: the builtins that open doors (``open``, ``compile``,
``globals``, ``vars``, ``type``...), ``getattr`` and friends with a computed
or private name, ``str.format`` and ``format_map`` (they read attributes
through format fields), ``global``/``nonlocal``, class keyword arguments,
imports outside :data:`ALLOWED_IMPORTS`, and any name of an imported module
that is not on its allowlist (``functools.update_wrapper``, ``os.system``,
``json.codecs``). The allowlist is :data:`flowcore.sandbox.guards.MODULE_ATTRIBUTES`;
``os`` offers only ``environ`` (read-only) and ``getenv``.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterable, Sequence

from flowcore.sandbox.errors import SandboxUnavailableError
from flowcore.sandbox.guards import MODULE_ATTRIBUTES, NETWORK_MODULES, compile_block

__all__ = ["ALLOWED_IMPORTS", "NETWORK_IMPORTS", "check_policy", "prepare_source"]

ALLOWED_IMPORTS = frozenset(MODULE_ATTRIBUTES) - NETWORK_MODULES
"""Modules every Python block may import (each limited to its allowlisted names)."""

NETWORK_IMPORTS = NETWORK_MODULES
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
_TOO_DEEP = (
    "the code nests too deeply for the policy to check it (a very long chain of "
    "operators or deeply nested expressions); split it into smaller statements"
)
_NAME_TAKING = frozenset({"getattr", "setattr", "delattr", "hasattr"})
_FORMATTERS = frozenset({"format", "format_map"})


def _module_aliases(tree: ast.Module) -> dict[str, str]:
    """Names bound only by ``import module [as name]``, mapped to their module."""
    aliases: dict[str, str] = {}
    rebound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                aliases[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            rebound.add(node.id)
        elif isinstance(node, ast.arg):
            rebound.add(node.arg)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            rebound.add(node.name)
        elif isinstance(node, ast.ImportFrom):
            rebound.update(alias.asname or alias.name for alias in node.names)
    return {name: module for name, module in aliases.items() if name not in rebound}


def _missing_names(module: str, names: Iterable[str], line: object) -> list[str]:
    known = MODULE_ATTRIBUTES.get(module)
    if known is None:
        return []  # the import itself is refused
    return [
        f"line {line}: {module}.{name} is not available in a sandboxed block; "
        f"{module} offers: {', '.join(sorted(known))}"
        for name in names
        if name not in known
    ]


def _check_import(node: ast.Import | ast.ImportFrom, allowed: frozenset[str]) -> list[str]:
    line = node.lineno
    if isinstance(node, ast.ImportFrom):
        if node.level:
            return [f"line {line}: relative imports are not allowed"]
        modules = [node.module or ""]
    else:
        modules = [alias.name for alias in node.names]
    problems = []
    for module in modules:
        if module not in allowed:
            extra = (
                " (httpx needs the block to declare network=True)"
                if module.split(".")[0] in NETWORK_IMPORTS
                else ""
            )
            problems.append(
                f"line {line}: import of {module!r} is not allowed{extra}; allowed: "
                f"{', '.join(sorted(allowed))}"
            )
    if isinstance(node, ast.ImportFrom) and not problems:
        if any(alias.name == "*" for alias in node.names):
            return [f"line {line}: 'from {node.module} import *' is not allowed"]
        problems += _missing_names(modules[0], (a.name for a in node.names), line)
    return problems


def _check_call(node: ast.Call, aliases: dict[str, str]) -> list[str]:
    if not (isinstance(node.func, ast.Name) and node.func.id in _NAME_TAKING):
        return []
    if len(node.args) < 2:
        return []
    line = node.lineno
    name = node.args[1]
    if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
        return [
            f"line {line}: {node.func.id}() with a computed attribute name is not "
            "allowed; write the attribute out (obj.name)"
        ]
    if name.value.startswith("_"):
        return [f"line {line}: {node.func.id}() of a private name is not allowed"]
    if name.value in _FORMATTERS:
        return [f"line {line}: {node.func.id}() of {name.value!r} is not allowed; use an f-string"]
    target = node.args[0]
    if isinstance(target, ast.Name) and target.id in aliases:
        return _missing_names(aliases[target.id], [name.value], line)
    return []


def _check_node(node: ast.AST, allowed: frozenset[str], aliases: dict[str, str]) -> list[str]:
    line = getattr(node, "lineno", "?")
    if isinstance(node, ast.Name) and node.id in _FORBIDDEN_NAMES:
        return [f"line {line}: {node.id!r} is not available in a sandboxed block"]
    if isinstance(node, ast.Call):
        return _check_call(node, aliases)
    if isinstance(node, ast.Attribute):
        if node.attr in _FORMATTERS:
            return [
                f"line {line}: str.{node.attr}() can read attributes through format fields; "
                "use an f-string"
            ]
        if isinstance(node.value, ast.Name) and node.value.id in aliases:
            return _missing_names(aliases[node.value.id], [node.attr], line)
        return []
    if isinstance(node, ast.Import | ast.ImportFrom):
        return _check_import(node, allowed)
    if isinstance(node, ast.Global | ast.Nonlocal):
        return [f"line {line}: global and nonlocal statements are not allowed"]
    return []


def prepare_source(source: str, *, network: bool = False) -> tuple[ast.Module, list[str]]:
    """Parse ``source`` and apply the policy; returns the tree to compile and the problems.

    Example:
        >>> tree, problems = prepare_source("import sys\\ndef execute(i, c):\\n    return {}")
        >>> problems[0].startswith("line 1: import of 'sys' is not allowed; allowed: ")
        True
    """
    empty = ast.Module(body=[], type_ignores=[])
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        where = f"line {exc.lineno}: " if exc.lineno else ""
        return empty, [f"{where}{exc.msg}"]
    except ValueError as exc:  # e.g. a lone surrogate in the source
        return empty, [f"the source cannot be parsed: {exc}"]
    except RecursionError:
        return empty, [_TOO_DEEP]
    allowed = ALLOWED_IMPORTS | NETWORK_IMPORTS if network else ALLOWED_IMPORTS
    aliases = _module_aliases(tree)
    problems: list[str] = []
    for node in ast.walk(tree):
        problems += _check_node(node, allowed, aliases)
    if not any(
        isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == "execute"
        for n in tree.body
    ):
        problems.append("the block must define 'def execute(inputs, context)' at top level")
    # RestrictedPython rewrites the tree it is given; keep ours as the user wrote it.
    try:
        _, errors = compile_block(copy.deepcopy(tree))
    except RecursionError:
        errors = [_TOO_DEEP]
    except ImportError:
        raise SandboxUnavailableError(
            "Python blocks need RestrictedPython for the sandbox's policy layer; "
            "install it with: pip install 'flowcore[sandbox]'"
        ) from None
    problems.extend(_lower(e) for e in errors)
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
