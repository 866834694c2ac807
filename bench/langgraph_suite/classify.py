"""Why a test that passes on LangGraph failed on flowcore: one cause per error.

Causes, checked in this order on the error and the errors chained to it:

* ``internals``: the test reached for something private to LangGraph (a module
  or name with a leading underscore, the modules of ``langgraph.pregel``, or a
  private attribute of a compat object);
* ``missing``: a public LangGraph module or name ``flowcore.compat.langgraph``
  does not provide (the import hook's errors, ``cannot import name`` from a
  ``langgraph`` module, a public attribute a compat object lacks, or a keyword
  parameter a compat class or method lacks);
* ``environment``: a non-LangGraph module the suite needs is not installed;
* ``timeout``: the per-test time limit stopped it;
* ``behaviour``: anything else, an assertion or an error the API raised.

Example:
    >>> classify("ImportError", "cannot import name 'entrypoint' from 'langgraph.func'")
    ('missing', 'langgraph.func.entrypoint')
    >>> classify("AssertionError", "assert 1 == 2")
    ('behaviour', '')
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from langgraph_suite.table import is_internal

__all__ = ["CAUSES", "classify", "classify_chain", "first_line", "last_error_in"]

CAUSES = ("missing", "behaviour", "internals", "timeout", "environment")

_CANNOT_IMPORT = re.compile(r"cannot import name '([^']+)' from '(langgraph[\w.]*)'")
_NO_MODULE = re.compile(r"No module named '([\w.]+)'")
_DOES_NOT_PROVIDE = re.compile(r"does not provide (langgraph[\w.]*)")
# Also monkeypatch's wording, which shows the module's repr: "<module 'x' (<loader>)> has ...".
_MODULE_ATTR = re.compile(r"module '(langgraph[\w.]*)'[^']*? has no attribute '(\w+)'")
_UNEXPECTED_KW = re.compile(r"(\w+)\.(\w+)\(\) got an unexpected keyword argument '(\w+)'")
_OBJECT_ATTR = re.compile(
    r"'(\w+)' object has no attribute '(\w+)'|type object '(\w+)' has no attribute '(\w+)'"
)


def _compat_names() -> frozenset[str]:
    try:
        import flowcore.compat.langgraph as compat
    except ImportError:
        return frozenset()
    return frozenset(compat.__all__) | {"CompiledStateGraph", "CompatRunStream"}


_COMPAT = _compat_names()


def classify(exc_type: str, message: str) -> tuple[str, str]:
    """The cause of one error, and the LangGraph name it is about ('' when none).

    Example:
        >>> classify("ModuleNotFoundError", "No module named 'langgraph._internal._constants'")
        ('internals', 'langgraph._internal._constants')
    """
    dotted = ""
    if m := _DOES_NOT_PROVIDE.search(message):
        dotted = m.group(1)
    elif m := _CANNOT_IMPORT.search(message):
        dotted = f"{m.group(2)}.{m.group(1)}"
    elif m := _MODULE_ATTR.search(message):
        dotted = f"{m.group(1)}.{m.group(2)}"
    elif exc_type in ("ModuleNotFoundError", "ImportError") and (m := _NO_MODULE.search(message)):
        if m.group(1).split(".")[0] != "langgraph":
            return "environment", m.group(1)
        dotted = m.group(1)
    elif exc_type == "AttributeError" and (m := _OBJECT_ATTR.search(message)):
        owner, attr = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        if owner in _COMPAT:
            dotted = f"{owner}.{attr}"
            if attr.startswith("_"):
                return "internals", dotted
            return "missing", dotted
    elif exc_type == "TypeError" and (m := _UNEXPECTED_KW.search(message)):
        # A compat class or method without one of LangGraph's keyword parameters.
        owner, method, keyword = m.groups()
        if owner in _COMPAT:
            return "missing", f"{owner}.{method}({keyword}=)"
    if dotted:
        return ("internals" if is_internal(dotted) else "missing"), dotted
    if exc_type == "Failed" and message.startswith("Timeout"):
        return "timeout", ""
    return "behaviour", ""


def classify_chain(errors: Iterable[tuple[str, str]]) -> tuple[str, str]:
    """The cause of an error and the errors chained to it: a missing name anywhere wins.

    Example:
        >>> missing = ("ImportError", "No module named 'langgraph.func'")
        >>> classify_chain([("RuntimeError", "boom"), missing])
        ('missing', 'langgraph.func')
    """
    found = [classify(t, m) for t, m in errors]
    for cause in ("internals", "missing", "environment", "timeout"):
        for c, dotted in found:
            if c == cause:
                return c, dotted
    return "behaviour", ""


def first_line(exc_type: str, message: str, limit: int = 160) -> str:
    """``Type: first line of message``, ids and addresses blanked so equal errors cluster.

    Example:
        >>> first_line("KeyError", "'1ef0e6c2-a2b4-6e1c-8001-0123456789ab'\\nmore")
        "KeyError: '<id>'"
    """
    line = message.strip().split("\n", 1)[0]
    line = re.sub(r"0x[0-9a-fA-F]+", "0x…", line)
    line = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<id>", line)
    text = f"{exc_type}: {line}" if line else exc_type
    return text if len(text) <= limit else text[: limit - 1] + "…"


_E_LINE = re.compile(r"^E\s+([\w.]*(?:Error|Exception|Exit|Interrupt|Failed|Warning)\w*): ?(.*)$")


def last_error_in(longrepr: str) -> tuple[str, str]:
    """The exception type and message of the last ``E   Type: message`` line of a report.

    Example:
        >>> last_error_in("x\\nE   ImportError: cannot import name 'task'\\n")
        ('ImportError', "cannot import name 'task'")
    """
    found = ("Error", longrepr.strip().splitlines()[-1] if longrepr.strip() else "")
    for line in longrepr.splitlines():
        if m := _E_LINE.match(line):
            found = (m.group(1).rsplit(".", 1)[-1], m.group(2))
    return found
